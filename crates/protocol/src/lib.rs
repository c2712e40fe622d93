//! Wire types of copilot-bridge: the shapes that cross a process boundary.
//!
//! This crate holds serde types only. It must not do I/O, spawn tasks or hold
//! policy logic; every other crate may depend on it, so it stays small and
//! dependency-free beyond serde. Unknown fields are ignored when parsing, so a
//! newer peer never breaks an older bridge.

pub mod decision;
pub mod excerpt;
pub mod failure;
pub mod json;
pub mod jsonrpc;
pub mod tool;

pub use decision::{Decision, DecisionKind};
pub use excerpt::{Excerpt, excerpt};
pub use failure::FailureKind;
pub use json::json_kind;
pub use tool::{ToolEffect, ToolSpec};
pub mod provider;
