//! End-to-end tests of the `copilot-bridge` binary, run as a user would run it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents;
mod cli_activity;
mod cli_approvals;
mod cli_audit;
mod cli_config;
mod cli_copilot_extension;
mod cli_daemon;
mod cli_hardening;
mod cli_hook;
mod cli_hook_daemon;
mod cli_hooks_install;
mod cli_mcp_code;
mod cli_mcp_delegate;
mod cli_mcp_memory;
mod cli_mcp_session;
mod cli_openclaw;
mod cli_orchestrate;
mod cli_orchestrate_writers;
mod cli_redteam;
mod cli_request_log;
mod cli_rpc;
mod cli_run;
mod cli_serve;
mod cli_sessions;
mod cli_setup;
mod cli_status;
mod cli_swap_race;
mod cli_tool;
mod cli_ui;
mod cli_ui_browser;
mod cli_validate;
mod cli_vscode;
mod peers;
mod support;
