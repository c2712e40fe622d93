//! What the connection task and the callers share: the status, the live
//! link (while connected), the pending requests and the event channel.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bridge_util::sync::lock;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::Message;

use crate::error::GatewayError;
use crate::frame::{GatewayEvent, ServerInfo};

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionState {
    /// An attempt (socket or handshake) is under way.
    Connecting,
    /// `hello-ok` received; requests are sent.
    Connected,
    /// Not connected; the next attempt waits its backoff.
    Disconnected,
    /// The gateway refused the handshake (token, pairing, protocol); the
    /// next attempt waits the longest backoff.
    Unauthorized,
}

/// A snapshot of the connection, for `bridge.status` and the CLI.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    pub state: ConnectionState,
    pub url: String,
    /// The gateway's version and this connection's id (from the last
    /// `hello-ok`; kept while reconnecting).
    pub server: Option<ServerInfo>,
    /// How the gateway authenticated us (`token`, `device-token`, ...).
    pub auth_method: Option<String>,
    /// This client's device id, when it has a device identity.
    pub device_id: Option<String>,
    /// When the current connection's `hello-ok` came (Unix ms).
    pub connected_since: Option<u64>,
    /// Why the last attempt or connection ended (redacted, with what to do
    /// when the gateway refused us).
    pub last_error: Option<String>,
    /// Connection attempts after the first.
    pub reconnects: u64,
    /// Milliseconds until the next attempt, while waiting for it.
    pub next_attempt_ms: Option<u64>,
}

/// The status as kept (the snapshot computes `next_attempt_ms`).
pub(crate) struct StatusCell {
    pub state: ConnectionState,
    pub server: Option<ServerInfo>,
    pub auth_method: Option<String>,
    pub device_id: Option<String>,
    pub connected_since: Option<u64>,
    pub last_error: Option<String>,
    pub reconnects: u64,
    pub next_attempt_at: Option<Instant>,
}

/// The live connection's sending side.
#[derive(Clone)]
pub(crate) struct Link {
    pub generation: u64,
    pub out: mpsc::Sender<Message>,
    pub max_payload: u64,
}

pub(crate) struct Pending {
    pub method: String,
    pub reply: oneshot::Sender<Result<Value, GatewayError>>,
}

pub(crate) struct Shared {
    pub url: String,
    pub request_timeout: Duration,
    pub status: Mutex<StatusCell>,
    pub link: Mutex<Option<Link>>,
    pub pending: Mutex<HashMap<String, Pending>>,
    pub connected: watch::Sender<bool>,
    pub events: broadcast::Sender<GatewayEvent>,
}

/// Events kept for a slow subscriber before it starts missing some.
const EVENT_BUFFER: usize = 1024;

impl Shared {
    pub fn new(url: String, request_timeout: Duration) -> Self {
        Self {
            url,
            request_timeout,
            status: Mutex::new(StatusCell {
                state: ConnectionState::Connecting,
                server: None,
                auth_method: None,
                device_id: None,
                connected_since: None,
                last_error: None,
                reconnects: 0,
                next_attempt_at: None,
            }),
            link: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            connected: watch::Sender::new(false),
            events: broadcast::Sender::new(EVENT_BUFFER),
        }
    }

    pub fn snapshot(&self) -> GatewayStatus {
        let cell = lock(&self.status);
        GatewayStatus {
            state: cell.state,
            url: self.url.clone(),
            server: cell.server.clone(),
            auth_method: cell.auth_method.clone(),
            device_id: cell.device_id.clone(),
            connected_since: cell.connected_since,
            last_error: cell.last_error.clone(),
            reconnects: cell.reconnects,
            next_attempt_ms: cell.next_attempt_at.map(|at| {
                u64::try_from(at.saturating_duration_since(Instant::now()).as_millis())
                    .unwrap_or(u64::MAX)
            }),
        }
    }

    pub fn update(&self, change: impl FnOnce(&mut StatusCell)) {
        change(&mut lock(&self.status));
    }

    /// Why a request cannot be sent now, for [`GatewayError::NotConnected`].
    pub fn not_connected_reason(&self) -> String {
        let status = self.snapshot();
        let next = status
            .next_attempt_ms
            .map(|ms| format!("; next attempt in {:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default();
        match (status.state, status.last_error) {
            (ConnectionState::Connected, _) => "the connection just ended".to_owned(),
            (ConnectionState::Connecting, None) => "connecting (first attempt)".to_owned(),
            (ConnectionState::Connecting, Some(error)) => {
                format!("reconnecting after: {error}")
            }
            (ConnectionState::Unauthorized, error) => format!(
                "unauthorized: {}{next}",
                error.unwrap_or_else(|| "refused".to_owned())
            ),
            (ConnectionState::Disconnected, error) => format!(
                "disconnected: {}{next}",
                error.unwrap_or_else(|| "not connected".to_owned())
            ),
        }
    }

    /// The connection is up: requests go to `link`.
    pub fn link_up(&self, link: Link) {
        *lock(&self.link) = Some(link);
        self.connected.send_replace(true);
    }

    /// The connection `generation` is gone: no new request is sent to it.
    pub fn link_down(&self, generation: u64) {
        let mut slot = lock(&self.link);
        if slot
            .as_ref()
            .is_some_and(|link| link.generation == generation)
        {
            *slot = None;
        }
        drop(slot);
        self.connected.send_replace(false);
    }

    /// Fails every pending request with [`GatewayError::Closed`]. Called
    /// after the link is down and its queue dropped, so a request that
    /// races the close either is failed here or fails to send.
    pub fn fail_pending(&self) {
        let drained: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for pending in drained {
            let _ = pending.reply.send(Err(GatewayError::Closed {
                method: pending.method,
            }));
        }
    }

    /// Hands a response to its request; false when nobody waits for `id`
    /// (timed out, or never ours).
    pub fn resolve(&self, id: &str, outcome: Result<Value, crate::frame::RemoteError>) -> bool {
        let Some(pending) = lock(&self.pending).remove(id) else {
            return false;
        };
        let result = outcome.map_err(|error| GatewayError::Remote {
            method: pending.method.clone(),
            code: error.code,
            message: bridge_policy::redact::shorten(&error.message, 2000),
            details: redacted(error.details),
        });
        let _ = pending.reply.send(result);
        true
    }
}

fn redacted(mut value: Value) -> Value {
    bridge_policy::redact_value(&mut value);
    value
}

/// Now as Unix milliseconds.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Removes a request's pending entry when the request ends for any reason
/// (answered, timed out, or its caller gave up).
pub(crate) struct PendingGuard<'a> {
    pub shared: &'a Shared,
    pub id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}
