//! copilot-bridge's own MCP servers, on the official `rmcp` SDK:
//!
//! - [`code`]: the workspace as OpenClaw's `copilot_*` tools (read, create,
//!   list files, and a whole agent task through the engine);
//! - [`memory`]: OpenClaw's memory and user preferences, read-only;
//! - [`openclaw`]: OpenClaw through its gateway (`openclaw_agent_ask`,
//!   `openclaw_sessions`, memory search there first), for the memory
//!   server and the daemon's sessions;
//! - [`session`]: the provider tools of a gateway session, for any MCP agent.
//!
//! Each runs over stdio (`copilot-bridge mcp NAME`) and is served by the
//! daemon over streamable HTTP. Every tool takes `_depth` ([`depth`]) so a
//! chain of agents calling each other stops at three hops.
//!
//! This crate must not bypass the engine: every workspace or provider tool
//! call goes through `Session::call_tool`, so the policy, redaction and the
//! audit log see it. The memory server reads only inside its memory root.

pub mod code;
pub mod depth;
pub mod memory;
pub mod openclaw;
pub mod serve;
pub mod session;
mod telemetry;
