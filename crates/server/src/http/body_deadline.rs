//! A deadline on reading a request body. hyper's header timeout ends when
//! the head is complete; without this a client with a valid token could
//! send a body at a byte a second and hold its handler, and the connection,
//! for ever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use tokio::time::Sleep;

/// The body did not arrive in time.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive within {} s", .0.as_secs_f32())]
pub struct BodyTimeout(pub Duration);

impl BodyTimeout {
    /// Whether `err` (or what caused it) is a body read that timed out.
    pub fn caused(err: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut cause = Some(err);
        while let Some(err) = cause {
            if let Some(timeout) = err.downcast_ref::<Self>() {
                return Some(*timeout);
            }
            cause = err.source();
        }
        None
    }
}

/// Whether the current request's body timed out. One per connection:
/// HTTP/1.1 serves one request at a time.
#[derive(Debug, Default)]
pub(super) struct TimedOut(AtomicBool);

impl TimedOut {
    pub(super) fn reset(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A request body that fails with [`BodyTimeout`] once it has been waited
/// for longer than its timeout in all.
pub(super) struct DeadlineBody {
    inner: Incoming,
    timeout: Duration,
    /// Armed the first time the body is not there yet: a body that arrives
    /// with its head (most of them) never costs a timer.
    deadline: Option<Pin<Box<Sleep>>>,
    timed_out: Arc<TimedOut>,
}

impl DeadlineBody {
    pub(super) fn new(inner: Incoming, timeout: Duration, timed_out: Arc<TimedOut>) -> Self {
        Self {
            inner,
            timeout,
            deadline: None,
            timed_out,
        }
    }

    fn expire(&self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.timed_out.0.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(Box::new(BodyTimeout(self.timeout)))))
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        // Checked before the body: a trickle always has a byte ready.
        if let Some(deadline) = &mut this.deadline
            && deadline.as_mut().poll(cx).is_ready()
        {
            return this.expire();
        }
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(BoxError::from)));
        }
        if this.deadline.is_none() {
            let mut deadline = Box::pin(tokio::time::sleep(this.timeout));
            if deadline.as_mut().poll(cx).is_ready() {
                return this.expire();
            }
            this.deadline = Some(deadline);
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What a handler's answer becomes when the body timed out under it: its own
/// 408 if it made one (the facade answers in the OpenAI or Anthropic shape),
/// else a JSON-RPC error (the shape of `/rpc` and MCP), and the connection
/// closes either way (the rest of the body is not awaited).
pub(super) fn answer_timed_out(response: Response, timeout: Duration) -> Response {
    let mut response = if response.status() == StatusCode::REQUEST_TIMEOUT {
        response
    } else {
        let error = crate::rpc::failure(
            None,
            bridge_protocol::jsonrpc::INVALID_REQUEST,
            BodyTimeout(timeout).to_string(),
        );
        (
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONTENT_TYPE, "application/json")],
            error.to_string(),
        )
            .into_response()
    };
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
