//! The client of the OpenClaw gateway's WebSocket protocol (protocol 4):
//! one connection per [`Gateway`], kept up by a background task that
//! answers the gateway's `connect.challenge` (token auth, and an Ed25519
//! device identity when configured), matches responses to requests by id,
//! watches the gateway's ticks and reconnects with backoff (1 s doubling
//! to 30 s; 30 s after a refusal, so a wrong token never becomes a retry
//! storm). Callers ask through [`Gateway::request`] and
//! [`Gateway::ask_agent`]; a request made while not connected fails at
//! once with [`GatewayError::NotConnected`], so callers can fall back to
//! a local answer.
//!
//! This crate must not decide what the bridge does with OpenClaw's
//! answers, must not read configuration from the environment (the caller
//! hands it [`GatewaySettings`]), and must not log or show a token: tokens
//! are [`Secret`]s from the settings to the one frame that carries them,
//! and frames quoted in logs are redacted and cut.

mod agent;
mod connection;
pub mod device;
mod error;
pub mod frame;
pub mod handshake;
mod state;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bridge_util::Secret;
use bridge_util::sync::lock;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

pub use agent::{AgentAsk, AgentReply};
pub use connection::{FIRST_WAIT, MAX_WAIT, TICK_TIMEOUT_CLOSE};
pub use device::IdentityError;
pub use error::GatewayError;
pub use frame::{GatewayEvent, ServerInfo};
pub use state::{ConnectionState, GatewayStatus};

use state::{Pending, PendingGuard, Shared};

/// The gateway's default address.
pub const DEFAULT_URL: &str = "ws://127.0.0.1:18789";
/// How long a request waits for its answer unless told otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the gateway is and how to authenticate.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// `ws://127.0.0.1:18789` by default.
    pub url: String,
    /// The gateway's shared token (`gateway.auth.token`).
    pub token: Option<Secret>,
    /// A persistent device identity (key seed and device token, JSON, mode
    /// 0600, created on first use, written atomically); `None` connects
    /// with the token alone.
    pub identity_file: Option<PathBuf>,
    /// How long a request waits for its answer (30 s by default).
    pub request_timeout: Duration,
    /// This client's version, sent in `client.version` and the user agent.
    pub client_version: String,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            url: DEFAULT_URL.to_owned(),
            token: None,
            identity_file: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// A handle on the gateway connection; clones share it.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("url", &self.shared.url)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Spawns the connection task, which connects and reconnects until
    /// `stop` is cancelled (then it closes with 1000 and fails what still
    /// waits). Returns at once. Panics outside a Tokio runtime, like
    /// `tokio::spawn`.
    pub fn start(settings: GatewaySettings, stop: CancellationToken) -> Gateway {
        let shared = Arc::new(Shared::new(settings.url.clone(), settings.request_timeout));
        tokio::spawn(connection::run(Arc::clone(&shared), settings, stop));
        Gateway { shared }
    }

    /// The connection as it stands.
    pub fn status(&self) -> GatewayStatus {
        self.shared.snapshot()
    }

    /// Waits up to `within` for the handshake; true when connected.
    pub async fn connected(&self, within: Duration) -> bool {
        let mut connected = self.shared.connected.subscribe();
        tokio::time::timeout(within, connected.wait_for(|up| *up))
            .await
            .is_ok_and(|waited| waited.is_ok())
    }

    /// Every event the gateway sends from now on (`agent`, `chat`, `task`,
    /// `tick`, ...), across reconnections. A subscriber that falls more than
    /// 1,024 events behind misses the oldest.
    pub fn subscribe(&self) -> broadcast::Receiver<GatewayEvent> {
        self.shared.events.subscribe()
    }

    /// `method` with `params`, answered within the settings' request
    /// timeout.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, GatewayError> {
        self.request_within(method, params, self.shared.request_timeout)
            .await
    }

    /// `method` with `params`, answered within `timeout`. Fails at once
    /// when not connected or when the frame exceeds the gateway's
    /// `maxPayload`; the pending entry is removed on timeout.
    pub async fn request_within(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, GatewayError> {
        let shared = &*self.shared;
        let link = lock(&shared.link)
            .clone()
            .ok_or_else(|| GatewayError::NotConnected {
                url: shared.url.clone(),
                reason: shared.not_connected_reason(),
            })?;
        let id = bridge_util::ids::unique_id("req");
        let text = frame::request(&id, method, params);
        if u64::try_from(text.len()).unwrap_or(u64::MAX) > link.max_payload {
            return Err(GatewayError::TooLarge {
                method: method.to_owned(),
                size: text.len(),
                max: link.max_payload,
            });
        }
        let (reply, answer) = oneshot::channel();
        lock(&shared.pending).insert(
            id.clone(),
            Pending {
                method: method.to_owned(),
                reply,
            },
        );
        let _guard = PendingGuard { shared, id };
        let closed = || GatewayError::Closed {
            method: method.to_owned(),
        };
        let exchange = async {
            link.out
                .send(Message::text(text))
                .await
                .map_err(|_| closed())?;
            answer.await.map_err(|_| closed())?
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| GatewayError::Timeout {
                method: method.to_owned(),
                after: timeout,
            })?
    }
}
