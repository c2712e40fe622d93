//! The handshake: the connect frame, hello-ok, the device signature
//! against the recorded gateway transcripts, and refusals.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bridge_openclaw::ConnectionState;
use bridge_openclaw::device::{device_id_of, verify};
use serde_json::{Value, json};

use crate::fake::{FakeGateway, frame_where, signed_payload, transcript};
use crate::{TOKEN, connected, settings, start};

#[tokio::test]
async fn the_connect_frame_is_a_backend_operator_and_hello_ok_sets_the_status() {
    let fake = FakeGateway::start().await;
    let client = connected(settings(&fake.url)).await;
    let connects = fake.connects();
    assert_eq!(connects.len(), 1);
    let params = &connects[0].params;
    let platform = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    assert_eq!(
        params,
        &json!({
            "minProtocol": 4,
            "maxProtocol": 4,
            "client": {
                "id": "gateway-client",
                "version": "9.9.9-test",
                "platform": platform,
                "mode": "backend",
                "displayName": "copilot-bridge",
            },
            "role": "operator",
            "scopes": ["operator.read", "operator.write"],
            "caps": [],
            "auth": {"token": TOKEN},
            "userAgent": "copilot-bridge/9.9.9-test",
        }),
        "no device block without an identity file"
    );
    assert_eq!(connects[0].signature_valid, None);

    let status = client.gateway.status();
    assert_eq!(status.state, ConnectionState::Connected);
    let server = status.server.clone().unwrap();
    assert_eq!(server.version, "2026.9.6");
    assert_eq!(server.conn_id, "30390520-f5b8-421d-b2db-ce8ba07d05f9");
    assert_eq!(status.auth_method.as_deref(), Some("token"));
    assert_eq!(status.reconnects, 0);
    assert!(status.connected_since.is_some() && status.last_error.is_none());
    let shown = serde_json::to_value(&status).unwrap();
    assert_eq!(shown["state"], "connected");
    assert_eq!(shown["server"]["connId"], server.conn_id);
    assert_eq!(shown["authMethod"], "token");
    assert!(shown.get("nextAttemptMs").is_some());
    assert!(
        !shown.to_string().contains(TOKEN),
        "the status never shows the token"
    );
}

/// The device fields of the recorded connect in `name`, checked with our
/// payload builder.
fn recorded_device_signature(name: &str) -> (Value, String, bool) {
    let frames = transcript(name);
    let connect = frame_where(&frames, |frame| frame["method"] == "connect");
    let params = &connect["params"];
    let device = &params["device"];
    let payload = signed_payload(params).unwrap();
    let valid = verify(
        device["publicKey"].as_str().unwrap(),
        &payload,
        device["signature"].as_str().unwrap(),
    );
    (device.clone(), payload, valid)
}

#[test]
fn the_recorded_v3_signature_verifies_with_our_payload_builder() {
    let (device, payload, valid) = recorded_device_signature("handshake-cli-device-v3.jsonl");
    assert_eq!(
        payload,
        "v3|18f33af1254225c3aa8bd5535ccff587fbd3cd8b50a54c31ce020d1ec564dadc|cli|cli|operator|\
         operator.read,operator.write|1795465007023|peer-token-0123456789abcdef|\
         acbfbbd4-9785-4ff3-9c5a-06a86a482ae7|linux|"
    );
    assert!(
        valid,
        "the gateway's recorded signature verifies over {payload}"
    );
    // The device id is the SHA-256 of the raw public key.
    let raw: [u8; 32] = URL_SAFE_NO_PAD
        .decode(device["publicKey"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(device_id_of(&raw), device["id"].as_str().unwrap());

    // On reconnect the device token is the signed token.
    let (_, payload, valid) = recorded_device_signature("handshake-device-token-reconnect.jsonl");
    assert!(payload.contains("|5J4h82yn_m3yw6dDa4lDv9hSrQlzvitOh6SIZDEPRFk|"));
    assert!(valid, "{payload}");

    // Any field changed breaks it.
    let (device, payload, _) = recorded_device_signature("handshake-cli-device-v3.jsonl");
    let signature = device["signature"].as_str().unwrap();
    let key = device["publicKey"].as_str().unwrap();
    for (from, to) in [
        ("|cli|cli|", "|gateway-client|backend|"),
        ("|linux|", "|darwin|"),
        (
            "operator.read,operator.write",
            "operator.write,operator.read",
        ),
        ("v3|", "v2|"),
    ] {
        assert!(
            !verify(key, &payload.replacen(from, to, 1), signature),
            "{to}"
        );
    }
    assert!(!verify(key, &format!("{payload}linux"), signature));
}

#[test]
fn the_recorded_bad_signature_does_not_verify() {
    // The gateway accepted that connect on its token alone.
    let (_, payload, valid) = recorded_device_signature("handshake-bad-signature.jsonl");
    assert!(!valid, "{payload}");
}

#[tokio::test]
async fn each_recorded_refusal_leaves_the_client_unauthorized_with_the_gateways_message() {
    for (name, expected) in [
        ("handshake-cli-badtoken.jsonl", "gateway token mismatch"),
        ("handshake-no-auth.jsonl", "device identity required"),
        ("handshake-proto3.jsonl", "protocol mismatch"),
        (
            "handshake-custom-id-nodevice.jsonl",
            "invalid connect params",
        ),
    ] {
        let frames = transcript(name);
        let error = frame_where(&frames, |frame| frame["ok"] == false)["error"].clone();
        let fake = FakeGateway::start().await;
        fake.refuse_when(move |_| Some(error.clone()));
        let client = start(settings(&fake.url));
        let status = wait_state(&client.gateway, ConnectionState::Unauthorized).await;
        let message = status.last_error.unwrap();
        assert!(message.contains(expected), "{name}: {message}");
        assert!(message.contains(&fake.url), "{name}: {message}");
        assert!(!message.contains(TOKEN), "{name}: {message}");
        let next = status.next_attempt_ms.unwrap();
        assert!(next > 25_000, "{name}: the longest wait, not {next} ms");
        let err = client
            .gateway
            .request("health", json!({}))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("unauthorized") && err.to_string().contains(expected),
            "{err}"
        );
    }
}

/// Waits (up to 5 s) for `state`; the status then.
pub async fn wait_state(
    gateway: &bridge_openclaw::Gateway,
    state: ConnectionState,
) -> bridge_openclaw::GatewayStatus {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let status = gateway.status();
        let settled = status.next_attempt_ms.is_some() || state == ConnectionState::Connected;
        if status.state == state && settled {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {state:?}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
