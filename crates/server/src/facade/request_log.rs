//! One info line per facade request, so a user can see what their agent
//! asked for and why it failed: method and path, client (user-agent),
//! requested → routed model, backend, status, time to the response head,
//! total time (a stream's end), tokens in and out, and for every 4xx/5xx
//! the reason.
//!
//! The middleware puts a [`RequestNote`] into the request's extensions;
//! handlers fill it in as they learn things (the route, the usage, the
//! refusal). The line is written when the response body is done or dropped
//! (a client that hangs up mid-stream still gets its line).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use bridge_llm::Usage;

use super::errors::FacadeError;
use super::timing::Overhead;

/// What a handler learnt about its request. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RequestNote(Arc<Mutex<Noted>>);

#[derive(Debug, Default)]
struct Noted {
    requested: Option<String>,
    routed: Option<String>,
    backend: Option<String>,
    rule: Option<String>,
    usage: Option<Usage>,
    reason: Option<String>,
}

impl RequestNote {
    /// The requested model, the model sent, the backend and the rule of
    /// [`super::backends::Backends::route_request`] that chose them.
    pub fn route(&self, requested: Option<&str>, routed: Option<&str>, backend: &str, rule: &str) {
        let mut noted = bridge_policy::sync::lock(&self.0);
        noted.requested = requested.map(str::to_owned);
        noted.routed = routed.map(str::to_owned);
        noted.backend = Some(backend.to_owned());
        noted.rule = Some(rule.to_owned());
    }

    pub fn usage(&self, usage: Usage) {
        bridge_policy::sync::lock(&self.0).usage = Some(usage);
    }

    /// Why the request failed (an error answer, or a stream that broke).
    pub fn reason(&self, reason: &str) {
        bridge_policy::sync::lock(&self.0).reason =
            Some(bridge_policy::redact::shorten(reason, 300));
    }
}

/// A handler's last step: an error answered in the API's shape (`shape`)
/// and noted for the log, and the `x-bridge-overhead-ms` header either way.
pub fn finish(
    answered: Result<Response, FacadeError>,
    note: &RequestNote,
    overhead: &Overhead,
    shape: fn(&FacadeError) -> Response,
) -> Response {
    let mut response = answered.unwrap_or_else(|error| {
        note.reason(&error.reason());
        shape(&error)
    });
    overhead.stamp(response.headers_mut());
    response
}

/// The middleware: notes the request, then logs it when its body ends.
pub async fn log_requests(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let note = RequestNote::default();
    request.extensions_mut().insert(note.clone());
    let line = Line {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        client: request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .map(|agent| bridge_protocol::excerpt(agent).to_string())
            .unwrap_or_default(),
        note,
        started,
        status: 0,
        head_ms: 0.0,
    };
    let response = next.run(request).await;
    let mut line = line;
    line.status = response.status().as_u16();
    line.head_ms = elapsed_ms(started);
    let (parts, inner) = response.into_parts();
    // The line goes out when the body is finished or dropped.
    Response::from_parts(parts, Body::new(LoggedBody { inner, _line: line }))
}

/// The response body, unchanged (its size hint too, so a whole answer
/// keeps its `content-length`), holding the line until it is dropped.
struct LoggedBody {
    inner: Body,
    _line: Line,
}

impl http_body::Body for LoggedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

struct Line {
    method: String,
    path: String,
    client: String,
    note: RequestNote,
    started: Instant,
    status: u16,
    head_ms: f64,
}

impl Drop for Line {
    fn drop(&mut self) {
        let noted = bridge_policy::sync::lock(&self.note.0);
        let requested = noted.requested.as_deref().unwrap_or("-");
        let routed = noted.routed.as_deref().unwrap_or("(default)");
        let backend = noted.backend.as_deref().unwrap_or("-");
        let rule = noted.rule.as_deref().unwrap_or("-");
        let (tokens_in, tokens_out) = noted.usage.map_or((0, 0), |usage| {
            (usage.prompt_tokens, usage.completion_tokens)
        });
        let reason = noted.reason.as_deref().unwrap_or("");
        tracing::info!(
            target: "copilot_bridge::facade",
            "{} {} {} client={:?} model={requested}→{routed} backend={backend} via={rule:?} head_ms={:.1} total_ms={:.1} tokens={tokens_in}/{tokens_out}{}{reason}",
            self.method,
            self.path,
            self.status,
            self.client,
            self.head_ms,
            elapsed_ms(self.started),
            if reason.is_empty() { "" } else { " reason: " },
        );
    }
}
