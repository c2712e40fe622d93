//! OpenClaw's memory as a read-only MCP server: `openclaw_memory_search`,
//! `openclaw_memory_read` and `openclaw_user_prefs`, each for the default
//! agent or the one `agentId` names (docs/mcp-servers.md). Reads only `.md`
//! files inside the agent's memory root ([`contain`]) and writes none;
//! given the bridge's state directory, it keeps its index there between
//! processes ([`store`]). [`search_local`] is the same search for the
//! daemon's own use.

pub mod contain;
mod format;
pub mod index;
pub mod layout;
pub mod search;
mod server;
pub mod store;
pub mod tools;
pub mod walk;
mod watch;

pub use layout::{AgentError, LayoutKind, MemoryLayout};
pub use search::MemoryHit;
pub use server::{MemoryServer, SearchOutcome, http_service, search_local};
