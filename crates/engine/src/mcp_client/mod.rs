//! MCP client: the configured MCP servers (`[mcp.servers.NAME]`), their
//! tools registered into sessions as `server__tool`.
//!
//! [`McpManager::start`] connects every enabled server concurrently (each
//! bounded by its `startup_timeout_secs`), lists its tools and applies the
//! include/exclude filters. [`McpManager::register_into`] puts one
//! [`ToolEntry`](crate::ToolEntry) per tool into a session, owned by
//! [`ToolOwner::Mcp`](crate::ToolOwner::Mcp), so every call goes through
//! [`Session::call_tool`](crate::Session::call_tool) and its policy.
//!
//! Each server has a supervisor task. When a server dies (its process
//! exits, it writes something other than JSON-RPC to stdout, the HTTP
//! session ends), calls in flight fail at once with `mcp_unavailable`
//! naming the server and the cause, new calls fail the same way while it
//! restarts with capped exponential backoff, and after
//! [`McpOptions::max_restarts`] failed attempts in a row it is marked
//! failed. A reconnect refreshes the tool list in every session the manager
//! registered into, as does a `notifications/tools/list_changed`.
//!
//! Stdio servers run in their own process group with a minimal inherited
//! environment plus their `env` table; their stderr goes to the log,
//! redacted. [`McpManager::shutdown`] closes stdin, waits briefly, then
//! signals the group: no server or grandchild outlives the bridge.

mod handler;
mod http;
mod naming;
pub(crate) use naming::exposed_name;
mod stdio;
mod supervisor;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bridge_config::McpServerConfig;
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::session::{Session, lock};
use crate::tools::ToolConflict;

pub use handler::{MCP_ERROR, MCP_TIMEOUT, MCP_TOOL_ERROR, MCP_UNAVAILABLE};

use supervisor::ServerShared;

/// Where `${VAR}` references and the inherited variables of stdio servers
/// come from (the process environment, unless a test says otherwise).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Restart and shutdown behaviour shared by all servers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// Wait before the first restart; doubled per failure in a row.
    pub initial_backoff: Duration,
    /// Longest wait between restarts.
    pub max_backoff: Duration,
    /// Failed attempts in a row before the server is marked failed.
    pub max_restarts: u32,
    /// A connection that lived this long resets the failure count.
    pub stable_after: Duration,
    /// How long a stdio server may take to exit after stdin closes, at
    /// shutdown, before it is signalled.
    pub shutdown_grace: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_restarts: 5,
            stable_after: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

impl McpOptions {
    /// The wait before restart number `failures` (1-based).
    pub fn backoff(&self, failures: u32) -> Duration {
        bridge_util::Backoff::new(self.initial_backoff, self.max_backoff)
            .delay(failures.saturating_sub(1))
    }
}

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Starting for the first time.
    Connecting,
    Ready,
    /// Down; the supervisor is waiting to start it again.
    Restarting,
    /// Given up (or cannot start at all); `last_error` says why.
    Failed,
    /// Shut down.
    Stopped,
}

/// What `status` reports per server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    pub state: ServerState,
    /// Tool names as sessions see them (`server__tool`).
    pub tools: Vec<String>,
    pub last_error: Option<String>,
    pub restarts: u32,
    /// Problems that did not stop the server: filter patterns matching
    /// nothing, tools skipped for a name collision.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot register the tools of MCP server '{server}': {conflict}")]
    Conflict {
        server: String,
        conflict: ToolConflict,
    },
}

/// The configured MCP servers of one bridge process.
pub struct McpManager {
    servers: Vec<Arc<ServerShared>>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.status())
            .finish_non_exhaustive()
    }
}

impl McpManager {
    /// Starts every enabled server and returns once each is ready or has
    /// failed its first attempt (at most its `startup_timeout_secs`).
    /// `${VAR}` references in env and header values resolve against the
    /// process environment. Cancelling `cancel` shuts everything down.
    pub async fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        options: McpOptions,
        cancel: CancellationToken,
    ) -> Self {
        Self::start_with_env(
            configs,
            options,
            cancel,
            Arc::new(|name: &str| std::env::var(name).ok()),
        )
        .await
    }

    /// [`start`](Self::start) with the environment `${VAR}` and the
    /// inherited variables come from.
    pub async fn start_with_env(
        configs: &BTreeMap<String, McpServerConfig>,
        options: McpOptions,
        cancel: CancellationToken,
        env: EnvLookup,
    ) -> Self {
        let shutdown = cancel.child_token();
        let mut servers = Vec::new();
        let mut tasks = Vec::new();
        for (name, config) in configs.iter().filter(|(_, config)| config.enabled) {
            let filter = match naming::ToolFilter::new(&config.tools, &config.exclude_tools) {
                Ok(filter) => filter,
                Err(reason) => {
                    // Config validation catches this; never start unfiltered.
                    tracing::error!(server = %name, "MCP server not started: {reason}");
                    continue;
                }
            };
            let server = Arc::new(ServerShared::new(
                name.clone(),
                config.clone(),
                options.clone(),
                filter,
                env.clone(),
            ));
            tasks.push(tokio::spawn(supervisor::supervise(
                server.clone(),
                shutdown.clone(),
            )));
            servers.push(server);
        }
        let manager = Self {
            servers,
            tasks: std::sync::Mutex::new(tasks),
            shutdown,
        };
        manager.wait_settled().await;
        manager
    }

    /// Waits until no server is in its first connection attempt.
    async fn wait_settled(&self) {
        for server in &self.servers {
            let mut changes = server.subscribe();
            while server.state() == ServerState::Connecting {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        }
    }

    /// Registers every server's tools into `session` (and keeps them up to
    /// date there after reconnects). A name another owner holds is an
    /// error; the servers registered before it stay registered.
    pub fn register_into(&self, session: &Arc<Session>) -> Result<(), McpError> {
        for server in &self.servers {
            server
                .register_into(session)
                .map_err(|conflict| McpError::Conflict {
                    server: server.name.clone(),
                    conflict,
                })?;
        }
        Ok(())
    }

    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|server| server.status()).collect()
    }

    /// Waits until `server` reaches `state` or `timeout` passes; returns
    /// whether it did.
    pub async fn wait_for_state(
        &self,
        server: &str,
        state: ServerState,
        timeout: Duration,
    ) -> bool {
        let Some(server) = self.servers.iter().find(|s| s.name == server) else {
            return false;
        };
        let mut changes = server.subscribe();
        tokio::time::timeout(timeout, async {
            while server.state() != state {
                if changes.changed().await.is_err() {
                    return false;
                }
            }
            true
        })
        .await
        .unwrap_or(false)
    }

    /// Stops every server and waits for their processes to exit.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.tasks));
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        // Supervisors end their servers when cancelled; child processes
        // also die with their guards.
        self.shutdown.cancel();
    }
}
