//! `POST /v1/messages` in Anthropic's format, streaming (SSE) and not, over
//! any chat backend; and `POST /v1/messages/count_tokens`, an estimate.
//!
//! The response head is sent only once the upstream has answered its own
//! head, so an upstream that refuses the request (429, 5xx, unreachable) is
//! an HTTP error in Anthropic's shape, never a 200 stream. Once streaming, a
//! failure ends the stream with an Anthropic `event: error` record. The
//! upstream request lives in the response body: a client that disconnects
//! drops it, and the upstream connection with it.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_llm::translate::anthropic::StreamEncoder;
use bridge_llm::translate::anthropic::{
    self, InboundError, InboundErrorKind, UpstreamFormat, response_object,
};
use bridge_llm::{BackendKind, ChatEvent, ChatStream, FinishReason, LlmError};
use futures::StreamExt;
use serde_json::json;

use super::body::read_json_object;
use super::errors::FacadeError;
use super::request_log::{RequestNote, finish};
use super::timing::Overhead;
use super::upstream::Upstream as _;
use crate::app::ServerContext;
use bridge_compose::{BackendEntry, Backends, RouteRequest};

pub(crate) async fn messages(
    State(ctx): State<ServerContext>,
    Extension(note): Extension<RequestNote>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut overhead = Overhead::start();
    let answered = answer(&ctx, &note, &headers, body, &mut overhead).await;
    finish(answered, &note, &overhead, FacadeError::anthropic_response)
}

async fn answer(
    ctx: &ServerContext,
    note: &RequestNote,
    headers: &HeaderMap,
    body: Body,
    overhead: &mut Overhead,
) -> Result<Response, FacadeError> {
    let body = read_json_object(headers, body).await?;
    // Routing needs the model before the body is parsed for its upstream.
    let requested = body.get("model").and_then(|model| model.as_str());
    let route = ctx.backends.route_request(&RouteRequest {
        model: requested,
        thinking: bridge_llm::translate::asks_for_thinking(&body),
        // Estimated only when a route needs it: it parses the body once more.
        input_tokens: if ctx.backends.routes().long_context.is_some() {
            anthropic::estimate_input_tokens(&body).unwrap_or(0)
        } else {
            0
        },
    })?;
    let entry = route.entry;
    let format = if entry.kind == BackendKind::Anthropic {
        UpstreamFormat::Anthropic
    } else {
        UpstreamFormat::OpenAiChat
    };
    let inbound = anthropic::parse_request(&body, format).map_err(invalid)?;
    // Clients match answers to what they asked for, not to the routed name.
    let model = inbound
        .model
        .clone()
        .or_else(|| route.model.clone())
        .or_else(|| entry.default_model.clone())
        .unwrap_or_else(|| entry.name.clone());
    let mut request = inbound.chat;
    request.model = route.model;
    note.route(
        inbound.model.as_deref(),
        request.model.as_deref(),
        &entry.name,
        &route.rule,
    );
    if format == UpstreamFormat::Anthropic {
        // Betas the client turned on (tool search, 1M context, …) reach
        // the upstream that knows them.
        if let Some(beta) = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) {
            request
                .headers
                .insert("anthropic-beta".to_owned(), beta.to_owned());
        }
    }
    for left_out in &inbound.ignored {
        tracing::debug!(backend = %entry.name, "anthropic facade: left out {left_out}");
    }
    let input_estimate = anthropic::estimate_chat_tokens(&request);
    tracing::debug!(
        backend = %entry.name,
        model = %model,
        stream = inbound.stream,
        messages = request.messages.len(),
        tools = request.tools.len(),
        "anthropic facade: messages"
    );

    let message_id = format!("msg_{}", bridge_util::ids::opaque_hex());
    if !inbound.stream {
        let answer = ctx
            .backends
            .answer_whole(&entry, request, overhead, note)
            .await?;
        let message = response_object(&message_id, &model, &answer);
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            message.to_string(),
        )
            .into_response());
    }

    let upstream = ctx.backends.open_stream(&entry, request, overhead).await?;
    let relay = Relay {
        upstream,
        encoder: StreamEncoder::new(&message_id, &model).with_input_estimate(input_estimate),
        called_tools: false,
        done: false,
        backends: Arc::clone(&ctx.backends),
        entry,
        note: note.clone(),
    };
    let records = futures::stream::unfold(relay, Relay::next_record);
    let mut response = Response::new(Body::from_stream(records));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, estimated
/// locally (see [`anthropic::estimate_input_tokens`]); no backend is asked,
/// since most of them cannot count.
pub(crate) async fn count_tokens(headers: HeaderMap, body: Body) -> Response {
    let overhead = Overhead::start();
    let counted = match read_json_object(&headers, body).await {
        Ok(body) => anthropic::estimate_input_tokens(&body).map_err(invalid),
        Err(err) => Err(err),
    };
    let mut response = match counted {
        Ok(tokens) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"input_tokens": tokens}).to_string(),
        )
            .into_response(),
        Err(err) => err.anthropic_response(),
    };
    overhead.stamp(response.headers_mut());
    response
}

fn invalid(err: InboundError) -> FacadeError {
    let code = match err.kind {
        InboundErrorKind::Missing => "missing_field",
        InboundErrorKind::Invalid => "invalid_field",
    };
    FacadeError::invalid(code, err.to_string()).with_param(err.param)
}

/// The streamed answer: upstream events through the encoder, one SSE
/// chunk per event that produces records.
struct Relay {
    upstream: ChatStream,
    encoder: StreamEncoder,
    called_tools: bool,
    done: bool,
    backends: Arc<Backends>,
    entry: Arc<BackendEntry>,
    note: RequestNote,
}

impl Relay {
    async fn next_record(mut self) -> Option<(Result<String, Infallible>, Self)> {
        if self.done {
            return None;
        }
        loop {
            match self.upstream.next().await {
                Some(Ok(event)) => {
                    let event = self.adjust(event);
                    if let ChatEvent::Usage { usage } = &event {
                        self.note.usage(*usage);
                    }
                    let finished = matches!(event, ChatEvent::Finish { .. });
                    let records = self.encoder.encode(&event).concat();
                    self.done = finished;
                    if !records.is_empty() {
                        return Some((Ok(records), self));
                    }
                    if finished {
                        return None;
                    }
                }
                Some(Err(err)) => {
                    self.done = true;
                    let error = self.backends.failure(&self.entry, &err);
                    self.note.reason(&error.reason());
                    return Some((Ok(error_record(&error)), self));
                }
                None => {
                    // Backends end with Finish or an error; a stream that
                    // just stops must still not leave the client waiting
                    // for a message_stop that will not come.
                    self.done = true;
                    let err = LlmError::Protocol {
                        backend: self.entry.name.clone(),
                        message: "the answer ended without a finish".into(),
                    };
                    let error = self.backends.failure(&self.entry, &err);
                    self.note.reason(&error.reason());
                    return Some((Ok(error_record(&error)), self));
                }
            }
        }
    }

    /// Anthropic clients run tools on `stop_reason: tool_use`; some
    /// OpenAI-compatible servers finish calls with a plain "stop".
    fn adjust(&mut self, event: ChatEvent) -> ChatEvent {
        match event {
            ChatEvent::ToolCallStart { .. } => {
                self.called_tools = true;
                event
            }
            ChatEvent::Finish {
                reason: FinishReason::Stop,
            } if self.called_tools => ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
            other => other,
        }
    }
}

fn error_record(error: &FacadeError) -> String {
    format!("event: error\ndata: {}\n\n", error.anthropic_body())
}
