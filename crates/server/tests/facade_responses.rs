//! `POST /v1/responses` (OpenAI's Responses API, what Codex speaks) over an
//! OpenAI-wire upstream: the event stream, a tool round trip continued with
//! `previous_response_id` from the store, whole answers, bad input, and the
//! official `openai` Python package as a client.

use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, MockToolCall, RecordedRequest};
use serde_json::{Value, json};

use crate::support::{Setup, TestDaemon, python, repo_root, run_peer};

const STREAM_LIMIT: Duration = Duration::from_secs(15);

async fn post(daemon: &TestDaemon, body: &Value) -> reqwest::Response {
    daemon
        .http()
        .post(daemon.url("/v1/responses"))
        .bearer_auth(&daemon.token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The events of a streamed answer, each checked against its `event:` line.
async fn events(response: reqwest::Response) -> Vec<Value> {
    let text = tokio::time::timeout(STREAM_LIMIT, response.text())
        .await
        .expect("the stream ends")
        .unwrap();
    text.split("\n\n")
        .filter(|record| !record.trim().is_empty())
        .map(|record| {
            let name = record
                .lines()
                .next()
                .unwrap()
                .strip_prefix("event: ")
                .unwrap();
            let data = record
                .lines()
                .nth(1)
                .unwrap()
                .strip_prefix("data: ")
                .unwrap();
            let value: Value = serde_json::from_str(data).unwrap();
            assert_eq!(value["type"], name);
            value
        })
        .collect()
}

fn chat_requests(mock: &MockLlm) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_streamed_text_answer_is_the_responses_event_sequence() {
    let mock = MockLlm::start(vec![MockReply::chunks(["Hello", " there"])]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let response = post(
        &daemon,
        &json!({"model": "gpt-test", "stream": true, "store": false,
                "instructions": "Be brief.",
                "input": [{"type": "message", "role": "developer",
                           "content": [{"type": "input_text", "text": "You are Codex."}]},
                          {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Say hello"}]}]}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let events = events(response).await;
    let seen = types(&events);
    assert_eq!(seen[..2], ["response.created", "response.in_progress"]);
    assert_eq!(*seen.last().unwrap(), "response.completed");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there");
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["model"], "gpt-test");
    assert!(completed["id"].as_str().unwrap().starts_with("resp_"));

    let sent = &chat_requests(&mock)[0].body;
    assert_eq!(
        sent["messages"],
        json!([{"role": "system", "content": "Be brief."},
               {"role": "system", "content": "You are Codex."},
               {"role": "user", "content": "Say hello"}])
    );
    assert_eq!(sent["stream"], true);
    daemon.stop().await;
}

#[tokio::test]
async fn a_tool_round_trip_continues_from_the_stored_response() {
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                "call_1",
                "exec_command",
                r#"{"cmd":"ls"}"#,
            )],
        },
        MockReply::text("There is one file."),
    ])
    .await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let tools = json!([{"type": "function", "name": "exec_command", "description": "Runs a command",
                        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
                       {"type": "web_search"}]);

    let first: Value = post(
        &daemon,
        &json!({"model": "gpt-test", "input": "list the files", "tools": tools, "store": true}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(first["status"], "completed");
    let call = &first["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["name"], "exec_command");
    assert_eq!(call["arguments"], r#"{"cmd":"ls"}"#);
    let id = first["id"].as_str().unwrap();
    let kept = daemon
        .state
        .path()
        .join("responses")
        .join(format!("{id}.json"));
    assert!(kept.exists(), "the response is kept in the state directory");

    let second = post(
        &daemon,
        &json!({"model": "gpt-test", "stream": true, "previous_response_id": id, "tools": tools,
                "input": [{"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}]}),
    )
    .await;
    assert_eq!(second.status(), 200);
    let events = events(second).await;
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["previous_response_id"], id);
    assert_eq!(
        completed["output"][0]["content"][0]["text"],
        "There is one file."
    );

    let sent = &chat_requests(&mock)[1].body;
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}}]},
            {"role": "tool", "content": "a.txt", "tool_call_id": "call_1"},
        ])
    );
    // The hosted tool has no chat-completions equivalent: left out.
    assert_eq!(sent["tools"].as_array().unwrap().len(), 1);
    daemon.stop().await;
}

#[tokio::test]
async fn bad_requests_get_openai_errors_and_the_daemon_keeps_serving() {
    let mock = MockLlm::start(vec![MockReply::text("still here")]).await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let huge = "x".repeat(17 * 1024 * 1024);
    let cases: Vec<(String, u16, &str)> = vec![
        ("{\"input\": ".into(), 400, "invalid_json"),
        ("[]".into(), 400, "invalid_json"),
        (
            json!({"model": "m"}).to_string(),
            400,
            "missing_required_parameter",
        ),
        (
            json!({"input": [{"role": "robot", "content": "x"}]}).to_string(),
            400,
            "invalid_value",
        ),
        (
            json!({"input": "x", "previous_response_id": "resp_0123456789abcdef01234567"})
                .to_string(),
            400,
            "previous_response_not_found",
        ),
        (
            json!({"input": "x", "previous_response_id": "../../gateway"}).to_string(),
            400,
            "previous_response_not_found",
        ),
        (json!({"input": huge}).to_string(), 413, "request_too_large"),
    ];
    for (body, status, code) in cases {
        let response = daemon
            .http()
            .post(daemon.url("/v1/responses"))
            .bearer_auth(&daemon.token)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{}", &body[..body.len().min(80)]);
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().len() < 2048);
    }
    let unauthorized = daemon
        .http()
        .post(daemon.url("/v1/responses"))
        .json(&json!({"input": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    let fine: Value = post(&daemon, &json!({"input": "x"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(fine["output"][0]["content"][0]["text"], "still here");
    daemon.stop().await;
}

#[tokio::test]
async fn the_official_openai_python_package_uses_the_responses_api() {
    let Some(python) = python() else {
        return;
    };
    let mock = MockLlm::start(vec![
        MockReply::chunks(["Streamed", " answer"]),
        MockReply::text("Whole answer."),
    ])
    .await;
    let daemon = TestDaemon::with(Setup::default().openai_backend(&mock.base_url())).await;
    let stdout = run_peer(
        tokio::process::Command::new(&python)
            .arg(repo_root().join("tests/peers/python/openai_responses.py"))
            .args(["--base-url", &daemon.url("/v1")])
            .args(["--api-key", &daemon.token]),
    )
    .await;
    let got: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(got["stream_text"], "Streamed answer");
    assert_eq!(got["stream_final_status"], "completed");
    assert_eq!(got["whole_text"], "Whole answer.");
    assert_eq!(got["continued_previous"], got["whole_id"]);
    daemon.stop().await;
}
