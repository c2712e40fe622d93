//! Memory has an owner and a bound: agent sessions are capped in number,
//! and a finished orchestration keeps only a short copy of a huge task.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::TestDaemon;

#[tokio::test]
async fn agent_sessions_are_capped_and_the_least_recently_heard_of_go_first() {
    let daemon = TestDaemon::start().await;
    let cwd = daemon.workspace.path().display().to_string();
    let cap = bridge_server::rpc::agent_hook::MAX_AGENT_SESSIONS;
    for n in 0..cap + 40 {
        let answer = daemon
            .rpc(
                "agent.hook",
                json!({"agent": "claude-code", "agentSession": format!("burst-{n}"),
                       "cwd": cwd, "event": "session-start"}),
            )
            .await;
        assert!(answer["result"]["session"].is_string(), "{answer}");
    }
    let agents = |sessions: &Value| -> Vec<String> {
        sessions["result"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["id"].as_str())
            .filter(|id| id.starts_with("claude-code-burst-"))
            .map(str::to_owned)
            .collect()
    };
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = agents(&daemon.rpc("session.list", json!({})).await);
        if listed.len() <= cap {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(listed.len(), cap, "capped at {cap}");
    assert!(
        listed.contains(&format!("claude-code-burst-{}", cap + 39)),
        "the newest stays"
    );
    assert!(
        !listed.contains(&"claude-code-burst-0".to_owned()),
        "the oldest went first"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_task_or_a_description_too_long_for_any_prompt_is_refused_before_planning() {
    let daemon = TestDaemon::start().await;
    let task = format!("HUGE-TASK {}", "x".repeat(15 * 1024 * 1024));
    let answer = daemon
        .rpc(
            "orchestrate.start",
            json!({"task": task, "plan": {"tasks": [{"id": "a", "description": "do it"}]}}),
        )
        .await;
    assert_eq!(
        answer["error"]["code"],
        -32602,
        "{}",
        &answer.to_string()[..300.min(answer.to_string().len())]
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`task`") && message.contains("at most 262144"),
        "{message}"
    );
    assert!(message.len() < 400, "the refusal does not quote the task");
    let description = "d".repeat(65 * 1024);
    let answer = daemon
        .rpc(
            "orchestrate.start",
            json!({"task": "t", "plan": {"tasks": [{"id": "a", "description": description}]}}),
        )
        .await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`plan`") && message.contains("description of 66560 bytes"),
        "{message}"
    );
    // Nothing was started, and the daemon still answers.
    let listed = daemon.rpc("orchestrate.list", json!({})).await;
    assert_eq!(listed["result"], json!([]));
    daemon.stop().await;
}

#[tokio::test]
async fn a_finished_orchestration_keeps_a_short_copy_of_a_long_task() {
    let daemon = TestDaemon::start().await;
    let task = format!("LONG-TASK {}", "x".repeat(250 * 1024));
    let description = format!("LONG-DESCRIPTION {}", "y".repeat(60 * 1024));
    let started = daemon
        .rpc(
            "orchestrate.start",
            json!({"task": task, "plan": {"tasks": [{"id": "a", "description": description}]}}),
        )
        .await;
    let id = started["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    daemon.rpc("orchestrate.cancel", json!({"id": id})).await;
    let (mut watched, mut since) = (Value::Null, 0);
    for _ in 0..100 {
        watched = daemon
            .rpc(
                "orchestrate.watch",
                json!({"id": id, "since": since, "waitMs": 200}),
            )
            .await;
        if watched["result"]["done"] == true {
            break;
        }
        since = watched["result"]["next"].as_u64().unwrap_or(since);
    }
    let result = &watched["result"]["result"];
    let shown = watched.to_string();
    assert!(
        result["task"]
            .as_str()
            .is_some_and(|t| t.starts_with("LONG-TASK")),
        "{}",
        &shown[..shown.len().min(2000)]
    );
    let kept = watched.to_string().len();
    assert!(
        kept < 128 * 1024,
        "{kept} bytes kept of a 250 KiB task and a 60 KiB description"
    );
    // The log on disk has them whole.
    let log =
        std::fs::read_to_string(daemon.state.path().join(format!("sessions/{id}.jsonl"))).unwrap();
    assert!(log.len() > 310 * 1024, "{}", log.len());
    daemon.stop().await;
}
