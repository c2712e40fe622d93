//! OpenClaw's memory as a read-only MCP server: `openclaw_memory_search`,
//! `openclaw_memory_read` and `openclaw_user_prefs`
//! (docs/mcp-servers.md). Reads only `.md` files inside the
//! memory root ([`contain`]); writes nothing.

pub mod contain;
pub mod index;
pub mod layout;
pub mod search;
mod server;
pub mod tools;
mod watch;

pub use layout::{LayoutKind, MemoryLayout};
pub use server::{MemoryServer, SearchOutcome, http_service};
