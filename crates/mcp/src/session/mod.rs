//! The `session` server: the provider tools bound to one gateway session,
//! for any MCP agent (Copilot CLI, Claude Code, Codex, OpenClaw).
//!
//! - [`SessionServer`] serves a session of this process's engine: the
//!   daemon nests it at `/mcp/session` ([`http_service`]) and picks the
//!   session from `?session=ID`.
//! - [`ServiceToolsForAgent`] serves the tools one in-process service put
//!   in a session (OpenClaw's memory) to an agent CLI the hub runs, on a
//!   loopback port for one run (for_agent.rs).
//! - [`SessionProxy`] is the stdio form (`copilot-bridge mcp session`): it
//!   answers over stdio and forwards every list and call to the running
//!   daemon's `/mcp/session`, which it finds (or has started) through a
//!   [`DaemonLocator`].
//!
//! With [`PermissionPrompts`] (the daemon's approval queue) the server also
//! offers `approve`, Claude Code's permission-prompt tool (approve.rs).
//!
//! Tools are the session's provider tools (with the gateway's `target`
//! parameter and `list_{name}_instances` tools of multi-instance
//! providers), each taking `_depth` as well. Calls go through
//! `Session::call_tool`, so policy, hook rules, gates, redaction and the
//! audit log apply. When the list changes the server sends
//! `notifications/tools/list_changed` (to handshake clients directly, to
//! `2026-07-28` clients on their `subscriptions/listen` stream).

mod approve;
mod args;
mod for_agent;
mod notify;
mod proxy;
mod server;
mod tools;

pub use approve::{APPROVE_TOOL, PermissionPrompts};
pub use args::MAX_ARGUMENT_BYTES;
pub use for_agent::ServiceToolsForAgent;
pub use proxy::{DaemonEndpoint, DaemonLocator, SessionProxy};
pub use server::{SessionLookup, SessionServer, http_service};
pub use tools::ToolScope;

/// How long a burst of tool-table changes (a provider registering, a
/// second instance joining) may take before one notification goes out.
pub const LIST_CHANGED_DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(50);

/// The query parameter of `/mcp/session` that names the session.
pub const SESSION_QUERY: &str = "session";
