//! The daemon's request log: one info line per facade request in what
//! `serve` prints, with the reason of every refusal, so a user can see why
//! their agent fails.

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::agents::serve_with;
use crate::cli_serve::wait_until;

#[tokio::test]
async fn every_request_and_every_refusal_leaves_one_line() {
    let mock = MockLlm::start(vec![MockReply::text("Hi!")]).await;
    let served = serve_with(&mock, TempWorkspace::new());
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
    assert!(
        answered.contains("model=gpt-x→gpt-x backend=openai"),
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
}
