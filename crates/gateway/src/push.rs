//! `push`, EventStreams and `stream.query`: levels, filters, budgets.
//!
//! Every push is stored in its `stream@provider` EventStream of the target
//! session, then kept, surfaced (`session.log`) or injected
//! (`session.inject`, an AI turn). A stream's filter overrides the level.
//! Budgets per (provider, session) keep a provider from flooding or looping
//! a session: a per-second push limit, one inject in flight until the
//! session goes idle (later ones held in order), and a pause after too many
//! consecutive inject cycles, lifted by the next user message.

mod budget;
pub(crate) mod filter;
mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bridge_engine::Session;
use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GatewayMessage, Push, StreamHistory, StreamQuery,
};
use serde_json::Value;

use crate::connection::{Connection, Flow};
use crate::provider::{ProviderHandle, lock};
use crate::state::GatewayInner;

use budget::{HeldInject, IdleAction, InjectDecision, InjectGate, RateWindow};
pub(crate) use filter::Filter;
use filter::Level;
pub(crate) use store::stream_key;
use store::{NewEvent, StreamLimits, StreamStore};

/// Longest stream name a provider may use.
const MAX_STREAM_NAME: usize = 128;
/// Timeline source of the gateway's own warnings.
const GATEWAY_SOURCE: &str = "gateway";

/// EventStreams per session, and the push budgets of (provider, session).
#[derive(Default)]
pub(crate) struct Streams {
    store: StreamStore,
    /// By (provider id, session id). One lock for all: every push decision
    /// and the store writes it makes happen under it, so stream counts and
    /// inject order cannot race; each critical section is a few map
    /// operations.
    budgets: Mutex<HashMap<(String, String), Budget>>,
}

struct Budget {
    /// The provider's name: the timeline source of its held injects.
    source: String,
    rate: RateWindow,
    injects: InjectGate,
}

impl Streams {
    /// The session ended: its streams, filters and budgets go with it.
    pub(crate) fn drop_session(&self, session_id: &str) {
        self.store.drop_session(session_id);
        lock(&self.budgets).retain(|(_, session), _| session != session_id);
    }

    /// Sets or (`None`) removes a filter; `Err(limit)` when the provider
    /// has too many filters in the session.
    pub(crate) fn set_filter(
        &self,
        session_id: &str,
        key: &str,
        provider: &str,
        filter: Option<Filter>,
        max_filters: usize,
    ) -> Result<(), usize> {
        self.store
            .set_filter(session_id, key, provider, filter, max_filters)
    }
}

fn limits(gw: &GatewayInner) -> StreamLimits {
    StreamLimits {
        retention: gw.settings.stream_retention,
        max_bytes: gw.settings.stream_max_bytes,
        max_streams: gw.settings.max_streams_per_provider,
        store_max_bytes: gw.settings.stream_store_max_bytes,
    }
}

/// A stream name a provider may use: it becomes half of `stream@provider`.
pub(crate) fn validate_stream_name(stream: &str) -> Result<(), String> {
    if stream.is_empty()
        || stream.len() > MAX_STREAM_NAME
        || stream.contains('@')
        || stream.chars().any(char::is_control)
    {
        return Err(format!(
            "invalid stream name {:?}: 1-{MAX_STREAM_NAME} characters, no '@' or control characters",
            excerpt(stream)
        ));
    }
    Ok(())
}

/// The sessions a session-scoped message targets: `session_id` when given
/// (it must be bound), else the provider's only session. `"all"`-bound and
/// multi-session providers must name one.
pub(crate) fn target_session(
    provider: &ProviderHandle,
    session_id: Option<&str>,
) -> Result<String, ErrorMessage> {
    match session_id {
        Some(id) => {
            if provider.is_bound_to(id) {
                Ok(id.to_owned())
            } else {
                Err(ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    format!("this provider is not bound to session {}", excerpt(id)),
                )
                .session_id(id))
            }
        }
        None => {
            let (all, sessions) = {
                let binding = lock(&provider.binding);
                (binding.all, binding.sessions.clone())
            };
            match (all, sessions.len()) {
                (false, 1) => Ok(sessions.into_iter().next().unwrap_or_default()),
                (_, 0) => Err(ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    "this provider is not bound to any session",
                )),
                _ => Err(ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    "sessionId is required: this provider is bound to several sessions",
                )),
            }
        }
    }
}

pub(crate) fn on_push(conn: &Connection, push: Push) -> Flow {
    let Some(provider) = conn.provider.clone() else {
        return Flow::Continue;
    };
    let reject = |error: ErrorMessage| conn.error(error.reply_to("push"));
    let (stored_text, match_text) = match (&push.event, &push.prompt) {
        (Some(event), _) => (event.clone(), event.as_str()),
        (None, Some(prompt)) => (prompt.clone(), prompt.as_str()),
        (None, None) => {
            return reject(ErrorMessage::new(
                ErrorCode::InvalidJson,
                "push needs \"event\" (or \"prompt\")",
            ));
        }
    };
    let stream = push.stream.clone().unwrap_or_else(|| provider.name.clone());
    if let Err(message) = validate_stream_name(&stream) {
        return reject(ErrorMessage::new(ErrorCode::InvalidJson, message));
    }
    let targets = if push.broadcast {
        if push.session_id.is_some() {
            return reject(ErrorMessage::new(
                ErrorCode::InvalidJson,
                "give sessionId or broadcast, not both",
            ));
        }
        let sessions = provider.bound_sessions();
        if sessions.is_empty() {
            return reject(ErrorMessage::new(
                ErrorCode::InvalidSession,
                "this provider is not bound to any session",
            ));
        }
        sessions
    } else {
        match target_session(&provider, push.session_id.as_deref()) {
            Ok(session) => vec![session],
            Err(error) => return reject(error),
        }
    };
    let inject_text = push.prompt.clone().unwrap_or_else(|| stored_text.clone());
    let message = PushMessage {
        stream: &stream,
        stored_text: &stored_text,
        match_text,
        inject_text: &inject_text,
        level: push.level.into(),
        metadata: push.metadata.as_ref(),
    };
    for session_id in targets {
        let Some(session) = conn.gw.registry.get(&session_id) else {
            reject(
                ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    format!("Session {} does not exist", excerpt(&session_id)),
                )
                .session_id(&session_id),
            );
            continue;
        };
        if let Err(error) = push_to(&conn.gw, &provider, &session, &message) {
            reject(error.session_id(&session_id));
        }
    }
    Flow::Continue
}

/// One push, as every target session sees it.
struct PushMessage<'a> {
    stream: &'a str,
    stored_text: &'a str,
    match_text: &'a str,
    inject_text: &'a str,
    level: Level,
    metadata: Option<&'a Value>,
}

fn push_to(
    gw: &GatewayInner,
    provider: &ProviderHandle,
    session: &Arc<Session>,
    push: &PushMessage<'_>,
) -> Result<(), ErrorMessage> {
    let settings = &gw.settings;
    let streams = &gw.streams;
    let key = stream_key(push.stream, &provider.name);
    let mut budgets = lock(&streams.budgets);
    let budget = budgets
        .entry((provider.id.clone(), session.id().to_owned()))
        .or_insert_with(|| Budget {
            source: provider.name.clone(),
            rate: RateWindow::default(),
            injects: InjectGate::default(),
        });
    if !budget
        .rate
        .admit(Instant::now(), settings.pushes_per_second)
    {
        return Err(ErrorMessage::new(
            ErrorCode::RateLimited,
            format!(
                "more than {} pushes per second to session {}; retry after 1 second",
                settings.pushes_per_second,
                session.id()
            ),
        ));
    }
    let level = match streams
        .store
        .filter(session.id(), &key)
        .and_then(|filter| filter.outcome(push.match_text))
    {
        Some(None) => return Ok(()),
        Some(Some(level)) => level,
        None => push.level,
    };
    let limits = limits(gw);
    if !streams
        .store
        .has_room(session.id(), &key, &provider.name, limits)
    {
        return Err(ErrorMessage::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "provider '{}' already has {} streams in session {} (the limit); push to an existing stream",
                provider.name,
                limits.max_streams,
                session.id()
            ),
        ));
    }
    let store = |level: Level| {
        streams.store.append(
            session.id(),
            &key,
            &provider.name,
            NewEvent {
                ts: bridge_util::time::now_timestamp(),
                event: push.stored_text.to_owned(),
                level,
                metadata: push.metadata.cloned(),
            },
            limits,
        )
    };
    match level {
        Level::Keep => {
            store(Level::Keep);
        }
        Level::Surface => {
            store(Level::Surface);
            session.log(
                &provider.name,
                &format!("[{}] {}", push.stream, push.stored_text),
            );
        }
        Level::Inject => {
            let decision = budget.injects.on_inject(
                session.user_message_count(),
                settings.inject_cycle_limit,
                settings.inject_queue_limit,
            );
            match decision {
                InjectDecision::Deliver => {
                    store(Level::Inject);
                    session.inject(
                        &provider.name,
                        push.stream,
                        push.inject_text,
                        push.metadata.cloned(),
                    );
                }
                InjectDecision::Hold => {
                    let seq = store(Level::Inject);
                    budget.injects.hold(HeldInject {
                        stream: push.stream.to_owned(),
                        stream_key: key.clone(),
                        seq,
                        text: push.inject_text.to_owned(),
                        metadata: push.metadata.cloned(),
                    });
                }
                InjectDecision::Paused { just_paused } => {
                    store(Level::Keep);
                    if just_paused {
                        warn_paused(gw, session, &provider.name);
                    }
                }
                InjectDecision::QueueFull => {
                    return Err(ErrorMessage::new(
                        ErrorCode::RateLimited,
                        format!(
                            "{} injects already wait for session {} to go idle (the limit); retry later",
                            settings.inject_queue_limit,
                            session.id()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn warn_paused(gw: &GatewayInner, session: &Session, provider: &str) {
    let cycles = gw.settings.inject_cycle_limit;
    tracing::warn!(
        session = %session.id(),
        %provider,
        cycles,
        "pausing a provider's inject pushes: consecutive inject cycles without a user message"
    );
    session.log(
        GATEWAY_SOURCE,
        &format!(
            "⚠ Paused inject pushes from provider '{provider}' after {cycles} consecutive inject cycles; its pushes are kept in its streams until the next user message."
        ),
    );
}

pub(crate) fn on_stream_query(conn: &Connection, query: StreamQuery) -> Flow {
    let Some(provider) = conn.provider.clone() else {
        return Flow::Continue;
    };
    let reject = |error: ErrorMessage| {
        conn.error(error.reply_to("stream.query").request_id(&query.query_id))
    };
    let session_id = match target_session(&provider, query.session_id.as_deref()) {
        Ok(session_id) => session_id,
        Err(error) => return reject(error),
    };
    let store = &conn.gw.streams.store;
    let mut keys = Vec::new();
    for name in &query.streams {
        let (stream, owner) = match name.split_once('@') {
            Some((stream, owner)) => (stream, owner),
            None => (name.as_str(), provider.name.as_str()),
        };
        if stream.is_empty() || owner.is_empty() {
            return reject(ErrorMessage::new(
                ErrorCode::InvalidJson,
                format!(
                    "invalid stream name {:?}: use \"stream\" or \"stream@provider\"",
                    excerpt(name)
                ),
            ));
        }
        if owner != provider.name && !provider.trust.is_internal() {
            return reject(
                ErrorMessage::new(
                    ErrorCode::Unauthorized,
                    format!(
                        "reading another provider's stream ({}) needs internal trust; this provider is {}",
                        excerpt(name),
                        provider.trust.level()
                    ),
                )
                .session_id(&session_id),
            );
        }
        keys.push(stream_key(stream, owner));
    }
    if query.streams.is_empty() {
        keys = store.streams_of(&session_id, &provider.name);
    }
    let max = conn.gw.settings.stream_query_max;
    let last = query
        .last
        .map_or(max, |last| usize::try_from(last).unwrap_or(max).min(max));
    let answer = store.histories(
        &session_id,
        keys,
        last,
        conn.gw.settings.stream_answer_max_bytes,
    );
    provider
        .out
        .send(GatewayMessage::StreamHistory(StreamHistory {
            query_id: query.query_id,
            streams: answer.streams,
            truncated: answer.truncated,
        }));
    Flow::Continue
}

/// Forgets budgets and queued injects of (provider, session).
pub(crate) fn forget(gw: &Arc<GatewayInner>, handle: &Arc<ProviderHandle>, session_id: &str) {
    lock(&gw.streams.budgets).remove(&(handle.id.clone(), session_id.to_owned()));
    crate::updates::forget(gw, handle, session_id);
}

/// The session went idle: each provider's in-flight inject is done; its
/// next held inject, if any, starts the next turn.
pub(crate) fn on_session_idle(gw: &Arc<GatewayInner>, session: &Arc<Session>) {
    let epoch = session.user_message_count();
    let limit = gw.settings.inject_cycle_limit;
    let mut budgets = lock(&gw.streams.budgets);
    for ((_, session_id), budget) in budgets.iter_mut() {
        if session_id != session.id() {
            continue;
        }
        match budget.injects.on_idle(epoch, limit) {
            IdleAction::Nothing => {}
            IdleAction::Deliver(held) => {
                session.inject(&budget.source, &held.stream, &held.text, held.metadata);
            }
            IdleAction::Paused { held, just_paused } => {
                for inject in held {
                    gw.streams.store.relevel(
                        session.id(),
                        &inject.stream_key,
                        inject.seq,
                        Level::Keep,
                    );
                }
                if just_paused {
                    warn_paused(gw, session, &budget.source);
                }
            }
        }
    }
}
