//! The `vscode` backend against a stand-in editor on a real provider
//! WebSocket (the real extension in real VS Code is driven by
//! crates/cli/tests/agents/vscode.rs): offers, streaming through both
//! facades, cancellation, the editor's refusals as the facade's errors, the
//! trust rule, and provider tools under the workspace policy through their
//! declared access.

use std::time::Duration;

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::facade_openai::sse_payloads;
use crate::support::TestDaemon;

mod access;
mod waits;

/// A stand-in editor: a project provider named `vscode` bound to the
/// default session.
async fn editor(daemon: &TestDaemon, fields: Value) -> ProviderClient {
    let minted = daemon.rpc("gateway.providerToken", json!({})).await;
    let token = minted["result"]["token"].as_str().unwrap().to_owned();
    let (client, _ack) = ProviderClient::register(&daemon.ws_url("/"), &token, "vscode", fields)
        .await
        .unwrap();
    client
}

/// A daemon and a stand-in editor offering `fake-large`, seen by the daemon.
async fn daemon_with_editor() -> (TestDaemon, ProviderClient) {
    let daemon = TestDaemon::start().await;
    let mut client = editor(&daemon, json!({})).await;
    offer(&mut client, &["fake-large"]).await;
    vscode_health(&daemon, "ok").await;
    (daemon, client)
}

async fn offer(client: &mut ProviderClient, models: &[&str]) {
    let models: Vec<Value> = models
        .iter()
        .map(|id| json!({"id": id, "name": id, "vendor": "fake", "maxInputTokens": 1000}))
        .collect();
    client
        .send(json!({"type": "chat.models", "models": models, "available": true}))
        .await
        .unwrap();
}

/// `/healthz`'s `vscode` once its `chat` is `expected` (offers travel on
/// another connection than the test's requests).
async fn vscode_health(daemon: &TestDaemon, expected: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let health = daemon.health().await;
        if health["vscode"]["chat"] == expected {
            return health;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "vscode never became {expected}: {health}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn openai_chat(model: &str, text: &str) -> Value {
    json!({"model": model, "stream": true, "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": text}]})
}

fn anthropic_chat(model: &str, text: &str) -> Value {
    json!({"model": model, "stream": true, "max_tokens": 100, "system": "be brief",
           "messages": [{"role": "user", "content": text}]})
}

/// Answers the next `chat.request` with `parts`, then ends it; the request.
async fn answer(client: &mut ProviderClient, parts: &[&str]) -> Value {
    let request = client.expect("chat.request").await.unwrap();
    let id = request["id"].as_str().unwrap();
    for text in parts {
        client
            .send(json!({"type": "chat.delta", "id": id, "text": text}))
            .await
            .unwrap();
    }
    client
        .send(json!({"type": "chat.end", "id": id,
                     "usage": {"inputTokens": 7, "outputTokens": 2}}))
        .await
        .unwrap();
    request
}

#[tokio::test]
async fn without_an_editor_a_vscode_model_is_503_copilot_unavailable() {
    let daemon = TestDaemon::start().await;
    let openai = daemon
        .post_json("/v1/chat/completions", &openai_chat("vscode/gpt-4o", "hi"))
        .await;
    assert_eq!(openai.status(), 503);
    let body: Value = openai.json().await.unwrap();
    assert_eq!(body["error"]["code"], "copilot_unavailable", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("docs/vscode.md"), "{message}");

    let anthropic = daemon
        .post_json("/v1/messages", &anthropic_chat("vscode/gpt-4o", "hi"))
        .await;
    assert_eq!(anthropic.status(), 503);
    let body: Value = anthropic.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["code"], "copilot_unavailable", "{body}");

    // Listed only while an editor is connected.
    let health = vscode_health(&daemon, "off").await;
    assert!(health["backends"].get("vscode").is_none(), "{health}");
    daemon.stop().await;
}

#[tokio::test]
async fn an_editors_model_streams_back_through_both_facades() {
    let daemon = TestDaemon::start().await;
    let mut client = editor(&daemon, json!({})).await;
    offer(&mut client, &["fake-large", "fake-small"]).await;
    let health = vscode_health(&daemon, "ok").await;
    assert_eq!(
        health["vscode"]["models"],
        json!(["fake-large", "fake-small"])
    );
    assert_eq!(health["backends"]["vscode"], "ok", "{health}");

    let editor_side = tokio::spawn(async move {
        let first = answer(&mut client, &["Hel", "lo"]).await;
        let second = answer(&mut client, &["Bon", "jour"]).await;
        (client, first, second)
    });
    let response = daemon
        .post_json(
            "/v1/chat/completions",
            &openai_chat("vscode/fake-large", "greet"),
        )
        .await;
    assert_eq!(response.status(), 200);
    let chunks = sse_payloads(&response.text().await.unwrap());
    let text: String = chunks
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/content"))
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(text, "Hello");
    assert_eq!(chunks.last(), Some(&json!("[DONE]")));

    let response = daemon
        .post_json(
            "/v1/messages",
            &anthropic_chat("vscode/fake-small", "salut"),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let text: String = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| event["type"] == "content_block_delta")
        .filter_map(|event| event["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Bonjour", "{body}");

    let (editor_client, first, second) = editor_side.await.unwrap();
    assert_eq!(first["model"], "fake-large");
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "user", "content": [{"type": "text", "text": "greet"}]}])
    );
    assert_eq!(second["model"], "fake-small");
    assert_eq!(second["options"]["maxTokens"], 100);

    // The listing routes a bare model name to the editor, too.
    let models: Value = daemon.get_json("/v1/models").await;
    let listed: Vec<(&str, &str)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["owned_by"].as_str().unwrap()))
        .collect();
    assert!(listed.contains(&("fake-large", "vscode")), "{models}");
    // Gone with the editor: the bare name reaches no backend any more.
    editor_client.abort();
    vscode_health(&daemon, "off").await;
    let response = daemon
        .post_json("/v1/chat/completions", &openai_chat("fake-large", "bare"))
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "backend_unavailable", "{body}");
    daemon.stop().await;
}

#[tokio::test]
async fn what_the_editor_cannot_take_is_refused_and_the_token_limit_goes_either_way() {
    let (daemon, mut client) = daemon_with_editor().await;
    let image = json!({"model": "vscode/fake-large", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]});
    let response = daemon.post_json("/v1/chat/completions", &image).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unsupported_content", "{body}");
    client
        .expect_silence(Duration::from_millis(200))
        .await
        .unwrap();

    let pending = daemon.post_in_background(
        "/v1/chat/completions",
        json!({"model": "vscode/fake-large", "max_completion_tokens": 42,
               "messages": [{"role": "user", "content": "short"}]}),
    );
    let request = answer(&mut client, &["ok"]).await;
    assert_eq!(request["options"]["maxTokens"], 42, "{request}");
    assert_eq!(pending.await.unwrap().status(), 200);
    daemon.stop().await;
}

#[tokio::test]
async fn a_client_that_hangs_up_cancels_the_editors_request() {
    let (daemon, mut client) = daemon_with_editor().await;
    let pending = daemon.post_in_background(
        "/v1/chat/completions",
        openai_chat("vscode/fake-large", "SLOW"),
    );
    let request = client.expect("chat.request").await.unwrap();
    let id = request["id"].as_str().unwrap().to_owned();
    client
        .send(json!({"type": "chat.delta", "id": id, "text": "tick "}))
        .await
        .unwrap();
    let mut response = pending.await.unwrap();
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    while !seen.contains("tick") {
        let chunk = response.chunk().await.unwrap().expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(response);
    let cancel = client.expect("chat.cancel").await.unwrap();
    assert_eq!(cancel["id"], id.as_str());
    // A late part of the cancelled request is dropped quietly.
    client
        .send(json!({"type": "chat.delta", "id": id, "text": "late"}))
        .await
        .unwrap();
    client
        .expect_silence(Duration::from_millis(300))
        .await
        .unwrap();
    daemon.stop().await;
}

#[tokio::test]
async fn the_editors_refusals_are_the_facades_errors() {
    let (daemon, mut client) = daemon_with_editor().await;

    // A model the editor does not offer: refused before the editor is asked.
    let response = daemon
        .post_json("/v1/chat/completions", &openai_chat("vscode/gpt-9", "hi"))
        .await;
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "copilot_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fake-large"),
        "{body}"
    );

    for (code, status, facade_code) in [
        ("no_permission", 503, "copilot_unavailable"),
        ("blocked", 403, "upstream_rejected"),
        ("failed", 502, "upstream_error"),
    ] {
        let pending = daemon.post_in_background(
            "/v1/chat/completions",
            openai_chat("vscode/fake-large", "hi"),
        );
        let request = client.expect("chat.request").await.unwrap();
        client
            .send(json!({"type": "chat.end", "id": request["id"],
                         "error": {"code": code, "message": "the user said no"}}))
            .await
            .unwrap();
        let response = pending.await.unwrap();
        assert_eq!(response.status(), status, "{code}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], facade_code, "{code}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("the user said no")
        );
    }

    // No model selectable: the editor's reason reaches the client.
    client
        .send(
            json!({"type": "chat.models", "models": [], "available": false,
                     "reason": "no chat model of vendor copilot is installed"}),
        )
        .await
        .unwrap();
    let health = vscode_health(&daemon, "unavailable").await;
    assert_eq!(health["backends"]["vscode"], "unavailable");
    let response = daemon
        .post_json(
            "/v1/chat/completions",
            &openai_chat("vscode/fake-large", "hi"),
        )
        .await;
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("vendor copilot"),
        "{body}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn an_editor_that_leaves_mid_answer_ends_the_stream_with_an_error() {
    let (daemon, mut client) = daemon_with_editor().await;
    let pending = daemon.post_in_background(
        "/v1/chat/completions",
        openai_chat("vscode/fake-large", "hi"),
    );
    let request = client.expect("chat.request").await.unwrap();
    client
        .send(json!({"type": "chat.delta", "id": request["id"], "text": "partial"}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.abort();
    let response = pending.await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(body.contains("partial"), "{body}");
    assert!(body.contains("disconnected"), "{body}");
    vscode_health(&daemon, "off").await;
    daemon.stop().await;
}

#[tokio::test]
async fn only_trusted_providers_may_offer_models_and_offers_are_checked() {
    let daemon = TestDaemon::start().await;
    let mut client = editor(&daemon, json!({})).await;
    let too_many: Vec<Value> = (0..101).map(|i| json!({"id": format!("m{i}")})).collect();
    client
        .send(json!({"type": "chat.models", "models": too_many, "available": true}))
        .await
        .unwrap();
    let error = client.expect("error").await.unwrap();
    assert_eq!(error["code"], "PAYLOAD_TOO_LARGE", "{error}");
    client
        .send(json!({"type": "chat.models", "models": [{"id": ""}], "available": true}))
        .await
        .unwrap();
    let error = client.expect("error").await.unwrap();
    assert_eq!(error["code"], "INVALID_JSON", "{error}");
    client
        .send(json!({"type": "chat.models", "models": "all of them"}))
        .await
        .unwrap();
    let error = client.expect("error").await.unwrap();
    assert_eq!(error["code"], "INVALID_JSON", "{error}");
    // The connection still serves.
    offer(&mut client, &["fake-large"]).await;
    vscode_health(&daemon, "ok").await;

    // A paired (external) provider is refused: every prompt would pass
    // through it.
    let mut stranger = ProviderClient::connect(&daemon.ws_url("/")).await.unwrap();
    stranger
        .send(json!({"type": "auth", "mode": "pair", "name": "tab"}))
        .await
        .unwrap();
    stranger.expect("auth.pairing").await.unwrap();
    let pairings = daemon.rpc("gateway.pairings", json!({})).await;
    let code = pairings["result"][0]["code"].as_str().unwrap().to_owned();
    stranger
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    stranger.expect("sessions").await.unwrap();
    stranger.hello("tab", json!({})).await.unwrap();
    offer(&mut stranger, &["evil"]).await;
    let error = stranger.expect("error").await.unwrap();
    assert_eq!(error["code"], "UNAUTHORIZED", "{error}");
    let health = daemon.health().await;
    assert_eq!(
        health["vscode"]["models"],
        json!(["fake-large"]),
        "{health}"
    );
    daemon.stop().await;
}
