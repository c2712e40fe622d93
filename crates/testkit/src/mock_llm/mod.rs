//! A mock LLM upstream over real HTTP on 127.0.0.1: OpenAI chat completions
//! (also the Azure and Copilot paths), Anthropic messages, model lists, the
//! Copilot token exchange and Ollama tags, answering from a script.
//!
//! Replies are consumed in order, one per chat request; with the script
//! empty, chat endpoints echo the last user message. Every request is
//! recorded so tests can check what the client really sent.

mod anthropic;
mod body;
mod catalog;
mod openai;
mod reply;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;

pub use catalog::{
    COPILOT_TOKEN_LIFETIME_SECS, COPILOT_TOKEN_REFRESH_IN_SECS, MOCK_MODELS, MOCK_OLLAMA_MODELS,
};
pub use reply::{MockReply, MockToolCall, RecordedRequest};

use body::{Step, json_response, last_user_text, response, streamed_body};

/// Largest request body the mock reads; bigger ones are answered 413, which
/// is also what real upstreams do with oversized prompts.
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<MockReply>>,
    /// Replies for requests whose last user message holds a marker, taken
    /// before the script (parallel clients get their own answers).
    routes: Mutex<Vec<(String, VecDeque<MockReply>)>>,
    requests: Mutex<Vec<RecordedRequest>>,
    chat_sequence: Mutex<u64>,
    /// Chat response bodies not yet finished or dropped: a client that
    /// cancels its request shows as this falling back.
    open_chat_bodies: tokio::sync::watch::Sender<usize>,
    /// The most chat bodies open at once.
    most_open_chat_bodies: Mutex<usize>,
    /// The API key every request must carry, once one is required
    /// ([`MockLlm::require_key`]).
    key: Mutex<Option<String>>,
}

/// Locks even after a panic in another test thread: the data is plain
/// lists, never left half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The mock server; shut down when dropped.
pub struct MockLlm {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("address", &self.address)
            .finish()
    }
}

impl MockLlm {
    /// Starts on a free port of 127.0.0.1. Panics if it cannot bind: this is
    /// test support, and a test cannot go on without its upstream.
    pub async fn start(script: Vec<MockReply>) -> MockLlm {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        Self::start_at(loopback, script)
            .await
            .unwrap_or_else(|err| panic!("cannot start mock LLM on {loopback}: {err}"))
    }

    /// Starts on `address` (the `mock-llm` binary's `--port`).
    pub async fn start_at(address: SocketAddr, script: Vec<MockReply>) -> std::io::Result<MockLlm> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            ..Shared::default()
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            // Only fails when the listener breaks; the test then sees
            // connection errors, which say more than a panic here would.
            let _ = axum::serve(listener, router).await;
        });
        Ok(MockLlm {
            address,
            shared,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// From now on, answers every request that does not carry `key` 401 in
    /// the endpoint's error format, as a real upstream does with a wrong
    /// key: as `Authorization: Bearer KEY` (OpenAI, Ollama), `Authorization:
    /// token KEY` (the Copilot token exchange), `x-api-key` (Anthropic) or
    /// `api-key` (Azure).
    pub fn require_key(&self, key: impl Into<String>) {
        *lock(&self.shared.key) = Some(key.into());
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: MockReply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// Queues `reply` for the next chat request whose last user message
    /// contains `marker` (such requests skip the script while a reply for
    /// them is queued).
    pub fn route(&self, marker: impl Into<String>, reply: MockReply) {
        let marker = marker.into();
        let mut routes = lock(&self.shared.routes);
        match routes.iter_mut().find(|(m, _)| *m == marker) {
            Some((_, replies)) => replies.push_back(reply),
            None => routes.push((marker, VecDeque::from([reply]))),
        }
    }

    /// Routed replies not consumed yet.
    pub fn routed_remaining(&self) -> usize {
        lock(&self.shared.routes).iter().map(|(_, r)| r.len()).sum()
    }

    /// The most chat response bodies that were open at the same time.
    pub fn most_open_chat_bodies(&self) -> usize {
        *lock(&self.shared.most_open_chat_bodies)
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Replies not consumed yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Chat response bodies being sent right now: a body counts until it
    /// is complete or its connection is gone.
    pub fn open_chat_bodies(&self) -> usize {
        *self.shared.open_chat_bodies.borrow()
    }

    /// Waits until no chat response body is being sent: every answer was
    /// delivered, or its client hung up (how a cancelled request shows).
    pub async fn chat_bodies_closed(&self) {
        let mut open = self.shared.open_chat_bodies.subscribe();
        // Only fails when the sender is gone, which `self` keeps alive.
        let _ = open.wait_for(|count| *count == 0).await;
    }
}

/// Counts a chat response body as open until it is dropped.
struct OpenBody(Arc<Shared>);

impl OpenBody {
    fn track(shared: &Arc<Shared>, response: Response<Body>) -> Response<Body> {
        shared.open_chat_bodies.send_modify(|count| *count += 1);
        let open = *shared.open_chat_bodies.borrow();
        let mut most = lock(&shared.most_open_chat_bodies);
        *most = (*most).max(open);
        drop(most);
        let guard = OpenBody(Arc::clone(shared));
        response.map(|body| {
            let stream = body.into_data_stream().map(move |chunk| {
                let _held_until_the_body_is_dropped = &guard;
                chunk
            });
            Body::from_stream(stream)
        })
    }
}

impl Drop for OpenBody {
    fn drop(&mut self) {
        self.0
            .open_chat_bodies
            .send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A successful reply reduced to what both chat formats need.
pub(crate) struct Answer {
    text_chunks: Vec<String>,
    calls: Vec<MockToolCall>,
    delay: Option<Duration>,
    drop_at_end: bool,
}

impl Answer {
    fn text(&self) -> String {
        self.text_chunks.concat()
    }

    fn of_text(chunks: Vec<String>) -> Self {
        Answer {
            text_chunks: chunks,
            calls: Vec::new(),
            delay: None,
            drop_at_end: false,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ChatFormat {
    OpenAi,
    Anthropic,
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(bytes) => bytes,
        Err(err) => return openai::error(413, &format!("cannot read request body: {err}"), None),
    };
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_owned();
    let path = parts.uri.path().to_owned();
    lock(&shared.requests).push(RecordedRequest {
        method: parts.method.to_string(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_owned),
        headers,
        body: json.clone(),
        received_at: std::time::Instant::now(),
    });

    if let Some(expected) = lock(&shared.key).clone()
        && !carries_key(&parts.headers, &expected)
    {
        let message = "incorrect API key provided";
        return if path == "/v1/messages" {
            anthropic::error(401, message, None)
        } else {
            openai::error(401, message, None)
        };
    }
    let is_openai_chat = path == "/v1/chat/completions"
        || path == "/chat/completions"
        || (path.starts_with("/openai/deployments/") && path.ends_with("/chat/completions"));
    match (&parts.method, path.as_str()) {
        (&Method::POST, _) if is_openai_chat => {
            OpenBody::track(&shared, chat(&shared, &json, ChatFormat::OpenAi))
        }
        (&Method::POST, "/v1/messages") => {
            OpenBody::track(&shared, chat(&shared, &json, ChatFormat::Anthropic))
        }
        (&Method::GET, "/v1/models" | "/models") => json_response(200, &catalog::openai_models()),
        (&Method::GET, "/api/tags") => json_response(200, &catalog::ollama_tags()),
        (&Method::GET, "/copilot_internal/v2/token") => {
            let sequence = lock(&shared.requests).len() as u64;
            json_response(
                200,
                &catalog::copilot_token(&format!("http://{host}"), sequence),
            )
        }
        (method, path) => {
            openai::error(404, &format!("mock LLM has no route {method} {path}"), None)
        }
    }
}

/// Whether a request's headers carry `key` the way one of the upstreams
/// takes it.
fn carries_key(headers: &axum::http::HeaderMap, key: &str) -> bool {
    let value = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let authorization = value("authorization")
        .and_then(|value| value.split_once(' '))
        .map(|(_, credential)| credential.trim());
    [authorization, value("x-api-key"), value("api-key")]
        .into_iter()
        .flatten()
        .any(|given| given == key)
}

fn chat(shared: &Shared, request: &Value, format: ChatFormat) -> Response<Body> {
    // Real upstreams reject a body that is not a JSON object before any
    // model runs, so the script is left untouched.
    if !request.is_object() {
        let message = "request body is not a JSON object";
        return match format {
            ChatFormat::OpenAi => openai::error(400, message, None),
            ChatFormat::Anthropic => anthropic::error(400, message, None),
        };
    }
    let sequence = {
        let mut sequence = lock(&shared.chat_sequence);
        *sequence += 1;
        *sequence
    };
    let routed = {
        let mut routes = lock(&shared.routes);
        let last_user = last_user_text(request);
        routes
            .iter_mut()
            .find(|(marker, replies)| !replies.is_empty() && last_user.contains(marker.as_str()))
            .and_then(|(_, replies)| replies.pop_front())
    };
    let reply = routed.or_else(|| lock(&shared.script).pop_front());
    let answer = match reply {
        None => Answer::of_text(echo_chunks(&last_user_text(request))),
        Some(MockReply::Text { chunks }) => Answer::of_text(chunks),
        Some(MockReply::ToolCalls { text, calls }) => Answer {
            text_chunks: text.into_iter().collect(),
            calls,
            delay: None,
            drop_at_end: false,
        },
        Some(MockReply::Slow { chunks, delay_ms }) => Answer {
            delay: Some(Duration::from_millis(delay_ms)),
            ..Answer::of_text(chunks)
        },
        Some(MockReply::DropAfter { chunks }) => Answer {
            drop_at_end: true,
            ..Answer::of_text(chunks)
        },
        Some(MockReply::Error {
            status,
            body,
            retry_after_secs,
        }) => {
            return match format {
                ChatFormat::OpenAi => openai::error(status, &body, retry_after_secs),
                ChatFormat::Anthropic => anthropic::error(status, &body, retry_after_secs),
            };
        }
        Some(MockReply::Raw {
            status,
            content_type,
            body_chunks,
        }) => return body::raw_response(status, &content_type, &body_chunks),
    };
    let streaming = request.get("stream").and_then(Value::as_bool) == Some(true);
    match (format, streaming) {
        (ChatFormat::OpenAi, true) => openai::stream(request, &answer, sequence),
        (ChatFormat::Anthropic, true) => anthropic::stream(request, &answer, sequence),
        (ChatFormat::OpenAi, false) => {
            deliver(openai::complete(request, &answer, sequence), &answer)
        }
        (ChatFormat::Anthropic, false) => {
            deliver(anthropic::complete(request, &answer, sequence), &answer)
        }
    }
}

/// A non-streaming answer: after the summed delays of a `Slow` reply, and
/// cut in the middle of the JSON for a `DropAfter` reply.
fn deliver(completion: Value, answer: &Answer) -> Response<Body> {
    let text = completion.to_string();
    // The full length is announced so a cut body is visibly short.
    let length = text.len().to_string();
    let mut steps = Vec::new();
    if let Some(delay) = answer.delay {
        let chunk_count = u32::try_from(answer.text_chunks.len()).unwrap_or(u32::MAX);
        steps.push(Step::Sleep(delay.saturating_mul(chunk_count)));
    }
    if answer.drop_at_end {
        let half = text.len() / 2;
        let cut = (0..=half)
            .rev()
            .find(|&at| text.is_char_boundary(at))
            .unwrap_or(0);
        steps.push(Step::Data(Bytes::from(text[..cut].to_owned())));
        steps.push(Step::Drop);
    } else {
        steps.push(Step::Data(Bytes::from(text)));
    }
    response(
        200,
        &[
            (
                axum::http::header::CONTENT_TYPE,
                "application/json".to_owned(),
            ),
            (axum::http::header::CONTENT_LENGTH, length),
        ],
        streamed_body(steps),
    )
}

/// Echo mode streams the text word by word (spaces kept) so clients see
/// several deltas.
fn echo_chunks(text: &str) -> Vec<String> {
    if text.is_empty() {
        return vec![String::new()];
    }
    text.split_inclusive(' ').map(str::to_owned).collect()
}
