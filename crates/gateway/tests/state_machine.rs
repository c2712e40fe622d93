//! The connection state machine: what each state accepts, which errors an
//! illegal message gets, and which of them close the connection.

use std::time::Duration;

use bridge_testkit::ProviderClient;
use serde_json::{Value, json};

use crate::auth::{assert_error, assert_fatal, pending_code, rejected};
use crate::support::{TestGateway, fast_registry_settings, fast_settings, tool};

/// One well-formed message of each provider type but `auth`,
/// `auth.confirm` and `hello`.
fn session_messages() -> Vec<Value> {
    vec![
        json!({"type": "goodbye"}),
        json!({"type": "session.ready", "sessionId": "default"}),
        json!({"type": "shutdown.ready", "sessionId": "default"}),
        json!({"type": "tool.result", "id": "c-1", "data": 1}),
        json!({"type": "tool.progress", "id": "c-1", "message": "50%"}),
        json!({"type": "gate.result", "gateId": "g", "callId": "g-1", "decision": "allow"}),
        json!({"type": "transform.result", "callId": "t-1", "content": "x"}),
        json!({"type": "push", "event": "e", "level": "keep"}),
        json!({"type": "tools.update", "requestId": "r1", "tools": []}),
        json!({"type": "hooks.update", "requestId": "r2"}),
        json!({"type": "context.update", "requestId": "r3", "context": "c"}),
        json!({"type": "filter.set", "requestId": "r4", "stream": "s", "rules": []}),
        json!({"type": "stream.query", "queryId": "q", "streams": ["s"]}),
    ]
}

fn hello(fields: Value) -> Value {
    let mut hello = json!({"type": "hello", "name": "sm", "protocolVersion": 2});
    hello
        .as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    hello
}

async fn assert_unknown_type_keeps_connection(client: &mut ProviderClient) {
    let error = rejected(client, json!({"type": "mystery.message", "x": 1})).await;
    assert_eq!(error["code"], "UNKNOWN_TYPE", "{error}");
}

#[tokio::test]
async fn before_auth_only_auth_is_legal() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    let mut illegal = session_messages();
    illegal.push(json!({"type": "auth.confirm", "code": "123456"}));
    illegal.push(hello(json!({})));
    for message in illegal {
        let kind = message["type"].as_str().unwrap().to_owned();
        let error = rejected(&mut client, message).await;
        assert_error(&error, "UNAUTHORIZED", &kind);
    }
    assert_unknown_type_keeps_connection(&mut client).await;
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
}

#[tokio::test]
async fn while_pairing_only_auth_confirm_is_legal() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .send(json!({"type": "auth", "mode": "pair", "name": "sm-pair"}))
        .await
        .unwrap();
    client.expect("auth.pairing").await.unwrap();
    let mut illegal = session_messages();
    illegal.push(json!({"type": "auth", "mode": "pair"}));
    illegal.push(hello(json!({})));
    for message in illegal {
        let kind = message["type"].as_str().unwrap().to_owned();
        let error = rejected(&mut client, message).await;
        assert_error(&error, "UNAUTHORIZED", &kind);
    }
    assert_unknown_type_keeps_connection(&mut client).await;
    let code = pending_code(&gw, "sm-pair");
    client
        .send(json!({"type": "auth.confirm", "code": code}))
        .await
        .unwrap();
    client.expect("sessions").await.unwrap();
}

#[tokio::test]
async fn awaiting_hello_session_messages_get_invalid_session() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    for message in session_messages() {
        let kind = message["type"].as_str().unwrap().to_owned();
        if kind == "goodbye" {
            continue;
        }
        let error = rejected(&mut client, message).await;
        assert_error(&error, "INVALID_SESSION", &kind);
    }
    for message in [
        json!({"type": "auth", "token": "whatever"}),
        json!({"type": "auth.confirm", "code": "123456"}),
    ] {
        let kind = message["type"].as_str().unwrap().to_owned();
        let error = rejected(&mut client, message).await;
        assert_error(&error, "UNAUTHORIZED", &kind);
    }
    assert_unknown_type_keeps_connection(&mut client).await;
    client
        .hello("sm", json!({"tools": [tool("sm_tool")]}))
        .await
        .unwrap();
}

#[tokio::test]
async fn when_bound_a_second_auth_is_unauthorized_and_the_binding_stays() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw.provider("sm", json!({"tools": [tool("sm_tool")]})).await;
    for message in [
        json!({"type": "auth", "token": gw.project_token("default")}),
        json!({"type": "auth", "mode": "pair"}),
        json!({"type": "auth.confirm", "code": "123456"}),
    ] {
        let kind = message["type"].as_str().unwrap().to_owned();
        let error = rejected(&mut client, message).await;
        assert_error(&error, "UNAUTHORIZED", &kind);
        assert!(error["providerId"].is_string(), "errors name the provider");
    }
    assert_unknown_type_keeps_connection(&mut client).await;
    let call = gw.call("default", "sm_tool", json!({}));
    let request = client.expect("tool.call").await.unwrap();
    client
        .send(json!({"type": "tool.result", "id": request["id"], "data": true}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(true));
}

#[tokio::test]
async fn malformed_frames_get_invalid_json_and_keep_the_connection() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw.provider("sm", json!({"tools": [tool("sm_tool")]})).await;
    let cases: [(&str, Option<&str>); 6] = [
        ("this is not json", None),
        ("[1, 2, 3]", None),
        (r#"{"no": "type"}"#, None),
        (r#"{"type": 7}"#, None),
        (r#"{"type": "tool.result"}"#, Some("tool.result")),
        (
            r#"{"type": "hello", "name": 5, "protocolVersion": 2}"#,
            Some("hello"),
        ),
    ];
    for (text, reply_to) in cases {
        client.send_text(text).await.unwrap();
        let error = client.expect("error").await.unwrap();
        assert_eq!(error["code"], "INVALID_JSON", "{text}: {error}");
        assert_eq!(
            error.get("replyTo").and_then(Value::as_str),
            reply_to,
            "{text}"
        );
    }
    // Still bound: the tool answers.
    let call = gw.call("default", "sm_tool", json!({}));
    let request = client.expect("tool.call").await.unwrap();
    client
        .send(json!({"type": "tool.result", "id": request["id"], "data": 2}))
        .await
        .unwrap();
    assert_eq!(call.await.unwrap().result.unwrap(), json!(2));
}

#[tokio::test]
async fn malformed_frames_before_auth_are_not_fatal() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client.send_text("{").await.unwrap();
    assert_eq!(
        client.expect("error").await.unwrap()["code"],
        "INVALID_JSON"
    );
    let error = rejected(&mut client, json!({"type": "auth", "token": 5})).await;
    assert_error(&error, "INVALID_JSON", "auth");
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
}

#[tokio::test]
async fn authentication_must_finish_within_the_auth_timeout() {
    let settings = bridge_gateway::GatewaySettings {
        auth_timeout: Duration::from_millis(200),
        ..fast_settings()
    };
    let gw = TestGateway::start_with(settings, fast_registry_settings()).await;
    let mut silent = ProviderClient::connect(&gw.url).await.unwrap();
    let mut pairing = ProviderClient::connect(&gw.url).await.unwrap();
    pairing
        .send(json!({"type": "auth", "mode": "pair", "name": "slow"}))
        .await
        .unwrap();
    pairing.expect("auth.pairing").await.unwrap();
    let mut prompt = ProviderClient::connect(&gw.url).await.unwrap();
    prompt
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    assert_fatal(&mut silent, "AUTH_FAILED", None).await;
    assert_fatal(&mut pairing, "AUTH_FAILED", None).await;
    assert!(gw.gateway.pending_pairings().is_empty());
    // An authenticated connection is not subject to it.
    prompt
        .expect_silence(Duration::from_millis(100))
        .await
        .unwrap();
    prompt.hello("in-time", json!({})).await.unwrap();
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_fatal() {
    let gw = TestGateway::start().await;
    let mut client = ProviderClient::connect(&gw.url).await.unwrap();
    client
        .authenticate(&gw.project_token("default"))
        .await
        .unwrap();
    client
        .send(json!({"type": "hello", "name": "old", "protocolVersion": 1}))
        .await
        .unwrap();
    assert_fatal(&mut client, "UNSUPPORTED_VERSION", Some("hello")).await;

    // Also on a rebind; the provider's tools go with the connection.
    let (mut bound, _) = gw.provider("v", json!({"tools": [tool("v_tool")]})).await;
    bound
        .send(json!({"type": "hello", "name": "v", "protocolVersion": 3}))
        .await
        .unwrap();
    assert_fatal(&mut bound, "UNSUPPORTED_VERSION", Some("hello")).await;
    crate::binding::wait_until(|| gw.session("default").tool("v_tool").is_none()).await;
}

#[tokio::test]
async fn goodbye_closes_normally_and_unregisters() {
    let gw = TestGateway::start().await;
    let (mut client, _) = gw
        .provider("bye", json!({"tools": [tool("bye_tool")]}))
        .await;
    client
        .send(json!({"type": "goodbye", "reason": "done"}))
        .await
        .unwrap();
    let (close, before) = client.expect_close().await.unwrap();
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(close, Some(1000));
    crate::binding::wait_until(|| gw.session("default").tool("bye_tool").is_none()).await;
}
