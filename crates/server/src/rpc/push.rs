//! What the daemon sends a `/rpc` WebSocket client unasked: JSON-RPC
//! notifications (no `id`) on the connection's own writer, in order with
//! its answers. Over HTTP there is no such channel.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::ws::Message;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One WebSocket connection's outgoing queue, for notifications.
#[derive(Clone)]
pub struct Push {
    tx: mpsc::Sender<Message>,
    /// The connection asked for the approval events (`approvals.subscribe`).
    approvals: Arc<AtomicBool>,
    /// Cancelled when the connection ends: what feeds it stops (it holds a
    /// sender, so the queue alone would never say).
    gone: CancellationToken,
}

impl std::fmt::Debug for Push {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Push").finish_non_exhaustive()
    }
}

impl Push {
    pub(crate) fn new(tx: mpsc::Sender<Message>) -> Self {
        Self {
            tx,
            approvals: Arc::default(),
            gone: CancellationToken::new(),
        }
    }

    /// Sends `method` with `params`; `false` once the connection is gone.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> bool {
        let text = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        self.tx.send(Message::Text(text.into())).await.is_ok()
    }

    /// Resolves when the connection is gone.
    pub(crate) async fn closed(&self) {
        tokio::select! {
            () = self.tx.closed() => {}
            () = self.gone.cancelled() => {}
        }
    }

    /// The connection ended.
    pub(crate) fn hang_up(&self) {
        self.gone.cancel();
    }

    /// Marks the connection as subscribed to approval events: `true` the
    /// first time only.
    pub(crate) fn subscribe_approvals(&self) -> bool {
        !self.approvals.swap(true, Ordering::AcqRel)
    }
}
