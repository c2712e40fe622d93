//! The daemon's request log: one info line per facade request in what
//! `serve` prints, with the reason of every refusal, so a user can see why
//! their agent fails.

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::agents::serve_with_env;
use crate::cli_serve::wait_until;

#[tokio::test]
async fn every_request_and_every_refusal_leaves_one_line() {
    let mock = MockLlm::start(vec![MockReply::text("Hi!")]).await;
    let served = serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_REQUEST_LOG", "true")],
    );
    let http = reqwest::Client::new();

    let answered = http
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .header("user-agent", "my-agent/1.0")
        .json(&json!({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    answered.text().await.unwrap();
    let wrong_key = http
        .post(served.url("/v1/messages"))
        .header("x-api-key", "not-the-token")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_key.status(), 401);
    let bad_body = http
        .post(served.url("/v1/responses"))
        .bearer_auth(&served.token)
        .json(&json!({"model": "m"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_body.status(), 400);
    let nowhere = http
        .get(served.url("/v1/nowhere"))
        .bearer_auth(&served.token)
        .send()
        .await
        .unwrap();
    assert_eq!(nowhere.status(), 404);
    let text = nowhere.text().await.unwrap();
    assert!(
        text.contains("/v1/responses") && text.contains("/mcp/code"),
        "{text}"
    );

    let lines = || -> Vec<String> {
        served
            .log()
            .lines()
            .filter(|line| {
                line.contains(" INFO ") && (line.contains("/v1/") || line.contains("404"))
            })
            .map(str::to_owned)
            .collect()
    };
    wait_until("the four lines are logged", || lines().len() >= 4);
    let lines = lines();
    let answered = lines
        .iter()
        .find(|l| l.contains("POST /v1/chat/completions 200"))
        .expect("the answered request");
    assert!(answered.contains("client=\"my-agent/1.0\""), "{answered}");
    // A name the backend does not serve: both names, and why.
    assert!(
        answered.contains(
            "model=gpt-x→mock-model backend=openai via=\"default backend; it serves no \\\"gpt-x\\\"\""
        ),
        "{answered}"
    );
    assert!(
        answered.contains("head_ms=") && answered.contains("total_ms="),
        "{answered}"
    );
    let refused = lines
        .iter()
        .find(|l| l.contains("POST /v1/messages 401"))
        .expect("the wrong key");
    assert!(refused.contains("reason: invalid_api_key"), "{refused}");
    let invalid = lines
        .iter()
        .find(|l| l.contains("POST /v1/responses 400"))
        .expect("the bad body");
    assert!(
        invalid.contains("reason: missing_required_parameter"),
        "{invalid}"
    );
    assert!(
        lines.iter().any(|l| l.contains("GET /v1/nowhere 404")),
        "{lines:?}"
    );
    // The banner names every endpoint.
    let log = served.log();
    assert!(
        log.contains("/v1 (chat/completions, responses, models)"),
        "{log}"
    );
    // request_log: the same lines as JSON in the state directory, private,
    // without bodies.
    let journal = served.state().join("requests.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 3, "the facade's three requests: {text}");
    assert_eq!(entries[0]["path"], "/v1/chat/completions");
    assert_eq!(entries[0]["status"], 200);
    assert_eq!(entries[0]["backend"], "openai");
    assert_eq!(entries[0]["requestedModel"], "gpt-x");
    assert_eq!(entries[0]["model"], "mock-model", "{text}");
    assert_eq!(entries[1]["status"], 401);
    assert!(
        entries[1]["reason"]
            .as_str()
            .unwrap()
            .starts_with("invalid_api_key")
    );
    assert_eq!(entries[2]["status"], 400);
    assert!(
        !text.contains("\"hi\""),
        "no request body in the journal: {text}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn a_symlink_planted_at_the_request_log_disables_it_and_nothing_is_written_through_it() {
    let mock = MockLlm::start(vec![MockReply::text("Hi!")]).await;
    let bridge = crate::support::Bridge::new();
    let victim = tempfile::tempdir().unwrap();
    let target = victim.path().join("elsewhere.txt");
    std::fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, bridge.state.path().join("requests.jsonl")).unwrap();
    let served = crate::agents::serve_in(
        &mock,
        bridge,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_REQUEST_LOG", "true")],
    );
    // The daemon serves: a request is answered.
    let answered = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .json(&json!({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    answered.text().await.unwrap();
    // The refusal is logged, and status says the request log is disabled, and why.
    let log = served.log();
    assert!(
        log.contains("ERROR") && log.contains("requests.jsonl") && log.contains("symbolic link"),
        "{log}"
    );
    let status = served.cli().args(["status"]).output().await.unwrap();
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{shown}");
    assert!(
        shown.contains("request log: disabled:") && shown.contains("symbolic link"),
        "{shown}"
    );
    let status = served.rpc_raw("bridge.status", json!({})).await;
    assert_eq!(status["result"]["requestLog"]["enabled"], false, "{status}");
    // Nothing went through the link.
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    assert!(
        std::fs::symlink_metadata(served.state().join("requests.jsonl"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
