//! `orchestrate.*` over `/rpc`: a plan started from the model or given,
//! watched as it runs (long-polled events by sequence number), cancelled,
//! listed; bad params answered in JSON-RPC's error shape.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon};

async fn daemon(mock: &MockLlm) -> TestDaemon {
    TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await
}

/// Watches `id` to its end, collecting every event.
async fn watch_to_end(daemon: &TestDaemon, id: &str) -> (Vec<Value>, Value) {
    let mut since = 0;
    let mut events = Vec::new();
    for _ in 0..200 {
        let answer = daemon
            .rpc(
                "orchestrate.watch",
                json!({"id": id, "since": since, "waitMs": 5000}),
            )
            .await;
        let result = &answer["result"];
        let batch = result["events"].as_array().cloned().unwrap_or_default();
        since = result["next"].as_u64().unwrap();
        events.extend(batch);
        if result["done"] == true {
            return (events, result["result"].clone());
        }
    }
    panic!("the orchestration never ended: {events:?}");
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["type"].as_str().unwrap(),
                e["data"]["taskId"].as_str().unwrap_or("")
            )
            .trim()
            .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_plan_is_started_watched_and_finished() {
    let mock = MockLlm::start(vec![MockReply::text(
        json!({"tasks": [{"id": "a", "description": "look", "estimatedComplexity": "S", "files": [], "readOnly": true},
                         {"id": "b", "description": "conclude", "estimatedComplexity": "S", "files": [], "readOnly": true}],
               "dependencies": {"b": ["a"]}})
        .to_string(),
    )])
    .await;
    mock.route("Your sub-task (a)", MockReply::text("a looked"));
    mock.route("Your sub-task (b)", MockReply::text("b concluded"));
    let daemon = daemon(&mock).await;
    let started = daemon
        .rpc("orchestrate.start", json!({"task": "Look and conclude"}))
        .await;
    let result = &started["result"];
    assert_eq!(result["waves"], json!([["a"], ["b"]]), "{started}");
    assert_eq!(result["source"]["kind"], "model");
    let id = result["id"].as_str().unwrap();
    let (events, outcome) = watch_to_end(&daemon, id).await;
    assert_eq!(
        kinds(&events),
        [
            "task_start a",
            "task_complete a",
            "task_start b",
            "task_complete b",
            "plan_complete"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(outcome["status"], "completed");
    assert_eq!(outcome["tasks"][1]["output"], "b concluded");
    // The sub-tasks ran in the daemon's default workspace.
    assert!(
        mock.requests()
            .iter()
            .any(|r| r.body.to_string().contains("Your sub-task (b)")),
    );
    let listed = daemon.rpc("orchestrate.list", json!({})).await;
    assert_eq!(listed["result"][0]["id"], id);
    assert_eq!(listed["result"][0]["status"], "completed");
    // Cancelling a finished plan says so.
    let cancelled = daemon.rpc("orchestrate.cancel", json!({"id": id})).await;
    assert_eq!(
        cancelled["result"],
        json!({"id": id, "cancelled": false, "done": true})
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_plan_is_cancelled_while_it_runs() {
    let mock = MockLlm::start(vec![]).await;
    for id in ["x", "y"] {
        mock.route(
            format!("Your sub-task ({id})"),
            MockReply::Slow {
                chunks: vec!["late".into(); 3],
                delay_ms: 10_000,
            },
        );
    }
    let daemon = daemon(&mock).await;
    let plan = json!({"tasks": [{"id": "x", "description": "slow", "readOnly": true},
                                {"id": "y", "description": "slow too", "readOnly": true},
                                {"id": "z", "description": "after", "readOnly": true}],
                      "dependencies": {"z": ["x"]}});
    let started = daemon
        .rpc(
            "orchestrate.start",
            json!({"plan": plan, "maxConcurrency": 2, "timeoutSecs": 120}),
        )
        .await;
    let id = started["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["result"]["source"]["kind"], "given");
    // Both sub-tasks are at the model.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while mock.open_chat_bodies() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sub-tasks never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = daemon.rpc("orchestrate.cancel", json!({"id": id})).await;
    assert_eq!(cancelled["result"]["cancelled"], true);
    let (_, outcome) = watch_to_end(&daemon, &id).await;
    assert_eq!(outcome["status"], "cancelled");
    let statuses: Vec<&str> = outcome["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["cancelled", "cancelled", "skipped"]);
    // The requests to the model were dropped, not left running.
    tokio::time::timeout(Duration::from_secs(5), mock.chat_bodies_closed())
        .await
        .unwrap();
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_params_are_refused_in_json_rpc_shape() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = daemon(&mock).await;
    let cyclic = json!({"tasks": [{"id": "a", "description": "x"}, {"id": "b", "description": "y"}],
                        "dependencies": {"a": ["b"], "b": ["a"]}});
    for (params, says) in [
        (json!({}), "`task` is required"),
        (
            json!({"task": "x", "maxConcurrency": 0}),
            "`maxConcurrency` must be between 1 and 64",
        ),
        (
            json!({"task": "x", "cwd": "relative/dir"}),
            "`cwd` must be an absolute path",
        ),
        (
            json!({"task": "x", "session": "nope"}),
            "session nope does not exist",
        ),
        (json!({"plan": cyclic}), "cycle: a → b → a"),
        (json!({"plan": {"tasks": "no"}}), "is not a TaskPlan"),
        (json!({"task": "x", "colour": "red"}), "colour"),
        (
            json!({"task": "x", "timeoutSecs": 0}),
            "`timeoutSecs` must be at least 1",
        ),
    ] {
        let answer = daemon.rpc("orchestrate.start", params.clone()).await;
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{params}: {answer}"));
        assert!(message.contains(says), "{params}: {message}");
    }
    for method in ["orchestrate.watch", "orchestrate.cancel"] {
        let answer = daemon
            .rpc(method, json!({"id": "20990101-000000-abcdef"}))
            .await;
        assert_eq!(answer["error"]["code"], -32006, "{answer}");
        let answer = daemon.rpc(method, json!({})).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    // Still serving.
    assert!(daemon.rpc("orchestrate.list", json!({})).await["result"].is_array());
    daemon.stop().await;
}
