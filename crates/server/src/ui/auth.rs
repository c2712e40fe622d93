//! Who may use the dashboard: one-time login codes (`ui.login`, for a
//! holder of the approver token) turned into a session cookie, and the
//! CSRF token a session's state changes must carry. All in memory: a
//! daemon restart ends every dashboard session.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bridge_util::ids::{constant_time_eq, random_hex};
use bridge_util::sync::lock;

/// How long a login code may wait to be used.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// How long a dashboard session lasts without a request.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 60 * 60);
/// Codes and sessions kept at most: minting more drops the oldest, so a
/// client looping on `ui.login` cannot grow the daemon.
const MAX_CODES: usize = 32;
const MAX_SESSIONS: usize = 64;

/// A dashboard session's secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSession {
    /// The cookie's value.
    pub cookie: String,
    /// What a state change must carry in `x-csrf-token`.
    pub csrf: String,
}

#[derive(Debug)]
struct Kept {
    csrf: String,
    last_seen: Instant,
}

/// The codes and sessions of one daemon.
#[derive(Debug)]
pub struct UiAuth {
    port: u16,
    codes: Mutex<HashMap<String, Instant>>,
    sessions: Mutex<HashMap<String, Kept>>,
}

impl UiAuth {
    pub fn new(port: u16) -> Self {
        Self {
            port,
            codes: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The session cookie's name: with the port, since cookies ignore
    /// ports and another daemon on this host must not read or clobber it.
    pub fn cookie_name(&self) -> String {
        format!("copilot_bridge_ui_{}", self.port)
    }

    /// The daemon's port (its origin's).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A fresh single-use code, valid for [`CODE_TTL`].
    pub fn mint_code(&self) -> String {
        let code = random_hex(32);
        let mut codes = lock(&self.codes);
        codes.retain(|_, minted| minted.elapsed() < CODE_TTL);
        if codes.len() >= MAX_CODES
            && let Some(oldest) = codes
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
        {
            codes.remove(&oldest);
        }
        codes.insert(code.clone(), Instant::now());
        code
    }

    /// A session for `code`, which is used up (`None` when it is unknown,
    /// used or expired).
    pub fn redeem(&self, code: &str) -> Option<UiSession> {
        let minted = {
            let mut codes = lock(&self.codes);
            let key = codes
                .keys()
                .find(|known| constant_time_eq(known, code))?
                .clone();
            codes.remove(&key)?
        };
        if minted.elapsed() >= CODE_TTL {
            return None;
        }
        let session = UiSession {
            cookie: random_hex(32),
            csrf: random_hex(32),
        };
        let mut sessions = lock(&self.sessions);
        sessions.retain(|_, kept| kept.last_seen.elapsed() < SESSION_IDLE);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, kept)| kept.last_seen)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            session.cookie.clone(),
            Kept {
                csrf: session.csrf.clone(),
                last_seen: Instant::now(),
            },
        );
        Some(session)
    }

    /// The session whose cookie is `cookie`, seen now.
    pub fn session(&self, cookie: &str) -> Option<UiSession> {
        let mut sessions = lock(&self.sessions);
        let key = sessions
            .keys()
            .find(|known| constant_time_eq(known, cookie))?
            .clone();
        let kept = sessions.get_mut(&key)?;
        if kept.last_seen.elapsed() >= SESSION_IDLE {
            sessions.remove(&key);
            return None;
        }
        kept.last_seen = Instant::now();
        Some(UiSession {
            cookie: key,
            csrf: kept.csrf.clone(),
        })
    }

    /// Logs the session out.
    pub fn end(&self, cookie: &str) {
        lock(&self.sessions).retain(|known, _| !constant_time_eq(known, cookie));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_logs_in_once_and_a_logout_ends_the_session() {
        let auth = UiAuth::new(9400);
        let code = auth.mint_code();
        assert_eq!(code.len(), 64);
        let session = auth.redeem(&code).unwrap();
        assert_eq!(auth.redeem(&code), None, "single use");
        assert_eq!(auth.redeem("nope"), None);
        assert_eq!(auth.session(&session.cookie), Some(session.clone()));
        auth.end(&session.cookie);
        assert_eq!(auth.session(&session.cookie), None);
        assert_eq!(auth.cookie_name(), "copilot_bridge_ui_9400");
    }

    #[test]
    fn minting_without_end_keeps_a_bounded_number_of_codes() {
        let auth = UiAuth::new(1);
        let first = auth.mint_code();
        for _ in 0..MAX_CODES {
            auth.mint_code();
        }
        assert!(lock(&auth.codes).len() <= MAX_CODES);
        assert_eq!(auth.redeem(&first), None, "the oldest went first");
    }
}
