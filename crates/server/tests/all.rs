//! bridge-server's integration tests: one binary, one module per surface.
//! Each test runs a real daemon in-process on 127.0.0.1:0 and talks to it
//! over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod approvals_doors;
mod backends;
mod bounds;
mod chat_rpc;
mod config_edits;
mod facade_anthropic;
mod facade_openai;
mod facade_openai_errors;
mod facade_openai_peers;
mod facade_responses;
mod health;
mod mcp_bad_input;
mod model_routing;
mod one_decision;
mod openclaw_tools;
mod orchestrate_rpc;
mod policy_edits;
mod rpc_bad_input;
mod rpc_websocket;
mod slow_and_large;
mod support;
mod swap_race;
mod toolbus;
mod vscode_backend;
mod workspaces;
