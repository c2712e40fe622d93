//! Error classification for recovery: what to do when a tool call or an
//! upstream request fails — retry it, skip it, or abort the task.

use std::hash::BuildHasher;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    RateLimit,
    Transient,
    NotFound,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryAction {
    Retry,
    Skip,
    Abort,
}

/// Default of `max_retries` (the `COPILOT_MAX_RETRIES` default).
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// Default of `transient_retries`.
pub const DEFAULT_TRANSIENT_RETRIES: u32 = 2;

const RATE_LIMIT_MARKERS: &[&str] = &["rate limit", "rate-limit", "ratelimit", "too many requests"];
const TRANSIENT_MARKERS: &[&str] = &[
    "timeout",
    "timed out",
    "econnreset",
    "connection reset",
    "temporarily unavailable",
    "overloaded",
];
const NOT_FOUND_MARKERS: &[&str] = &["enoent", "no such file", "not found"];

/// Classifies a failure by its HTTP status, if any, else by its message.
/// A status is the stronger signal, so it is consulted first; the message
/// only decides when the status says nothing specific.
pub fn classify(status: Option<u16>, message: &str) -> ErrorClass {
    match status {
        Some(429) => return ErrorClass::RateLimit,
        Some(408 | 500 | 502 | 503 | 504) => return ErrorClass::Transient,
        Some(404) => return ErrorClass::NotFound,
        _ => {}
    }
    let message = message.to_ascii_lowercase();
    let mentions = |markers: &[&str]| markers.iter().any(|marker| message.contains(marker));
    if mentions(RATE_LIMIT_MARKERS) {
        ErrorClass::RateLimit
    } else if mentions(TRANSIENT_MARKERS) {
        ErrorClass::Transient
    } else if mentions(NOT_FOUND_MARKERS) {
        ErrorClass::NotFound
    } else {
        ErrorClass::Other
    }
}

/// How long to wait before trying again: `base`, `2·base`, `4·base`, …
/// capped at `max`. The one backoff of the hub (model requests, tool
/// retries of the agent loop, restarts of MCP servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The wait before retry number `retry` (0 for the first retry).
    pub fn delay(&self, retry: u32) -> Duration {
        self.base
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.max)
    }

    /// Full jitter: uniform in `[0, delay(retry)]`, so that clients failing
    /// together do not retry together.
    pub fn jittered(&self, retry: u32) -> Duration {
        let ceiling = u64::try_from(self.delay(retry).as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(jitter(retry) % ceiling.saturating_add(1))
    }
}

/// A pseudo-random number without a dependency: std's `RandomState` is
/// seeded randomly per process and per instance, the time and the retry
/// number vary it further. Not for cryptography; for spreading retries.
fn jitter(retry: u32) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    std::collections::hash_map::RandomState::new().hash_one((nanos, retry))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Retries allowed for rate-limit errors.
    pub max_retries: u32,
    /// Retries allowed for transient errors (timeouts, resets, 5xx).
    pub transient_retries: u32,
}

impl Default for ErrorPolicy {
    fn default() -> Self {
        Self {
            max_retries: DEFAULT_MAX_RETRIES,
            transient_retries: DEFAULT_TRANSIENT_RETRIES,
        }
    }
}

impl ErrorPolicy {
    /// What to do after the failure of attempt number `attempt` (0 for the
    /// first try, i.e. the count of retries already made).
    pub fn decide(&self, class: ErrorClass, attempt: u32) -> RecoveryAction {
        match class {
            ErrorClass::RateLimit if attempt < self.max_retries => RecoveryAction::Retry,
            ErrorClass::Transient if attempt < self.transient_retries => RecoveryAction::Retry,
            ErrorClass::NotFound => RecoveryAction::Skip,
            ErrorClass::RateLimit | ErrorClass::Transient | ErrorClass::Other => {
                RecoveryAction::Abort
            }
        }
    }

    /// [`classify`] then [`ErrorPolicy::decide`].
    pub fn decide_for(&self, status: Option<u16>, message: &str, attempt: u32) -> RecoveryAction {
        self.decide(classify(status, message), attempt)
    }
}
