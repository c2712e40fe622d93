//! What `copilot-bridge openclaw register|unregister|persona` does: puts
//! copilot-bridge into OpenClaw (docs/openclaw.md), takes it out again, and
//! the persona snippet that teaches an OpenClaw agent when to delegate.
//!
//! `register` makes three changes, each idempotent:
//!
//! - **the plugin** (assets/openclaw-plugin/, shipped inside the binary):
//!   written to `<home>/openclaw-plugin/`, installed the way `openclaw
//!   plugins install --link` does it (its directory in `plugins.load.paths`,
//!   `plugins.entries.copilot-bridge` enabled, with this program and its
//!   state directory as the plugin's config): the tools `copilot_code`,
//!   `copilot_code_verbose` and `copilot_orchestrate`;
//! - **the MCP server** `mcp.servers.copilot-bridge`: the daemon's
//!   `/mcp/code` over streamable HTTP, working in the default agent's
//!   workspace (`?workspace=`), its token a `${COPILOT_BRIDGE_TOKEN}`
//!   reference, with a request timeout that fits a coding task;
//! - **the token**: kept in `<home>/token` (the daemon uses it on every
//!   start) and given to OpenClaw in `<OpenClaw state>/.env`, which OpenClaw
//!   loads at start, mode 0600.
//!
//! Edits are spliced into the text (`json_edit`), the old file is backed
//! up to `<file>.bak-<timestamp>` first, and the new one replaces it
//! atomically. A second `register` finds nothing to change and writes
//! nothing, not even a backup.

mod dotenv;
mod register;

use std::path::{Path, PathBuf};

pub use register::{ID, Plan, REQUEST_TIMEOUT_MS, RunningDaemon, TOKEN_VARIABLE};

/// The persona snippet (`openclaw persona`).
pub const PERSONA: &str = include_str!("../../assets/openclaw-persona.md");

/// OpenClaw's `.env` in its state directory `state_dir`.
pub fn dotenv_file(state_dir: &Path) -> PathBuf {
    state_dir.join(".env")
}

/// Whether OpenClaw's `.env` (in `state_dir`) gives it `token` as
/// [`TOKEN_VARIABLE`], as `register` writes it.
pub fn has_token(state_dir: &Path, token: &str) -> bool {
    std::fs::read_to_string(dotenv_file(state_dir))
        .is_ok_and(|text| dotenv::holds(&text, TOKEN_VARIABLE, token))
}
