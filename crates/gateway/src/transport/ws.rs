//! JSON over WebSocket at `/`: frame limits, the connection cap, keepalive,
//! and a writer that batches frames so a busy provider costs one flush per
//! burst, not per message.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use bridge_protocol::provider::{ErrorCode, ErrorMessage, GatewayMessage};
use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use crate::connection::{Connection, Flow, close_code};
use crate::provider::{OutFrame, Outbound};
use crate::state::GatewayInner;
use crate::transport::{Inbound, classify_text};

pub(crate) fn router(gw: Arc<GatewayInner>) -> Router {
    Router::new().route("/", get(upgrade)).with_state(gw)
}

async fn upgrade(
    State(gw): State<Arc<GatewayInner>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let peer = describe_peer(&headers);
    let hard_max = gw.settings.frame_hard_max_bytes;
    ws.max_message_size(hard_max)
        .max_frame_size(hard_max)
        .on_upgrade(move |socket| serve(gw, socket, peer))
}

/// Who is connecting, for logs and the pairing prompt: the browser origin
/// when there is one.
fn describe_peer(headers: &HeaderMap) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(120).collect::<String>())
    };
    match (header("origin"), header("user-agent")) {
        (Some(origin), _) => format!("origin {origin}"),
        (None, Some(agent)) => format!("client {agent}"),
        (None, None) => "a local client".to_owned(),
    }
}

/// Holds one slot of the connection cap for as long as it lives.
struct ConnectionSlot(Arc<GatewayInner>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn serve(gw: Arc<GatewayInner>, socket: WebSocket, peer: String) {
    let count = gw.connections.fetch_add(1, Ordering::Relaxed) + 1;
    let _slot = ConnectionSlot(gw.clone());
    let (mut sink, mut stream) = socket.split();
    if count > gw.settings.max_connections {
        let error = GatewayMessage::Error(ErrorMessage::new(
            ErrorCode::RateLimited,
            format!(
                "the gateway already has {} connections (the limit); try again later",
                gw.settings.max_connections
            ),
        ));
        let _ = sink.send(Message::Text(error.to_json().into())).await;
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: close_code::TRY_AGAIN_LATER,
                reason: "too many connections".into(),
            })))
            .await;
        return;
    }
    let (out, rx, kill) = Outbound::new(gw.settings.outbound_queue);
    let writer = tokio::spawn(write_frames(sink, rx));
    let mut conn = Connection::new(gw.clone(), out.clone(), peer, None);
    let auth_deadline = tokio::time::Instant::now() + gw.settings.auth_timeout;
    let mut ping = tokio::time::interval(gw.settings.ping_interval);
    ping.tick().await;
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            frame = stream.next() => {
                let Some(frame) = frame else { break };
                last_heard = Instant::now();
                let inbound = match frame {
                    Ok(Message::Text(text)) => classify_text(&gw.settings, text.as_str()),
                    Ok(Message::Binary(bytes)) => Inbound::Binary { size: bytes.len() },
                    Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                    Ok(Message::Close(_)) => break,
                    Err(err) => {
                        // Over the hard frame limit, or a broken stream: the
                        // reader cannot resynchronise, so the connection ends.
                        tracing::debug!(connection = conn.id, error = %err, "websocket read failed");
                        out.error(ErrorMessage::new(
                            ErrorCode::PayloadTooLarge,
                            format!("connection closed: {err} (frames are limited to {} bytes)", gw.settings.frame_hard_max_bytes),
                        ));
                        out.close(close_code::TOO_BIG, "frame too large or malformed");
                        break;
                    }
                };
                if conn.handle(inbound).await == Flow::Close {
                    break;
                }
            }
            () = tokio::time::sleep_until(auth_deadline), if conn.state.authenticating() => {
                conn.error(ErrorMessage::new(
                    ErrorCode::AuthFailed,
                    format!("not authenticated within {} s", gw.settings.auth_timeout.as_secs_f32()),
                ));
                break;
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > gw.settings.ping_interval * 2 {
                    tracing::info!(connection = conn.id, "no traffic for two ping intervals; dropping the connection");
                    break;
                }
                out.ping();
            }
            () = kill.cancelled() => break,
            () = gw.closing.cancelled() => {
                out.close(close_code::GOING_AWAY, "gateway shutting down");
                break;
            }
        }
    }
    conn.closed().await;
    // Ends the writer after what is queued (an error before a fatal close,
    // say), even while other tasks still hold a clone of `out`.
    out.close(close_code::NORMAL, "connection closed");
    drop(conn);
    drop(out);
    // The writer ends when the queue is drained and every sender is gone;
    // a stuck peer cannot hold it for long.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
}

async fn write_frames(mut sink: SplitSink<WebSocket, Message>, mut rx: mpsc::Receiver<OutFrame>) {
    while let Some(frame) = rx.recv().await {
        let mut next = Some(frame);
        // Feed everything already queued, then flush once.
        while let Some(frame) = next.take() {
            let closing = match frame {
                OutFrame::Message(message) => {
                    if sink
                        .feed(Message::Text(message.to_json().into()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    false
                }
                OutFrame::Ping => {
                    if sink.feed(Message::Ping(Default::default())).await.is_err() {
                        return;
                    }
                    false
                }
                OutFrame::Close { code, reason } => {
                    let _ = sink
                        .send(Message::Close(Some(CloseFrame {
                            code,
                            reason: reason.into(),
                        })))
                        .await;
                    return;
                }
            };
            if !closing {
                next = rx.try_recv().ok();
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    let _ = sink.close().await;
}
