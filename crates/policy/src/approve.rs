//! Who answers a policy "ask". The decision path asks an [`Approver`] once
//! the rules and the checks of a call's accesses said "ask"; a door with
//! nobody to answer uses [`DenyAll`], so "ask" fails closed.

use serde_json::Value;

/// Answers a policy "ask": may this call run?
pub trait Approver: Send + Sync {
    fn approve(&self, tool: &str, args: &Value, reason: &str) -> bool;

    /// Whether the question goes back to the caller instead, who puts it
    /// to its own user (an agent's hook: the agent asks, with its own
    /// prompt). The decision then ends in "ask", not in an answer.
    fn leaves_asking_to_caller(&self) -> bool {
        false
    }
}

/// The approver of an agent's hook: the agent asks its user.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentAsks;

impl Approver for AgentAsks {
    fn approve(&self, _tool: &str, _args: &Value, _reason: &str) -> bool {
        false
    }

    fn leaves_asking_to_caller(&self) -> bool {
        true
    }
}

/// The approver of non-interactive doors: every "ask" is a deny.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve(&self, _tool: &str, _args: &Value, _reason: &str) -> bool {
        false
    }
}
