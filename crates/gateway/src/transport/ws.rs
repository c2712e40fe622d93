//! JSON over WebSocket at `/`: frame limits, the connection cap, keepalive,
//! and a writer that batches frames so a busy provider costs one flush per
//! burst, not per message.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bridge_protocol::provider::{ErrorCode, ErrorMessage, GatewayMessage};
use bridge_util::batch::{Outgoing, send_batched};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::connection::{ConnState, Connection, Flow, close_code};
use crate::provider::{OutFrame, Outbound, OutboundQueue, QueuedBytes};
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
    let origin = headers
        .get(axum::http::header::ORIGIN)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    // Refused before the upgrade: a page holding many connections open
    // costs no WebSocket and no slot of the providers.
    let Some(pending) = Unauthenticated::take(&gw, origin) else {
        return (
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "too many connections are authenticating from this origin; try again later",
        )
            .into_response();
    };
    let peer = describe_peer(&headers);
    let hard_max = gw.settings.frame_hard_max_bytes;
    ws.max_message_size(hard_max)
        .max_frame_size(hard_max)
        .read_buffer_size(READ_BUFFER_BYTES)
        .on_upgrade(move |socket| serve(gw, socket, peer, pending))
}

/// One place of the unauthenticated budget (in all, and of its origin),
/// held until the connection authenticates or ends.
struct Unauthenticated {
    gw: Arc<GatewayInner>,
    origin: String,
}

impl Unauthenticated {
    fn take(gw: &Arc<GatewayInner>, origin: String) -> Option<Self> {
        let mut pending = bridge_util::sync::lock(&gw.unauthenticated);
        let all: usize = pending.values().sum();
        let of_origin = pending.get(&origin).copied().unwrap_or(0);
        if all >= gw.settings.max_unauthenticated
            || of_origin >= gw.settings.max_unauthenticated_per_origin
        {
            return None;
        }
        *pending.entry(origin.clone()).or_default() += 1;
        Some(Self {
            gw: gw.clone(),
            origin,
        })
    }
}

impl Drop for Unauthenticated {
    fn drop(&mut self) {
        let mut pending = bridge_util::sync::lock(&self.gw.unauthenticated);
        if let Some(count) = pending.get_mut(&self.origin) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                pending.remove(&self.origin);
            }
        }
    }
}

/// Where a connection stands with the budgets: authenticating (its place
/// in the unauthenticated budget) or admitted (a slot of the cap).
enum Admission {
    Authenticating { _place: Unauthenticated },
    Admitted { _slot: ConnectionSlot },
}

/// The read buffer of the daemon's WebSocket connections (the gateway's
/// and `/rpc`'s). tungstenite zero-fills this much of its read buffer
/// before every read attempt, including the ones that find nothing (its
/// default, 128 KiB, made that memset the largest single cost of a small
/// tool call). Large frames still arrive whole: the buffer grows to the
/// frame being read.
pub const READ_BUFFER_BYTES: usize = 16 * 1024;

/// Who is connecting, for logs and the pairing prompt: the browser origin
/// when there is one.
fn describe_peer(headers: &HeaderMap) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| bridge_policy::redact::preview(v, 120))
    };
    match (header("origin"), header("user-agent")) {
        (Some(origin), _) => format!("origin {origin}"),
        (None, Some(agent)) => format!("client {agent}"),
        (None, None) => "a local client".to_owned(),
    }
}

/// Holds one slot of the connection cap for as long as it lives.
struct ConnectionSlot(Arc<GatewayInner>);

impl ConnectionSlot {
    /// A slot of the cap, if one is free.
    fn take(gw: &Arc<GatewayInner>) -> Option<Self> {
        let count = gw.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = Self(gw.clone());
        (count <= gw.settings.max_connections).then_some(slot)
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection over the cap is told.
fn at_capacity(gw: &GatewayInner) -> ErrorMessage {
    ErrorMessage::new(
        ErrorCode::RateLimited,
        format!(
            "the gateway already has {} connections (the limit); try again later",
            gw.settings.max_connections
        ),
    )
}

/// Close codes only the WebSocket layer uses (RFC 6455 §7.4.1).
mod ws_close {
    /// A frame broke the WebSocket protocol itself.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A text frame that is not UTF-8.
    pub const INVALID_PAYLOAD: u16 = 1007;
}

/// How long the writer may take to deliver what is queued once the
/// connection ends; a peer that does not read for this long loses the rest.
const WRITER_GRACE: Duration = Duration::from_secs(2);

/// Why the read loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Goodbye, a fatal error, the peer closing, or shutdown: what is queued
    /// is still delivered.
    Orderly,
    /// The peer stopped reading (its queue filled), went silent or was
    /// taken over: drop it now, queued messages and all.
    Killed,
}

async fn serve(gw: Arc<GatewayInner>, socket: WebSocket, peer: String, pending: Unauthenticated) {
    let (mut sink, mut stream) = socket.split();
    // With every slot taken, a newcomer is told at once rather than after
    // it authenticated.
    if gw.connections.load(Ordering::Relaxed) >= gw.settings.max_connections {
        let error = GatewayMessage::Error(at_capacity(&gw));
        // Bounded: a peer that does not read must not hold its would-be slot.
        let reject = async {
            sink.feed(Message::Text(error.to_json().into())).await?;
            sink.send(Message::Close(Some(CloseFrame {
                code: close_code::TRY_AGAIN_LATER,
                reason: "too many connections".into(),
            })))
            .await
        };
        let _ = tokio::time::timeout(WRITER_GRACE, reject).await;
        return;
    }
    let (out, queue) = Outbound::wire(gw.settings.outbound_queue, gw.settings.outbound_queue_bytes);
    let kill = queue.kill.clone();
    let mut writer = tokio::spawn(write_frames(sink, queue));
    let mut conn = Connection::new(gw.clone(), out.clone(), peer, None);
    let mut admission = Admission::Authenticating { _place: pending };
    let end = read_frames(&gw, &mut conn, &mut stream, &kill, &mut admission).await;
    conn.closed().await;
    if end == End::Killed {
        // The writer drops what is queued (and tells a peer that stopped
        // reading why).
        out.kill();
    } else {
        // Ends the writer after what is queued (an error before a fatal
        // close, say), even while other tasks still hold a clone of `out`.
        out.close(close_code::NORMAL, "connection closed");
    }
    drop(conn);
    drop(out);
    if tokio::time::timeout(WRITER_GRACE, &mut writer)
        .await
        .is_err()
    {
        // The writer may be parked on a full socket forever; it holds the
        // other half of the socket, so it must go for the socket to close.
        writer.abort();
    }
}

/// Reads and handles frames until the connection ends; says how it ended.
async fn read_frames(
    gw: &Arc<GatewayInner>,
    conn: &mut Connection,
    stream: &mut SplitStream<WebSocket>,
    kill: &CancellationToken,
    admission: &mut Admission,
) -> End {
    let started = tokio::time::Instant::now();
    let handshake_deadline = started + gw.settings.handshake_timeout;
    let auth_deadline = started + gw.settings.auth_timeout;
    let ping_every = gw.settings.ping_interval;
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // A peer is dropped after two ping intervals without a single frame
    // (pongs included). The timer is re-armed lazily, when it fires, so a
    // busy connection does not pay for a timer reset per frame.
    let silence_limit = ping_every * 2;
    let mut last_heard = tokio::time::Instant::now();
    let silence = tokio::time::sleep_until(last_heard + silence_limit);
    tokio::pin!(silence);
    loop {
        tokio::select! {
            frame = stream.next() => {
                let Some(frame) = frame else { return End::Orderly };
                last_heard = tokio::time::Instant::now();
                let inbound = match frame {
                    Ok(Message::Text(text)) => classify_text(&gw.settings, text.as_str()),
                    Ok(Message::Binary(bytes)) => Inbound::Binary { size: bytes.len() },
                    Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                    Ok(Message::Close(_)) => return End::Orderly,
                    Err(err) => return read_failed(gw, conn, err),
                };
                if conn.handle(inbound).await == Flow::Close {
                    return End::Orderly;
                }
                if matches!(admission, Admission::Authenticating { .. }) && !conn.state.authenticating() {
                    match ConnectionSlot::take(gw) {
                        Some(slot) => *admission = Admission::Admitted { _slot: slot },
                        None => {
                            conn.error(at_capacity(gw));
                            conn.out.close(close_code::TRY_AGAIN_LATER, "too many connections");
                            return End::Orderly;
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(handshake_deadline), if conn.state == ConnState::AwaitAuth => {
                conn.error(ErrorMessage::new(
                    ErrorCode::AuthFailed,
                    format!("no auth message within {} s", gw.settings.handshake_timeout.as_secs_f32()),
                ));
                return End::Orderly;
            }
            () = tokio::time::sleep_until(auth_deadline), if conn.state.authenticating() => {
                conn.error(ErrorMessage::new(
                    ErrorCode::AuthFailed,
                    format!("not authenticated within {} s", gw.settings.auth_timeout.as_secs_f32()),
                ));
                return End::Orderly;
            }
            () = &mut silence => {
                let deadline = last_heard + silence_limit;
                if deadline <= tokio::time::Instant::now() {
                    tracing::info!(connection = conn.id, "nothing heard for two ping intervals; dropping the connection");
                    return End::Killed;
                }
                silence.as_mut().reset(deadline);
            }
            _ = ping.tick() => {
                conn.out.ping();
            }
            () = kill.cancelled() => return End::Killed,
            () = gw.closing.cancelled() => {
                conn.out.close(close_code::GOING_AWAY, "gateway shutting down");
                return End::Orderly;
            }
        }
    }
}

/// The WebSocket layer refused a frame. The stream cannot be read after an
/// error (tokio-tungstenite fuses it), so every case ends the connection;
/// the peer is told why when the protocol has a word for it.
fn read_failed(gw: &GatewayInner, conn: &Connection, err: axum::Error) -> End {
    let err = err.into_inner();
    let Some(err) = err.downcast_ref::<tungstenite::Error>() else {
        tracing::debug!(connection = conn.id, error = %err, "websocket read failed");
        return End::Orderly;
    };
    match err {
        tungstenite::Error::Capacity(capacity) => {
            tracing::info!(connection = conn.id, error = %capacity, "frame over the hard limit; closing");
            conn.out.error(ErrorMessage::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "{capacity}: frames are limited to {} bytes, and this connection is closed",
                    gw.settings.frame_hard_max_bytes
                ),
            ));
            // The rest of the frame is still arriving. The daemon's server
            // reads and drops it after the close (crates/server/src/http.rs,
            // lingering close), so the peer's send completes and it reads
            // this answer instead of a reset.
            conn.out.close(close_code::TOO_BIG, "frame too large");
            End::Orderly
        }
        tungstenite::Error::Utf8(_) => {
            // RFC 6455 §8.1: a text frame that is not UTF-8 fails the
            // connection. Say so in the protocol's words first.
            conn.out.error(ErrorMessage::new(
                ErrorCode::InvalidJson,
                "a text frame was not valid UTF-8; the WebSocket protocol requires closing the connection",
            ));
            conn.out
                .close(ws_close::INVALID_PAYLOAD, "text frame is not UTF-8");
            End::Orderly
        }
        tungstenite::Error::Protocol(violation) => {
            tracing::debug!(connection = conn.id, error = %violation, "websocket protocol violation");
            conn.out
                .close(ws_close::PROTOCOL_ERROR, "websocket protocol violation");
            End::Orderly
        }
        other => {
            tracing::debug!(connection = conn.id, error = %other, "websocket read failed");
            End::Orderly
        }
    }
}

/// Delivers queued frames in order until a close frame or the end of the
/// queue; once the connection is killed, drops what is still queued and,
/// when the peer stopped reading, tells it so (`RATE_LIMITED`, close 1013)
/// in case it reads again before the connection goes.
async fn write_frames(mut sink: SplitSink<WebSocket, Message>, queue: OutboundQueue) {
    let OutboundQueue {
        mut rx,
        kill,
        bytes,
    } = queue;
    tokio::select! {
        biased;
        () = deliver(&mut sink, &mut rx, bytes.as_deref()) => return,
        () = kill.cancelled() => {}
    }
    drop(rx);
    if let Some(notice) = bytes.as_deref().and_then(QueuedBytes::stuck_notice) {
        let notice = GatewayMessage::Error(notice).to_json();
        if sink.feed(Message::Text(notice.into())).await.is_ok() {
            let _ = sink
                .send(Message::Close(Some(CloseFrame {
                    code: close_code::TRY_AGAIN_LATER,
                    reason: "provider not reading its messages".into(),
                })))
                .await;
        }
    }
}

/// Sends the queue's frames through the one batched writer
/// (`bridge_util::batch`: one flush per burst, a yield before it so the
/// callers the burst woke share it).
async fn deliver(
    sink: &mut SplitSink<WebSocket, Message>,
    rx: &mut mpsc::Receiver<OutFrame>,
    bytes: Option<&QueuedBytes>,
) {
    send_batched(sink, rx, |frame| match frame {
        OutFrame::Text(text) => {
            if let Some(bytes) = bytes {
                bytes.release(text.len());
            }
            Outgoing::Feed(Message::Text(text.into()))
        }
        OutFrame::Message(message) => Outgoing::Feed(Message::Text(message.to_json().into())),
        OutFrame::Ping => Outgoing::Feed(Message::Ping(Default::default())),
        OutFrame::Close { code, reason } => Outgoing::Last(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }))),
    })
    .await;
}
