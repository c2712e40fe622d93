//! The hub's own agent in a daemon session over `/rpc`: `session.prompt`
//! starts a turn (the model's answer and tool calls reach the session's
//! transcript as they happen, read with `session.events` by long poll and
//! pushed on a WebSocket), a second prompt continues the conversation,
//! `session.abort` stops a long turn, `session.resume` brings a logged
//! conversation back once its session ended; bad params are refused.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::approvals::approver;
use crate::support::{Setup, TestDaemon};

async fn daemon(mock: &MockLlm) -> TestDaemon {
    TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await
}

async fn new_session(daemon: &TestDaemon) -> String {
    let created = daemon
        .rpc(
            "session.create",
            json!({"cwd": daemon.workspace.path(), "label": "chat"}),
        )
        .await;
    created["result"]["id"].as_str().unwrap().to_owned()
}

/// The session's events until a `turn.end`, read by long poll.
async fn turn(daemon: &TestDaemon, session: &str, since: &mut u64) -> Vec<Value> {
    let mut events = Vec::new();
    for _ in 0..100 {
        let answer = approver(
            daemon,
            "session.events",
            json!({"session": session, "since": *since, "waitMs": 5000}),
        )
        .await;
        let result = &answer["result"];
        *since = result["next"].as_u64().unwrap();
        let batch = result["events"].as_array().cloned().unwrap_or_default();
        let ended = batch.iter().any(|event| event["type"] == "turn.end");
        events.extend(batch);
        if ended {
            return events;
        }
    }
    panic!("the turn never ended: {events:?}");
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_run_turns_that_continue_the_conversation_and_come_back_from_the_log() {
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_1", "read_file", &json!({"path": "notes.txt"})),
        MockReply::chunks(["The notes ", "say pineapple."]),
        MockReply::text("You asked about the notes."),
        MockReply::text("Still here."),
    ])
    .await;
    let setup = Setup::default()
        .openai_backend(&mock.base_url())
        .file("notes.txt", "pineapple\n");
    let daemon = TestDaemon::with(setup).await;
    let session = new_session(&daemon).await;
    let started = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "What do the notes say?"}),
        )
        .await;
    assert_eq!(started["result"]["started"], true, "{started}");
    assert_eq!(started["result"]["resumed"], false);
    let mut since = 0;
    let events = turn(&daemon, &session, &mut since).await;
    let prompt = of_type(&events, "user.message");
    assert_eq!(prompt[0]["content"], "What do the notes say?");
    let tools = of_type(&events, "tool.execution_complete");
    assert_eq!(tools[0]["tool"], "read_file");
    assert_eq!(tools[0]["decision"]["decision"], "allow");
    assert!(tools[0]["result"].to_string().contains("pineapple"));
    let answers = of_type(&events, "assistant.message");
    assert_eq!(
        answers.last().unwrap()["content"],
        "The notes say pineapple."
    );
    assert_eq!(of_type(&events, "turn.end")[0]["status"], "completed");

    // The next prompt continues the same conversation.
    let again = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "What did I ask?"}),
        )
        .await;
    assert_eq!(again["result"]["resumed"], true, "{again}");
    turn(&daemon, &session, &mut since).await;
    let asked = mock.requests();
    let last = &asked.last().unwrap().body["messages"];
    let said: Vec<&str> = last
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"What do the notes say?"), "{said:?}");
    assert!(said.contains(&"The notes say pineapple."), "{said:?}");

    // The session ends; its conversation comes back from its log.
    let ended = daemon.rpc("session.end", json!({"session": session})).await;
    assert!(ended["error"].is_null(), "{ended}");
    let resumed = daemon.rpc("session.resume", json!({"id": session})).await;
    let result = &resumed["result"];
    assert_eq!(result["session"]["id"], session, "{resumed}");
    let history = result["history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|e| e["type"] == "assistant.message"
                && e["content"] == "You asked about the notes."),
        "{history:?}"
    );
    let third = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "Are you there?"}),
        )
        .await;
    assert_eq!(third["result"]["resumed"], true, "{third}");
    // The transcript kept the session's earlier turns; this one follows.
    let events = turn(&daemon, &session, &mut since).await;
    assert_eq!(
        of_type(&events, "assistant.message").last().unwrap()["content"],
        "Still here."
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_is_aborted_and_a_busy_session_refuses_a_second_prompt() {
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: vec!["slow".into(); 5],
        delay_ms: 10_000,
    }])
    .await;
    let daemon = daemon(&mock).await;
    let session = new_session(&daemon).await;
    daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "take your time"}),
        )
        .await;
    let busy = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "and this?"}),
        )
        .await;
    assert_eq!(busy["error"]["code"], -32015, "{busy}");
    let aborted = daemon
        .rpc("session.abort", json!({"session": session}))
        .await;
    assert_eq!(aborted["result"]["aborted"], true, "{aborted}");
    let mut since = 0;
    let events = turn(&daemon, &session, &mut since).await;
    assert_eq!(of_type(&events, "turn.end")[0]["status"], "cancelled");
    let idle = daemon
        .rpc("session.abort", json!({"session": session}))
        .await;
    assert_eq!(idle["result"]["aborted"], false);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_pushed_on_a_websocket() {
    let mock = MockLlm::start(vec![MockReply::chunks(["pushed ", "answer"])]).await;
    let daemon = daemon(&mock).await;
    let session = new_session(&daemon).await;
    let mut request = daemon.ws_url("/rpc").into_client_request().unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.ctx.approver_token)
            .parse()
            .unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let follow = json!({"jsonrpc": "2.0", "id": 1, "method": "session.events",
                        "params": {"session": session, "follow": true}});
    socket
        .send(Message::Text(follow.to_string().into()))
        .await
        .unwrap();
    daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "push it"}),
        )
        .await;
    let mut kinds = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !kinds.contains(&"turn.end".to_owned()) {
        let message = tokio::time::timeout_at(deadline, socket.next())
            .await
            .expect("events are pushed")
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(&text).unwrap();
        if value["method"] == "session.event" {
            assert_eq!(value["params"]["session"], session);
            kinds.push(
                value["params"]["event"]["type"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
    assert!(kinds.contains(&"assistant.message".to_owned()), "{kinds:?}");
    // Over HTTP there is nothing to push on.
    let refused = approver(
        &daemon,
        "session.events",
        json!({"session": session, "follow": true}),
    )
    .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WebSocket")
    );
    daemon.stop().await;
}

#[tokio::test]
async fn bad_prompts_and_sessions_are_refused_in_json_rpc_shape() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = daemon(&mock).await;
    let session = new_session(&daemon).await;
    for (method, params, code) in [
        ("session.prompt", json!({"session": session}), -32602),
        (
            "session.prompt",
            json!({"session": session, "prompt": "  "}),
            -32602,
        ),
        (
            "session.prompt",
            json!({"session": session, "prompt": 7}),
            -32602,
        ),
        (
            "session.prompt",
            json!({"session": "nope", "prompt": "hi"}),
            -32004,
        ),
        (
            "session.prompt",
            json!({"session": session, "prompt": "hi", "extra": 1}),
            -32602,
        ),
        ("session.resume", json!({"id": "../../etc/passwd"}), -32602),
        ("session.resume", json!({"id": "never-logged"}), -32004),
        ("session.abort", json!({"session": "nope"}), -32004),
    ] {
        let answer = daemon.rpc(method, params.clone()).await;
        assert_eq!(answer["error"]["code"], code, "{method} {params}: {answer}");
    }
    let long = "x".repeat(256 * 1024 + 1);
    let answer = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": long}),
        )
        .await;
    assert_eq!(answer["error"]["code"], -32602);
    // The events of a session are the approver's to read.
    let agents = daemon
        .rpc("session.events", json!({"session": session}))
        .await;
    assert!(
        agents["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approver")
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copilot_runner_answers_and_is_told_the_conversation_so_far() {
    let mock = MockLlm::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let wrapper = bridge_testkit::fake_copilot_cli(dir.path(), Some(&record));
    let daemon = TestDaemon::with(
        Setup::default()
            .openai_backend(&mock.base_url())
            .env("COPILOT_CLI_PATH", wrapper.display().to_string())
            .file("README.md", "# Hello\n"),
    )
    .await;
    let session = new_session(&daemon).await;
    let started = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "What does the README say?", "runner": "copilot"}),
        )
        .await;
    assert_eq!(started["result"]["runner"], "copilot", "{started}");
    let mut since = 0;
    let events = turn(&daemon, &session, &mut since).await;
    assert_eq!(
        of_type(&events, "turn.end")[0]["status"],
        "completed",
        "{events:?}"
    );
    assert!(
        !of_type(&events, "assistant.message").is_empty(),
        "{events:?}"
    );
    // The session keeps its runner; the CLI hears what was said before.
    let again = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "And after that?"}),
        )
        .await;
    assert_eq!(again["result"]["runner"], "copilot", "{again}");
    assert_eq!(again["result"]["resumed"], true);
    turn(&daemon, &session, &mut since).await;
    let sent: Vec<String> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"session.send\""))
        .map(str::to_owned)
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(
        sent[1].contains("What was said before") && sent[1].contains("What does the README say?"),
        "{}",
        sent[1]
    );
    let bad = daemon
        .rpc(
            "session.prompt",
            json!({"session": session, "prompt": "x", "runner": "nested"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602);
    daemon.stop().await;
}
