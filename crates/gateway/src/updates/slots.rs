//! In-flight slots: at most one state update per (provider, session,
//! message type) between its arrival and its `ack` (or `error`).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::provider::lock;

/// The four state-changing message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UpdateKind {
    Tools,
    Hooks,
    Context,
    Filter,
}

impl UpdateKind {
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Self::Tools => "tools.update",
            Self::Hooks => "hooks.update",
            Self::Context => "context.update",
            Self::Filter => "filter.set",
        }
    }
}

/// (provider id, session id, type).
pub(crate) type SlotKey = (String, String, UpdateKind);

/// A set of busy keys. Claiming a busy key fails; a claim frees its key
/// when dropped, so a panicking apply cannot wedge a slot.
#[derive(Debug)]
pub(crate) struct InFlight<K: Eq + Hash> {
    busy: Arc<Mutex<HashSet<K>>>,
}

impl<K: Eq + Hash> Default for InFlight<K> {
    fn default() -> Self {
        Self {
            busy: Arc::default(),
        }
    }
}

impl<K: Eq + Hash + Clone> InFlight<K> {
    /// Takes `key`'s slot, or `None` while an earlier claim holds it.
    pub(crate) fn try_claim(&self, key: K) -> Option<Claim<K>> {
        if lock(&self.busy).insert(key.clone()) {
            Some(Claim {
                busy: self.busy.clone(),
                key,
            })
        } else {
            None
        }
    }

    #[cfg(test)]
    fn is_busy(&self, key: &K) -> bool {
        lock(&self.busy).contains(key)
    }
}

/// A held slot.
#[derive(Debug)]
pub(crate) struct Claim<K: Eq + Hash> {
    busy: Arc<Mutex<HashSet<K>>>,
    key: K,
}

impl<K: Eq + Hash> Claim<K> {
    pub(crate) fn key(&self) -> &K {
        &self.key
    }
}

impl<K: Eq + Hash> Drop for Claim<K> {
    fn drop(&mut self) {
        lock(&self.busy).remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(provider: &str, session: &str, kind: UpdateKind) -> SlotKey {
        (provider.to_owned(), session.to_owned(), kind)
    }

    #[test]
    fn a_second_update_of_the_same_type_and_session_is_refused_until_the_first_ends() {
        let slots = InFlight::default();
        let first = slots.try_claim(key("p", "s", UpdateKind::Tools)).unwrap();
        assert!(slots.try_claim(key("p", "s", UpdateKind::Tools)).is_none());
        assert!(slots.is_busy(&key("p", "s", UpdateKind::Tools)));
        drop(first);
        assert!(!slots.is_busy(&key("p", "s", UpdateKind::Tools)));
        assert!(slots.try_claim(key("p", "s", UpdateKind::Tools)).is_some());
    }

    #[test]
    fn other_types_sessions_and_providers_have_their_own_slots() {
        let slots = InFlight::default();
        let _tools = slots.try_claim(key("p", "s", UpdateKind::Tools)).unwrap();
        for other in [
            key("p", "s", UpdateKind::Hooks),
            key("p", "s", UpdateKind::Context),
            key("p", "s", UpdateKind::Filter),
            key("p", "s2", UpdateKind::Tools),
            key("q", "s", UpdateKind::Tools),
        ] {
            let claim = slots.try_claim(other.clone());
            assert!(claim.is_some(), "{other:?}");
            assert_eq!(claim.unwrap().key(), &other);
        }
    }

    #[test]
    fn a_claim_dropped_by_a_panic_frees_its_slot() {
        let slots = InFlight::default();
        let claim = slots.try_claim(key("p", "s", UpdateKind::Filter)).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = claim;
            panic!("apply failed");
        }));
        assert!(result.is_err());
        assert!(slots.try_claim(key("p", "s", UpdateKind::Filter)).is_some());
    }
}
