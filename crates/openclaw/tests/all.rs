//! bridge-openclaw's integration tests: the client against a fake gateway
//! on a real socket replaying recorded frames, and against the real
//! OpenClaw gateway.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fake;
mod handshake;
mod identity;
mod real_gateway;
mod reconnect;
mod requests;

use std::time::Duration;

use bridge_openclaw::{Gateway, GatewaySettings};
use bridge_util::Secret;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The token the recorded transcripts used.
pub const TOKEN: &str = "peer-token-0123456789abcdef";

/// Settings for `url` with the recorded token.
pub fn settings(url: &str) -> GatewaySettings {
    GatewaySettings {
        url: url.to_owned(),
        token: Some(Secret::new(TOKEN)),
        identity_file: None,
        request_timeout: Duration::from_secs(5),
        client_version: "9.9.9-test".to_owned(),
    }
}

/// A started client; its task stops when this is dropped.
pub struct Client {
    pub gateway: Gateway,
    _stop: DropGuard,
}

pub fn start(settings: GatewaySettings) -> Client {
    let stop = CancellationToken::new();
    let gateway = Gateway::start(settings, stop.clone());
    Client {
        gateway,
        _stop: stop.drop_guard(),
    }
}

/// A started client that has connected (panics otherwise).
pub async fn connected(settings: GatewaySettings) -> Client {
    let client = start(settings);
    assert!(
        client.gateway.connected(Duration::from_secs(5)).await,
        "not connected: {:?}",
        client.gateway.status()
    );
    client
}
