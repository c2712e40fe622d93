//! Identifiers and secrets: every id, token and pairing code of the hub is
//! made here, and every presented secret is compared here. Ids are globally
//! unique (a random per-process prefix and a counter: cheap on the hot path
//! of every tool call); tokens are 128 bits from the operating system's
//! CSPRNG.

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

/// 24 hex digits for an id a client sees but that guards nothing (a chat
/// completion's `chatcmpl-…`, a message's `msg_…`): unique in this process,
/// different in every process, and made without a system call, unlike
/// [`random_hex`], which is what ids that must not be guessed use.
pub fn opaque_hex() -> String {
    static KEY: OnceLock<u64> = OnceLock::new();
    let key = *KEY.get_or_init(|| {
        let mut bytes = [0u8; 8];
        fill_or_abort(&mut bytes);
        u64::from_le_bytes(bytes)
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // splitmix64's finalizer: a bijection, so distinct counters never
    // collide, and consecutive ids share no visible pattern.
    let mut mixed = n ^ key;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^= mixed >> 31;
    format!("{}{mixed:016x}", process_prefix())
}

/// A secret token such as `ptk-<32 hex digits>`.
pub fn token(prefix: &str) -> String {
    format!("{prefix}-{}", random_hex(16))
}

/// `bytes` random bytes as hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    fill_or_abort(&mut buffer);
    hex(&buffer)
}

/// `bytes` as lowercase hex digits (a digest, a key id).
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn fill_or_abort(buffer: &mut [u8]) {
    if let Err(err) = getrandom::fill(buffer) {
        // getrandom(2) does not fail once the kernel pool is seeded. If it
        // ever does, a guessable token would be worse than no daemon.
        tracing::error!(error = %err, "the OS random source failed; stopping rather than minting a guessable secret");
        std::process::abort();
    }
}

/// A 6-digit pairing code, uniformly drawn from the OS random source. Fails
/// rather than hand out a code that source did not make (all zero bytes
/// would be "000000").
pub fn pairing_code() -> Result<String, getrandom::Error> {
    pairing_code_from(getrandom::fill)
}

/// [`pairing_code`] with `fill` as the random source.
pub fn pairing_code_from(
    fill: impl FnOnce(&mut [u8]) -> Result<(), getrandom::Error>,
) -> Result<String, getrandom::Error> {
    let mut buffer = [0u8; 8];
    fill(&mut buffer)?;
    Ok(format!("{:06}", u64::from_le_bytes(buffer) % 1_000_000))
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
        assert!(constant_time_eq("abc", "abc") && !constant_time_eq("abc", "abd"));
    }

    #[test]
    fn opaque_ids_are_24_hex_digits_and_do_not_repeat() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| opaque_hex()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(
            ids.iter()
                .all(|id| id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }

    #[test]
    fn pairing_codes_are_six_digits_and_vary() {
        let codes: std::collections::HashSet<String> =
            (0..8).map(|_| pairing_code().unwrap()).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 6 && c.bytes().all(|b| b.is_ascii_digit()))
        );
        assert!(codes.len() > 1, "{codes:?}");
    }

    #[test]
    fn a_failing_random_source_hands_out_no_pairing_code() {
        let failed = pairing_code_from(|_| Err(getrandom::Error::UNEXPECTED));
        assert_eq!(failed, Err(getrandom::Error::UNEXPECTED));
        // The source's bytes are used, not what the buffer held before.
        let all_ones = pairing_code_from(|buffer| {
            buffer.fill(0xff);
            Ok(())
        });
        assert_eq!(all_ones.unwrap(), format!("{:06}", u64::MAX % 1_000_000));
    }
}
