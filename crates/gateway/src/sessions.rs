//! Sessions as providers see them: `sessions` / `sessions.updated`,
//! `session.lifecycle`, `session.ready` for `"all"`-bound providers,
//! `shutdown.ready`, and forwarding of subscribed `session.event`s.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bridge_engine::{Session, SessionListener, SessionState, ShutdownWaiter};
use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    ErrorCode, GatewayMessage, LifecycleState, SessionEventMessage, SessionLifecycle, SessionList,
    SessionRef, SessionSummary,
};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use crate::connection::{Connection, Flow};
use crate::hello::{bind_session, unbind_from};
use crate::provider::{ProviderHandle, SessionRegistration, lock};
use crate::state::{GatewayInner, Trust};
use crate::{auth, push};

/// The session list as `trust` may see it (`cwd` only where it may bind).
pub(crate) fn session_list(gw: &GatewayInner, trust: &Trust, token: Option<String>) -> SessionList {
    let active = gw
        .registry
        .list()
        .into_iter()
        .filter(|s| s.state() != SessionState::Ending)
        .map(|s| {
            let info = s.info();
            SessionSummary {
                id: info.id.clone(),
                label: info.label.clone(),
                cwd: trust
                    .allows_session(&info.id)
                    .then(|| info.cwd.display().to_string()),
                foreground: info.foreground,
            }
        })
        .collect();
    SessionList { token, active }
}

/// Marks a connection authenticated: it hears `sessions.updated` from now.
pub(crate) fn authenticated(conn: &Connection) {
    if let Some(trust) = &conn.trust {
        conn.gw
            .lock()
            .authenticated
            .insert(conn.id, (conn.out.clone(), trust.clone()));
    }
}

fn broadcast_sessions(gw: &GatewayInner) {
    let connections: Vec<_> = gw.lock().authenticated.values().cloned().collect();
    for (out, trust) in connections {
        out.send(GatewayMessage::SessionsUpdated(session_list(
            gw, &trust, None,
        )));
    }
}

fn providers(gw: &GatewayInner) -> Vec<Arc<ProviderHandle>> {
    gw.lock().providers.values().cloned().collect()
}

fn lifecycle(session_id: &str, state: LifecycleState, deadline: Option<u64>) -> GatewayMessage {
    GatewayMessage::SessionLifecycle(SessionLifecycle {
        session_id: session_id.to_owned(),
        state,
        deadline,
    })
}

pub(crate) struct GatewayListener {
    gw: Weak<GatewayInner>,
}

impl GatewayListener {
    pub(crate) fn new(gw: &Arc<GatewayInner>) -> Self {
        Self {
            gw: Arc::downgrade(gw),
        }
    }
}

impl SessionListener for GatewayListener {
    fn session_started(&self, session: &Arc<Session>) {
        let Some(gw) = self.gw.upgrade() else { return };
        broadcast_sessions(&gw);
        // "all"-bound providers hear of it, and register there only after
        // session.ready.
        for provider in providers(&gw) {
            let all = lock(&provider.binding).all;
            if all {
                lock(&provider.binding)
                    .awaiting_ready
                    .insert(session.id().to_owned());
                provider
                    .out
                    .send(lifecycle(session.id(), LifecycleState::Started, None));
            }
        }
        crate::project::spawn_for_session(&gw, session);
    }

    fn session_idle(&self, session: &Arc<Session>) {
        let Some(gw) = self.gw.upgrade() else { return };
        for provider in providers(&gw) {
            if provider.is_bound_to(session.id()) {
                provider
                    .out
                    .send(lifecycle(session.id(), LifecycleState::Idle, None));
            }
        }
        push::on_session_idle(&gw, session);
    }

    fn session_ending(&self, session: &Arc<Session>, deadline: Duration) -> Vec<ShutdownWaiter> {
        let Some(gw) = self.gw.upgrade() else {
            return Vec::new();
        };
        let deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
        let mut waiters = Vec::new();
        for provider in providers(&gw) {
            let involved = {
                let binding = lock(&provider.binding);
                binding.sessions.contains(session.id())
                    || binding.awaiting_ready.contains(session.id())
            };
            if !involved {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            gw.lock()
                .shutdown_waiters
                .insert((provider.id.clone(), session.id().to_owned()), tx);
            if provider.out.send(lifecycle(
                session.id(),
                LifecycleState::ShutdownPending,
                Some(deadline_ms),
            )) {
                waiters.push(rx);
            }
        }
        waiters.extend(crate::project::stop_waiters(&gw, session.id()));
        waiters
    }

    fn session_ended(&self, session: &Arc<Session>) {
        let Some(gw) = self.gw.upgrade() else { return };
        let id = session.id();
        gw.lock().shutdown_waiters.retain(|(_, s), _| s != id);
        for provider in providers(&gw) {
            let involved = {
                let mut binding = lock(&provider.binding);
                binding.awaiting_ready.remove(id);
                binding.sessions.contains(id)
            };
            if involved {
                // The session is already out of the registry; unbind from
                // the object itself so whoever still holds it cannot reach
                // the provider, and end what was in flight there.
                unbind_from(&gw, &provider, session);
                provider.cancel_calls(Some(id), "the session ended");
            }
        }
        auth::forget_session_tokens(&gw, id);
        gw.streams.drop_session(id);
        crate::project::stop_for_session(&gw, id);
        broadcast_sessions(&gw);
    }
}

pub(crate) fn on_session_ready(conn: &Connection, ready: SessionRef) -> Flow {
    let Some(provider) = conn.provider.clone() else {
        return Flow::Continue;
    };
    let awaiting = lock(&provider.binding)
        .awaiting_ready
        .contains(&ready.session_id);
    if !awaiting {
        let message = if provider.is_bound_to(&ready.session_id) {
            format!("already registered in session {}", ready.session_id)
        } else if lock(&provider.binding).all {
            format!("Session {} does not exist", ready.session_id)
        } else {
            "session.ready is for providers bound to \"all\"".to_owned()
        };
        return conn.error(
            bridge_protocol::provider::ErrorMessage::new(ErrorCode::InvalidSession, message)
                .reply_to("session.ready")
                .session_id(&ready.session_id),
        );
    }
    let session = conn
        .gw
        .registry
        .get(&ready.session_id)
        .filter(|s| s.state() != SessionState::Ending);
    let Some(session) = session else {
        lock(&provider.binding)
            .awaiting_ready
            .remove(&ready.session_id);
        return conn.error(
            bridge_protocol::provider::ErrorMessage::new(
                ErrorCode::InvalidSession,
                format!(
                    "Session {} does not exist or is ending",
                    excerpt(&ready.session_id)
                ),
            )
            .reply_to("session.ready")
            .session_id(&ready.session_id),
        );
    };
    let registration = SessionRegistration::from_hello(&lock(&provider.registration).hello);
    match bind_session(&conn.gw, &provider, &session, registration) {
        Ok(()) => Flow::Continue,
        Err(error) => conn.error(error.reply_to("session.ready").session_id(session.id())),
    }
}

pub(crate) fn on_shutdown_ready(conn: &Connection, ready: SessionRef) -> Flow {
    let Some(provider) = &conn.provider else {
        return Flow::Continue;
    };
    let waiter = conn
        .gw
        .lock()
        .shutdown_waiters
        .remove(&(provider.id.clone(), ready.session_id.clone()));
    match waiter {
        Some(tx) => {
            let _ = tx.send(());
            Flow::Continue
        }
        None => conn.error(
            bridge_protocol::provider::ErrorMessage::new(
                ErrorCode::InvalidSession,
                format!(
                    "session {} is not shutting down for this provider",
                    excerpt(&ready.session_id)
                ),
            )
            .reply_to("shutdown.ready")
            .session_id(&ready.session_id),
        ),
    }
}

/// Starts forwarding the events `handle` subscribed to from `session`.
pub(crate) fn start_forwarding(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
) {
    if handle.subscribe.is_empty() {
        return;
    }
    let allowed: Vec<String> = handle
        .subscribe
        .iter()
        .filter(|e| !handle.trust.is_external() || e.as_str() == "tool.execution_complete")
        .cloned()
        .collect();
    if allowed.is_empty() {
        return;
    }
    let stop = CancellationToken::new();
    if let Some(old) = lock(&handle.forwarders).insert(session.id().to_owned(), stop.clone()) {
        old.cancel();
    }
    let mut events = session.subscribe();
    let out = handle.out.clone();
    let session_id = session.id().to_owned();
    let closing = gw.closing.clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => break,
                () = closing.cancelled() => break,
                event = events.recv() => event,
            };
            match event {
                Ok(event) => {
                    let Some(name) = event.forwarded_name() else {
                        continue;
                    };
                    if !allowed.iter().any(|a| a == name) {
                        continue;
                    }
                    let sent = out.send(GatewayMessage::SessionEvent(SessionEventMessage {
                        session_id: session_id.clone(),
                        event: name.to_owned(),
                        data: event.payload(),
                    }));
                    if !sent {
                        break;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(session = %session_id, missed, "provider fell behind on session events");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

pub(crate) fn stop_forwarding(handle: &ProviderHandle, session_id: &str) {
    if let Some(stop) = lock(&handle.forwarders).remove(session_id) {
        stop.cancel();
    }
}
