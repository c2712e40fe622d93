//! Real clients against the facade: the official `openai` Python package
//! and `curl -N`, streaming through the daemon from the mock upstream.

use bridge_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::facade_openai::{daemon_for, sse_payloads};
use crate::support::{python, repo_root, run_peer};

#[tokio::test]
async fn the_openai_python_package_streams_and_completes_through_the_facade() {
    let Some(python) = python() else {
        return;
    };
    let mock = MockLlm::start(vec![
        MockReply::chunks(["hello ", "from ", "python"]),
        MockReply::text("hello from python"),
        MockReply::DropAfter {
            chunks: vec!["cut ".into(), "short".into()],
        },
    ])
    .await;
    let daemon = daemon_for(&mock).await;
    let stdout = run_peer(
        tokio::process::Command::new(&python)
            .arg(repo_root().join("tests/peers/python/openai_chat.py"))
            .arg(daemon.url("/v1"))
            .arg(&daemon.token),
    )
    .await;
    let got: Value = serde_json::from_str(stdout.trim()).unwrap();
    let stream = &got["stream"];
    assert_eq!(stream["text"], "hello from python");
    assert!(stream["deltas"].as_u64().unwrap() >= 3, "{got}");
    assert_eq!(stream["finish_reason"], "stop");
    assert_eq!(stream["ids"], 1);
    assert!(
        stream["usage"]["total_tokens"].as_u64().unwrap() > 0,
        "{got}"
    );
    assert_eq!(
        got["complete"],
        json!({"object": "chat.completion", "text": "hello from python",
               "finish_reason": "stop", "model": "mock-model"})
    );
    assert_eq!(
        got["refused"],
        json!({"status": 400, "code": "invalid_value", "param": "messages"})
    );
    // A stream the upstream cuts ends in the SDK's APIError, not a hang.
    assert_eq!(
        got["cut"],
        json!({"code": "upstream_invalid_response", "text": "cut short"})
    );
    daemon.stop().await;
}

#[tokio::test]
async fn curl_streams_a_completion_through_the_facade() {
    let mock = MockLlm::start(vec![]).await;
    let daemon = daemon_for(&mock).await;
    let body = json!({"model": "mock-model", "stream": true,
                      "messages": [{"role": "user", "content": "hello from curl"}]});
    let stdout = run_peer(
        tokio::process::Command::new("curl")
            .args(["-N", "-sS", "--fail-with-body", "--max-time", "30"])
            .args(["-H", &format!("Authorization: Bearer {}", daemon.token)])
            .args(["-H", "Content-Type: application/json"])
            .args(["-d", &body.to_string()])
            .arg(daemon.url("/v1/chat/completions")),
    )
    .await;
    let payloads = sse_payloads(&stdout);
    assert_eq!(payloads.last(), Some(&json!("[DONE]")), "{stdout}");
    let text: String = payloads
        .iter()
        .filter_map(|chunk| chunk.pointer("/choices/0/delta/content"))
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(text, "hello from curl");
    daemon.stop().await;
}
