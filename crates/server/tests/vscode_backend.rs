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
use crate::support::{Setup, TestDaemon};

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

fn call(daemon: &TestDaemon, name: &str, arguments: Value) -> impl Future<Output = Value> {
    daemon.rpc(
        "session.tools.call",
        json!({"session": "default", "name": name, "arguments": arguments}),
    )
}

#[tokio::test]
async fn declared_access_puts_provider_tools_under_the_workspace_policy() {
    let daemon = TestDaemon::with(
        Setup::default().file(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n"),
    )
    .await;
    let tools = json!([
        {"name": "vscode_read", "description": "read", "access": {"reads": ["path"]},
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "vscode_apply_diff", "description": "patch", "access": {"diffs": ["unifiedDiff"]},
         "parameters": {"type": "object", "properties": {"unifiedDiff": {"type": "string"}}}},
    ]);
    let mut client = editor(&daemon, json!({"tools": tools})).await;
    // Outside the workspace, or a write the policy does not allow: refused
    // before the editor hears of it.
    let outside = call(&daemon, "vscode_read", json!({"path": "../secret.txt"})).await;
    assert!(outside["error"].is_object(), "{outside}");
    let diff = "--- a/README.md\n+++ b/README.md\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    let denied = call(&daemon, "vscode_apply_diff", json!({"unifiedDiff": diff})).await;
    let message = denied["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("README.md"), "{denied}");
    let garbage = call(&daemon, "vscode_read", json!({"path": 42})).await;
    assert!(garbage["error"].is_object(), "{garbage}");
    client
        .expect_silence(Duration::from_millis(200))
        .await
        .unwrap();

    // Allowed ones reach the editor.
    let allowed_diff = "--- a/src/a.js\n+++ b/src/a.js\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    let pending = daemon.post_in_background(
        "/rpc",
        json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call",
               "params": {"session": "default", "name": "vscode_apply_diff",
                          "arguments": {"unifiedDiff": allowed_diff}}}),
    );
    let tool_call = client.expect("tool.call").await.unwrap();
    assert_eq!(tool_call["tool"], "vscode_apply_diff");
    client
        .send(json!({"type": "tool.result", "id": tool_call["id"], "data": {"ok": true}}))
        .await
        .unwrap();
    let answer: Value = pending.await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["result"]["ok"], true, "{answer}");
    daemon.stop().await;
}

/// An in-process editor (the gateway's internal trust level) offering one
/// model; what it is sent.
async fn local_editor(daemon: &TestDaemon) -> bridge_gateway::LocalProvider {
    use bridge_protocol::provider::ProviderMessage;
    let mut local = daemon.ctx.gateway.connect_local();
    let hello: ProviderMessage = serde_json::from_value(
        json!({"type": "hello", "name": "vscode", "protocolVersion": 2, "session": "all"}),
    )
    .unwrap();
    local.send(hello).unwrap();
    loop {
        let message = local.recv().await.expect("the gateway answers the hello");
        if message.type_name() == "hello.ack" {
            break;
        }
    }
    let offer: ProviderMessage = serde_json::from_value(
        json!({"type": "chat.models", "available": true, "models": [{"id": "slowpoke"}]}),
    )
    .unwrap();
    local.send(offer).unwrap();
    local
}

/// The next `chat.*` message the editor is sent, as JSON.
async fn next_chat_message(local: &mut bridge_gateway::LocalProvider) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), local.recv())
            .await
            .expect("a message within 5 s")
            .expect("the connection stays open");
        if message.type_name().starts_with("chat.") {
            return serde_json::to_value(&message).unwrap();
        }
    }
}

#[tokio::test]
async fn an_editor_that_goes_quiet_times_out_and_is_told_to_stop() {
    use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, LlmError, Message, Role};
    use bridge_protocol::provider::ProviderMessage;
    use bridge_server::vscode::VscodeBackend;
    use futures::StreamExt;

    let daemon = TestDaemon::start().await;
    let mut local = local_editor(&daemon).await;
    vscode_health(&daemon, "ok").await;
    let backend = VscodeBackend::new(daemon.ctx.gateway.clone())
        .with_patience(Duration::from_millis(300), Duration::from_millis(300));
    let request = ChatRequest {
        model: Some("slowpoke".into()),
        messages: vec![Message::text(Role::User, "hi")],
        ..ChatRequest::default()
    };

    // No first part: a timeout (504 at the facade), and the editor is told.
    let started = std::time::Instant::now();
    let error = backend.stream(request.clone()).await.err().unwrap();
    assert!(matches!(error, LlmError::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let sent = next_chat_message(&mut local).await;
    assert_eq!(sent["type"], "chat.request");
    let cancel = next_chat_message(&mut local).await;
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));

    // A pause after the first part: the stream ends with the timeout.
    let answering = tokio::spawn(async move {
        let sent = next_chat_message(&mut local).await;
        let delta: ProviderMessage = serde_json::from_value(
            json!({"type": "chat.delta", "id": sent["id"], "text": "thinking"}),
        )
        .unwrap();
        local.send(delta).unwrap();
        let cancel = next_chat_message(&mut local).await;
        (sent, cancel)
    });
    let mut stream = backend.stream(request).await.unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ChatEvent::TextDelta {
            text: "thinking".into()
        }
    );
    let error = stream.next().await.unwrap().err().unwrap();
    assert!(matches!(error, LlmError::Timeout { .. }), "{error}");
    drop(stream);
    let (sent, cancel) = answering.await.unwrap();
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));
    daemon.stop().await;
}

#[tokio::test]
async fn an_answer_nobody_reads_is_cancelled_not_buffered_without_bound() {
    use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, Message, Role};
    use bridge_protocol::provider::ProviderMessage;
    use bridge_server::vscode::VscodeBackend;
    use futures::StreamExt;

    let daemon = TestDaemon::start().await;
    let mut local = local_editor(&daemon).await;
    vscode_health(&daemon, "ok").await;
    let backend = VscodeBackend::new(daemon.ctx.gateway.clone());
    let request = ChatRequest {
        model: Some("slowpoke".into()),
        messages: vec![Message::text(Role::User, "write a lot")],
        ..ChatRequest::default()
    };
    let flooding = tokio::spawn(async move {
        let sent = next_chat_message(&mut local).await;
        let chunk = "x".repeat(2 << 20);
        for _ in 0..10 {
            let delta: ProviderMessage = serde_json::from_value(
                json!({"type": "chat.delta", "id": sent["id"], "text": chunk}),
            )
            .unwrap();
            local.send(delta).unwrap();
        }
        (sent, next_chat_message(&mut local).await)
    });
    // The first part answers the head; nothing more is read meanwhile.
    let mut stream = backend.stream(request).await.unwrap();
    let (sent, cancel) = flooding.await.unwrap();
    assert_eq!(cancel, json!({"type": "chat.cancel", "id": sent["id"]}));
    let mut received = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(ChatEvent::TextDelta { text }) => received += text.len(),
            other => last = Some(other),
        }
    }
    assert!(received <= 16 << 20, "{received} bytes were kept");
    let error = last.unwrap().err().unwrap().to_string();
    assert!(error.contains("did not read"), "{error}");
    daemon.stop().await;
}
