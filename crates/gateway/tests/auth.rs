//! Trust levels and authentication: project tokens, the pairing flow of
//! external providers, and what each level may bind to or declare.

use std::time::Duration;

use bridge_protocol::provider::{GatewayMessage, ProviderMessage};
use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};

/// A paired external provider and everything it received while pairing.
pub struct Paired {
    pub client: ProviderClient,
    pub sessions: Value,
    pub code: String,
    pub received: Vec<Value>,
}

/// Runs the pairing flow as a user would: the provider asks, the code is
/// read where the user sees it (the gateway's pending pairings), the
/// provider confirms it.
pub async fn pair(gw: &TestGateway, who: &str, session: Option<&str>) -> Paired {
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    let mut request = json!({"type": "auth", "mode": "pair", "name": who});
    if let Some(session) = session {
        request["session"] = json!(session);
    }
    client.send(request).await.unwrap();
    let prompt = client.expect("auth.pairing").await.unwrap();
    let code = pending_code(gw, who);
    client
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    let sessions = client.expect("sessions").await.unwrap();
    Paired {
        client,
        received: vec![prompt, sessions.clone()],
        sessions,
        code,
    }
}

/// The pairing code shown for the provider that called itself `who`.
pub fn pending_code(gw: &TestGateway, who: &str) -> String {
    gw.gateway
        .pending_pairings()
        .into_iter()
        .find(|p| p.requested_by.contains(&format!("'{who}'")))
        .unwrap_or_else(|| panic!("no pending pairing for {who}"))
        .code
}

/// Asserts an `error` with `code` answering `reply_to`.
pub fn assert_error(message: &Value, code: &str, reply_to: &str) {
    assert_eq!(message["type"], "error", "expected an error, got {message}");
    assert_eq!(message["code"], code, "{message}");
    assert_eq!(message["replyTo"], reply_to, "{message}");
}

/// Sends `message` and returns the `error` it gets.
pub async fn rejected(client: &mut ProviderClient, message: Value) -> Value {
    client.send(message).await.unwrap();
    client.expect("error").await.unwrap()
}

/// The fatal path: an `error` with `code`, then close 1008.
pub async fn assert_fatal(client: &mut ProviderClient, code: &str, reply_to: Option<&str>) {
    let (close, before) = client.expect_close().await.unwrap();
    let error = before
        .last()
        .unwrap_or_else(|| panic!("no error before the close"));
    assert_eq!(error["type"], "error");
    assert_eq!(error["code"], code, "{error}");
    if let Some(reply_to) = reply_to {
        assert_eq!(error["replyTo"], reply_to);
    }
    assert_eq!(close, Some(1008), "fatal errors close with 1008");
}

#[tokio::test]
async fn project_token_gets_sessions_without_token_and_sees_cwd_only_of_its_session() {
    let gw = TestGateway::start().await;
    gw.create_session("other");
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    let sessions = client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    assert!(sessions.get("token").is_none());
    let active = sessions["active"].as_array().unwrap();
    assert_eq!(active.len(), 2);
    let by_id = |id: &str| active.iter().find(|s| s["id"] == id).unwrap().clone();
    assert!(by_id("default")["cwd"].is_string());
    assert!(
        by_id("other").get("cwd").is_none(),
        "cwd only for sessions the provider may use"
    );
}

#[tokio::test]
async fn an_unknown_token_is_fatal_auth_failed() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "token": "ptk-0123456789abcdef0123456789abcdef"}))
        .await
        .unwrap();
    assert_fatal(&mut client, "AUTH_FAILED", Some("auth")).await;
    // Others are unaffected.
    let (mut other, _) = gw.provider("other", json!({"tools": [tool("t")]})).await;
    let call = gw.call("default", "t", json!({}));
    let request = other.expect("tool.call").await.unwrap();
    other
        .send(json!({"type": "tool.result", "id": request["id"], "data": 1}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(1));
}

#[tokio::test]
async fn the_token_of_an_ended_session_is_refused() {
    let gw = TestGateway::start().await;
    gw.create_session("brief");
    let token = gw.project_token("brief");
    gw.gateway
        .registry()
        .end("brief", Some(Duration::from_millis(50)))
        .await
        .unwrap();
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "token": token}))
        .await
        .unwrap();
    assert_fatal(&mut client, "AUTH_FAILED", Some("auth")).await;
}

#[tokio::test]
async fn pairing_shows_the_code_to_the_user_only_and_issues_a_reconnect_token() {
    let gw = TestGateway::start().await;
    let mut paired = pair(&gw, "browser", None).await;
    assert_eq!(paired.code.len(), 6);
    assert!(paired.code.chars().all(|c| c.is_ascii_digit()));
    assert!(
        paired.received[0]["prompt"].as_str().unwrap().len() > 10,
        "auth.pairing carries a prompt"
    );
    // The code travels through the user: it is in the timeline...
    let timeline = gw.session("default").timeline(50);
    assert!(
        timeline.iter().any(|e| e.text.contains(&paired.code)),
        "pairing code in the session timeline: {timeline:?}"
    );
    // ...and never on the provider's connection.
    let token = paired.sessions["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("ext-tok-"));
    assert_eq!(paired.sessions["active"][0]["id"], "default");
    let ack = paired
        .client
        .hello("browser", json!({"tools": [tool("page_title")]}))
        .await
        .unwrap();
    assert_eq!(ack["sessions"], json!(["default"]));
    assert!(
        ack.get("persistDir").is_none(),
        "no persistDir for browsers"
    );
    paired.received.push(ack);
    for frame in &paired.received {
        assert!(
            !frame.to_string().contains(&paired.code),
            "the pairing code leaked to the provider in {frame}"
        );
    }
    assert!(gw.gateway.pending_pairings().is_empty());

    // The issued token re-authenticates at the external level.
    paired.client.close().await;
    let mut again = ProviderClient::connect(&gw.url).await.unwrap();
    let sessions = again.authenticate(&token).await.unwrap();
    assert!(
        sessions.get("token").is_none(),
        "token only right after pairing"
    );
    let error = rejected(
        &mut again,
        json!({"type": "hello", "name": "browser", "protocolVersion": 2, "session": "all"}),
    )
    .await;
    assert_error(&error, "UNAUTHORIZED", "hello");
    again
        .hello("browser", json!({"tools": [tool("page_title")]}))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_wrong_pairing_code_is_fatal() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "mode": "pair", "name": "guesser"}))
        .await
        .unwrap();
    client.expect("auth.pairing").await.unwrap();
    let code = pending_code(&gw, "guesser");
    let wrong = if code == "000000" { "000001" } else { "000000" };
    client
        .send(json!({"type": "auth.confirm", "code": wrong}))
        .await
        .unwrap();
    assert_fatal(&mut client, "AUTH_FAILED", Some("auth.confirm")).await;
    assert!(
        gw.gateway.pending_pairings().is_empty(),
        "a wrong guess ends the pairing"
    );
}

#[tokio::test]
async fn pairing_attempts_are_limited_gateway_wide_without_closing() {
    let gw = TestGateway::start().await;
    let mut clients = Vec::new();
    for i in 0..5 {
        let mut client = ProviderClient::connect(&gw.url).await.unwrap();
        client
            .send(json!({"type": "auth", "mode": "pair", "name": format!("p{i}")}))
            .await
            .unwrap();
        client.expect("auth.pairing").await.unwrap();
        clients.push(client);
    }
    let mut sixth = ProviderClient::connect(&gw.url).await.unwrap();
    let error = rejected(
        &mut sixth,
        json!({"type": "auth", "mode": "pair", "name": "p6"}),
    )
    .await;
    assert_error(&error, "RATE_LIMITED", "auth");
    assert_eq!(
        gw.gateway.pending_pairings().len(),
        5,
        "no code shown for p6"
    );
    // Not fatal: the connection can still authenticate another way.
    sixth
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    // And the pairings already shown still complete.
    let code = pending_code(&gw, "p0");
    clients[0]
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    let sessions = clients[0].expect("sessions").await.unwrap();
    assert!(sessions["token"].is_string());
}

#[tokio::test]
async fn external_providers_get_tools_and_static_state_only() {
    let gw = TestGateway::start().await;
    gw.create_session("other");
    let mut paired = pair(&gw, "ext", None).await;
    let client = &mut paired.client;
    let hello = |fields: Value| {
        let mut hello = json!({"type": "hello", "name": "ext", "protocolVersion": 2});
        hello
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        hello
    };
    let cases = [
        (json!({"context": "ambient"}), "UNAUTHORIZED"),
        (json!({"startup_context": "hi"}), "UNAUTHORIZED"),
        (json!({"subscribe": ["user.message"]}), "UNAUTHORIZED"),
        (json!({"subscribe": ["assistant.intent"]}), "UNAUTHORIZED"),
        (
            json!({"hooks": {"onPreToolUse": [{"match": {"tool": "shell"}, "action": "deny", "reason": "no"}]}}),
            "UNAUTHORIZED",
        ),
        (
            json!({"hooks": {"transforms": {"custom_instructions": {"action": "callback"}}}}),
            "UNAUTHORIZED",
        ),
        (json!({"session": "all"}), "UNAUTHORIZED"),
        (json!({"session": "other"}), "INVALID_SESSION"),
        (json!({"session": "nope"}), "INVALID_SESSION"),
    ];
    for (fields, code) in cases {
        let error = rejected(client, hello(fields.clone())).await;
        assert_error(&error, code, "hello");
        assert!(
            gw.session("default").tool("ext_tool").is_none(),
            "{fields} registered nothing"
        );
    }
    // Still connected, and what external providers may do works.
    let ack = client
        .hello(
            "ext",
            json!({
                "session": "default",
                "tools": [tool("ext_tool")],
                "subscribe": ["tool.execution_complete"],
                "hooks": {"transforms": {"custom_instructions": {"action": "append", "content": "use pnpm"}}}
            }),
        )
        .await
        .unwrap();
    assert_eq!(ack["sessions"], json!(["default"]));
    assert!(gw.session("default").tool("ext_tool").is_some());
}

#[tokio::test]
async fn project_providers_are_scoped_to_their_session() {
    let gw = TestGateway::start().await;
    gw.create_session("other");
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    let base = json!({"type": "hello", "name": "proj", "protocolVersion": 2, "tools": [tool("proj_tool")]});
    let with = |session: &str| {
        let mut hello = base.clone();
        hello["session"] = json!(session);
        hello
    };
    let error = rejected(&mut client, with("other")).await;
    assert_error(&error, "INVALID_SESSION", "hello");
    assert_eq!(error["sessionId"], "other");
    let error = rejected(&mut client, with("all")).await;
    assert_error(&error, "UNAUTHORIZED", "hello");
    assert!(gw.session("other").tool("proj_tool").is_none());
    // Omitted: stamped with its session.
    client.send(base).await.unwrap();
    let ack = client.expect("hello.ack").await.unwrap();
    assert_eq!(ack["sessions"], json!(["default"]));
    assert!(ack["persistDir"].as_str().unwrap().ends_with("/proj/"));
    let call = gw.call("default", "proj_tool", json!({}));
    let request = client.expect("tool.call").await.unwrap();
    assert_eq!(request["sessionId"], "default");
    client
        .send(json!({"type": "tool.result", "id": request["id"], "data": "ok"}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("ok"));
}

/// An in-process provider's message, from JSON.
pub fn local_message(value: Value) -> ProviderMessage {
    serde_json::from_value(value).unwrap()
}

/// The next message to an in-process provider, as JSON.
pub async fn local_recv(provider: &mut bridge_gateway::LocalProvider) -> Value {
    let message: GatewayMessage = tokio::time::timeout(Duration::from_secs(5), provider.recv())
        .await
        .expect("no message within 5 s")
        .expect("connection closed");
    serde_json::to_value(message).unwrap()
}

#[tokio::test]
async fn internal_providers_skip_auth_and_may_bind_anywhere() {
    let gw = TestGateway::start_with(fast_settings(), fast_registry_settings()).await;
    gw.create_session("other");
    let mut local = gw.gateway.connect_local();
    let sessions = local_recv(&mut local).await;
    assert_eq!(sessions["type"], "sessions");
    assert_eq!(sessions["active"].as_array().unwrap().len(), 2);
    assert!(
        sessions["active"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["cwd"].is_string())
    );
    local
        .send(local_message(json!({"type": "hello", "name": "tap", "protocolVersion": 2, "session": "other", "tools": [tool("tap_tool")]})))
        .unwrap();
    let ack = local_recv(&mut local).await;
    assert_eq!(ack["type"], "hello.ack");
    assert_eq!(ack["sessions"], json!(["other"]));
    assert!(gw.session("other").tool("tap_tool").is_some());
    assert!(gw.session("default").tool("tap_tool").is_none());
    local
        .send(local_message(json!({"type": "hello", "name": "tap", "protocolVersion": 2, "session": "all", "tools": [tool("tap_tool")]})))
        .unwrap();
    let ack = local_recv(&mut local).await;
    assert_eq!(ack["type"], "hello.ack");
    assert_eq!(ack["sessions"], json!(["default", "other"]));
    // Auth is never needed, and never accepted.
    local
        .send(local_message(json!({"type": "auth", "token": "x"})))
        .unwrap();
    let error = local_recv(&mut local).await;
    assert_error(&error, "UNAUTHORIZED", "auth");
    let call = gw.call("default", "tap_tool", json!({}));
    let request = local_recv(&mut local).await;
    assert_eq!(request["type"], "tool.call");
    local
        .send(local_message(
            json!({"type": "tool.result", "id": request["id"], "data": "local"}),
        ))
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("local"));
}
