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

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_llm::translate::anthropic::StreamEncoder;
use bridge_llm::translate::anthropic::{
    self, InboundError, InboundErrorKind, UpstreamFormat, response_object,
};
use bridge_llm::{BackendKind, ChatEvent, ChatStream, FinishReason, LlmError};
use futures::StreamExt;
use serde_json::json;

use super::FacadeCall;
use super::body::read_json_object;
use super::errors::FacadeError;
use super::request_log::RequestNote;
use super::timing::Overhead;
use super::upstream;
use bridge_compose::{BackendEntry, Backends};

/// The route's answer (see `super::routes`).
pub(super) async fn messages(
    call: &FacadeCall,
    body: serde_json::Map<String, serde_json::Value>,
    overhead: &mut Overhead,
) -> Result<Response, FacadeError> {
    let FacadeCall {
        ctx, note, headers, ..
    } = call;
    // Routing needs the model before the body is parsed for its upstream.
    let requested = body.get("model").and_then(|model| model.as_str());
    // The estimate parses the body once more: only when a route needs it.
    let route = ctx
        .backends
        .route_estimating(
            requested,
            bridge_llm::translate::asks_for_thinking(&body),
            || anthropic::estimate_input_tokens(&body).unwrap_or(0),
        )
        .await?;
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
        let answer = upstream::answer_whole(call, &entry, request, overhead).await?;
        let message = response_object(&message_id, &model, &answer);
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            message.to_string(),
        )
            .into_response());
    }

    let upstream = upstream::open_stream(call, &entry, request, overhead).await?;
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
    Ok(super::body::event_stream(
        Body::from_stream(records),
        "text/event-stream; charset=utf-8",
    ))
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
                    let error = upstream::failure(&self.backends, &self.entry, &err);
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
                    let error = upstream::failure(&self.backends, &self.entry, &err);
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
