//! Provider identity (`name` + `instance`): who may claim it, what a
//! reconnect token restores, and letting go of a registration.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bridge_protocol::excerpt;
use bridge_protocol::provider::{ErrorCode, ErrorMessage, tool_error_code};
use bridge_util::ids;

use crate::connection::{Connection, close_code};
use crate::provider::{DetachedProvider, ProviderHandle, lock};
use crate::state::{GatewayInner, Trust};

use super::unbind_session;

/// The registration a rebinding connection just gave up: a rebind under the
/// same identity keeps its `providerId` (and revision counters).
pub(crate) struct Previous {
    identity: (String, String),
    provider_id: String,
    revisions: HashMap<String, u64>,
}

impl Previous {
    pub(crate) fn of(handle: &ProviderHandle) -> Self {
        Self {
            identity: handle.identity(),
            provider_id: handle.id.clone(),
            revisions: lock(&handle.revisions).clone(),
        }
    }
}

/// An identity reserved for a `hello` being processed.
pub(crate) struct Claim {
    pub provider_id: String,
    pub revisions: HashMap<String, u64>,
    /// The reconnect token used and what it restores.
    pub restored: Option<(String, DetachedProvider)>,
}

fn duplicate(identity: &(String, String)) -> ErrorMessage {
    ErrorMessage::new(
        ErrorCode::DuplicateInstance,
        format!(
            "provider '{}' instance {:?} is already connected; pick another instance or reconnect with its reconnectToken",
            excerpt(&identity.0),
            excerpt(&identity.1)
        ),
    )
}

/// Identity protection: a live (or registering) `name` + `instance` can only
/// be taken over with its reconnect token, which closes the old connection
/// and hands over its binding. A token of a dropped connection restores its
/// registration within the TTL. Anything else is a fresh registration.
pub(crate) fn claim(
    gw: &Arc<GatewayInner>,
    identity: &(String, String),
    token: Option<&str>,
    trust: &Trust,
    previous: Option<&Previous>,
) -> Result<Claim, ErrorMessage> {
    let ttl = gw.settings.reconnect_token_ttl;
    let mut state = gw.lock();
    state
        .reconnect
        .retain(|_, r| r.detached_at.elapsed() <= ttl);
    if let Some(live_id) = state.identities.get(identity).cloned() {
        // A token only proves identity at the same trust level: a token
        // leaked to a less trusted client must not inherit more.
        let old = state.providers.get(&live_id).cloned().filter(|live| {
            live.trust.level() == trust.level()
                && token.is_some_and(|t| ids::constant_time_eq(&lock(&live.reconnect_token), t))
        });
        let Some(old) = old else {
            return Err(duplicate(identity));
        };
        // The identity stays reserved under the same id for the new
        // connection; the old handle leaves every shared table now.
        state.providers.remove(&live_id);
        state.shutdown_waiters.retain(|(p, _), _| *p != live_id);
        drop(state);
        let record = DetachedProvider::of(&old);
        detach(
            gw,
            &old,
            tool_error_code::DISCONNECTED,
            "the provider reconnected on another connection",
        );
        old.out.close(
            close_code::NORMAL,
            "replaced by a reconnect of the same provider",
        );
        old.out.kill();
        tracing::info!(provider = %old.name, id = %live_id, "provider reconnected; the old connection is closed");
        return Ok(Claim {
            provider_id: live_id,
            revisions: record.revisions.clone(),
            restored: Some((token.unwrap_or_default().to_owned(), record)),
        });
    }
    let key = token.and_then(|t| {
        state
            .reconnect
            .iter()
            .find(|(known, record)| {
                ids::constant_time_eq(known, t)
                    && record.name == identity.0
                    && record.instance.clone().unwrap_or_default() == identity.1
                    && record.trust.level() == trust.level()
            })
            .map(|(known, _)| known.clone())
    });
    let restored = key.and_then(|k| state.reconnect.remove(&k).map(|record| (k, record)));
    let (provider_id, revisions) = match (&restored, previous) {
        (Some((_, record)), _) => (record.provider_id.clone(), record.revisions.clone()),
        (None, Some(previous)) if previous.identity == *identity => {
            (previous.provider_id.clone(), previous.revisions.clone())
        }
        _ => (ids::unique_id("p"), HashMap::new()),
    };
    state
        .identities
        .insert(identity.clone(), provider_id.clone());
    Ok(Claim {
        provider_id,
        revisions,
        restored,
    })
}

/// A registration failed after its claim: the identity is free again and
/// the reconnect token can be retried.
pub(crate) fn release(gw: &GatewayInner, identity: &(String, String), claim: Claim) {
    let mut state = gw.lock();
    if state.identities.get(identity) == Some(&claim.provider_id)
        && !state.providers.contains_key(&claim.provider_id)
    {
        state.identities.remove(identity);
    }
    if let Some((token, mut record)) = claim.restored {
        record.detached_at = Instant::now();
        state.reconnect.insert(token, record);
    }
}

/// Unregisters `handle` everywhere and fails what waits on it (calls end
/// with `error_code`, gates are denied, transforms keep their text).
/// Idempotent, and harmless to a newer registration of the same id.
pub(crate) fn detach(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    error_code: &str,
    why: &str,
) {
    for session_id in handle.bound_sessions() {
        unbind_session(gw, handle, &session_id);
    }
    lock(&handle.binding).awaiting_ready.clear();
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
        // A provider that is gone cannot hold up a session's teardown.
        state.shutdown_waiters.retain(|(p, _), _| *p != handle.id);
    }
}

/// Unregisters the provider everywhere, fails its in-flight calls with
/// `DISCONNECTED` (never replayed), and keeps its registration for the
/// reconnect window.
pub(crate) async fn on_disconnect(conn: &mut Connection) {
    conn.gw.lock().authenticated.remove(&conn.id);
    let Some(handle) = conn.provider.take() else {
        return;
    };
    {
        let mut state = conn.gw.lock();
        let still_live = state
            .providers
            .get(&handle.id)
            .is_some_and(|live| Arc::ptr_eq(live, &handle));
        if still_live {
            let ttl = conn.gw.settings.reconnect_token_ttl;
            state
                .reconnect
                .retain(|_, r| r.detached_at.elapsed() <= ttl);
            let token = lock(&handle.reconnect_token).clone();
            state.reconnect.insert(token, DetachedProvider::of(&handle));
        }
    }
    detach(
        &conn.gw,
        &handle,
        tool_error_code::DISCONNECTED,
        "the provider disconnected",
    );
    tracing::info!(provider = %handle.name, id = %handle.id, "provider disconnected");
}
