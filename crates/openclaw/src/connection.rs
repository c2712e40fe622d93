//! The connection task: connect, answer the challenge, keep the link while
//! `hello-ok` holds, watch the ticks, and reconnect with backoff until
//! stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_policy::redact::shorten;
use bridge_util::Backoff;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use crate::GatewaySettings;
use crate::device::{DeviceIdentity, DeviceToken};
use crate::frame::{self, HelloOk, Incoming, RemoteError};
use crate::handshake::{self, Challenge, Refusal};
use crate::state::{ConnectionState, Link, Shared, unix_ms};

/// The first wait after a failure, doubled per failure up to [`MAX_WAIT`]
/// (the reference client's 1 s → 30 s).
pub const FIRST_WAIT: Duration = Duration::from_secs(1);
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The socket must open, and the challenge come, within this.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a closing handshake may take before the socket is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Frames queued for sending before a request waits for room.
const SEND_QUEUE: usize = 256;
/// Incoming messages up to this size are read (the gateway's own
/// `maxPayload` is 25 MiB).
const MAX_INCOMING: usize = 64 << 20;
/// The close code of the tick watchdog, as the reference client sends it.
pub const TICK_TIMEOUT_CLOSE: u16 = 4000;

type Socket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;
type Stream = futures::stream::SplitStream<Socket>;

/// How one attempt ended.
enum Outcome {
    Stopped,
    /// A connection that had said hello ended.
    Ended(String),
    /// No connection or no hello: unreachable, timed out, closed during
    /// the handshake, or a refusal that asks us to wait.
    Failed {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// `connect` refused for good (credentials, pairing, protocol).
    Refused {
        error: RemoteError,
        used_device_token: bool,
    },
}

fn failed(reason: impl Into<String>) -> Outcome {
    Outcome::Failed {
        reason: reason.into(),
        retry_after: None,
    }
}

/// How long a connection must have stayed up for its end to reset the
/// backoff (the gateway's tick interval by default).
const STABLE_AFTER: Duration = Duration::from_secs(30);
/// How many times in a row a gateway's "retry after" is followed before the
/// backoff takes over.
const HINTED_RETRIES: u32 = 3;

pub(crate) async fn run(shared: Arc<Shared>, settings: GatewaySettings, stop: CancellationToken) {
    let mut identity = load_identity(&shared, &settings);
    let backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
    let mut failures: u32 = 0;
    let mut attempts: u64 = 0;
    let mut last_refusal = String::new();
    while !stop.is_cancelled() {
        shared.update(|status| {
            status.state = ConnectionState::Connecting;
            status.next_attempt_at = None;
            status.reconnects = attempts;
        });
        attempts += 1;
        let started = tokio::time::Instant::now();
        let outcome = attempt(&shared, &settings, &mut identity, &stop, attempts).await;
        // The link is down and its queue dropped: fail what still waits.
        shared.link_down(attempts);
        shared.fail_pending();
        let wait = match outcome {
            Outcome::Stopped => break,
            Outcome::Ended(reason) => {
                tracing::info!(url = %shared.url, %reason, "the OpenClaw gateway connection ended; reconnecting");
                // Only a connection that stayed up resets the backoff: a
                // gateway that takes the handshake and hangs up at once is
                // not reconnected to every second.
                if started.elapsed() >= STABLE_AFTER {
                    failures = 0;
                }
                let wait = backoff.delay(failures);
                failures = failures.saturating_add(1);
                disconnected(&shared, ConnectionState::Disconnected, reason);
                wait
            }
            Outcome::Failed {
                reason,
                retry_after,
            } => {
                // The first failures and the changes of reason are worth a
                // warning; the repeats of a gateway that is down are not.
                if failures == 0 || shared.snapshot().last_error.as_deref() != Some(reason.as_str())
                {
                    tracing::warn!(url = %shared.url, %reason, "no connection to the OpenClaw gateway");
                } else {
                    tracing::debug!(url = %shared.url, %reason, "no connection to the OpenClaw gateway");
                }
                // The gateway's own "retry after" is followed for the
                // first tries only: one that keeps saying 0 ms backs off.
                let wait = match retry_after {
                    Some(after) if failures < HINTED_RETRIES => after,
                    _ => backoff.delay(failures),
                };
                failures = failures.saturating_add(1);
                disconnected(&shared, ConnectionState::Disconnected, reason);
                wait
            }
            Outcome::Refused {
                error,
                used_device_token: true,
            } if handshake::is_token_mismatch(&error) => {
                // Once: the token is gone, the next connect uses the
                // gateway token.
                if let Some(identity) = identity.as_mut()
                    && let Err(err) = identity.drop_token()
                {
                    tracing::warn!(%err, "cannot forget the stale OpenClaw device token");
                }
                tracing::warn!(url = %shared.url, "the OpenClaw gateway refused the stored device token; retrying with the gateway token");
                disconnected(
                    &shared,
                    ConnectionState::Connecting,
                    "the stored device token was refused; retrying with the gateway token".into(),
                );
                Duration::ZERO
            }
            Outcome::Refused { error, .. } => {
                let message =
                    handshake::refusal_message(&shared.url, &error, settings.token.is_some());
                if message != last_refusal {
                    tracing::warn!("{message}");
                    last_refusal.clone_from(&message);
                }
                failures = failures.saturating_add(1);
                disconnected(&shared, ConnectionState::Unauthorized, message);
                backoff.max
            }
        };
        shared.update(|status| status.next_attempt_at = Some(Instant::now() + wait));
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
    shared.link_down(attempts);
    shared.fail_pending();
    shared.update(|status| {
        status.state = ConnectionState::Disconnected;
        status.next_attempt_at = None;
        status.connected_since = None;
        status.last_error = Some("stopped".to_owned());
    });
}

fn load_identity(shared: &Shared, settings: &GatewaySettings) -> Option<DeviceIdentity> {
    let path = settings.identity_file.as_deref()?;
    match DeviceIdentity::load_or_create(path) {
        Ok(identity) => {
            let id = identity.device_id().to_owned();
            shared.update(|status| status.device_id = Some(id));
            Some(identity)
        }
        Err(err) => {
            tracing::warn!(%err, "connecting to the OpenClaw gateway without a device identity");
            shared.update(|status| {
                status.last_error = Some(format!("{err}; connecting without a device identity"));
            });
            None
        }
    }
}

fn disconnected(shared: &Shared, state: ConnectionState, reason: String) {
    shared.update(|status| {
        status.state = state;
        status.connected_since = None;
        status.last_error = Some(reason);
    });
}

async fn attempt(
    shared: &Shared,
    settings: &GatewaySettings,
    identity: &mut Option<DeviceIdentity>,
    stop: &CancellationToken,
    generation: u64,
) -> Outcome {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_INCOMING))
        .max_frame_size(Some(MAX_INCOMING));
    let opened = tokio::select! {
        () = stop.cancelled() => return Outcome::Stopped,
        opened = tokio::time::timeout(
            OPEN_TIMEOUT,
            tokio_tungstenite::connect_async_with_config(shared.url.as_str(), Some(config), false),
        ) => opened,
    };
    let socket = match opened {
        Ok(Ok((socket, _))) => socket,
        Ok(Err(err)) => return failed(format!("cannot reach {}: {err}", shared.url)),
        Err(_) => {
            return failed(format!(
                "{} did not open within {OPEN_TIMEOUT:?}",
                shared.url
            ));
        }
    };
    let (mut sink, mut stream) = socket.split();

    let challenge = tokio::select! {
        () = stop.cancelled() => return Outcome::Stopped,
        challenge = tokio::time::timeout(OPEN_TIMEOUT, read_challenge(&mut stream)) => challenge,
    };
    let challenge = match challenge {
        Ok(Ok(challenge)) => challenge,
        Ok(Err(reason)) => return failed(reason),
        Err(_) => return failed(format!("no connect.challenge within {OPEN_TIMEOUT:?}")),
    };

    let device_token = identity
        .as_ref()
        .and_then(|identity| identity.token_for(&shared.url))
        .cloned();
    let used_device_token = device_token.is_some();
    let token = device_token.as_ref().or(settings.token.as_ref());
    let params = handshake::connect_params(
        &settings.client_version,
        token.map(bridge_util::Secret::expose),
        identity.as_ref(),
        &challenge,
    );
    let id = bridge_util::ids::unique_id("connect");
    if let Err(err) = sink
        .send(Message::text(frame::request(&id, "connect", params)))
        .await
    {
        return failed(format!("cannot send connect: {err}"));
    }
    let answer = tokio::select! {
        () = stop.cancelled() => return Outcome::Stopped,
        answer = tokio::time::timeout(settings.request_timeout, read_response(&mut stream, &id)) => answer,
    };
    let payload = match answer {
        Err(_) => {
            return failed(format!(
                "no answer to connect within {:?}",
                settings.request_timeout
            ));
        }
        Ok(Err(reason)) => return failed(reason),
        Ok(Ok(Err(error))) => {
            let _ = tokio::time::timeout(CLOSE_GRACE, sink.close()).await;
            return match handshake::classify(&error) {
                Refusal::Transient { retry_after_ms } => Outcome::Failed {
                    reason: format!(
                        "the gateway asked to retry: {}",
                        shorten(&error.message, 300)
                    ),
                    retry_after: retry_after_ms
                        .map(|ms| Duration::from_millis(ms.clamp(100, 30_000))),
                },
                Refusal::Final => Outcome::Refused {
                    error,
                    used_device_token,
                },
            };
        }
        Ok(Ok(Ok(payload))) => payload,
    };
    let hello = match frame::parse_hello(&payload) {
        Ok(hello) => hello,
        Err(reason) => return failed(reason),
    };
    keep_device_token(identity, &shared.url, &hello);

    let (out, queue) = mpsc::channel(SEND_QUEUE);
    shared.update(|status| {
        status.state = ConnectionState::Connected;
        status.server = Some(hello.server.clone());
        status.auth_method = hello.auth.method.clone();
        status.connected_since = Some(unix_ms());
        status.last_error = None;
        status.next_attempt_at = None;
    });
    shared.link_up(Link {
        generation,
        out: out.clone(),
        max_payload: hello.policy.max_payload,
    });
    tracing::info!(url = %shared.url, version = %hello.server.version, conn_id = %hello.server.conn_id, "connected to the OpenClaw gateway");
    let tick = Duration::from_millis(hello.policy.tick_interval_ms.max(10));
    session(shared, stop, sink, stream, out, queue, tick).await
}

/// Stores a device token `hello-ok` issued (a new one only).
fn keep_device_token(identity: &mut Option<DeviceIdentity>, url: &str, hello: &HelloOk) {
    let (Some(identity), Some(token)) = (identity.as_mut(), hello.auth.device_token.as_ref())
    else {
        return;
    };
    if identity.token_for(url) == Some(token) {
        return;
    }
    let stored = identity.store_token(DeviceToken {
        token: token.clone(),
        gateway_url: url.to_owned(),
        role: hello.auth.role.clone(),
        scopes: hello.auth.scopes.clone(),
        issued_at_ms: hello.auth.issued_at_ms,
    });
    match stored {
        Ok(()) => tracing::info!("kept the device token the OpenClaw gateway issued"),
        Err(err) => tracing::warn!(%err, "cannot keep the OpenClaw device token"),
    }
}

/// The next text frame's parse (malformed ones skipped), or why the
/// socket ended.
async fn next_incoming(stream: &mut Stream) -> Result<Incoming, String> {
    loop {
        match stream.next().await {
            None => return Err("the gateway closed the connection during the handshake".into()),
            Some(Err(err)) => return Err(format!("connection error during the handshake: {err}")),
            Some(Ok(Message::Close(frame))) => {
                return Err(format!(
                    "the gateway closed the connection during the handshake ({})",
                    describe_close(frame.as_ref())
                ));
            }
            Some(Ok(Message::Text(text))) => match frame::parse(&text) {
                Ok(incoming) => return Ok(incoming),
                Err(reason) => malformed(&reason, &text),
            },
            Some(Ok(_)) => {}
        }
    }
}

async fn read_challenge(stream: &mut Stream) -> Result<Challenge, String> {
    loop {
        if let Incoming::Event(event) = next_incoming(stream).await?
            && event.event == "connect.challenge"
        {
            return Challenge::from_payload(&event.payload);
        }
    }
}

async fn read_response(
    stream: &mut Stream,
    id: &str,
) -> Result<Result<serde_json::Value, RemoteError>, String> {
    loop {
        if let Incoming::Response {
            id: answered,
            outcome,
        } = next_incoming(stream).await?
            && answered == id
        {
            return Ok(outcome);
        }
    }
}

/// The connected phase: send what callers queue, hand answers and events
/// on, and close with 4000 after two tick intervals without a frame.
async fn session(
    shared: &Shared,
    stop: &CancellationToken,
    mut sink: futures::stream::SplitSink<Socket, Message>,
    mut stream: Stream,
    internal: mpsc::Sender<Message>,
    mut queue: mpsc::Receiver<Message>,
    tick: Duration,
) -> Outcome {
    let writer = async move {
        while let Some(message) = queue.recv().await {
            let closing = matches!(message, Message::Close(_));
            sink.send(message)
                .await
                .map_err(|err| format!("cannot send to the gateway: {err}"))?;
            if closing {
                break;
            }
        }
        Ok::<(), String>(())
    };
    tokio::pin!(writer);
    let silence = tick.saturating_mul(2);
    let mut last_frame = Instant::now();
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                close(&internal, 1000, "client stopping", writer.as_mut()).await;
                return Outcome::Stopped;
            }
            written = writer.as_mut() => {
                return Outcome::Ended(written.err().unwrap_or_else(|| "the send queue closed".into()));
            }
            () = tokio::time::sleep_until((last_frame + silence).into()) => {
                close(&internal, TICK_TIMEOUT_CLOSE, "tick timeout", writer.as_mut()).await;
                return Outcome::Ended(format!(
                    "no frame from the gateway for {} ms (two tick intervals); closed with {TICK_TIMEOUT_CLOSE}",
                    silence.as_millis()
                ));
            }
            received = stream.next() => {
                last_frame = Instant::now();
                match received {
                    None => return Outcome::Ended("the gateway closed the connection".into()),
                    Some(Err(err)) => return Outcome::Ended(format!("connection error: {err}")),
                    Some(Ok(Message::Close(frame))) => {
                        return Outcome::Ended(format!(
                            "the gateway closed the connection ({})",
                            describe_close(frame.as_ref())
                        ));
                    }
                    Some(Ok(Message::Text(text))) => handle_text(shared, &text),
                    Some(Ok(Message::Binary(bytes))) => {
                        tracing::debug!(bytes = bytes.len(), "ignored a binary frame from the OpenClaw gateway");
                    }
                    Some(Ok(_)) => {}
                }
            }
        }
    }
}

/// Queues a close frame and gives the writer a moment to send it.
async fn close<F>(internal: &mpsc::Sender<Message>, code: u16, reason: &str, writer: F)
where
    F: std::future::Future<Output = Result<(), String>>,
{
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        if internal.send(Message::Close(Some(frame))).await.is_ok() {
            let _ = writer.await;
        }
    })
    .await;
}

fn handle_text(shared: &Shared, text: &str) {
    match frame::parse(text) {
        Ok(Incoming::Response { id, outcome }) => {
            if !shared.resolve(&id, outcome) {
                tracing::debug!(%id, "an answer from the OpenClaw gateway nobody waits for (timed out?)");
            }
        }
        Ok(Incoming::Event(event)) => {
            // Nobody subscribed is fine: events are offered, not owed.
            let _ = shared.events.send(event);
        }
        Ok(Incoming::Other(kind)) => {
            tracing::debug!(%kind, "ignored a frame of a kind this client does not handle");
        }
        Err(reason) => malformed(&reason, text),
    }
}

fn malformed(reason: &str, text: &str) {
    tracing::warn!(%reason, frame = %shorten(text, 200), "ignored a malformed frame from the OpenClaw gateway");
}

fn describe_close(frame: Option<&CloseFrame>) -> String {
    match frame {
        Some(frame) if frame.reason.is_empty() => format!("code {}", u16::from(frame.code)),
        Some(frame) => format!(
            "code {}: {}",
            u16::from(frame.code),
            shorten(&frame.reason, 200)
        ),
        None => "no close code".to_owned(),
    }
}
