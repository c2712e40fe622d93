//! Who answers a policy "ask". The decision path asks an [`Approver`] once
//! the rules and the checks of a call's accesses said "ask"; a door with
//! nobody to answer uses [`DenyAll`], so "ask" fails closed.

use serde_json::Value;

/// Answers a policy "ask": may this call run?
pub trait Approver: Send + Sync {
    fn approve(&self, tool: &str, args: &Value, reason: &str) -> bool;
}

/// The approver of non-interactive doors: every "ask" is a deny.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve(&self, _tool: &str, _args: &Value, _reason: &str) -> bool {
        false
    }
}
