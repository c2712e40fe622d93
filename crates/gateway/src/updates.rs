//! State updates (`tools.update`, `hooks.update`, `context.update`,
//! `filter.set`): `ack` with a per-(provider, session) revision, one update
//! per type in flight.
//!
//! The connection checks what it can at once (trust, session scope, the
//! in-flight slot) and hands the rest to a task, so it keeps reading while
//! an update is applied. Updates of one (provider, session) are applied one
//! at a time under that pair's apply lock, and the `ack` goes out under it
//! too: revisions reach the provider in increasing order, and once a
//! provider holds `ack(N)` every dispatch sees revision N's state.

mod apply;
mod slots;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    Ack, ContextUpdate, ErrorCode, ErrorMessage, FilterSet, GatewayMessage, HooksUpdate,
    ToolsUpdate,
};

use crate::connection::{Connection, Flow};
use crate::provider::{ProviderHandle, lock};
use crate::push::{self, Filter};
use crate::state::GatewayInner;
use crate::{dispatch, gates};

use slots::{InFlight, SlotKey, UpdateKind};

/// Serializes the updates of one (provider, session).
type ApplyLock = Arc<Mutex<ApplyState>>;

/// In-flight slots and apply locks of every (provider, session).
#[derive(Default)]
pub(crate) struct UpdateSlots {
    in_flight: InFlight<SlotKey>,
    /// By (provider id, session id).
    apply: Mutex<HashMap<(String, String), ApplyLock>>,
}

#[derive(Debug, Default)]
struct ApplyState {
    /// An update has changed the session's tables for this provider: when
    /// it leaves the session, removal runs once more under this lock, in
    /// case an update landed while the removal was under way.
    applied: bool,
}

impl UpdateSlots {
    fn apply_lock(&self, provider_id: &str, session_id: &str) -> ApplyLock {
        lock(&self.apply)
            .entry((provider_id.to_owned(), session_id.to_owned()))
            .or_default()
            .clone()
    }
}

/// An update, checked as far as it can be without a session.
pub(crate) enum Update {
    Tools(ToolsUpdate),
    Hooks(HooksUpdate),
    Context(ContextUpdate),
    Filter {
        /// `stream@provider`.
        key: String,
        /// `None` removes the filter.
        filter: Option<Filter>,
    },
}

impl Update {
    fn kind(&self) -> UpdateKind {
        match self {
            Self::Tools(_) => UpdateKind::Tools,
            Self::Hooks(_) => UpdateKind::Hooks,
            Self::Context(_) => UpdateKind::Context,
            Self::Filter { .. } => UpdateKind::Filter,
        }
    }
}

pub(crate) fn on_tools_update(conn: &mut Connection, update: ToolsUpdate) -> Flow {
    let request_id = update.request_id.clone();
    let session_id = update.session_id.clone();
    if let Err(error) = apply::check_tools_update(&update) {
        return reject(conn, UpdateKind::Tools, &request_id, error);
    }
    submit(conn, request_id, session_id, Update::Tools(update))
}

pub(crate) fn on_hooks_update(conn: &mut Connection, update: HooksUpdate) -> Flow {
    let request_id = update.request_id.clone();
    let session_id = update.session_id.clone();
    submit(conn, request_id, session_id, Update::Hooks(update))
}

pub(crate) fn on_context_update(conn: &mut Connection, update: ContextUpdate) -> Flow {
    let request_id = update.request_id.clone();
    if let Some(provider) = &conn.provider
        && provider.trust.is_external()
    {
        return reject(
            conn,
            UpdateKind::Context,
            &request_id,
            ErrorMessage::new(
                ErrorCode::Unauthorized,
                "context is not allowed at the external trust level",
            ),
        );
    }
    let session_id = update.session_id.clone();
    submit(conn, request_id, session_id, Update::Context(update))
}

pub(crate) fn on_filter_set(conn: &mut Connection, filter: FilterSet) -> Flow {
    let Some(provider) = conn.provider.clone() else {
        return Flow::Continue;
    };
    let request_id = filter.request_id.clone();
    match apply::check_filter(&conn.gw, &provider, &filter) {
        Ok((key, compiled)) => submit(
            conn,
            request_id,
            filter.session_id,
            Update::Filter {
                key,
                filter: compiled,
            },
        ),
        Err(error) => reject(conn, UpdateKind::Filter, &request_id, error),
    }
}

fn reject(conn: &Connection, kind: UpdateKind, request_id: &str, error: ErrorMessage) -> Flow {
    conn.error(error.reply_to(kind.type_name()).request_id(request_id))
}

/// Claims a slot per target session and applies the update on a task.
fn submit(
    conn: &Connection,
    request_id: String,
    session_id: Option<String>,
    update: Update,
) -> Flow {
    let Some(provider) = conn.provider.clone() else {
        return Flow::Continue;
    };
    let kind = update.kind();
    let every_session = session_id.is_none();
    let sessions = match session_id {
        Some(id) => match push::target_session(&provider, Some(&id)) {
            Ok(id) => vec![id],
            Err(error) => return reject(conn, kind, &request_id, error),
        },
        None => provider.bound_sessions(),
    };
    if sessions.is_empty() {
        return reject(
            conn,
            kind,
            &request_id,
            ErrorMessage::new(
                ErrorCode::InvalidSession,
                "this provider is not bound to any session",
            ),
        );
    }
    let sessions_count = sessions.len();
    let mut claimed = Vec::with_capacity(sessions_count);
    for session_id in sessions {
        let key = (provider.id.clone(), session_id.clone(), kind);
        match conn.gw.updates.in_flight.try_claim(key) {
            Some(claim) => claimed.push(claim),
            None => {
                reject(
                    conn,
                    kind,
                    &request_id,
                    ErrorMessage::new(
                        ErrorCode::RateLimited,
                        format!(
                            "a {} for session {} is still being applied; wait for its ack",
                            kind.type_name(),
                            excerpt(&session_id)
                        ),
                    )
                    .session_id(&session_id),
                );
            }
        }
    }
    if claimed.is_empty() {
        return Flow::Continue;
    }
    let mut applied_everywhere = every_session && claimed.len() == sessions_count;
    let gw = conn.gw.clone();
    tokio::spawn(async move {
        for claim in claimed {
            let session_id = claim.key().1.clone();
            applied_everywhere &=
                apply_and_answer(&gw, &provider, &session_id, &request_id, &update);
            drop(claim);
        }
        if applied_everywhere {
            apply::amend_hello(&provider, &update);
        }
    });
    Flow::Continue
}

/// Applies `update` to one session and answers it: `ack` with the new
/// revision, or `error` with the request id. `true` if it was applied.
fn apply_and_answer(
    gw: &Arc<GatewayInner>,
    provider: &Arc<ProviderHandle>,
    session_id: &str,
    request_id: &str,
    update: &Update,
) -> bool {
    let kind = update.kind();
    let cell = gw.updates.apply_lock(&provider.id, session_id);
    let mut state = lock(&cell);
    let outcome = if provider.is_bound_to(session_id) {
        match gw.registry.get(session_id) {
            Some(session) => apply::apply(gw, provider, &session, update),
            None => Err(ErrorMessage::new(
                ErrorCode::InvalidSession,
                format!("Session {} does not exist", excerpt(session_id)),
            )),
        }
    } else {
        Err(ErrorMessage::new(
            ErrorCode::InvalidSession,
            format!(
                "this provider is no longer bound to session {}",
                excerpt(session_id)
            ),
        ))
    };
    match outcome {
        Ok(()) => {
            state.applied = true;
            let revision = provider.next_revision(session_id);
            provider.out.send(GatewayMessage::Ack(Ack {
                request_id: request_id.to_owned(),
                session_id: session_id.to_owned(),
                revision,
            }));
            true
        }
        Err(error) => {
            tracing::debug!(
                provider = %provider.name,
                session = %session_id,
                update = kind.type_name(),
                code = %error.code,
                message = %bridge_policy::redact(&error.message),
                "update refused"
            );
            provider.out.error(
                error
                    .reply_to(kind.type_name())
                    .request_id(request_id)
                    .session_id(session_id)
                    .provider_id(&provider.id),
            );
            false
        }
    }
}

/// `handle` left `session_id`: no update of it may land there any more. An
/// update that was being applied while the provider was being removed is
/// removed again here, before anything else can register in its place.
pub(crate) fn forget(gw: &Arc<GatewayInner>, handle: &Arc<ProviderHandle>, session_id: &str) {
    let cell = lock(&gw.updates.apply).remove(&(handle.id.clone(), session_id.to_owned()));
    let Some(cell) = cell else { return };
    let state = lock(&cell);
    if state.applied
        && let Some(session) = gw.registry.get(session_id)
    {
        dispatch::remove_tools(gw, handle, &session);
        gates::remove_hooks(gw, handle, &session);
        session.set_context(&handle.owner_key(), None);
    }
}
