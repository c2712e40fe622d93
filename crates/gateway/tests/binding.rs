//! Session binding: one session, `"all"` with `session.ready`, the session
//! list every authenticated connection hears, rebinding, reconnect tokens
//! and identity protection.

use std::time::Duration;

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::auth::{assert_error, local_message, local_recv, rejected};
use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};

/// Waits (bounded) for something the gateway does after a socket event it
/// cannot announce (a dropped connection).
pub async fn wait_until(mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Answers the next `tool.call` with `data`.
async fn serve_one(client: &mut ProviderClient, data: Value) -> Value {
    let request = client.expect("tool.call").await.unwrap();
    client
        .send(json!({"type": "tool.result", "id": request["id"], "data": data}))
        .await
        .unwrap();
    request
}

#[tokio::test]
async fn an_all_bound_provider_joins_new_sessions_only_after_session_ready() {
    let gw = TestGateway::start().await;
    gw.create_session("second");
    let mut local = gw.gateway.connect_local();
    local_recv(&mut local).await; // sessions
    local
        .send(local_message(json!({"type": "hello", "name": "everywhere", "protocolVersion": 2, "session": "all", "tools": [tool("all_tool")]})))
        .unwrap();
    let ack = local_recv(&mut local).await;
    assert_eq!(ack["sessions"], json!(["default", "second"]));
    assert!(gw.session("default").tool("all_tool").is_some());
    assert!(gw.session("second").tool("all_tool").is_some());

    let third = gw.create_session("third");
    let updated = local_recv(&mut local).await;
    assert_eq!(updated["type"], "sessions.updated");
    assert_eq!(updated["active"].as_array().unwrap().len(), 3);
    let started = local_recv(&mut local).await;
    assert_eq!(started["type"], "session.lifecycle");
    assert_eq!(started["state"], "started");
    assert_eq!(started["sessionId"], "third");
    assert!(
        third.tool("all_tool").is_none(),
        "no tools before session.ready"
    );

    local
        .send(local_message(
            json!({"type": "session.ready", "sessionId": "third"}),
        ))
        .unwrap();
    // session.ready has no answer; a call proves it was processed.
    let call = gw.call("third", "all_tool", json!({"x": "3"}));
    let request = local_recv(&mut local).await;
    assert_eq!(request["type"], "tool.call");
    assert_eq!(request["sessionId"], "third");
    local
        .send(local_message(
            json!({"type": "tool.result", "id": request["id"], "data": "third"}),
        ))
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!("third"));

    // A second session.ready for it, or one for no pending session, is
    // INVALID_SESSION; the connection stays.
    for session in ["third", "nope"] {
        local
            .send(local_message(
                json!({"type": "session.ready", "sessionId": session}),
            ))
            .unwrap();
        let error = local_recv(&mut local).await;
        assert_error(&error, "INVALID_SESSION", "session.ready");
        assert_eq!(error["sessionId"], session);
    }
}

#[tokio::test]
async fn session_ready_from_a_single_session_provider_is_invalid_session() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw
        .provider("single", json!({"tools": [tool("s_tool")]}))
        .await;
    gw.create_session("later");
    client.expect("sessions.updated").await.unwrap();
    let error = rejected(
        &mut client,
        json!({"type": "session.ready", "sessionId": "later"}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "session.ready");
    assert!(gw.session("later").tool("s_tool").is_none());
}

#[tokio::test]
async fn sessions_updated_reaches_every_authenticated_connection() {
    let gw = TestGateway::start().await;
    let mut awaiting_hello = ProviderClient::connect(&gw.url).await.unwrap();
    awaiting_hello
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    let (mut bound, _) = gw.provider("bound", json!({})).await;
    let mut unauthenticated = ProviderClient::connect(&gw.url).await.unwrap();

    gw.create_session("fresh");
    for client in [&mut awaiting_hello, &mut bound] {
        let updated = client.expect("sessions.updated").await.unwrap();
        let active = updated["active"].as_array().unwrap();
        let fresh = active.iter().find(|s| s["id"] == "fresh").unwrap();
        assert!(fresh.get("cwd").is_none(), "not this provider's session");
        let default = active.iter().find(|s| s["id"] == "default").unwrap();
        assert!(default["cwd"].is_string());
        assert!(updated.get("token").is_none());
    }
    gw.gateway
        .registry()
        .end("fresh", Some(Duration::from_millis(100)))
        .await
        .unwrap();
    for client in [&mut awaiting_hello, &mut bound] {
        let updated = client.expect("sessions.updated").await.unwrap();
        assert_eq!(updated["active"].as_array().unwrap().len(), 1);
    }
    unauthenticated
        .expect_silence(Duration::from_millis(50))
        .await
        .unwrap();
}

#[tokio::test]
async fn rebinding_removes_the_old_state_first_and_cancels_in_flight_calls() {
    let gw = TestGateway::start().await;
    gw.create_session("next");
    let mut local = gw.gateway.connect_local();
    local_recv(&mut local).await;
    local
        .send(local_message(json!({"type": "hello", "name": "mover", "protocolVersion": 2, "session": "default", "tools": [tool("old_tool")], "context": "old context"})))
        .unwrap();
    let first = local_recv(&mut local).await;
    assert_eq!(first["type"], "hello.ack");
    assert_eq!(gw.session("default").context().len(), 1);

    let call = gw.call("default", "old_tool", json!({}));
    let request = local_recv(&mut local).await;
    assert_eq!(request["type"], "tool.call");
    local
        .send(local_message(json!({"type": "hello", "name": "mover", "protocolVersion": 2, "session": "next", "tools": [tool("new_tool")]})))
        .unwrap();
    let cancel = local_recv(&mut local).await;
    assert_eq!(cancel["type"], "tool.cancel");
    assert_eq!(cancel["id"], request["id"]);
    let outcome = call.await.unwrap();
    assert_eq!(outcome.result.unwrap_err().code, "CANCELLED");
    let second = local_recv(&mut local).await;
    assert_eq!(second["type"], "hello.ack");
    assert_ne!(second["reconnectToken"], first["reconnectToken"]);
    assert_eq!(second["providerId"], first["providerId"], "same provider");
    assert_eq!(second["sessions"], json!(["next"]));
    let default = gw.session("default");
    assert!(default.tool("old_tool").is_none());
    assert!(default.context().is_empty(), "old context removed");
    assert!(gw.session("next").tool("new_tool").is_some());
    // A late result for the cancelled call is ignored.
    local
        .send(local_message(
            json!({"type": "tool.result", "id": request["id"], "data": "late"}),
        ))
        .unwrap();
    // The old reconnect token no longer takes the identity over.
    let mut thief = gw.gateway.connect_local();
    local_recv(&mut thief).await;
    thief
        .send(local_message(json!({"type": "hello", "name": "mover", "protocolVersion": 2, "session": "next", "reconnectToken": first["reconnectToken"]})))
        .unwrap();
    let error = local_recv(&mut thief).await;
    assert_error(&error, "DUPLICATE_INSTANCE", "hello");
    assert!(gw.session("next").tool("new_tool").is_some());
}

#[tokio::test]
async fn a_failed_rebind_leaves_the_provider_unbound_but_connected() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw
        .provider("fail", json!({"tools": [tool("f_tool")]}))
        .await;
    let error = rejected(
        &mut client,
        json!({"type": "hello", "name": "fail", "protocolVersion": 2, "session": "missing", "tools": [tool("f_tool")]}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "hello");
    assert!(gw.session("default").tool("f_tool").is_none());
    let error = rejected(
        &mut client,
        json!({"type": "tool.result", "id": "c-1", "data": 1}),
    )
    .await;
    assert_error(&error, "INVALID_SESSION", "tool.result");
    client
        .hello("fail", json!({"tools": [tool("f_tool")]}))
        .await
        .unwrap();
    let call = gw.call("default", "f_tool", json!({}));
    serve_one(&mut client, json!(1)).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!(1));
}

#[tokio::test]
async fn the_eleventh_rebind_in_a_minute_is_rate_limited() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw
        .provider("churn", json!({"tools": [tool("c_tool")]}))
        .await;
    for _ in 0..10 {
        client
            .hello("churn", json!({"tools": [tool("c_tool")]}))
            .await
            .unwrap();
    }
    let error = rejected(
        &mut client,
        json!({"type": "hello", "name": "churn", "protocolVersion": 2, "tools": [tool("other")]}),
    )
    .await;
    assert_error(&error, "RATE_LIMITED", "hello");
    // The binding in place is kept.
    let call = gw.call("default", "c_tool", json!({}));
    serve_one(&mut client, json!("still here")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("still here"));
}

#[tokio::test]
async fn a_second_claim_of_a_live_identity_is_duplicate_instance() {
    let gw = TestGateway::start().await;
    let fields = json!({"instance": "tab-1", "tools": [tool("d_tool")]});
    let (mut first, ack) = gw.provider("dup", fields.clone()).await;
    let mut second = ProviderClient::connect(&gw.url).await.unwrap();
    second
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    let mut hello = json!({"type": "hello", "name": "dup", "protocolVersion": 2});
    hello
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    let error = rejected(&mut second, hello.clone()).await;
    assert_error(&error, "DUPLICATE_INSTANCE", "hello");
    hello["reconnectToken"] = json!("tok-not-the-right-one");
    let error = rejected(&mut second, hello).await;
    assert_error(&error, "DUPLICATE_INSTANCE", "hello");
    // The first connection is unaffected.
    let call = gw.call("default", "d_tool", json!({}));
    serve_one(&mut first, json!("first")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("first"));
    // Another instance is a different identity.
    let other = second
        .hello("dup", json!({"instance": "tab-2"}))
        .await
        .unwrap();
    assert_ne!(other["providerId"], ack["providerId"]);
}

#[tokio::test]
async fn a_reconnect_token_takes_over_a_live_connection_and_restores_the_binding() {
    let gw = TestGateway::start().await;
    gw.create_session("elsewhere");
    let (mut old, ack) = gw
        .provider(
            "phoenix",
            json!({
                "instance": "i1",
                "tools": [tool("p_tool")],
                "context": "phoenix context",
                "hooks": {"onPreToolUse": [{"match": {"tool": "shell"}, "action": "context", "content": "careful"}]}
            }),
        )
        .await;
    let pending = gw.call("default", "p_tool", json!({}));
    old.expect("tool.call").await.unwrap();

    let mut new = ProviderClient::connect(&gw.url).await.unwrap();
    new.authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    let restored = new
        .hello(
            "phoenix",
            json!({"instance": "i1", "reconnectToken": ack["reconnectToken"]}),
        )
        .await
        .unwrap();
    assert_eq!(restored["providerId"], ack["providerId"]);
    assert_ne!(restored["reconnectToken"], ack["reconnectToken"]);
    assert_eq!(restored["sessions"], json!(["default"]));
    let (close, _) = old.expect_close().await.unwrap();
    assert_eq!(close, Some(1000));
    // In-flight calls of the old connection end DISCONNECTED, not replayed.
    assert_eq!(
        pending.await.unwrap().result.unwrap_err().code,
        "DISCONNECTED"
    );
    let default = gw.session("default");
    assert_eq!(default.context().len(), 1, "context restored");
    assert_eq!(default.rule_count("phoenix#i1"), 1, "hook rules restored");
    let call = gw.call("default", "p_tool", json!({}));
    let request = serve_one(&mut new, json!("new")).await;
    assert_eq!(request["tool"], "p_tool");
    assert_eq!(call.await.unwrap().result.unwrap(), json!("new"));
}

/// A provider with `l_tool` crashes; `wait` later a new connection sends
/// `hello` with only its `reconnectToken`. The old ack, the new connection
/// and the gateway's answer to that `hello`.
async fn reconnect_after_drop(
    ttl: Duration,
    wait: Duration,
) -> (Value, ProviderClient, Value, TestGateway) {
    let settings = bridge_gateway::GatewaySettings {
        reconnect_token_ttl: ttl,
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let (mut old, ack) = gw
        .provider("lazarus", json!({"tools": [tool("l_tool")]}))
        .await;
    let pending = gw.call("default", "l_tool", json!({}));
    old.expect("tool.call").await.unwrap();
    old.abort();
    // A crash: tools leave, in-flight calls end DISCONNECTED.
    assert_eq!(
        pending.await.unwrap().result.unwrap_err().code,
        "DISCONNECTED"
    );
    wait_until(|| gw.session("default").tool("l_tool").is_none()).await;
    tokio::time::sleep(wait).await;
    let mut new = ProviderClient::connect(&gw.url).await.unwrap();
    new.authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    new.send(json!({"type": "hello", "name": "lazarus", "protocolVersion": 2, "reconnectToken": ack["reconnectToken"]}))
        .await
        .unwrap();
    let answer = new.recv().await.unwrap();
    // Nothing is replayed to the new connection.
    new.expect_silence(Duration::from_millis(50)).await.unwrap();
    (ack, new, answer, gw)
}

#[tokio::test]
async fn a_reconnect_within_the_ttl_restores_identity_and_tools() {
    let (ack, _new, restored, gw) =
        reconnect_after_drop(Duration::from_secs(5), Duration::ZERO).await;
    assert_eq!(restored["type"], "hello.ack", "{restored}");
    assert_eq!(restored["providerId"], ack["providerId"]);
    assert!(gw.session("default").tool("l_tool").is_some());
}

#[tokio::test]
async fn a_reconnect_after_the_ttl_is_refused_and_a_fresh_hello_registers() {
    let (ack, mut new, answer, gw) =
        reconnect_after_drop(Duration::from_millis(100), Duration::from_millis(150)).await;
    // Not a registration with no tools that looks like a reconnect.
    assert_error(&answer, "RECONNECT_EXPIRED", "hello");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("send hello again"),
        "{answer}"
    );
    assert!(
        gw.gateway.status().providers.is_empty(),
        "nothing registered"
    );
    // The connection stays open, unbound: a hello with the tools registers.
    let fresh = new
        .hello("lazarus", json!({"tools": [tool("l_tool")]}))
        .await
        .unwrap();
    assert_ne!(fresh["providerId"], ack["providerId"]);
    let call = gw.call("default", "l_tool", json!({}));
    serve_one(&mut new, json!("back")).await;
    assert_eq!(call.await.unwrap().result.unwrap(), json!("back"));
}

#[tokio::test]
async fn an_unknown_reconnect_token_restores_nothing_and_says_so() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    let error = rejected(
        &mut client,
        json!({"type": "hello", "name": "stranger", "protocolVersion": 2, "session": "default", "reconnectToken": "tok-never-issued"}),
    )
    .await;
    assert_error(&error, "RECONNECT_EXPIRED", "hello");
    // The identity was not kept reserved by the refused hello...
    let ack = client
        .hello("stranger", json!({"tools": [tool("s_tool")]}))
        .await
        .unwrap();
    assert_eq!(ack["sessions"], json!(["default"]));
    // ...and a hello that declares its state with an unknown token (the
    // spec's browser provider does so) is a fresh registration.
    let mut other = ProviderClient::connect(&gw.url).await.unwrap();
    other
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    other
        .hello(
            "other",
            json!({"tools": [tool("o_tool")], "reconnectToken": "tok-never-issued"}),
        )
        .await
        .unwrap();
    assert!(gw.session("default").tool("o_tool").is_some());
    assert!(gw.session("default").tool("s_tool").is_some());
}
