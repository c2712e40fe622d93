//! The machine's permission rules (`[permissions]` of config.toml) as they
//! are now: one holder a daemon shares between its sessions, so that an
//! edit of config.toml reaches every session's next call without a
//! restart (docs/configuration.md, "Changes while the daemon runs").
//!
//! Each [`crate::LiveGuard`] that follows a holder remembers the
//! generation its guard was built with; a call compares it with
//! [`LivePermission::generation`] (one atomic load) and rebuilds the guard
//! only when the rules were replaced. Who watches the file and decides
//! that an edit is good is the daemon's business; this holder only keeps
//! the rules in force and, while an edit is refused, why.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bridge_util::sync::{read, write};

use crate::PermissionPolicy;

/// The permission rules in force and why the last edit is not, if it is not.
#[derive(Debug)]
pub struct LivePermission {
    /// Bumped after every [`Self::set`]; a copy of `current`'s own count,
    /// so that a call needs no lock to see that nothing changed.
    generation: AtomicU64,
    current: RwLock<(u64, Arc<PermissionPolicy>)>,
    problem: RwLock<Option<String>>,
}

impl LivePermission {
    pub fn new(policy: PermissionPolicy) -> Self {
        Self {
            generation: AtomicU64::new(0),
            current: RwLock::new((0, Arc::new(policy))),
            problem: RwLock::new(None),
        }
    }

    /// Changes whenever the rules are replaced.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The rules in force and their generation, read together.
    pub fn current(&self) -> (u64, Arc<PermissionPolicy>) {
        let (generation, policy) = &*read(&self.current);
        (*generation, policy.clone())
    }

    /// Puts `policy` in force from every session's next call on.
    pub fn set(&self, policy: PermissionPolicy) {
        let mut current = write(&self.current);
        let next = current.0.wrapping_add(1);
        *current = (next, Arc::new(policy));
        // Published after the rules, under the lock: whoever sees the new
        // number reads rules at least this new.
        self.generation.store(next, Ordering::Release);
    }

    /// Why the configuration's last edit is not in force (`None`: it is).
    pub fn problem(&self) -> Option<String> {
        read(&self.problem).clone()
    }

    pub fn set_problem(&self, problem: Option<String>) {
        *write(&self.problem) = problem;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PermissionRules;

    fn policy(blocked: &[&str]) -> PermissionPolicy {
        PermissionPolicy::compile(&PermissionRules {
            blocked_tools: blocked.iter().map(|s| (*s).to_owned()).collect(),
            ..PermissionRules::default()
        })
        .unwrap()
    }

    #[test]
    fn set_bumps_the_generation_and_replaces_the_rules() {
        let live = LivePermission::new(policy(&[]));
        assert_eq!(live.generation(), 0);
        assert!(
            live.current()
                .1
                .evaluate("shell", &serde_json::json!({}))
                .is_allow()
        );
        live.set(policy(&["shell"]));
        let (generation, rules) = live.current();
        assert_eq!((generation, live.generation()), (1, 1));
        assert!(rules.evaluate("shell", &serde_json::json!({})).is_deny());
    }

    #[test]
    fn a_problem_is_kept_until_cleared() {
        let live = LivePermission::new(policy(&[]));
        live.set_problem(Some("bad toml".to_owned()));
        assert_eq!(live.problem().as_deref(), Some("bad toml"));
        live.set_problem(None);
        assert_eq!(live.problem(), None);
    }
}
