//! One info line per facade request, so a user can see what their agent
//! asked for and why it failed: method and path, client (user-agent),
//! requested → routed model, backend, status, time to the response head,
//! total time (a stream's end), tokens in and out, and for every 4xx/5xx
//! the reason.
//!
//! The middleware puts a [`RequestNote`] into the request's extensions;
//! handlers fill it in as they learn things (the route, the usage, the
//! refusal). The line is written when the response body is done or dropped
//! (a client that hangs up mid-stream still gets its line). With
//! `request_log` on, the same line also goes, as one JSON object, to
//! `requests.jsonl` in the state directory ([`RequestJournal`]): never a
//! body, reasons redacted, the file rotated past [`JOURNAL_MAX_BYTES`].

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use bridge_llm::Usage;
use bridge_util::owner_only;

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
    /// The conversation sent and the answer, redacted and cut: only with
    /// telemetry's `capture_content` on, for the request's span.
    input: Option<String>,
    output: Option<String>,
}

impl RequestNote {
    /// The requested model, the model sent, the backend and the rule of
    /// [`bridge_compose::Backends::route_request`] that chose them.
    pub fn route(&self, requested: Option<&str>, routed: Option<&str>, backend: &str, rule: &str) {
        let mut noted = bridge_util::sync::lock(&self.0);
        noted.requested = requested.map(str::to_owned);
        noted.routed = routed.map(str::to_owned);
        noted.backend = Some(backend.to_owned());
        noted.rule = Some(rule.to_owned());
    }

    pub fn usage(&self, usage: Usage) {
        bridge_util::sync::lock(&self.0).usage = Some(usage);
    }

    /// The conversation sent, as the request's span carries it.
    pub fn capture_input(&self, input: String) {
        bridge_util::sync::lock(&self.0).input = Some(input);
    }

    /// The answer, as the request's span carries it.
    pub fn capture_output(&self, output: String) {
        bridge_util::sync::lock(&self.0).output = Some(output);
    }

    /// Why the request failed (an error answer, or a stream that broke).
    pub fn reason(&self, reason: &str) {
        bridge_util::sync::lock(&self.0).reason = Some(bridge_policy::redact::shorten(reason, 300));
    }
}

/// Where `requests.jsonl` rotates (to `requests.jsonl.1`, one kept).
pub const JOURNAL_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// `requests.jsonl`: one JSON object per facade request (mode 0600).
///
/// Opened when the daemon starts, through the owner-only opener: a symlink
/// or a foreign file at its path disables the journal (the daemon still
/// serves; the error is logged and `status` shows it) instead of writing
/// wherever the link points. A later failure (the rotation's new file
/// refused, a full disk) is kept for `status` too.
#[derive(Debug)]
pub struct RequestJournal {
    path: std::path::PathBuf,
    max_bytes: u64,
    file: Mutex<Option<(std::fs::File, u64)>>,
    /// Why the journal is not being written, when it is not.
    failure: Mutex<Option<String>>,
}

impl RequestJournal {
    /// The journal of `state_dir`, its file opened now; `Err` says why the
    /// journal cannot be kept (the caller runs without one).
    pub fn open(state_dir: &std::path::Path) -> Result<Self, String> {
        let journal = Self {
            path: state_dir.join("requests.jsonl"),
            max_bytes: JOURNAL_MAX_BYTES,
            file: Mutex::new(None),
            failure: Mutex::new(None),
        };
        let mut slot = bridge_util::sync::lock(&journal.file);
        journal
            .reopen(&mut slot)
            .map_err(|err| journal.refusal(&err))?;
        drop(slot);
        Ok(journal)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Where the file goes when it rotates (`requests.jsonl.1`).
    pub fn rotated_path(&self) -> std::path::PathBuf {
        self.path.with_extension("jsonl.1")
    }

    /// Why the last write failed, if it did.
    pub fn failure(&self) -> Option<String> {
        bridge_util::sync::lock(&self.failure).clone()
    }

    fn refusal(&self, err: &std::io::Error) -> String {
        let planted = if owner_only::is_planted(err) {
            " (a symbolic link or special file is in its place; remove it)"
        } else {
            ""
        };
        format!("request log {}: {err}{planted}", self.path.display())
    }

    fn append(&self, line: &serde_json::Value) {
        let mut text = line.to_string();
        text.push('\n');
        let mut slot = bridge_util::sync::lock(&self.file);
        let written = self.write(&mut slot, text.as_bytes());
        let mut failure = bridge_util::sync::lock(&self.failure);
        match written {
            Ok(()) => *failure = None,
            Err(err) => {
                let reason = self.refusal(&err);
                if failure.as_deref() != Some(reason.as_str()) {
                    tracing::error!("{reason}");
                }
                *failure = Some(reason);
            }
        }
    }

    fn reopen(&self, slot: &mut Option<(std::fs::File, u64)>) -> std::io::Result<()> {
        let file = owner_only::open_append(&self.path)?;
        let size = file.metadata()?.len();
        *slot = Some((file, size));
        Ok(())
    }

    fn write(&self, slot: &mut Option<(std::fs::File, u64)>, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write as _;
        if slot
            .as_ref()
            .is_some_and(|(_, size)| *size >= self.max_bytes)
        {
            *slot = None;
            std::fs::rename(&self.path, self.rotated_path())?;
        }
        if slot.is_none() {
            self.reopen(slot)?;
        }
        if let Some((file, size)) = slot.as_mut() {
            file.write_all(bytes)?;
            *size += bytes.len() as u64;
        }
        Ok(())
    }
}

/// The middleware: notes the request, then logs it when its body ends.
pub async fn log_requests(
    State(journal): State<Option<Arc<RequestJournal>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let trace_parent = bridge_telemetry::propagation::parent_of(request.headers());
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
        journal,
        trace_parent,
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
    journal: Option<Arc<RequestJournal>>,
    /// The trace the request's `traceparent` names (telemetry on only).
    trace_parent: Option<bridge_telemetry::TraceContext>,
}

impl Line {
    /// The request as a `chat` span and its metrics, when telemetry is on.
    fn record_telemetry(&self, noted: &Noted, total: std::time::Duration) {
        let Some(telemetry) = bridge_telemetry::active() else {
            return;
        };
        telemetry.facade_request(&self.path, self.status);
        // A model call: the request was routed to a backend.
        let Some(backend) = noted.backend.as_deref() else {
            return;
        };
        let error = (self.status >= 400).then(|| self.status.to_string());
        let client_agent = self
            .client
            .split(['/', ' '])
            .next()
            .filter(|name| !name.is_empty());
        telemetry.chat(
            &bridge_telemetry::ChatRecord {
                provider: backend,
                request_model: noted.requested.as_deref().or(noted.routed.as_deref()),
                response_model: noted.routed.as_deref(),
                input_tokens: noted.usage.map(|usage| usage.prompt_tokens),
                output_tokens: noted.usage.map(|usage| usage.completion_tokens),
                client_agent,
                route_rule: noted.rule.as_deref(),
                started: std::time::SystemTime::now().checked_sub(total),
                duration: total,
                error: error.as_deref(),
                input: noted.input.clone(),
                output: noted.output.clone(),
                ..Default::default()
            },
            self.trace_parent.as_ref(),
        );
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let noted = bridge_util::sync::lock(&self.note.0);
        let requested = noted.requested.as_deref().unwrap_or("-");
        let routed = noted.routed.as_deref().unwrap_or("(default)");
        let backend = noted.backend.as_deref().unwrap_or("-");
        let rule = noted.rule.as_deref().unwrap_or("-");
        let (tokens_in, tokens_out) = noted.usage.map_or((0, 0), |usage| {
            (usage.prompt_tokens, usage.completion_tokens)
        });
        let reason = noted.reason.as_deref().unwrap_or("");
        let total_ms = elapsed_ms(self.started);
        self.record_telemetry(&noted, self.started.elapsed());
        if let Some(journal) = &self.journal {
            journal.append(&serde_json::json!({
                "at": bridge_util::time::now_timestamp(),
                "method": self.method,
                "path": self.path,
                "status": self.status,
                "client": self.client,
                "requestedModel": noted.requested,
                "model": noted.routed,
                "backend": noted.backend,
                "rule": noted.rule,
                "headMs": (self.head_ms * 10.0).round() / 10.0,
                "totalMs": (total_ms * 10.0).round() / 10.0,
                "tokensIn": tokens_in,
                "tokensOut": tokens_out,
                "reason": noted.reason,
            }));
        }
        tracing::info!(
            target: "copilot_bridge::facade",
            "{} {} {} client={:?} model={requested}→{routed} backend={backend} via={rule:?} head_ms={:.1} total_ms={:.1} tokens={tokens_in}/{tokens_out}{}{reason}",
            self.method,
            self.path,
            self.status,
            self.client,
            self.head_ms,
            total_ms,
            if reason.is_empty() { "" } else { " reason: " },
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_journal_rotates_and_keeps_one_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = RequestJournal::open(dir.path()).unwrap();
        journal.max_bytes = 100;
        for n in 0..12 {
            journal.append(&serde_json::json!({"n": n, "pad": "x".repeat(20)}));
        }
        let current = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
        let old = std::fs::read_to_string(dir.path().join("requests.jsonl.1")).unwrap();
        assert!(current.len() <= 100 + 40, "{current}");
        assert!(old.len() <= 100 + 40, "{old}");
        // The newest entry is in the current file, whole lines in both.
        assert!(current.lines().last().unwrap().contains("\"n\":11"));
        for line in current.lines().chain(old.lines()) {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}
