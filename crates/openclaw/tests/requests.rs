//! Requests: matched by id, timeouts, size limit, failures on a dropped
//! connection, garbage ignored, and `ask_agent` against the recorded run.

use std::time::{Duration, Instant};

use bridge_openclaw::{AgentAsk, ConnectionState, GatewayError};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::fake::{Answer, FakeGateway, frame_where, transcript};
use crate::{connected, settings, start};

#[tokio::test]
async fn concurrent_requests_get_their_own_answers_out_of_order() {
    let fake = FakeGateway::start().await;
    fake.on_request(|method, params| {
        let answer = json!({"method": method, "n": params["n"]});
        match method {
            "slow" => Answer::Later(Duration::from_millis(300), answer),
            "medium" => Answer::Later(Duration::from_millis(100), answer),
            _ => Answer::Ok(answer),
        }
    });
    let client = connected(settings(&fake.url)).await;
    let gateway = &client.gateway;
    let started = Instant::now();
    let (slow, medium, fast) = tokio::join!(
        gateway.request("slow", json!({"n": 1})),
        gateway.request("medium", json!({"n": 2})),
        gateway.request("fast", json!({"n": 3})),
    );
    assert_eq!(slow.unwrap(), json!({"method": "slow", "n": 1}));
    assert_eq!(medium.unwrap(), json!({"method": "medium", "n": 2}));
    assert_eq!(fast.unwrap(), json!({"method": "fast", "n": 3}));
    assert!(started.elapsed() < Duration::from_millis(1000));
    // Many at once.
    let many: Vec<_> = (0..50)
        .map(|n| gateway.request("fast", json!({"n": n})))
        .collect();
    for (n, answer) in futures::future::join_all(many)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(answer.unwrap()["n"], n);
    }
}

#[tokio::test]
async fn a_timeout_removes_the_request_and_a_late_answer_is_dropped() {
    let fake = FakeGateway::start().await;
    fake.on_request(|method, _| match method {
        "late" => Answer::Later(Duration::from_millis(400), json!({"late": true})),
        "never" => Answer::Silent,
        _ => Answer::Ok(json!({"ok": true})),
    });
    let client = connected(settings(&fake.url)).await;
    let started = Instant::now();
    let err = client
        .gateway
        .request_within("late", json!({}), Duration::from_millis(150))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GatewayError::Timeout { method, after } if method == "late" && *after == Duration::from_millis(150)),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_millis(400));
    // The settings' timeout (5 s here) for request().
    let never = tokio::time::timeout(
        Duration::from_secs(7),
        client.gateway.request("never", json!({})),
    )
    .await
    .unwrap();
    assert!(matches!(never, Err(GatewayError::Timeout { .. })));
    // The late answer arrives meanwhile and is dropped; the link is fine.
    assert_eq!(
        client.gateway.request("ping", json!({})).await.unwrap(),
        json!({"ok": true})
    );
    assert_eq!(client.gateway.status().state, ConnectionState::Connected);
}

#[tokio::test]
async fn a_request_while_not_connected_fails_at_once_naming_the_url() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("ws://127.0.0.1:{port}");
    let client = start(settings(&url));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let err = client
        .gateway
        .request("health", json!({}))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "at once, not after a timeout"
    );
    let GatewayError::NotConnected { url: named, reason } = &err else {
        panic!("{err}")
    };
    assert_eq!(named, &url);
    assert!(reason.contains("disconnected"), "{reason}");
    let status = client.gateway.status();
    assert_eq!(status.state, ConnectionState::Disconnected);
    assert!(status.last_error.unwrap().contains("cannot reach"));
}

#[tokio::test]
async fn a_frame_over_max_payload_is_refused_before_sending() {
    let fake = FakeGateway::start().await;
    fake.edit_hello(|hello| hello["policy"]["maxPayload"] = json!(1024));
    fake.on_request(|_, _| Answer::Ok(json!({})));
    let client = connected(settings(&fake.url)).await;
    let err = client
        .gateway
        .request("big", json!({"text": "x".repeat(2000)}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GatewayError::TooLarge { method, max: 1024, .. } if method == "big"),
        "{err}"
    );
    assert!(err.to_string().contains("maxPayload"), "{err}");
    client
        .gateway
        .request("small", json!({"text": "x"}))
        .await
        .unwrap();
    let methods: Vec<String> = fake.requests().into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, ["small"], "the big one was never sent");
}

#[tokio::test]
async fn pending_requests_fail_as_closed_when_the_connection_drops() {
    let fake = FakeGateway::start().await;
    fake.on_request(|_, _| Answer::Silent);
    let client = connected(settings(&fake.url)).await;
    let gateway = client.gateway.clone();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let result = gateway.request("agent.wait", json!({})).await;
        (result, started.elapsed())
    });
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fake.close_connection();
    let (result, elapsed) = waiting.await.unwrap();
    assert!(
        matches!(&result, Err(GatewayError::Closed { method }) if method == "agent.wait"),
        "{result:?}"
    );
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

#[tokio::test]
async fn unknown_events_and_garbage_frames_are_ignored() {
    let fake = FakeGateway::start().await;
    fake.on_request(|_, _| Answer::Ok(json!({"fine": true})));
    let client = connected(settings(&fake.url)).await;
    let mut events = client.gateway.subscribe();
    for garbage in [
        "not json at all",
        "{}",
        "[1,2,3]",
        r#"{"type":"res"}"#,
        r#"{"type":"res","id":"nobody-asked","ok":true,"payload":{}}"#,
        r#"{"type":"res","id":"nobody-asked","ok":false}"#,
        r#"{"type":"event"}"#,
        r#"{"type":"mystery","id":"1"}"#,
        r#"{"type":"event","event":"presence","payload":{"new":"shape"},"seq":"x"}"#,
    ] {
        fake.push_text(garbage);
    }
    fake.push(Message::binary(vec![0u8, 159, 146, 150]));
    fake.push_text(r#"{"type":"event","event":"brand.new.event","payload":{"a":1},"seq":9}"#);
    assert_eq!(
        client.gateway.request("health", json!({})).await.unwrap(),
        json!({"fine": true})
    );
    let mut names = Vec::new();
    while let Ok(event) = events.try_recv() {
        names.push(event.event);
    }
    assert_eq!(names, ["presence", "brand.new.event"]);
    let status = client.gateway.status();
    assert_eq!(status.state, ConnectionState::Connected);
    assert_eq!(status.reconnects, 0);
}

#[tokio::test]
async fn a_remote_error_keeps_the_gateways_code_message_and_details() {
    let fake = FakeGateway::start().await;
    fake.on_request(|_, _| {
        Answer::Error(
            json!({"code": "INVALID_REQUEST", "message": "unknown method: nope",
                             "details": {"method": "nope"}}),
        )
    });
    let client = connected(settings(&fake.url)).await;
    let err = client.gateway.request("nope", json!({})).await.unwrap_err();
    let GatewayError::Remote {
        method,
        code,
        message,
        details,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        (method.as_str(), code.as_str(), message.as_str()),
        ("nope", "INVALID_REQUEST", "unknown method: nope")
    );
    assert_eq!(details["method"], "nope");
}

/// The recorded answer of `method` in the agent transcript, with the
/// recorded run id replaced by `run_id`.
fn recorded(frames: &[(String, Value)], method: &str, run_id: &str) -> Value {
    let id = frame_where(frames, |frame| frame["method"] == method)["id"].clone();
    let payload =
        frame_where(frames, |frame| frame["type"] == "res" && frame["id"] == id)["payload"].clone();
    with_run_id(payload, run_id)
}

fn with_run_id(value: Value, run_id: &str) -> Value {
    serde_json::from_str(&value.to_string().replace("peer-ws-1", run_id)).unwrap()
}

#[tokio::test]
async fn ask_agent_and_memory_search_replay_the_recorded_exchange() {
    let frames = transcript("rpc-agent-memory.jsonl");
    let fake = FakeGateway::start().await;
    let replay = frames.clone();
    fake.on_request(move |method, params| {
        let run_id = params["runId"]
            .as_str()
            .or(params["idempotencyKey"].as_str())
            .unwrap_or_default()
            .to_owned();
        match method {
            "memory.search" => Answer::Ok(recorded(&replay, "memory.search", "")),
            "agent" => Answer::Ok(recorded(&replay, "agent", &run_id)),
            "agent.wait" => {
                let events = replay
                    .iter()
                    .filter(|(dir, frame)| dir == "<" && frame["type"] == "event")
                    .filter(|(_, frame)| frame["event"] != "connect.challenge")
                    .map(|(_, frame)| with_run_id(frame.clone(), &run_id))
                    .collect();
                Answer::EventsThen(events, recorded(&replay, "agent.wait", &run_id))
            }
            _ => Answer::Silent,
        }
    });
    let client = connected(settings(&fake.url)).await;

    let found = client
        .gateway
        .request("memory.search", json!({"query": "staging deploy"}))
        .await
        .unwrap();
    let first = &found["results"][0];
    assert_eq!(first["path"], "MEMORY.md");
    assert_eq!(first["startLine"], 4);
    assert!(first["snippet"].as_str().unwrap().contains("helm chart"));

    let mut ask = AgentAsk::new("Say hello over WS", Duration::from_secs(60));
    ask.agent_id = Some("main".to_owned());
    ask.session_key = Some("agent:main:ws1".to_owned());
    let reply = client.gateway.ask_agent(ask).await.unwrap();
    assert_eq!(reply.status, "ok");
    assert_eq!(
        reply.text.as_deref(),
        Some("MOCK-FINAL: hello from the mock model (11 tools offered)")
    );
    assert_eq!(reply.raw["stopReason"], "stop");

    let requests = fake.requests();
    let (_, agent) = requests.iter().find(|(m, _)| m == "agent").unwrap();
    assert_eq!(agent["message"], "Say hello over WS");
    assert_eq!(agent["agentId"], "main");
    assert_eq!(agent["sessionKey"], "agent:main:ws1");
    let key = agent["idempotencyKey"].as_str().unwrap();
    assert!(!key.is_empty());
    let (_, wait) = requests.iter().find(|(m, _)| m == "agent.wait").unwrap();
    assert_eq!(wait["runId"], key, "the run id the gateway accepted");
    assert_eq!(wait["timeoutMs"], 60_000);
}

#[tokio::test]
async fn without_a_terminal_reply_the_runs_final_chat_message_is_the_text() {
    let fake = FakeGateway::start().await;
    fake.on_request(|method, params| match method {
        "agent" => Answer::Ok(json!({"runId": params["idempotencyKey"], "status": "accepted"})),
        "agent.wait" => Answer::EventsThen(
            vec![
                json!({"type": "event", "event": "chat", "seq": 1, "payload": {"runId": "someone-else", "state": "final", "message": {"content": "not ours"}}}),
                json!({"type": "event", "event": "chat", "seq": 2, "payload": {"runId": params["runId"], "state": "final", "message": {"content": [{"type": "text", "text": "ours"}]}}}),
            ],
            json!({"runId": params["runId"], "status": "ok"}),
        ),
        _ => Answer::Silent,
    });
    let client = connected(settings(&fake.url)).await;
    let reply = client
        .gateway
        .ask_agent(AgentAsk::new("hi", Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("ours"));
}
