//! What an object key's name says to [`super::redact_value`], remembered:
//! the same few keys come back in every item of a large result
//! ("file", "line", "snippet") and in every event of a session log
//! ("toolCallId", "arguments"), and judging a name runs the whole rule set
//! over it.
//!
//! The rules are fixed when the binary is built, so a name's verdict never
//! changes: verdicts are kept for the whole process, up to a bound, besides
//! a small list per tree that needs no lock.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock};

use super::{is_secret_key, keys, redact};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeyVerdict {
    /// The name itself holds a secret.
    pub redact_name: bool,
    /// Its value is a secret whatever it looks like.
    pub secret: bool,
    /// Its value is a secret when it looks randomly generated.
    pub names_a_key: bool,
}

impl KeyVerdict {
    fn judge(key: &str) -> Self {
        Self {
            redact_name: matches!(redact(key), Cow::Owned(_)),
            secret: is_secret_key(key),
            names_a_key: keys::names_a_key(key),
        }
    }
}

/// Names kept for the process; beyond this (a tree of hostile, ever new
/// keys), new names are judged each time they come.
const PROCESS_CAPACITY: usize = 4096;
/// Longer names are not kept for the process: real keys are short.
const MAX_KEPT_NAME_BYTES: usize = 64;

static PROCESS_VERDICTS: LazyLock<RwLock<HashMap<Box<str>, KeyVerdict>>> =
    LazyLock::new(RwLock::default);

/// The verdicts of one tree's keys, in front of the process's.
#[derive(Debug, Default)]
pub(super) struct KeyVerdicts {
    known: Vec<(String, KeyVerdict)>,
}

impl KeyVerdicts {
    /// Distinct keys remembered per tree, without a lock.
    const CAPACITY: usize = 64;

    pub(super) fn of(&mut self, key: &str) -> KeyVerdict {
        if let Some((_, verdict)) = self.known.iter().find(|(known, _)| known == key) {
            return *verdict;
        }
        let verdict = process_verdict(key);
        if self.known.len() < Self::CAPACITY {
            self.known.push((key.to_owned(), verdict));
        }
        verdict
    }
}

fn process_verdict(key: &str) -> KeyVerdict {
    let kept = PROCESS_VERDICTS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(key)
        .copied();
    if let Some(verdict) = kept {
        return verdict;
    }
    let verdict = KeyVerdict::judge(key);
    if key.len() <= MAX_KEPT_NAME_BYTES {
        let mut kept = PROCESS_VERDICTS
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if kept.len() < PROCESS_CAPACITY {
            kept.insert(key.into(), verdict);
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{KeyVerdict, KeyVerdicts, MAX_KEPT_NAME_BYTES, PROCESS_VERDICTS};

    #[test]
    fn a_name_is_judged_the_same_whether_kept_or_not() {
        let long = format!("{}_api_key", "x".repeat(MAX_KEPT_NAME_BYTES));
        for key in [
            "apiKey",
            "tokens_used",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            long.as_str(),
        ] {
            let judged = KeyVerdict::judge(key);
            // The first sight judges it (and keeps it), the second reads it.
            assert_eq!(KeyVerdicts::default().of(key), judged, "{key}");
            assert_eq!(KeyVerdicts::default().of(key), judged, "{key}");
        }
        assert!(KeyVerdict::judge("ghp_0123456789abcdefghijklmnopqrstuvwxyzAB").redact_name);
        let kept = PROCESS_VERDICTS.read().unwrap();
        assert!(kept.get("apiKey").is_some_and(|verdict| verdict.secret));
        assert!(
            kept.get("tokens_used")
                .is_some_and(|verdict| !verdict.secret)
        );
        assert!(!kept.contains_key(long.as_str()), "long names are not kept");
    }
}
