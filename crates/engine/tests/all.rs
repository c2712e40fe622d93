#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod copilot_runner;
mod log;
mod mcp;
mod native;
mod one_decision;
mod redteam;
mod registry;
mod task;
