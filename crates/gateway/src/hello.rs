//! `hello`: registration, session binding (one session, `"all"`, or the
//! stamped one), rebinding, reconnect tokens and identity protection.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use bridge_engine::{Session, ids};
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GatewayMessage, Hello, HelloAck, PROTOCOL_VERSION, tool_error_code,
};

use crate::connection::{ConnState, Connection, Flow};
use crate::provider::{
    Binding, DetachedProvider, ProviderHandle, Registration, SessionRegistration, lock,
};
use crate::state::{GatewayInner, Trust};
use crate::{dispatch, gates, push, sessions};

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
    let rebinding = conn.provider.is_some() || conn.state == ConnState::Unbound;
    if rebinding {
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
    // Rebind barrier: the old registration is gone before the new one is
    // looked at; nothing from the old binding is dispatched after this.
    if let Some(old) = conn.provider.take() {
        detach(
            &conn.gw,
            &old,
            tool_error_code::CANCELLED,
            "the provider is rebinding",
        );
        conn.state = ConnState::Unbound;
    }
    match register(conn, &trust, hello) {
        Ok(handle) => {
            let ack = HelloAck {
                protocol_version: PROTOCOL_VERSION,
                provider_id: handle.id.clone(),
                reconnect_token: lock(&handle.reconnect_token).clone(),
                persist_dir: handle
                    .persist_dir
                    .as_ref()
                    .map(|dir| format!("{}/", dir.display())),
                sessions: handle.bound_sessions(),
            };
            conn.out.send(GatewayMessage::HelloAck(ack));
            conn.provider = Some(handle);
            conn.state = ConnState::Bound;
            Flow::Continue
        }
        Err(error) => conn.error(error.reply_to("hello")),
    }
}

/// Validates and binds; on any error nothing stays registered.
fn register(
    conn: &Connection,
    trust: &Trust,
    hello: Hello,
) -> Result<Arc<ProviderHandle>, ErrorMessage> {
    let gw = &conn.gw;
    validate_identity(&hello)?;
    check_capabilities(trust, &hello)?;
    dispatch::validate_tools(gw, &hello.name, &hello.tools)?;
    let hooks = hello.hooks.clone().unwrap_or_default();
    gates::validate_hooks(gw, trust, &hooks.on_pre_tool_use, &hooks.transforms)?;
    let (all, targets) = resolve_sessions(gw, trust, hello.session.as_deref())?;

    let identity = (
        hello.name.clone(),
        hello.instance.clone().unwrap_or_default(),
    );
    let restored = take_identity(gw, &identity, hello.reconnect_token.as_deref())?;
    let provider_id = restored
        .as_ref()
        .map_or_else(|| ids::unique_id("p"), |r| r.provider_id.clone());
    let persist_dir = if trust.is_external() {
        None
    } else {
        Some(persist_dir(gw, &hello.name)?)
    };
    let (out_targets, all) = match (&restored, hello.session.is_none()) {
        // A reconnect that names no session gets its old binding back.
        (Some(r), true) if r.binding.all || !r.binding.sessions.is_empty() => {
            let sessions: Vec<Arc<Session>> = r
                .binding
                .sessions
                .iter()
                .filter_map(|id| gw.registry.get(id))
                .collect();
            (sessions, r.binding.all)
        }
        _ => (targets, all),
    };
    let declares_state =
        !hello.tools.is_empty() || hello.hooks.is_some() || hello.context.is_some();
    let handle = Arc::new(ProviderHandle {
        id: provider_id,
        name: hello.name.clone(),
        instance: hello.instance.clone(),
        trust: trust.clone(),
        connection_id: conn.id,
        out: conn.out.clone(),
        registration: std::sync::Mutex::new(Registration {
            hello: hello.clone(),
            sessions: HashMap::new(),
        }),
        binding: std::sync::Mutex::new(Binding {
            all,
            ..Binding::default()
        }),
        pending_calls: Default::default(),
        pending_gates: Default::default(),
        pending_transforms: Default::default(),
        last_active: AtomicU64::new(gw.tick()),
        reconnect_token: std::sync::Mutex::new(ids::token("tok")),
        revisions: std::sync::Mutex::new(
            restored
                .as_ref()
                .map(|r| r.revisions.clone())
                .unwrap_or_default(),
        ),
        connected_at: Instant::now(),
        forwarders: Default::default(),
        subscribe: hello.subscribe.clone(),
        persist_dir,
    });
    for session in &out_targets {
        let registration = match &restored {
            Some(r) if !declares_state => r
                .registration
                .sessions
                .get(session.id())
                .cloned()
                .unwrap_or_else(|| SessionRegistration::from_hello(&r.registration.hello)),
            _ => SessionRegistration::from_hello(&hello),
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
    }
    if hello.startup_context.is_some() {
        for session in &out_targets {
            session.set_startup_context(&handle.owner_key(), hello.startup_context.clone());
        }
    }
    {
        let mut state = gw.lock();
        state.providers.insert(handle.id.clone(), handle.clone());
        state.identities.insert(identity, handle.id.clone());
        state.reconnect.insert(
            lock(&handle.reconnect_token).clone(),
            DetachedProvider {
                provider_id: handle.id.clone(),
                name: handle.name.clone(),
                instance: handle.instance.clone(),
                trust: trust.clone(),
                binding: Binding::default(),
                registration: Registration::default(),
                revisions: HashMap::new(),
                detached_at: None,
            },
        );
    }
    tracing::info!(
        provider = %handle.name,
        instance = ?handle.instance,
        id = %handle.id,
        trust = trust.level(),
        sessions = ?handle.bound_sessions(),
        all = all,
        "provider registered"
    );
    Ok(handle)
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
                hello.name.chars().take(80).collect::<String>()
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

/// The capability matrix, for what a `hello` declares.
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

/// Which sessions a `hello` binds to: `(all, sessions)`.
fn resolve_sessions(
    gw: &GatewayInner,
    trust: &Trust,
    requested: Option<&str>,
) -> Result<(bool, Vec<Arc<Session>>), ErrorMessage> {
    let live = |id: &str| {
        gw.registry
            .get(id)
            .filter(|s| s.state() != bridge_engine::SessionState::Ending)
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
            let sessions = gw
                .registry
                .list()
                .into_iter()
                .filter(|s| s.state() != bridge_engine::SessionState::Ending)
                .collect();
            Ok((true, sessions))
        }
        Some(id) => {
            if !trust.allows_session(id) {
                return Err(ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    format!("not authorized for session {id}; this provider may bind only to its own session"),
                )
                .session_id(id));
            }
            let session = live(id).ok_or_else(|| {
                ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    format!("Session {id} does not exist"),
                )
                .session_id(id)
            })?;
            Ok((false, vec![session]))
        }
        None => {
            let session = match trust.scoped_session() {
                Some(id) => live(id),
                None => gw.registry.default_session(),
            };
            let session = session.ok_or_else(|| {
                ErrorMessage::new(
                    ErrorCode::InvalidSession,
                    "no session to bind to; wait for sessions.updated",
                )
            })?;
            Ok((false, vec![session]))
        }
    }
}

/// Identity protection: a live `name` + `instance` can only be taken over
/// with its reconnect token. Returns what the token restores.
fn take_identity(
    gw: &Arc<GatewayInner>,
    identity: &(String, String),
    token: Option<&str>,
) -> Result<Option<DetachedProvider>, ErrorMessage> {
    let ttl = gw.settings.reconnect_token_ttl;
    let (live, restored) = {
        let mut state = gw.lock();
        state
            .reconnect
            .retain(|_, r| r.detached_at.is_none_or(|at| at.elapsed() <= ttl));
        let live = state
            .identities
            .get(identity)
            .and_then(|id| state.providers.get(id))
            .cloned();
        let restored = token.and_then(|token| {
            let matches = state.reconnect.get(token).is_some_and(|r| {
                r.name == identity.0 && r.instance.clone().unwrap_or_default() == identity.1
            });
            if matches {
                state.reconnect.remove(token)
            } else {
                None
            }
        });
        (live, restored)
    };
    match (live, restored) {
        (Some(_), None) => Err(ErrorMessage::new(
            ErrorCode::DuplicateInstance,
            format!(
                "provider '{}' instance {:?} is already connected; pick another instance or reconnect with its reconnectToken",
                identity.0, identity.1
            ),
        )),
        (Some(old), Some(mut record)) => {
            // The token's owner takes over: the old connection closes, and
            // what it had is what the new one restores.
            record.binding = lock(&old.binding).clone();
            record.registration = lock(&old.registration).clone();
            record.revisions = lock(&old.revisions).clone();
            detach(
                gw,
                &old,
                tool_error_code::DISCONNECTED,
                "the provider reconnected on another connection",
            );
            old.out.close(
                crate::connection::close_code::POLICY,
                "replaced by a reconnect",
            );
            Ok(Some(record))
        }
        (None, restored) => Ok(restored),
    }
}

fn persist_dir(gw: &GatewayInner, name: &str) -> Result<std::path::PathBuf, ErrorMessage> {
    let dir = gw.state_dir.join("providers").join(name);
    let created = std::fs::create_dir_all(&dir).and_then(|()| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
    });
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
    lock(&handle.binding)
        .sessions
        .insert(session.id().to_owned());
    lock(&handle.binding).awaiting_ready.remove(session.id());
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
    if let Some(session) = gw.registry.get(session_id) {
        dispatch::remove_tools(gw, handle, &session);
        gates::remove_hooks(gw, handle, &session);
        session.set_context(&handle.owner_key(), None);
        session.set_startup_context(&handle.owner_key(), None);
    }
    {
        let mut binding = lock(&handle.binding);
        binding.sessions.remove(session_id);
        binding.awaiting_ready.remove(session_id);
    }
    lock(&handle.registration).sessions.remove(session_id);
    sessions::stop_forwarding(handle, session_id);
    push::forget(gw, handle, session_id);
}

/// Unregisters `handle` everywhere and fails what waits on it. Idempotent.
pub(crate) fn detach(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    error_code: &str,
    why: &str,
) {
    for session_id in handle.bound_sessions() {
        unbind_session(gw, handle, &session_id);
    }
    handle.fail_pending(error_code, why);
    let mut state = gw.lock();
    if state
        .providers
        .get(&handle.id)
        .is_some_and(|live| Arc::ptr_eq(live, handle))
    {
        state.providers.remove(&handle.id);
        let identity = handle.identity();
        if state.identities.get(&identity) == Some(&handle.id) {
            state.identities.remove(&identity);
        }
    }
}

/// Unregisters the provider everywhere, fails its in-flight calls with
/// `DISCONNECTED`, and keeps its registration for the reconnect window.
pub(crate) async fn on_disconnect(conn: &mut Connection) {
    conn.gw.lock().authenticated.remove(&conn.id);
    let Some(handle) = conn.provider.take() else {
        return;
    };
    let still_live = conn
        .gw
        .lock()
        .providers
        .get(&handle.id)
        .is_some_and(|live| Arc::ptr_eq(live, &handle));
    if still_live {
        let token = lock(&handle.reconnect_token).clone();
        let record = DetachedProvider {
            provider_id: handle.id.clone(),
            name: handle.name.clone(),
            instance: handle.instance.clone(),
            trust: handle.trust.clone(),
            binding: lock(&handle.binding).clone(),
            registration: lock(&handle.registration).clone(),
            revisions: lock(&handle.revisions).clone(),
            detached_at: Some(Instant::now()),
        };
        conn.gw.lock().reconnect.insert(token, record);
    }
    detach(
        &conn.gw,
        &handle,
        tool_error_code::DISCONNECTED,
        "the provider disconnected",
    );
    tracing::info!(provider = %handle.name, id = %handle.id, "provider disconnected");
}
