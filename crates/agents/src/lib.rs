//! What copilot-bridge knows about the coding agents it joins (Claude
//! Code, the Copilot CLI, Codex, OpenClaw, VS Code): where they keep their
//! configuration (`env`, the one place their variables are read), the
//! shapes of their hook payloads and answers, and the edits that put
//! copilot-bridge into their configuration and take it out again.
//!
//! It must not decide a tool call (that is `bridge_engine::Session::decide`,
//! reached by the CLI's `hook` command), must not start or serve the
//! daemon, and must not print: it returns values and text, and the binary
//! prints them.

pub mod codex;
pub mod copilot_extension;
pub mod env;
pub mod error;
pub mod hook;
pub mod hooks;
pub mod installed;
pub mod json_edit;
pub mod launch;
pub mod mcp_config;
pub mod openclaw;
pub mod program;
pub mod setup;
pub mod telemetry;
pub mod vscode;

pub use env::{AgentEnv, Scope};
pub use error::AgentsError;
pub use program::Program;
