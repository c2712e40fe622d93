//! `POST /v1/chat/completions` in OpenAI's format, streaming (SSE) and not.
//!
//! The response head is sent once the upstream has answered its own, so an
//! upstream that refuses the request is an HTTP error here too; after that,
//! a failure ends the stream with an error chunk and `[DONE]`. The body
//! stream owns the upstream's event stream: a client that goes away drops
//! both, which cancels the upstream request.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_llm::translate::openai::{
    InboundRequest, StreamEncoder, parse_request, response_object,
};
use bridge_llm::{BackendKind, ChatEvent, ChatRequest, ChatStream};
use futures::StreamExt;
use serde_json::Value;

use super::FacadeCall;
use super::errors::FacadeError;
use super::normalize;
use super::request_log::RequestNote;
use super::timing::Overhead;
use super::upstream;
use crate::app::ServerContext;
use bridge_compose::{BackendEntry, PromptStyle};

const DONE: &[u8] = b"data: [DONE]\n\n";

/// The route's answer (see `super::routes`).
pub(super) async fn chat_completions(
    call: &FacadeCall,
    object: serde_json::Map<String, serde_json::Value>,
    clock: &mut Overhead,
) -> Result<Response, FacadeError> {
    let (ctx, note) = (&call.ctx, &call.note);
    let thinking = bridge_llm::translate::asks_for_thinking(&object);
    let inbound = parse_request(object)?;
    let route = ctx
        .backends
        .route_estimating(inbound.request.model.as_deref(), thinking, || {
            bridge_llm::translate::estimate_chat_tokens(&inbound.request)
        })
        .await?;
    let entry = route.entry;
    let requested = inbound.request.model.clone();
    let (stream, include_usage) = (inbound.stream, inbound.include_usage);
    // Debug, not info: this is the hot path, and every log line pays for
    // the redactor.
    tracing::debug!(
        backend = %entry.name,
        model = route.model.as_deref().unwrap_or("(default)"),
        stream,
        messages = inbound.request.messages.len(),
        "chat completion"
    );
    let mut request = upstream_request(&entry, inbound)?;
    request.model = route.model;
    note.route(
        requested.as_deref(),
        request.model.as_deref(),
        &entry.name,
        &route.rule,
    );
    // Clients match answers by the model they asked for.
    let shown_model = requested
        .or_else(|| request.model.clone())
        .or_else(|| entry.default_model.clone())
        .unwrap_or_default();
    let id = format!("chatcmpl-{}", bridge_util::ids::opaque_hex());
    let created = super::timing::unix_now();
    if !stream {
        let whole = upstream::answer_whole(call, &entry, request, clock).await?;
        let completion = response_object(&id, created, &shown_model, &whole);
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            completion.to_string(),
        )
            .into_response());
    }
    let events = upstream::open_stream(call, &entry, request, clock).await?;
    let encoder = StreamEncoder::new(id, created, shown_model, include_usage);
    Ok(sse_response(SseState::new(
        ctx, note, &entry, events, encoder,
    )))
}

/// What the backend is sent, by how it takes a conversation (see
/// docs/facade.md, "What reaches the backend").
fn upstream_request(
    entry: &BackendEntry,
    inbound: InboundRequest,
) -> Result<ChatRequest, FacadeError> {
    match entry.style {
        PromptStyle::SinglePrompt { turns } => {
            if let Some((param, what)) = inbound.beyond_normalized() {
                return Err(FacadeError::invalid(
                    "unsupported_content",
                    format!(
                        "{what} cannot be sent to the backend {:?}, which takes one text prompt",
                        entry.name
                    ),
                )
                .with_param(param));
            }
            Ok(normalize::single_prompt_request(&inbound.request, turns))
        }
        PromptStyle::Chat if entry.kind == BackendKind::Anthropic => {
            let (request, dropped) = inbound.for_anthropic()?;
            if !dropped.is_empty() {
                tracing::debug!(backend = %entry.name, ?dropped, "fields without an Anthropic equivalent left out");
            }
            Ok(request)
        }
        // The editor takes the normalized conversation (text, tool calls
        // and results, the token limit whichever field named it); what only
        // OpenAI's own format carries is refused, not dropped.
        PromptStyle::Chat if entry.kind == BackendKind::Vscode => {
            match inbound.refuse_beyond_normalized(&entry.name) {
                Some(refused) => Err(refused.into()),
                None => Ok(inbound.request),
            }
        }
        PromptStyle::Chat => Ok(inbound.native()),
    }
}

fn sse_data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// A streamed answer in progress. Dropped with the response body when the
/// client goes away, taking the upstream stream with it.
struct SseState {
    events: Option<ChatStream>,
    encoder: StreamEncoder,
    pending: VecDeque<Bytes>,
    ctx: ServerContext,
    note: RequestNote,
    entry: Arc<BackendEntry>,
}

impl SseState {
    fn new(
        ctx: &ServerContext,
        note: &RequestNote,
        entry: &Arc<BackendEntry>,
        events: ChatStream,
        encoder: StreamEncoder,
    ) -> Self {
        let mut pending = VecDeque::new();
        pending.push_back(sse_data(&encoder.start()));
        Self {
            events: Some(events),
            encoder,
            pending,
            ctx: ctx.clone(),
            note: note.clone(),
            entry: Arc::clone(entry),
        }
    }

    /// The next bytes to write, `None` once `[DONE]` went out.
    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.pending.pop_front() {
                return Some(bytes);
            }
            let events = self.events.as_mut()?;
            match events.next().await {
                Some(Ok(event)) => {
                    if let ChatEvent::Usage { usage } = &event {
                        self.note.usage(*usage);
                    }
                    if let Some(chunk) = self.encoder.event(event) {
                        self.pending.push_back(sse_data(&chunk));
                    }
                }
                Some(Err(err)) => {
                    self.events = None;
                    let error = upstream::failure(&self.ctx.backends, &self.entry, &err);
                    self.note.reason(&error.reason());
                    self.pending.push_back(sse_data(&error.openai_body()));
                    self.pending.push_back(Bytes::from_static(DONE));
                }
                None => {
                    self.events = None;
                    for chunk in self.encoder.end() {
                        self.pending.push_back(sse_data(&chunk));
                    }
                    self.pending.push_back(Bytes::from_static(DONE));
                }
            }
        }
    }
}

fn sse_response(state: SseState) -> Response {
    let stream = futures::stream::unfold(state, |mut state| async move {
        let bytes = state.next_bytes().await?;
        Some((Ok::<_, Infallible>(bytes), state))
    });
    super::body::event_stream(Body::from_stream(stream), "text/event-stream")
}

#[cfg(test)]
mod tests {
    use super::super::errors::ErrorKind;
    use super::*;
    use bridge_llm::LlmError;

    #[test]
    fn upstream_errors_map_to_the_documented_codes() {
        let transport = LlmError::Transport {
            backend: "b".into(),
            url: "http://127.0.0.1:1".into(),
            message: "connection refused".into(),
        };
        let copilot = FacadeError::from_llm(BackendKind::Copilot, &transport);
        assert_eq!(
            (copilot.status, copilot.code),
            (StatusCode::SERVICE_UNAVAILABLE, "copilot_unavailable")
        );
        let openai = FacadeError::from_llm(BackendKind::OpenAi, &transport);
        assert_eq!(
            (openai.status, openai.code),
            (StatusCode::SERVICE_UNAVAILABLE, "backend_unavailable")
        );
        let auth = FacadeError::from_llm(
            BackendKind::Copilot,
            &LlmError::Auth {
                backend: "copilot".into(),
                message: "signed out".into(),
            },
        );
        assert_eq!(auth.code, "copilot_unavailable");
        let server = FacadeError::from_llm(
            BackendKind::OpenAi,
            &LlmError::Http {
                backend: "openai".into(),
                status: 500,
                message: "boom".into(),
                retry_after: None,
            },
        );
        assert_eq!(
            (server.status, server.code, server.kind),
            (StatusCode::BAD_GATEWAY, "upstream_error", ErrorKind::Server)
        );
    }
}
