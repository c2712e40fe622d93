//! `POST /v1/responses`: OpenAI's Responses API (what Codex speaks) over
//! every chat backend, streaming and not, with `previous_response_id`
//! continuing a conversation kept in the store ([`super::store`]).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bridge_llm::translate::responses::{
    self, InboundRequest, ResponseHead, StreamEncoder, answer_message, response_object,
};
use bridge_llm::{
    BackendKind, ChatEvent, ChatRequest, ChatResponse, ChatStream, LlmError, Message,
};
use futures::StreamExt;

use super::FacadeCall;
use super::errors::FacadeError;
use super::normalize;
use super::request_log::RequestNote;
use super::store::{ResponseStore, new_response_id};
use super::timing::{Overhead, unix_now};
use super::upstream;
use bridge_compose::{BackendEntry, Backends, PromptStyle, Route};

/// The route's answer (see `super::routes`).
pub(super) async fn create(
    call: &FacadeCall,
    body: serde_json::Map<String, serde_json::Value>,
    overhead: &mut Overhead,
) -> Result<Response, FacadeError> {
    let (ctx, note) = (&call.ctx, &call.note);
    let mut inbound = responses::parse_request(&body)?;
    let thinking = bridge_llm::translate::asks_for_thinking(&body);
    drop(body);
    if let Some(previous) = inbound.previous_response_id.clone() {
        let history = load(&ctx.responses, &previous).await?;
        inbound.continue_from(history);
    }
    let route = ctx
        .backends
        .route_estimating(inbound.model.as_deref(), thinking, || {
            bridge_llm::translate::estimate_chat_tokens(&inbound.chat)
        })
        .await?;
    let entry = Arc::clone(&route.entry);
    for left_out in &inbound.ignored {
        tracing::debug!(backend = %entry.name, "responses: left out {left_out}");
    }
    let head = ResponseHead {
        id: new_response_id(),
        model: inbound
            .model
            .clone()
            .or_else(|| route.model.clone())
            .or_else(|| entry.default_model.clone())
            .unwrap_or_else(|| entry.name.clone()),
        created_at: unix_now(),
        custom_tools: inbound.custom_tools.clone(),
        previous_response_id: inbound.previous_response_id.clone(),
        store: inbound.store,
    };
    let keep = inbound
        .store
        .then(|| Keep::new(&ctx.responses, &head.id, inbound.conversation()));
    let stream = inbound.stream;
    let requested = inbound.model.clone();
    let rule = route.rule.clone();
    let request = upstream_request(&entry, inbound, route);
    note.route(
        requested.as_deref(),
        request.model.as_deref(),
        &entry.name,
        &rule,
    );
    tracing::debug!(
        backend = %entry.name,
        model = request.model.as_deref().unwrap_or("(default)"),
        stream,
        messages = request.messages.len(),
        tools = request.tools.len(),
        "responses"
    );
    if !stream {
        let whole = upstream::answer_whole(call, &entry, request, overhead).await?;
        if let Some(keep) = keep {
            keep.save(&whole).await;
        }
        return Ok(axum::Json(response_object(&head, &whole)).into_response());
    }

    let upstream = upstream::open_stream(call, &entry, request, overhead).await?;
    let relay = Relay {
        upstream,
        encoder: StreamEncoder::new(head),
        pending: Vec::new(),
        done: false,
        backends: Arc::clone(&ctx.backends),
        entry,
        keep,
        note: note.clone(),
    };
    let chunks = futures::stream::unfold(relay, Relay::next_chunk);
    Ok(super::body::event_stream(
        Body::from_stream(chunks),
        "text/event-stream",
    ))
}

/// What the backend is sent: the conversation as chat messages; the
/// fields only chat completions takes go to backends of that wire only.
fn upstream_request(entry: &BackendEntry, inbound: InboundRequest, route: Route) -> ChatRequest {
    let mut request = match entry.style {
        PromptStyle::SinglePrompt { turns } => {
            normalize::single_prompt_request(&inbound.chat, turns)
        }
        PromptStyle::Chat => {
            let mut request = inbound.chat;
            if entry.kind != BackendKind::Anthropic {
                request.extra = inbound.openai_extra;
            }
            request
        }
    };
    request.model = route.model;
    request
}

/// The stored conversation `id` continues, or the client's error.
async fn load(store: &Arc<ResponseStore>, id: &str) -> Result<Vec<Message>, FacadeError> {
    let not_found = || {
        FacadeError::invalid(
            "previous_response_not_found",
            format!(
                "Previous response with id '{}' not found.",
                bridge_protocol::excerpt(id)
            ),
        )
        .with_param("previous_response_id")
    };
    let store = Arc::clone(store);
    let id_owned = id.to_owned();
    match tokio::task::spawn_blocking(move || store.load(&id_owned)).await {
        Ok(Ok(Some(history))) => Ok(history),
        Ok(Ok(None)) => Err(not_found()),
        Ok(Err(err)) => {
            tracing::warn!("responses: {err}");
            Err(not_found())
        }
        Err(err) => {
            tracing::warn!("responses: reading the store failed: {err}");
            Err(not_found())
        }
    }
}

/// A response to keep once it is whole: the conversation that led to it.
struct Keep {
    store: Arc<ResponseStore>,
    id: String,
    conversation: Vec<Message>,
}

impl Keep {
    fn new(store: &Arc<ResponseStore>, id: &str, conversation: &[Message]) -> Self {
        Self {
            store: Arc::clone(store),
            id: id.to_owned(),
            conversation: conversation.to_vec(),
        }
    }

    async fn save(mut self, answer: &ChatResponse) {
        self.conversation.push(answer_message(answer));
        let Self {
            store,
            id,
            conversation,
        } = self;
        let saved = tokio::task::spawn_blocking(move || store.save(&id, &conversation)).await;
        match saved {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("responses: not stored: {err}"),
            Err(err) => tracing::warn!("responses: not stored: {err}"),
        }
    }
}

/// The streamed answer: upstream events through the encoder.
struct Relay {
    upstream: ChatStream,
    encoder: StreamEncoder,
    pending: Vec<String>,
    done: bool,
    backends: Arc<Backends>,
    entry: Arc<BackendEntry>,
    keep: Option<Keep>,
    note: RequestNote,
}

impl Relay {
    async fn next_chunk(mut self) -> Option<(Result<String, Infallible>, Self)> {
        if self.pending.is_empty() {
            self.pending = self.encoder.start();
        }
        loop {
            if !self.pending.is_empty() {
                let chunk = std::mem::take(&mut self.pending).concat();
                return Some((Ok(chunk), self));
            }
            if self.done {
                return None;
            }
            match self.upstream.next().await {
                Some(Ok(event)) => {
                    if let ChatEvent::Usage { usage } = &event {
                        self.note.usage(*usage);
                    }
                    self.pending = self.encoder.encode(&event);
                }
                Some(Err(err)) => self.fail(&err),
                None => {
                    self.done = true;
                    self.pending = self.encoder.end();
                }
            }
            if let Some(answer) = self.encoder.answer().cloned() {
                self.done = true;
                if let Some(keep) = self.keep.take() {
                    keep.save(&answer).await;
                }
            }
        }
    }

    fn fail(&mut self, err: &LlmError) {
        self.done = true;
        let error = upstream::failure(&self.backends, &self.entry, err);
        self.note.reason(&error.reason());
        self.pending = self.encoder.fail(error.code, &error.message);
    }
}
