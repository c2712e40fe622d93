//! bridge-mcp's integration tests: one binary, one module per server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod code;
mod code_tasks;
mod for_agent;
mod memory;
mod memory_agents;
mod memory_corpus;
mod memory_index;
mod memory_race;
mod session;
