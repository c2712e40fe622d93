//! The daemon's HTTP/1.1 server loop. `axum::serve` sets no header-read
//! timeout and no connection limit, so any local process could hold
//! thousands of half-sent requests open until the daemon runs out of file
//! descriptors (and its tools with it). Here every connection counts
//! against a cap until its socket closes (upgraded WebSockets included),
//! and a client gets a bounded time to send its request head.
//!
//! Request bodies have a deadline too (`body_deadline`), and a connection
//! the daemon ends first is drained before it closes (`linger`), so a
//! client still sending gets its answer rather than a reset.
//!
//! HTTP/2 is not served: no client of the daemon needs it (browsers speak
//! it only over TLS), and prior-knowledge HTTP/2 would be one more
//! unauthenticated way to hold a connection.

mod body_deadline;
mod linger;

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::response::Response;
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How long to pause after a failed `accept` (e.g. out of descriptors), so a
/// persistent failure does not spin a core.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

pub use body_deadline::BodyTimeout;
use body_deadline::{DeadlineBody, TimedOut};

/// How many connections the daemon holds and how long a request head and
/// body may take to arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections (HTTP and WebSocket, authenticated or not); more are
    /// closed as soon as they are accepted.
    pub max_connections: usize,
    /// Time from the start of a request (or of an idle keep-alive
    /// connection) until its head is complete.
    pub header_timeout: Duration,
    /// Time a handler waits for a request's body in all (from when it
    /// first finds it incomplete); then 408 and the connection closes.
    pub body_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }
}

impl ConnectionLimits {
    /// The defaults, with what the configuration sets (`max_connections`,
    /// `header_timeout_ms`, `body_timeout_ms`).
    pub fn configured(settings: &bridge_config::ConnectionSettings) -> Self {
        let defaults = Self::default();
        Self {
            max_connections: settings
                .max_connections
                .map_or(defaults.max_connections, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            header_timeout: settings
                .header_timeout_ms
                .map_or(defaults.header_timeout, Duration::from_millis),
            body_timeout: settings
                .body_timeout_ms
                .map_or(defaults.body_timeout, Duration::from_millis),
        }
    }

    /// The cap, lowered to half the process's descriptor limit so that a
    /// full house still leaves descriptors for tools and the state file.
    fn effective_max(&self) -> usize {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let by_descriptors =
            soft.map_or(usize::MAX, |n| usize::try_from(n / 2).unwrap_or(usize::MAX));
        self.max_connections
            .min(by_descriptors)
            .clamp(1, u32::MAX as usize)
    }
}

/// A socket that holds one connection slot until it is dropped, whether
/// hyper serves it or an upgraded WebSocket owns it; then it is closed the
/// lingering way (`linger`). Both fields are `Some` until the drop.
struct Counted {
    stream: Option<TcpStream>,
    slot: Option<OwnedSemaphorePermit>,
}

impl Counted {
    fn stream(&mut self) -> io::Result<Pin<&mut TcpStream>> {
        match &mut self.stream {
            Some(stream) => Ok(Pin::new(stream)),
            None => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let (Some(stream), Some(slot)) = (self.stream.take(), self.slot.take()) {
            linger::close(stream, slot);
        }
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.stream()?.poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.stream()?.poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream()?.poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream()?.poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.stream()?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(TcpStream::is_write_vectored)
    }
}

/// Serves `app` on `listener` until `shutdown`, then lets open HTTP
/// exchanges finish and returns once every connection has closed (callers
/// bound the wait).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let max = limits.effective_max();
    let slots = Arc::new(Semaphore::new(max));
    // Logged once per episode, not once per refused connection.
    let mut saturated = false;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => {
                // Small frames answer small frames: without this a reply can
                // wait behind Nagle for the peer's delayed ACK.
                let _ = stream.set_nodelay(true);
                (stream, peer)
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot accept a connection");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if !saturated {
                tracing::warn!(
                    "{max} connections are open; refusing more until some close (a client may be flooding the daemon)"
                );
                saturated = true;
            }
            drop(stream);
            continue;
        };
        saturated = false;
        let counted = Counted {
            stream: Some(stream),
            slot: Some(slot),
        };
        tokio::spawn(serve_connection(
            counted,
            PeerAddr(peer),
            app.clone(),
            limits,
            shutdown.clone(),
        ));
    }
    drop(listener);
    // Every slot back means every socket (upgraded ones too) is closed.
    let _ = slots
        .acquire_many(u32::try_from(max).unwrap_or(u32::MAX))
        .await;
}

/// The address a request's connection came from, in its extensions (the
/// dashboard serves loopback peers only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

async fn serve_connection(
    io: Counted,
    peer: PeerAddr,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let timed_out = Arc::new(TimedOut::default());
    let body_timeout = limits.body_timeout;
    let app = TowerToHyperService::new(app);
    let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
        timed_out.reset();
        let mut request =
            request.map(|body| DeadlineBody::new(body, body_timeout, timed_out.clone()));
        request.extensions_mut().insert(peer);
        answer(app.call(request), body_timeout, timed_out.clone())
    });
    let connection = builder
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        finished = connection.as_mut() => {
            if let Err(err) = finished {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            return;
        }
        () = shutdown.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    if let Err(err) = connection.await {
        tracing::debug!(error = %err, "connection ended with an error while draining");
    }
}

/// The app's answer, or 408 if the request's body timed out under it.
async fn answer(
    response: impl Future<Output = Result<Response, Infallible>>,
    body_timeout: Duration,
    timed_out: Arc<TimedOut>,
) -> Result<Response, Infallible> {
    let response = response.await?;
    if timed_out.is_set() {
        tracing::debug!("a request body did not arrive in time");
        return Ok(body_deadline::answer_timed_out(response, body_timeout));
    }
    Ok(response)
}
