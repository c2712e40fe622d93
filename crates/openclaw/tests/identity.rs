//! The device identity file: created once (mode 0600), reused, the device
//! token the gateway issues kept and presented, a stale one dropped.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fake::FakeGateway;
use crate::{TOKEN, connected, settings};

fn identity_file(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn the_identity_is_created_once_with_mode_0600_and_reused() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/openclaw-device.json");
    let mut with_identity = settings(&fake.url);
    with_identity.identity_file = Some(path.clone());

    let first = connected(with_identity.clone()).await;
    let device_id = first.gateway.status().device_id.unwrap();
    let file = identity_file(&path);
    assert_eq!(file["deviceId"], device_id.as_str());
    assert_eq!(file["version"], 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let connect = &fake.connects()[0];
    assert_eq!(
        connect.signature_valid,
        Some(true),
        "signed over the challenge"
    );
    assert_eq!(connect.params["device"]["id"], device_id.as_str());
    assert_eq!(connect.params["device"]["publicKey"], file["publicKey"]);
    let before = std::fs::read(&path).unwrap();
    drop(first);

    let second = connected(with_identity).await;
    assert_eq!(second.gateway.status().device_id.unwrap(), device_id);
    let connects = fake.wait_connects(2, Duration::from_secs(2)).await;
    assert_eq!(connects[1].params["device"]["id"], device_id.as_str());
    assert_eq!(connects[1].signature_valid, Some(true));
    assert_eq!(std::fs::read(&path).unwrap(), before, "not rewritten");
    // No temporary file left beside it.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[tokio::test]
async fn a_device_token_from_hello_is_kept_and_presented_on_the_next_connect() {
    let fake = FakeGateway::start().await;
    fake.edit_hello(|hello| {
        hello["auth"]["deviceToken"] = json!("device-token-issued-1");
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("device.json");
    let mut with_identity = settings(&fake.url);
    with_identity.identity_file = Some(path.clone());

    let client = connected(with_identity.clone()).await;
    let file = identity_file(&path);
    assert_eq!(file["deviceToken"]["token"], "device-token-issued-1");
    assert_eq!(file["deviceToken"]["gatewayUrl"], fake.url.as_str());
    assert_eq!(fake.connects()[0].params["auth"]["token"], TOKEN);

    // The same client reconnecting presents it, signed.
    fake.close_connection();
    let connects = fake.wait_connects(2, Duration::from_secs(4)).await;
    assert_eq!(connects.len(), 2);
    assert_eq!(connects[1].params["auth"]["token"], "device-token-issued-1");
    assert_eq!(connects[1].signature_valid, Some(true));
    drop(client);

    // So does a new client with the same file.
    let _again = connected(with_identity).await;
    let connects = fake.wait_connects(3, Duration::from_secs(2)).await;
    assert_eq!(connects[2].params["auth"]["token"], "device-token-issued-1");
}

#[tokio::test]
async fn a_refused_device_token_is_dropped_and_the_gateway_token_used_at_once() {
    let fake = FakeGateway::start().await;
    fake.edit_hello(|hello| {
        hello["auth"]["deviceToken"] = json!("device-token-stale");
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("device.json");
    let mut with_identity = settings(&fake.url);
    with_identity.identity_file = Some(path.clone());
    drop(connected(with_identity.clone()).await);
    assert_eq!(
        identity_file(&path)["deviceToken"]["token"],
        "device-token-stale"
    );

    // The gateway forgot the device: its token no longer works, and it
    // issues none now.
    fake.edit_hello(|hello| {
        hello["auth"].as_object_mut().unwrap().remove("deviceToken");
    });
    fake.refuse_when(|params| {
        (params["auth"]["token"] == "device-token-stale").then(|| {
            json!({"code": "INVALID_REQUEST",
                   "message": "unauthorized: device token mismatch (rotate/reissue device token)",
                   "details": {"code": "AUTH_DEVICE_TOKEN_MISMATCH"}})
        })
    });
    let started = std::time::Instant::now();
    let client = connected(with_identity).await;
    assert!(
        started.elapsed() < Duration::from_millis(950),
        "no backoff wait: {:?}",
        started.elapsed()
    );
    let connects = fake.connects();
    assert_eq!(
        connects.len(),
        3,
        "first session, refused token, gateway token"
    );
    assert_eq!(connects[1].params["auth"]["token"], "device-token-stale");
    assert_eq!(connects[2].params["auth"]["token"], TOKEN);
    assert_eq!(connects[2].signature_valid, Some(true));
    assert!(identity_file(&path).get("deviceToken").is_none());
    assert_eq!(client.gateway.status().reconnects, 1);
}

#[tokio::test]
async fn a_corrupt_identity_file_is_kept_and_the_client_connects_without_a_device() {
    let fake = FakeGateway::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("device.json");
    std::fs::write(&path, "{not json").unwrap();
    let mut with_identity = settings(&fake.url);
    with_identity.identity_file = Some(path.clone());
    let client = connected(with_identity).await;
    assert!(fake.connects()[0].params.get("device").is_none());
    assert!(client.gateway.status().device_id.is_none());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
}
