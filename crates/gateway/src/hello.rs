//! `hello`: registration, session binding (one session, `"all"`, or the
//! stamped one), rebinding, reconnect tokens and identity protection.

mod identity;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use bridge_engine::{Session, SessionState};
use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GatewayMessage, Hello, HelloAck, LifecycleState, PROTOCOL_VERSION,
    SessionLifecycle, tool_error_code,
};

pub(crate) use identity::{detach, on_disconnect};

use crate::connection::{ConnState, Connection, Flow};
use crate::provider::{Binding, ProviderHandle, Registration, SessionRegistration, lock};
use crate::state::{GatewayInner, Trust};
use crate::{auth, dispatch, gates, push, sessions};

/// Session event types a provider may subscribe to; external providers only
/// to tool events.
const EVENT_TYPES: [&str; 4] = [
    "user.message",
    "assistant.message",
    "tool.execution_complete",
    "assistant.intent",
];
const EXTERNAL_EVENT_TYPES: [&str; 1] = ["tool.execution_complete"];

pub(crate) async fn on_hello(conn: &mut Connection, hello: Hello) -> Flow {
    let Some(trust) = conn.trust.clone() else {
        return conn.reject(
            ErrorCode::Unauthorized,
            "authenticate before hello",
            "hello",
        );
    };
    if hello.protocol_version != PROTOCOL_VERSION {
        return conn.reject(
            ErrorCode::UnsupportedVersion,
            format!(
                "protocol version {} is not supported; this gateway speaks version {PROTOCOL_VERSION}",
                hello.protocol_version
            ),
            "hello",
        );
    }
    if conn.state != ConnState::AwaitHello {
        // A rebind: limited, so identity churn cannot be used as an attack.
        let now = Instant::now();
        conn.rebinds
            .retain(|t| now.duration_since(*t) < Duration::from_secs(60));
        if conn.rebinds.len() >= conn.gw.settings.rebinds_per_minute {
            return conn.reject(
                ErrorCode::RateLimited,
                format!(
                    "{} rebinds in the last minute (the limit); retry after a minute",
                    conn.gw.settings.rebinds_per_minute
                ),
                "hello",
            );
        }
        conn.rebinds.push_back(now);
    }
    // Rebind barrier: the old registration is gone, and its in-flight work
    // cancelled, before the new one is looked at.
    let previous = conn.provider.take().map(|old| {
        old.cancel_calls(None, "the provider is rebinding");
        detach(
            &conn.gw,
            &old,
            tool_error_code::CANCELLED,
            "the provider is rebinding",
        );
        conn.state = ConnState::Unbound;
        identity::Previous::of(&old)
    });
    match register(conn, &trust, hello, previous) {
        Ok(registered) => {
            let handle = registered.handle;
            if handle.trust != trust {
                auth::rescope(conn, handle.trust.clone());
            }
            conn.out.send(GatewayMessage::HelloAck(HelloAck {
                protocol_version: PROTOCOL_VERSION,
                provider_id: handle.id.clone(),
                reconnect_token: lock(&handle.reconnect_token).clone(),
                persist_dir: handle
                    .persist_dir
                    .as_ref()
                    .map(|dir| format!("{}/", dir.display())),
                sessions: handle.bound_sessions(),
            }));
            for session_id in registered.announce {
                conn.out
                    .send(GatewayMessage::SessionLifecycle(SessionLifecycle {
                        session_id,
                        state: LifecycleState::Started,
                        deadline: None,
                    }));
            }
            conn.provider = Some(handle);
            conn.state = ConnState::Bound;
            Flow::Continue
        }
        Err(error) => conn.error(error.reply_to("hello")),
    }
}

/// A successful registration.
struct Registered {
    handle: Arc<ProviderHandle>,
    /// `"all"`-bound: sessions that started while the `hello` was being
    /// processed (or while a reconnecting provider was away), announced
    /// after the `hello.ack`; they wait for `session.ready`.
    announce: Vec<String>,
}

/// Does this `hello` declare state, or leave a reconnect to restore it?
fn declares_state(hello: &Hello) -> bool {
    !hello.tools.is_empty()
        || hello.hooks.is_some()
        || hello.context.is_some()
        || hello.startup_context.is_some()
        || !hello.subscribe.is_empty()
}

/// Validates, claims the identity and binds; on any error nothing new
/// stays registered.
fn register(
    conn: &Connection,
    trust: &Trust,
    hello: Hello,
    previous: Option<identity::Previous>,
) -> Result<Registered, ErrorMessage> {
    let gw = &conn.gw;
    validate_identity(&hello)?;
    // Everything the hello itself declares is checked before the identity
    // is claimed: a bad hello must not take over a live connection.
    if declares_state(&hello) {
        validate_declared(gw, trust, &hello)?;
    }
    let requested = match hello.session.as_deref() {
        Some(requested) => Some(resolve_sessions(gw, trust, Some(requested))?),
        None => None,
    };
    let persist_dir = if trust.is_external() {
        None
    } else {
        Some(persist_dir(gw, &hello.name)?)
    };
    let identity = (
        hello.name.clone(),
        hello.instance.clone().unwrap_or_default(),
    );
    let claim = identity::claim(
        gw,
        &identity,
        hello.reconnect_token.as_deref(),
        trust,
        previous.as_ref(),
    )?;
    if claim.restored.is_none() && hello.reconnect_token.is_some() && !declares_state(&hello) {
        // Registering it with nothing would look like a successful
        // reconnect to a provider that then never sees a call.
        identity::release(gw, &identity, claim);
        return Err(reconnect_expired(gw.settings.reconnect_token_ttl));
    }
    let bound = bind_claimed(conn, trust, &hello, &claim, requested, persist_dir);
    if bound.is_err() {
        identity::release(gw, &identity, claim);
    }
    bound
}

/// The answer to a `hello` that relies on a reconnect token the gateway
/// does not know (docs/providers.md, "Reconnecting").
fn reconnect_expired(ttl: Duration) -> ErrorMessage {
    ErrorMessage::new(
        ErrorCode::ReconnectExpired,
        format!(
            "the reconnectToken is unknown or expired (it lives {ttl:?} after a disconnect and never across a gateway restart), so there is nothing to restore and nothing was registered; send hello again with your tools, hooks and context"
        ),
    )
}

fn bind_claimed(
    conn: &Connection,
    trust: &Trust,
    hello: &Hello,
    claim: &identity::Claim,
    requested: Option<Resolved>,
    persist_dir: Option<std::path::PathBuf>,
) -> Result<Registered, ErrorMessage> {
    let gw = &conn.gw;
    let restored = claim.restored.as_ref().map(|(_, record)| record);
    // A reconnect that declares nothing gets its old registration back.
    let restoring_state = restored.is_some() && !declares_state(hello);
    let template = match restored {
        Some(record) if restoring_state => {
            let mut template = record.registration.hello.clone();
            template.metadata = hello.metadata.clone().or(template.metadata);
            template.concurrency = hello.concurrency.or(template.concurrency);
            validate_declared(gw, trust, &template)?;
            template
        }
        _ => hello.clone(),
    };
    let resolved = match (requested, restored) {
        (Some(resolved), _) => resolved,
        // A reconnect that names no session gets its old binding back.
        (None, Some(record)) if record.binding.all || !record.binding.sessions.is_empty() => {
            restore_binding(gw, trust, &record.binding)
        }
        (None, _) => resolve_sessions(gw, trust, None)?,
    };
    let handle = Arc::new(ProviderHandle {
        id: claim.provider_id.clone(),
        name: hello.name.clone(),
        instance: hello.instance.clone(),
        trust: resolved.trust.clone(),
        out: conn.out.clone(),
        registration: std::sync::Mutex::new(Registration {
            hello: template.clone(),
            sessions: HashMap::new(),
        }),
        binding: std::sync::Mutex::new(Binding {
            all: resolved.all,
            sessions: BTreeSet::new(),
            awaiting_ready: resolved.awaiting.iter().cloned().collect(),
        }),
        pending_calls: Default::default(),
        pending_gates: Default::default(),
        pending_transforms: Default::default(),
        last_active: AtomicU64::new(gw.tick()),
        reconnect_token: std::sync::Mutex::new(bridge_util::ids::token("tok")),
        revisions: std::sync::Mutex::new(claim.revisions.clone()),
        forwarders: Default::default(),
        subscribe: template.subscribe.clone(),
        persist_dir,
    });
    for session in &resolved.sessions {
        let registration = match restored {
            Some(record) if restoring_state => record
                .registration
                .sessions
                .get(session.id())
                .cloned()
                .unwrap_or_else(|| SessionRegistration::from_hello(&template)),
            _ => SessionRegistration::from_hello(&template),
        };
        if let Err(error) = bind_session(gw, &handle, session, registration) {
            detach(
                gw,
                &handle,
                tool_error_code::CANCELLED,
                "registration failed",
            );
            return Err(error.session_id(session.id()));
        }
        if template.startup_context.is_some() {
            session.set_startup_context(&handle.owner_key(), template.startup_context.clone());
        }
    }
    gw.lock()
        .providers
        .insert(handle.id.clone(), handle.clone());
    let mut announce = resolved.awaiting;
    if resolved.all {
        // A session that started between the listing above and the insert
        // was not seen by the session listener: catch it here.
        let mut binding = lock(&handle.binding);
        for session in live_sessions(gw) {
            let id = session.id().to_owned();
            if !binding.sessions.contains(&id) && binding.awaiting_ready.insert(id.clone()) {
                announce.push(id);
            }
        }
    }
    tracing::info!(
        provider = %handle.name,
        instance = ?handle.instance,
        id = %handle.id,
        trust = handle.trust.level(),
        sessions = ?handle.bound_sessions(),
        all = resolved.all,
        restored = restored.is_some(),
        "provider registered"
    );
    Ok(Registered { handle, announce })
}

/// What a `hello` declares, against the capability matrix and limits.
fn validate_declared(gw: &GatewayInner, trust: &Trust, hello: &Hello) -> Result<(), ErrorMessage> {
    check_capabilities(trust, hello)?;
    dispatch::validate_tools(gw, &hello.name, &hello.tools)?;
    let hooks = hello.hooks.clone().unwrap_or_default();
    gates::validate_hooks(gw, trust, &hooks.on_pre_tool_use, &hooks.transforms)
}

/// Names become directory names (`persistDir`) and log fields: keep them
/// plain.
fn validate_identity(hello: &Hello) -> Result<(), ErrorMessage> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !plain(&hello.name) {
        return Err(ErrorMessage::new(
            ErrorCode::InvalidJson,
            format!(
                "invalid provider name {:?}: use 1-64 letters, digits, '-', '_' or '.', not starting with '.'",
                excerpt(&hello.name)
            ),
        ));
    }
    if let Some(instance) = &hello.instance
        && (instance.is_empty() || instance.len() > 128 || instance.chars().any(char::is_control))
    {
        return Err(ErrorMessage::new(
            ErrorCode::InvalidJson,
            "invalid instance: 1-128 characters, no control characters",
        ));
    }
    Ok(())
}

/// The capability matrix, for what a `hello` declares. Hook rules and
/// transforms are judged by `gates::validate_hooks`.
fn check_capabilities(trust: &Trust, hello: &Hello) -> Result<(), ErrorMessage> {
    let unauthorized = |what: &str| {
        Err(ErrorMessage::new(
            ErrorCode::Unauthorized,
            format!("{what} is not allowed at the {} trust level", trust.level()),
        ))
    };
    if trust.is_external() {
        if hello.context.is_some() {
            return unauthorized("context");
        }
        if hello.startup_context.is_some() {
            return unauthorized("startup_context");
        }
        if let Some(event) = hello.subscribe.iter().find(|e| {
            EVENT_TYPES.contains(&e.as_str()) && !EXTERNAL_EVENT_TYPES.contains(&e.as_str())
        }) {
            return unauthorized(&format!("subscribing to {event}"));
        }
    }
    Ok(())
}

/// Where a `hello` binds.
struct Resolved {
    all: bool,
    /// Sessions the provider's state goes live in now.
    sessions: Vec<Arc<Session>>,
    /// `"all"`-bound: sessions waiting for `session.ready`.
    awaiting: Vec<String>,
    /// The trust the provider registers with (an external provider whose
    /// paired session ended moves to the session it binds to).
    trust: Trust,
}

fn live_sessions(gw: &GatewayInner) -> Vec<Arc<Session>> {
    gw.registry
        .list()
        .into_iter()
        .filter(|s| s.state() != SessionState::Ending)
        .collect()
}

fn live_session(gw: &GatewayInner, id: &str) -> Option<Arc<Session>> {
    gw.registry
        .get(id)
        .filter(|s| s.state() != SessionState::Ending)
}

/// Which sessions a `hello` binds to.
fn resolve_sessions(
    gw: &GatewayInner,
    trust: &Trust,
    requested: Option<&str>,
) -> Result<Resolved, ErrorMessage> {
    let single = |session: Arc<Session>, trust: Trust| Resolved {
        all: false,
        sessions: vec![session],
        awaiting: Vec::new(),
        trust,
    };
    match requested {
        Some("all") => {
            if !trust.is_internal() {
                return Err(ErrorMessage::new(
                    ErrorCode::Unauthorized,
                    format!(
                        "binding to \"all\" is not allowed at the {} trust level",
                        trust.level()
                    ),
                ));
            }
            Ok(Resolved {
                all: true,
                sessions: live_sessions(gw),
                awaiting: Vec::new(),
                trust: trust.clone(),
            })
        }
        Some(id) => {
            let missing = || {
                ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    format!("Session {} does not exist", excerpt(id)),
                )
                .session_id(id)
            };
            if trust.allows_session(id) {
                return Ok(single(
                    live_session(gw, id).ok_or_else(missing)?,
                    trust.clone(),
                ));
            }
            // The spec lets an external provider whose session ended re-bind
            // to another one; its pairing moves there.
            if let Trust::External { session_id } = trust
                && gw.registry.get(session_id).is_none()
            {
                let session = live_session(gw, id).ok_or_else(missing)?;
                let moved = Trust::External {
                    session_id: id.to_owned(),
                };
                return Ok(single(session, moved));
            }
            Err(ErrorMessage::new(
                ErrorCode::InvalidSession,
                format!(
                    "not authorized for session {}; a {} provider may bind only to {}",
                    excerpt(id),
                    trust.level(),
                    match trust {
                        Trust::Project { .. } => "the session that issued its token",
                        _ => "its paired session",
                    }
                ),
            )
            .session_id(id))
        }
        None => {
            let session = match trust.scoped_session() {
                Some(id) => live_session(gw, id),
                None => gw
                    .registry
                    .default_session()
                    .filter(|s| s.state() != SessionState::Ending),
            };
            let session = session.ok_or_else(|| {
                ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    match trust.scoped_session() {
                        Some(id) => format!(
                            "this provider's session {id} has ended; name a session from sessions.updated"
                        ),
                        None => "no session to bind to; wait for sessions.updated".to_owned(),
                    },
                )
            })?;
            Ok(single(session, trust.clone()))
        }
    }
}

/// A reconnect's old binding, as far as its sessions still live. An
/// `"all"` binding also waits for `session.ready` from sessions that started
/// while the provider was away.
fn restore_binding(gw: &GatewayInner, trust: &Trust, binding: &Binding) -> Resolved {
    let live = live_sessions(gw);
    let sessions: Vec<Arc<Session>> = live
        .iter()
        .filter(|s| binding.sessions.contains(s.id()) && trust.allows_session(s.id()))
        .cloned()
        .collect();
    let awaiting = if binding.all {
        live.iter()
            .filter(|s| !binding.sessions.contains(s.id()))
            .map(|s| s.id().to_owned())
            .collect()
    } else {
        Vec::new()
    };
    Resolved {
        all: binding.all,
        sessions,
        awaiting,
        trust: trust.clone(),
    }
}

fn persist_dir(gw: &GatewayInner, name: &str) -> Result<std::path::PathBuf, ErrorMessage> {
    let providers = gw.state_dir.join("providers");
    let dir = providers.join(name);
    // A symlink planted at either level is refused, not followed.
    let created = bridge_util::owner_only::ensure_private_subdir(&providers)
        .and_then(|()| bridge_util::owner_only::ensure_private_subdir(&dir));
    created.map(|()| dir.clone()).map_err(|err| {
        tracing::error!(dir = %dir.display(), error = %err, "cannot create a provider's persistDir");
        ErrorMessage::new(
            ErrorCode::InvalidSession,
            format!("the gateway cannot create the provider's persistDir: {err}"),
        )
    })
}

/// Makes `registration` live in `session`: tools, rules, transforms,
/// context, event forwarding. All or nothing.
pub(crate) fn bind_session(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
    registration: SessionRegistration,
) -> Result<(), ErrorMessage> {
    dispatch::apply_tools(gw, handle, session, &registration.tools)?;
    if let Err(error) = gates::apply_hooks(
        gw,
        handle,
        session,
        &registration.rules,
        &registration.transforms,
    ) {
        dispatch::remove_tools(gw, handle, session);
        return Err(error);
    }
    session.set_context(&handle.owner_key(), registration.context.clone());
    {
        let mut binding = lock(&handle.binding);
        binding.sessions.insert(session.id().to_owned());
        binding.awaiting_ready.remove(session.id());
    }
    lock(&handle.registration)
        .sessions
        .insert(session.id().to_owned(), registration);
    sessions::start_forwarding(gw, handle, session);
    Ok(())
}

/// Removes everything `handle` has in `session_id`.
pub(crate) fn unbind_session(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session_id: &str,
) {
    match gw.registry.get(session_id) {
        Some(session) => unbind_from(gw, handle, &session),
        None => forget_binding(gw, handle, session_id),
    }
}

/// Removes everything `handle` has in `session`, which may already be gone
/// from the registry (an ended session: whoever still holds it must not
/// reach the provider through it).
pub(crate) fn unbind_from(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
) {
    dispatch::remove_tools(gw, handle, session);
    gates::remove_hooks(gw, handle, session);
    session.set_context(&handle.owner_key(), None);
    session.set_startup_context(&handle.owner_key(), None);
    forget_binding(gw, handle, session.id());
}

fn forget_binding(gw: &Arc<GatewayInner>, handle: &Arc<ProviderHandle>, session_id: &str) {
    {
        let mut binding = lock(&handle.binding);
        binding.sessions.remove(session_id);
        binding.awaiting_ready.remove(session_id);
    }
    lock(&handle.registration).sessions.remove(session_id);
    sessions::stop_forwarding(handle, session_id);
    push::forget(gw, handle, session_id);
}
