//! Announcing tool-list changes: one task per connected client watches its
//! session's tool table and sends `notifications/tools/list_changed` when
//! what the client would list differs from what it last could.

use std::sync::{Arc, Weak};

use bridge_engine::Session;
use rmcp::RoleServer;
use rmcp::service::{Peer, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use super::LIST_CHANGED_DEBOUNCE;
use super::tools::{ToolScope, snapshot};

/// Where a client hears of changes.
pub(crate) enum Listener {
    /// A client that connected with the `initialize` handshake: plain
    /// notifications on the connection.
    Handshake(Peer<RoleServer>),
    /// A `2026-07-28` client's `subscriptions/listen` stream.
    Subscription(SubscriptionSink),
}

impl Listener {
    /// Whether the client can still hear.
    async fn notify(&self) -> bool {
        let sent = match self {
            Self::Handshake(peer) => peer
                .notify_tool_list_changed()
                .await
                .map_err(|err| err.to_string()),
            Self::Subscription(sink) => sink
                .notify_tool_list_changed()
                .await
                .map_err(|err| err.to_string()),
        };
        match sent {
            Ok(()) => true,
            Err(reason) => {
                tracing::debug!(%reason, "a client of the session MCP server stopped listening");
                false
            }
        }
    }
}

/// Runs until `stop`, until the session is gone, or until the client
/// cannot be reached.
pub(crate) async fn watch_tools(
    session: Arc<Session>,
    scope: ToolScope,
    listener: Listener,
    stop: CancellationToken,
) {
    let mut changes = session.tools_changed();
    let mut last = snapshot(&session, &scope);
    // Only a weak hold while waiting: an ended session must not live on
    // for a client that is still connected.
    let weak: Weak<Session> = Arc::downgrade(&session);
    drop(session);
    loop {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = stop.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(LIST_CHANGED_DEBOUNCE) => {}
            () = stop.cancelled() => return,
        }
        changes.borrow_and_update();
        let Some(session) = weak.upgrade() else {
            return;
        };
        let now = snapshot(&session, &scope);
        drop(session);
        if now != last {
            last = now;
            if !listener.notify().await {
                return;
            }
        }
    }
}
