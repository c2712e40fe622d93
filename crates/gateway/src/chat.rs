//! Chat models offered by providers (`chat.models`) and the model requests
//! the hub sends them (`chat.request` → `chat.delta` / `chat.toolCall` →
//! `chat.end`; `chat.cancel`). docs/providers.md, "Chat models".
//!
//! An offer belongs to a connection, not to a session: it lives until the
//! connection closes or sends another `chat.models`. A request goes to the
//! most recently active connection that offers its model; when that
//! connection closes, its requests end with `disconnected`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bridge_protocol::excerpt;
use bridge_protocol::provider::chat::{
    CHAT_MODEL_ID_MAX_CHARS, CHAT_MODELS_MAX, ChatCancel, ChatDelta, ChatEnd, ChatFailure,
    ChatModelInfo, ChatModels, ChatRequestMessage, ChatToolCall, ChatUsage, chat_error_code,
};
use bridge_protocol::provider::{ErrorCode, GatewayMessage};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::connection::{Connection, Flow};
use crate::provider::{Outbound, ProviderHandle, lock};

/// How many parts, and how many bytes of text, of one answer may wait for a
/// caller that does not read them; beyond that the request is cancelled
/// rather than buffered.
const REPLY_QUEUE: usize = 4096;
const REPLY_QUEUE_BYTES: usize = 16 << 20;
/// How much of an editor's own words (a model's name, why it cannot serve)
/// is kept: they are shown in `/healthz`, status and logs.
const NAME_MAX_CHARS: usize = 256;
const REASON_MAX_CHARS: usize = 512;

/// Ours (not a provider's): the connection serving the request closed.
pub const DISCONNECTED: &str = "disconnected";

/// A connection's offer, as `status` and the chat backend see it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatOffer {
    pub provider_id: Option<String>,
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    pub sessions: Vec<String>,
    pub models: Vec<ChatModelInfo>,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One part of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatReply {
    Delta(String),
    ToolCall {
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
    /// The last part: usage, or why the request failed.
    End(Result<Option<ChatUsage>, ChatFailure>),
}

/// Why a request could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatUnavailable {
    #[error(
        "no editor offers chat models to the hub (open VS Code with the Copilot Bridge extension: docs/vscode.md)"
    )]
    NoProvider,
    #[error("no editor can serve chat requests now: {reasons}")]
    NotAvailable { reasons: String },
    #[error("no connected editor offers the model {model:?}; offered: {offered}")]
    NoModel { model: String, offered: String },
    #[error("the editor's connection is not reading its messages")]
    Stuck,
}

struct Offer {
    out: Outbound,
    provider: Option<Arc<ProviderHandle>>,
    offer: ChatModels,
}

struct Pending {
    connection: u64,
    replies: mpsc::Sender<ChatReply>,
    shared: Arc<Shared>,
}

/// What a request's two ends share beside the queue.
#[derive(Default)]
struct Shared {
    /// Bytes of text queued and not yet read.
    queued_bytes: AtomicUsize,
    /// The last part, when the hub ended the request (the editor left, the
    /// caller did not read) or the queue had no room for the editor's own
    /// end: the caller gets it once the queue is drained.
    last: Mutex<Option<ChatReply>>,
}

/// Every offer and every request waiting for its answer.
#[derive(Default)]
pub(crate) struct ChatHub {
    state: Mutex<HubState>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct HubState {
    offers: HashMap<u64, Offer>,
    pending: HashMap<String, Pending>,
}

impl ChatHub {
    pub(crate) fn offers(&self) -> Vec<ChatOffer> {
        let state = lock(&self.state);
        let mut offers: Vec<(u64, ChatOffer)> = state
            .offers
            .iter()
            .map(|(connection, offer)| (*connection, describe(offer)))
            .collect();
        offers.sort_by_key(|(connection, _)| *connection);
        offers.into_iter().map(|(_, offer)| offer).collect()
    }

    /// Sends a request (its `id` is assigned here) to the most recently
    /// active connection offering `request.model`.
    pub(crate) fn send(
        self: &Arc<Self>,
        mut request: ChatRequestMessage,
    ) -> Result<ChatExchange, ChatUnavailable> {
        let mut state = lock(&self.state);
        let chosen = pick(&state.offers, &request.model)?;
        let id = format!("chat-{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        request.id = id.clone();
        let (tx, rx) = mpsc::channel(REPLY_QUEUE);
        let out = state.offers[&chosen].out.clone();
        let shared = Arc::new(Shared::default());
        state.pending.insert(
            id.clone(),
            Pending {
                connection: chosen,
                replies: tx,
                shared: shared.clone(),
            },
        );
        drop(state);
        if !out.send(GatewayMessage::ChatRequest(request)) {
            lock(&self.state).pending.remove(&id);
            return Err(ChatUnavailable::Stuck);
        }
        Ok(ChatExchange {
            hub: self.clone(),
            id,
            out,
            replies: rx,
            shared,
            ended: false,
        })
    }

    /// The connection closed: its offer goes, its requests end.
    pub(crate) fn connection_closed(&self, connection: u64) {
        let ended: Vec<Pending> = {
            let mut state = lock(&self.state);
            state.offers.remove(&connection);
            let ids: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, p)| p.connection == connection)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| state.pending.remove(id))
                .collect()
        };
        // Dropping each sender ends its queue after what is already in it.
        for pending in ended {
            *lock(&pending.shared.last) = Some(ChatReply::End(Err(disconnected())));
        }
    }

    /// A part of an answer from `connection`. Parts of requests it does not
    /// serve (ended, cancelled, another connection's) are dropped.
    fn deliver(&self, connection: u64, id: &str, reply: ChatReply) {
        let terminal = matches!(reply, ChatReply::End(_));
        let size = match &reply {
            ChatReply::Delta(text) => text.len(),
            _ => 0,
        };
        let mut state = lock(&self.state);
        let Some(pending) = state.pending.get(id).filter(|p| p.connection == connection) else {
            tracing::debug!(connection, id = %excerpt(id), "chat part for no waiting request");
            return;
        };
        let shared = pending.shared.clone();
        let room = shared.queued_bytes.load(Ordering::Relaxed) + size <= REPLY_QUEUE_BYTES;
        let rejected = if room {
            pending
                .replies
                .try_send(reply)
                .err()
                .map(|err| err.into_inner())
        } else {
            Some(reply)
        };
        if rejected.is_none() {
            shared.queued_bytes.fetch_add(size, Ordering::Relaxed);
        }
        if !terminal && rejected.is_none() {
            return;
        }
        // Its sender goes only after `last` is set: the caller reads `last`
        // once the queue ends.
        let removed = state.pending.remove(id);
        drop(state);
        match rejected {
            None => {}
            // The editor's own end, kept for after what is queued.
            Some(end) if terminal => *lock(&shared.last) = Some(end),
            Some(_) => {
                tracing::warn!(id, "chat caller is not reading the answer; cancelling");
                *lock(&shared.last) = Some(ChatReply::End(Err(ChatFailure {
                    code: chat_error_code::CANCELLED.to_owned(),
                    message: format!(
                        "the answer was cancelled: the caller did not read it (at most {REPLY_QUEUE} parts or {REPLY_QUEUE_BYTES} bytes wait)"
                    ),
                })));
                self.cancel_on(connection, id);
            }
        }
        drop(removed);
    }

    fn cancel_on(&self, connection: u64, id: &str) {
        let out = lock(&self.state)
            .offers
            .get(&connection)
            .map(|o| o.out.clone());
        if let Some(out) = out {
            out.send(GatewayMessage::ChatCancel(ChatCancel { id: id.to_owned() }));
        }
    }
}

fn disconnected() -> ChatFailure {
    ChatFailure {
        code: DISCONNECTED.to_owned(),
        message: "the editor serving the request disconnected".to_owned(),
    }
}

fn describe(offer: &Offer) -> ChatOffer {
    ChatOffer {
        provider_id: offer.provider.as_ref().map(|p| p.id.clone()),
        provider: offer.provider.as_ref().map(|p| p.name.clone()),
        instance: offer.provider.as_ref().and_then(|p| p.instance.clone()),
        sessions: offer
            .provider
            .as_ref()
            .map(|p| p.bound_sessions())
            .unwrap_or_default(),
        models: offer.offer.models.clone(),
        available: offer.offer.available,
        reason: offer.offer.reason.clone(),
    }
}

/// The connection to serve `model`: available, offering it, most recently
/// active; otherwise the most helpful reason why none can.
fn pick(offers: &HashMap<u64, Offer>, model: &str) -> Result<u64, ChatUnavailable> {
    if offers.is_empty() {
        return Err(ChatUnavailable::NoProvider);
    }
    let available: Vec<(&u64, &Offer)> = offers.iter().filter(|(_, o)| o.offer.available).collect();
    if available.is_empty() {
        let mut reasons: Vec<String> = offers
            .values()
            .map(|o| {
                o.offer
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no chat model is selectable".to_owned())
            })
            .collect();
        reasons.sort();
        reasons.dedup();
        return Err(ChatUnavailable::NotAvailable {
            reasons: reasons.join("; "),
        });
    }
    available
        .iter()
        .filter(|(_, o)| o.offer.models.iter().any(|m| m.id == model))
        .max_by_key(|(connection, o)| {
            (
                o.provider.as_ref().map_or(0, |p| p.last_active()),
                **connection,
            )
        })
        .map(|(connection, _)| **connection)
        .ok_or_else(|| {
            let mut offered: Vec<&str> = available
                .iter()
                .flat_map(|(_, o)| o.offer.models.iter().map(|m| m.id.as_str()))
                .collect();
            offered.sort_unstable();
            offered.dedup();
            ChatUnavailable::NoModel {
                model: excerpt(model).to_string(),
                offered: if offered.is_empty() {
                    "none".to_owned()
                } else {
                    offered.join(", ")
                },
            }
        })
}

/// One request in flight. Dropping it before the end cancels the request
/// at the editor (`chat.cancel`).
pub struct ChatExchange {
    hub: Arc<ChatHub>,
    id: String,
    out: Outbound,
    replies: mpsc::Receiver<ChatReply>,
    shared: Arc<Shared>,
    ended: bool,
}

impl std::fmt::Debug for ChatExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatExchange")
            .field("id", &self.id)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl ChatExchange {
    /// The request's id on the wire.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The next part; `None` after the end.
    pub async fn next(&mut self) -> Option<ChatReply> {
        if self.ended {
            return None;
        }
        let reply = match self.replies.recv().await {
            Some(reply) => {
                if let ChatReply::Delta(text) = &reply {
                    self.shared
                        .queued_bytes
                        .fetch_sub(text.len(), Ordering::Relaxed);
                }
                reply
            }
            // The hub ended it: its last part says how.
            None => lock(&self.shared.last)
                .take()
                .unwrap_or_else(|| ChatReply::End(Err(disconnected()))),
        };
        self.ended = matches!(reply, ChatReply::End(_));
        Some(reply)
    }
}

impl Drop for ChatExchange {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let waiting = lock(&self.hub.state).pending.remove(&self.id).is_some();
        if waiting {
            self.out.send(GatewayMessage::ChatCancel(ChatCancel {
                id: self.id.clone(),
            }));
        }
    }
}

/// `chat.models`: only providers trusted with the session's traffic (project
/// and internal) may offer models — every prompt sent to a model passes
/// through the provider.
pub(crate) fn on_models(conn: &mut Connection, offer: ChatModels) -> Flow {
    if conn.trust.as_ref().is_none_or(|t| t.is_external()) || conn.spawned {
        return conn.reject(
            ErrorCode::Unauthorized,
            "only providers the user started (project tokens from gateway.json, provider-token or gateway.providerToken; internal providers) may offer chat models: every prompt passes through them, so a paired provider or one a repository's tap.config.json starts may not",
            "chat.models",
        );
    }
    if offer.models.len() > CHAT_MODELS_MAX {
        return conn.reject(
            ErrorCode::PayloadTooLarge,
            format!(
                "{} chat models offered; at most {CHAT_MODELS_MAX}",
                offer.models.len()
            ),
            "chat.models",
        );
    }
    if let Some(bad) = offer
        .models
        .iter()
        .find(|m| m.id.trim().is_empty() || m.id.chars().count() > CHAT_MODEL_ID_MAX_CHARS)
    {
        return conn.reject(
            ErrorCode::InvalidJson,
            format!(
                "chat model id {:?} must be 1 to {CHAT_MODEL_ID_MAX_CHARS} characters",
                excerpt(&bad.id)
            ),
            "chat.models",
        );
    }
    let mut offer = offer;
    offer.reason = offer
        .reason
        .map(|r| bridge_policy::redact::printable(&r, REASON_MAX_CHARS));
    for model in &mut offer.models {
        for field in [
            &mut model.name,
            &mut model.vendor,
            &mut model.family,
            &mut model.version,
        ] {
            *field = field
                .take()
                .map(|text| bridge_policy::redact::printable(&text, NAME_MAX_CHARS));
        }
    }
    let entry = Offer {
        out: conn.out.clone(),
        provider: conn.provider.clone(),
        offer,
    };
    let previous = lock(&conn.gw.chat.state).offers.insert(conn.id, entry);
    let offer = |o: &Offer| {
        (
            o.offer.available,
            o.offer
                .models
                .iter()
                .map(|m| m.id.clone())
                .collect::<Vec<_>>(),
        )
    };
    let state = lock(&conn.gw.chat.state);
    let now = state.offers.get(&conn.id).map(offer);
    // Logged when it changes, not for every repetition.
    if previous.as_ref().map(offer) != now {
        let (available, models) = now.unwrap_or_default();
        tracing::info!(
            connection = conn.id,
            models = models.len(),
            available,
            "chat models offered"
        );
    }
    Flow::Continue
}

pub(crate) fn on_delta(conn: &Connection, delta: ChatDelta) -> Flow {
    conn.gw
        .chat
        .deliver(conn.id, &delta.id, ChatReply::Delta(delta.text));
    Flow::Continue
}

pub(crate) fn on_tool_call(conn: &Connection, call: ChatToolCall) -> Flow {
    conn.gw.chat.deliver(
        conn.id,
        &call.id,
        ChatReply::ToolCall {
            call_id: call.call_id,
            name: call.name,
            input: call.input,
        },
    );
    Flow::Continue
}

pub(crate) fn on_end(conn: &Connection, end: ChatEnd) -> Flow {
    let result = match end.error {
        Some(failure) => Err(failure),
        None => Ok(end.usage),
    };
    conn.gw
        .chat
        .deliver(conn.id, &end.id, ChatReply::End(result));
    Flow::Continue
}
