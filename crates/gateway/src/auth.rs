//! `auth` and `auth.confirm`: project tokens, issued external tokens, and
//! the pairing flow (a 6-digit code shown to the user, never to the
//! provider; 5 attempts a minute gateway-wide).

use std::time::{Duration, Instant};

use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    Auth, AuthConfirm, AuthPairing, ErrorCode, ErrorMessage, GatewayMessage,
};
use bridge_util::ids;

use crate::GatewayError;
use crate::connection::{ConnState, Connection, Flow};
use crate::sessions::{authenticated, session_list};
use crate::state::{ExternalToken, GatewayInner, PairingInfo, PendingPairing, ProjectToken, Trust};

/// The window of the pairing attempt limit.
const PAIRING_WINDOW: Duration = Duration::from_secs(60);

const PAIRING_PROMPT: &str = "Enter the pairing code shown in your copilot-bridge session";

/// Characters of a provider-chosen name a pairing prompt shows.
const PROVIDER_NAME_CHARS: usize = 64;

pub(crate) fn on_auth(conn: &mut Connection, auth: Auth) -> Flow {
    match (auth.token.as_deref(), auth.mode.as_deref()) {
        (Some(token), _) => authenticate_token(conn, token),
        (None, Some("pair")) => begin_pairing(conn, &auth),
        (None, Some(mode)) => conn.reject(
            ErrorCode::AuthFailed,
            format!(
                "unknown auth mode {:?}; send a token, or mode \"pair\"",
                excerpt(mode)
            ),
            "auth",
        ),
        (None, None) => conn.reject(
            ErrorCode::AuthFailed,
            "auth needs a token (TAP_PROVIDER_TOKEN or an issued token) or mode \"pair\"",
            "auth",
        ),
    }
}

fn authenticate_token(conn: &mut Connection, token: &str) -> Flow {
    let (trust, spawned) = {
        let state = conn.gw.lock();
        // Tokens are looked up by value; comparing the stored key in
        // constant time keeps a timing side channel off the prefix.
        let project = state
            .project_tokens
            .iter()
            .find(|(known, _)| ids::constant_time_eq(known, token))
            .map(|(_, t)| {
                let trust = Trust::Project {
                    session_id: t.session_id.clone(),
                };
                (trust, t.spawned)
            });
        let trust = project.or_else(|| {
            state
                .external_tokens
                .iter()
                .find(|(known, _)| ids::constant_time_eq(known, token))
                .map(|(_, t)| {
                    let trust = Trust::External {
                        session_id: t.session_id.clone(),
                    };
                    (trust, false)
                })
        });
        (
            trust.as_ref().map(|(t, _)| t.clone()),
            trust.is_some_and(|(_, s)| s),
        )
    };
    let Some(trust) = trust else {
        tracing::info!(connection = conn.id, peer = %conn.peer, "auth with an unknown token refused");
        return conn.reject(
            ErrorCode::AuthFailed,
            "unknown or expired token; check TAP_PROVIDER_TOKEN, or pair again",
            "auth",
        );
    };
    let session_id = trust.scoped_session().unwrap_or_default().to_owned();
    if conn.gw.registry.get(&session_id).is_none() {
        return conn.reject(
            ErrorCode::AuthFailed,
            format!("the token's session {session_id} has ended"),
            "auth",
        );
    }
    if trust.is_external() {
        conn.auth_token = Some(token.to_owned());
    }
    let list = session_list(&conn.gw, &trust, None);
    conn.spawned = spawned;
    conn.trust = Some(trust);
    conn.state = ConnState::AwaitHello;
    conn.out.send(GatewayMessage::Sessions(list));
    authenticated(conn);
    Flow::Continue
}

fn begin_pairing(conn: &mut Connection, auth: &Auth) -> Flow {
    let session = match &auth.session {
        Some(id) => conn.gw.registry.get(id),
        None => conn.gw.registry.foreground_session(),
    };
    let Some(session) = session else {
        return conn.reject(
            ErrorCode::InvalidSession,
            match &auth.session {
                Some(id) => format!(
                    "session {} does not exist; pairing needs a live session",
                    excerpt(id)
                ),
                None => {
                    "no session is active; pairing needs a session to show its code in".to_owned()
                }
            },
            "auth",
        );
    };
    let code = match ids::pairing_code() {
        Ok(code) => code,
        Err(err) => {
            // Fail closed: a code the OS did not draw could be guessed.
            tracing::error!(error = %err, peer = %conn.peer, "no pairing code issued: the OS random source failed");
            return conn.reject(
                ErrorCode::AuthFailed,
                "the gateway cannot draw a pairing code (its random source failed); no code was issued, try again later",
                "auth",
            );
        }
    };
    let who = match &auth.name {
        Some(name) => format!(
            "Provider '{}' ({})",
            bridge_policy::redact::printable(name, PROVIDER_NAME_CHARS),
            conn.peer
        ),
        None => format!("A provider ({})", conn.peer),
    };
    {
        // Every request shows a code to the user: limiting requests bounds
        // both timeline spam and guesses (a wrong code ends the pairing).
        let mut state = conn.gw.lock();
        let now = Instant::now();
        let limit = conn.gw.settings.pairing_attempts_per_minute;
        while state
            .pairing_attempts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= PAIRING_WINDOW)
        {
            state.pairing_attempts.pop_front();
        }
        if state.pairing_attempts.len() >= limit {
            drop(state);
            tracing::warn!(peer = %conn.peer, "pairing request refused: {limit} attempts in the last minute");
            return conn.reject(
                ErrorCode::RateLimited,
                format!("{limit} pairing attempts in the last minute (the limit); retry later"),
                "auth",
            );
        }
        state.pairing_attempts.push_back(now);
        state.pairings.insert(
            conn.id,
            PendingPairing {
                code: code.clone(),
                session_id: session.id().to_owned(),
                requested_by: who.clone(),
                created: now,
            },
        );
    }
    // The code goes to the user: the session timeline, `copilot-bridge
    // pair`, and the daemon log of the user who started the daemon (a
    // one-time, one-guess code, worthless once confirmed or failed). It
    // never goes over this connection.
    session.log(
        "gateway",
        &format!("※ {who} requesting access. Pairing code: {code}"),
    );
    tracing::warn!(session = %session.id(), "pairing requested by {who}: code {code} (also shown by `copilot-bridge pair`)");
    conn.state = ConnState::AwaitPairing;
    conn.out.send(GatewayMessage::AuthPairing(AuthPairing {
        prompt: PAIRING_PROMPT.to_owned(),
    }));
    Flow::Continue
}

pub(crate) fn on_confirm(conn: &mut Connection, confirm: AuthConfirm) -> Flow {
    let settings = &conn.gw.settings;
    let outcome = {
        let mut state = conn.gw.lock();
        let now = Instant::now();
        match state.pairings.remove(&conn.id) {
            None => Err(ErrorMessage::new(
                ErrorCode::AuthFailed,
                "no pairing in progress (its session may have ended); pair again",
            )),
            Some(p) if now.duration_since(p.created) > settings.pairing_code_ttl => {
                Err(ErrorMessage::new(
                    ErrorCode::AuthFailed,
                    "the pairing code expired; pair again",
                ))
            }
            // A wrong code ends the pairing (and the connection): each code
            // shown gets exactly one guess.
            Some(p) if !ids::constant_time_eq(&p.code, confirm.code.trim()) => Err(
                ErrorMessage::new(ErrorCode::AuthFailed, "wrong pairing code"),
            ),
            Some(p) => {
                let token = ids::token("ext-tok");
                state.external_tokens.insert(
                    token.clone(),
                    ExternalToken {
                        session_id: p.session_id.clone(),
                    },
                );
                Ok((token, p.session_id))
            }
        }
    };
    match outcome {
        Err(error) => {
            tracing::info!(connection = conn.id, peer = %conn.peer, "pairing failed: {}", error.message);
            conn.error(error.reply_to("auth.confirm"))
        }
        Ok((token, session_id)) => {
            if let Some(session) = conn.gw.registry.get(&session_id) {
                session.log("gateway", "※ provider paired");
            }
            conn.auth_token = Some(token.clone());
            let trust = Trust::External { session_id };
            let list = session_list(&conn.gw, &trust, Some(token));
            conn.trust = Some(trust);
            conn.state = ConnState::AwaitHello;
            conn.out.send(GatewayMessage::Sessions(list));
            authenticated(conn);
            Flow::Continue
        }
    }
}

/// An external provider whose paired session ended re-bound to
/// `trust`'s session: the connection and its issued token move there, and
/// the user sees it in that session's timeline.
pub(crate) fn rescope(conn: &mut Connection, trust: Trust) {
    let Some(session_id) = trust.scoped_session().map(str::to_owned) else {
        return;
    };
    {
        let mut state = conn.gw.lock();
        if let Some(token) = &conn.auth_token {
            state.external_tokens.insert(
                token.clone(),
                ExternalToken {
                    session_id: session_id.clone(),
                },
            );
        }
        if let Some(entry) = state.authenticated.get_mut(&conn.id) {
            entry.1 = trust.clone();
        }
    }
    if let Some(session) = conn.gw.registry.get(&session_id) {
        session.log(
            "gateway",
            &format!(
                "※ a provider paired with an ended session ({}) is now bound here",
                conn.peer
            ),
        );
    }
    conn.trust = Some(trust);
}

/// Forgets the connection's pending pairing.
pub(crate) fn on_disconnect(conn: &mut Connection) {
    conn.gw.lock().pairings.remove(&conn.id);
}

pub(crate) fn issue_project_token(
    gw: &GatewayInner,
    session_id: &str,
    spawned: bool,
) -> Result<String, GatewayError> {
    if gw.registry.get(session_id).is_none() {
        return Err(GatewayError::NoSuchSession(session_id.to_owned()));
    }
    let token = ids::token("ptk");
    gw.lock().project_tokens.insert(
        token.clone(),
        ProjectToken {
            session_id: session_id.to_owned(),
            spawned,
        },
    );
    Ok(token)
}

/// Drops every token scoped to an ended session.
pub(crate) fn forget_session_tokens(gw: &GatewayInner, session_id: &str) {
    let mut state = gw.lock();
    state
        .project_tokens
        .retain(|_, t| t.session_id != session_id);
    state
        .external_tokens
        .retain(|_, t| t.session_id != session_id);
    state.pairings.retain(|_, p| p.session_id != session_id);
}

pub(crate) fn pending_pairings(gw: &GatewayInner) -> Vec<PairingInfo> {
    let state = gw.lock();
    let mut list: Vec<PairingInfo> = state
        .pairings
        .values()
        .filter(|p| p.created.elapsed() <= gw.settings.pairing_code_ttl)
        .map(|p| PairingInfo {
            code: p.code.clone(),
            session_id: p.session_id.clone(),
            requested_by: p.requested_by.clone(),
            age_secs: p.created.elapsed().as_secs(),
        })
        .collect();
    list.sort_by_key(|p| p.age_secs);
    list
}
