//! Identifiers and secrets. Ids are globally unique (a random per-process
//! prefix and a counter: cheap on the hot path of every tool call); tokens
//! are 128 bits from the operating system's CSPRNG.

use std::fmt::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static PROCESS_PREFIX: OnceLock<String> = OnceLock::new();
static COUNTER: AtomicU64 = AtomicU64::new(1);

fn process_prefix() -> &'static str {
    PROCESS_PREFIX.get_or_init(|| random_hex(4))
}

/// A new id such as `c-3fa91c07-42`: unique across sessions, connections
/// and gateway restarts.
pub fn unique_id(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut id = String::with_capacity(prefix.len() + 24);
    let _ = write!(id, "{prefix}-{}-{n}", process_prefix());
    id
}

/// A secret token such as `ptk-<32 hex digits>`.
pub fn token(prefix: &str) -> String {
    format!("{prefix}-{}", random_hex(16))
}

/// `bytes` random bytes as hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    if let Err(err) = getrandom::fill(&mut buffer) {
        // getrandom(2) does not fail once the kernel pool is seeded. If it
        // ever does, a guessable token would be worse than no daemon.
        tracing::error!(error = %err, "the OS random source failed; stopping rather than minting a guessable secret");
        std::process::abort();
    }
    let mut out = String::with_capacity(bytes * 2);
    for byte in buffer {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// A 6-digit pairing code, uniformly drawn.
pub fn pairing_code() -> String {
    let mut buffer = [0u8; 8];
    let _ = getrandom::fill(&mut buffer);
    format!("{:06}", u64::from_le_bytes(buffer) % 1_000_000)
}

/// Compares secrets in time independent of where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_tokens_are_long() {
        let a = unique_id("c");
        let b = unique_id("c");
        assert_ne!(a, b);
        assert!(a.starts_with("c-"));
        let t = token("ptk");
        assert_eq!(t.len(), 4 + 32);
        assert_ne!(t, token("ptk"));
        assert_eq!(pairing_code().len(), 6);
        assert!(constant_time_eq("abc", "abc") && !constant_time_eq("abc", "abd"));
    }
}
