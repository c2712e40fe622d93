//! `LocalProviderTransport`: in-process providers at the internal trust
//! level. Same message shapes as the wire, no serialization, no auth; FIFO
//! like a socket.

use std::sync::Arc;

use bridge_protocol::provider::{GatewayMessage, ProviderMessage};
use tokio::sync::mpsc;

use crate::connection::{Connection, Flow};
use crate::provider::{OutFrame, Outbound};
use crate::state::{GatewayInner, Trust};
use crate::transport::Inbound;

/// An in-process provider's end of the connection.
pub struct LocalProvider {
    to_gateway: mpsc::UnboundedSender<ProviderMessage>,
    from_gateway: mpsc::Receiver<OutFrame>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider").finish_non_exhaustive()
    }
}

/// The gateway closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the gateway closed this provider's connection")]
pub struct Closed;

impl LocalProvider {
    /// Sends a message to the gateway; handled in order.
    pub fn send(&self, message: ProviderMessage) -> Result<(), Closed> {
        self.to_gateway.send(message).map_err(|_| Closed)
    }

    /// The next message from the gateway; `None` once it closed the
    /// connection.
    pub async fn recv(&mut self) -> Option<GatewayMessage> {
        match self.from_gateway.recv().await? {
            OutFrame::Message(message) => Some(message),
            // Only wire connections queue text and pings.
            OutFrame::Close { .. } | OutFrame::Text(_) | OutFrame::Ping => None,
        }
    }
}

pub(crate) fn connect(gw: Arc<GatewayInner>) -> LocalProvider {
    let (to_gateway, mut inbound) = mpsc::unbounded_channel::<ProviderMessage>();
    let (out, queue) = Outbound::in_process(gw.settings.outbound_queue);
    let (from_gateway, kill) = (queue.rx, queue.kill);
    let mut conn = Connection::new(
        gw.clone(),
        out,
        "in-process".to_owned(),
        Some(Trust::Internal),
    );
    crate::sessions::authenticated(&conn);
    // In-process providers skip auth but see the session list like anyone.
    let list = crate::sessions::session_list(&gw, &Trust::Internal, None);
    conn.out
        .send(bridge_protocol::provider::GatewayMessage::Sessions(list));
    tokio::spawn(async move {
        loop {
            tokio::select! {
                message = inbound.recv() => {
                    let Some(message) = message else { break };
                    if conn.handle(Inbound::Message(message)).await == Flow::Close {
                        break;
                    }
                }
                () = kill.cancelled() => break,
                () = gw.closing.cancelled() => break,
            }
        }
        conn.closed().await;
    });
    LocalProvider {
        to_gateway,
        from_gateway,
    }
}
