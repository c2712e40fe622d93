//! One configured server: its connection, its tools and the supervisor task
//! that (re)connects it with capped exponential backoff.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bridge_config::{McpServerConfig, McpTransport};
use bridge_protocol::{ToolEffect, ToolSpec};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::call::ToolFailure;
use crate::session::{Session, lock};
use crate::tools::{ToolEntry, ToolOwner};

use super::handler::{MCP_UNAVAILABLE, McpToolHandler};
use super::naming::{ToolFilter, exposed_name};
use super::stdio::{self, ChildGuard, Diagnostics};
use super::{EnvLookup, McpOptions, ServerState, ServerStatus};

/// A live connection as calls see it.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) peer: Peer<RoleClient>,
    /// Cancelled when the connection ends; `ServerShared::last_error` then
    /// says why.
    pub(crate) closed: CancellationToken,
}

struct Status {
    state: ServerState,
    tools: Vec<String>,
    last_error: Option<String>,
    restarts: u32,
    warnings: Vec<String>,
}

pub(crate) struct ServerShared {
    pub(crate) name: String,
    config: McpServerConfig,
    options: McpOptions,
    filter: ToolFilter,
    env: EnvLookup,
    status: Mutex<Status>,
    live: Mutex<Option<Live>>,
    entries: Mutex<Vec<ToolEntry>>,
    sessions: Mutex<Vec<Weak<Session>>>,
    /// Bumped on every state change (tests and `wait_settled` watch it).
    changes: watch::Sender<u64>,
    refresh: Arc<Notify>,
}

impl ServerShared {
    pub(crate) fn new(
        name: String,
        config: McpServerConfig,
        options: McpOptions,
        filter: ToolFilter,
        env: EnvLookup,
    ) -> Self {
        Self {
            name,
            config,
            options,
            filter,
            env,
            status: Mutex::new(Status {
                state: ServerState::Connecting,
                tools: Vec::new(),
                last_error: None,
                restarts: 0,
                warnings: Vec::new(),
            }),
            live: Mutex::new(None),
            entries: Mutex::new(Vec::new()),
            sessions: Mutex::new(Vec::new()),
            changes: watch::channel(0).0,
            refresh: Arc::new(Notify::new()),
        }
    }

    pub(crate) fn owner(&self) -> ToolOwner {
        ToolOwner::Mcp(self.name.clone())
    }

    pub(crate) fn live(&self) -> Option<Live> {
        lock(&self.live).clone()
    }

    pub(crate) fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.config.timeout_secs.max(1))
    }

    pub(crate) fn state(&self) -> ServerState {
        lock(&self.status).state
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let status = lock(&self.status);
        ServerStatus {
            name: self.name.clone(),
            transport: self.config.transport().as_str().to_owned(),
            state: status.state,
            tools: status.tools.clone(),
            last_error: status.last_error.clone(),
            restarts: status.restarts,
            warnings: status.warnings.clone(),
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn update(&self, change: impl FnOnce(&mut Status)) {
        change(&mut lock(&self.status));
        self.changes.send_modify(|n| *n += 1);
    }

    /// Why calls cannot run now.
    pub(crate) fn unavailable(&self) -> ToolFailure {
        let status = lock(&self.status);
        let why = status
            .last_error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        let message = match status.state {
            ServerState::Restarting => format!(
                "MCP server '{}' is restarting (restart {}){why}",
                self.name, status.restarts
            ),
            ServerState::Failed => format!("MCP server '{}' has failed{why}", self.name),
            ServerState::Stopped => format!("MCP server '{}' was shut down", self.name),
            ServerState::Connecting | ServerState::Ready => {
                format!("MCP server '{}' is not connected{why}", self.name)
            }
        };
        ToolFailure::new(MCP_UNAVAILABLE, message)
    }

    pub(crate) fn stopped_during_call(&self, tool: &str) -> ToolFailure {
        let why = lock(&self.status)
            .last_error
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned());
        ToolFailure::new(
            MCP_UNAVAILABLE,
            format!(
                "MCP server '{}' stopped while {tool} was running: {why}; it is being restarted",
                self.name
            ),
        )
    }

    /// Registers this server's tools into `session` and remembers it, so a
    /// refreshed tool list reaches it too.
    pub(crate) fn register_into(
        &self,
        session: &Arc<Session>,
    ) -> Result<(), crate::tools::ToolConflict> {
        let entries = lock(&self.entries).clone();
        session.replace_tools(&self.owner(), entries)?;
        let mut sessions = lock(&self.sessions);
        sessions.retain(|weak| weak.strong_count() > 0);
        if !sessions
            .iter()
            .any(|weak| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(session)))
        {
            sessions.push(Arc::downgrade(session));
        }
        Ok(())
    }

    /// Builds the entries from a fresh tool list and pushes them to every
    /// session this server was registered into.
    fn install_tools(self: &Arc<Self>, listed: Vec<rmcp::model::Tool>) {
        let mut warnings = Vec::new();
        let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
        for pattern in self.filter.unmatched_includes(&names) {
            warnings.push(format!(
                "tools pattern {pattern:?} matches no tool of this server"
            ));
        }
        let mut entries: Vec<ToolEntry> = Vec::new();
        for tool in &listed {
            if !self.filter.allows(&tool.name) {
                continue;
            }
            let exposed = exposed_name(&self.name, &tool.name);
            if let Some(other) = entries.iter().find(|entry| entry.spec.name == exposed) {
                warnings.push(format!(
                    "tool {:?} is skipped: its name becomes {exposed:?}, which {:?} already has",
                    tool.name, other.spec.description
                ));
                continue;
            }
            let schema = serde_json::Value::Object((*tool.input_schema).clone());
            entries.push(ToolEntry {
                spec: ToolSpec {
                    name: exposed,
                    description: tool.description.as_deref().unwrap_or_default().to_owned(),
                    input_schema: schema,
                    // Annotations are hints from the server, not something
                    // the policy can trust: every MCP tool counts as execution.
                    effect: ToolEffect::Execute,
                },
                owner: self.owner(),
                handler: Arc::new(McpToolHandler {
                    server: self.clone(),
                    tool: tool.name.to_string(),
                }),
            });
        }
        for warning in &warnings {
            tracing::warn!(server = %self.name, "{warning}");
        }
        let exposed: Vec<String> = entries.iter().map(|e| e.spec.name.clone()).collect();
        *lock(&self.entries) = entries.clone();
        let sessions: Vec<Arc<Session>> = lock(&self.sessions)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for session in sessions {
            if let Err(conflict) = session.replace_tools(&self.owner(), entries.clone()) {
                warnings.push(format!(
                    "tools not updated in session {}: {conflict}",
                    session.id()
                ));
            }
        }
        self.update(|status| {
            status.tools = exposed;
            status.warnings = warnings;
        });
    }

    fn set_state(&self, state: ServerState, error: Option<String>) {
        self.update(|status| {
            status.state = state;
            if error.is_some() {
                status.last_error = error;
            }
        });
    }
}

/// Receives `notifications/tools/list_changed`.
#[derive(Clone)]
struct ClientSide {
    refresh: Arc<Notify>,
}

impl ClientHandler for ClientSide {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("copilot-bridge", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A connection that completed the handshake and listed its tools.
struct Connected {
    running: RunningService<RoleClient, ClientSide>,
    child: Option<Arc<ChildGuard>>,
    diagnostics: Option<Arc<Diagnostics>>,
    tools: Vec<rmcp::model::Tool>,
}

struct ConnectError {
    message: String,
    fatal: bool,
}

async fn connect(server: &ServerShared) -> Result<Connected, ConnectError> {
    let client = ClientSide {
        refresh: server.refresh.clone(),
    };
    let retry = |message: String| ConnectError {
        message,
        fatal: false,
    };
    let (running, child, diagnostics) =
        match server.config.transport() {
            McpTransport::Stdio => {
                let spawned = stdio::spawn(&server.name, &server.config, server.env.as_ref())
                    .map_err(|err| ConnectError {
                        message: err.message,
                        fatal: err.fatal,
                    })?;
                let child = spawned.child.clone();
                let diagnostics = spawned.diagnostics.clone();
                match client.serve(spawned.transport).await {
                    Ok(running) => (running, Some(child), Some(diagnostics)),
                    Err(err) => {
                        let exit = child.terminate(Duration::from_millis(200)).await;
                        let cause = diagnostics.reason().unwrap_or_else(|| err.to_string());
                        return Err(retry(describe_failure(
                            &format!("the MCP handshake failed: {cause}"),
                            Some(&exit),
                            &diagnostics,
                        )));
                    }
                }
            }
            McpTransport::Http => {
                let transport = super::http::transport(&server.config, server.env.as_ref())
                    .map_err(|message| ConnectError {
                        message,
                        fatal: true,
                    })?;
                let running = client
                    .serve(transport)
                    .await
                    .map_err(|err| retry(format!("the MCP handshake failed: {err}")))?;
                (running, None, None)
            }
        };
    match running.peer().list_all_tools().await {
        Ok(tools) => Ok(Connected {
            running,
            child,
            diagnostics,
            tools,
        }),
        Err(err) => {
            let _ = running.cancel().await;
            Err(retry(format!("listing its tools failed: {err}")))
        }
    }
}

fn describe_failure(what: &str, exit: Option<&str>, diagnostics: &Diagnostics) -> String {
    let mut text = what.to_owned();
    if let Some(exit) = exit {
        text.push_str(&format!("; the process {exit}"));
    }
    if let Some(stderr) = diagnostics.last_stderr() {
        text.push_str(&format!(" (stderr: {stderr})"));
    }
    text
}

/// Runs a server until shutdown: connect, serve, notice the end, back off,
/// reconnect; after `max_restarts` failed attempts in a row it gives up.
pub(crate) async fn supervise(server: Arc<ServerShared>, shutdown: CancellationToken) {
    let options = server.options.clone();
    let startup = Duration::from_secs(server.config.startup_timeout_secs.max(1));
    let mut failures_in_a_row: u32 = 0;
    loop {
        let attempt = tokio::select! {
            attempt = tokio::time::timeout(startup, connect(&server)) => attempt,
            () = shutdown.cancelled() => {
                server.set_state(ServerState::Stopped, None);
                return;
            }
        };
        let error = match attempt {
            Ok(Ok(connected)) => {
                let started = Instant::now();
                let ended = serve(&server, connected, &shutdown).await;
                let Some(reason) = ended else {
                    server.set_state(ServerState::Stopped, None);
                    return;
                };
                if started.elapsed() >= options.stable_after {
                    failures_in_a_row = 0;
                }
                reason
            }
            Ok(Err(err)) if err.fatal => {
                tracing::error!(server = %server.name, "MCP server failed: {}", err.message);
                server.set_state(ServerState::Failed, Some(err.message));
                return;
            }
            Ok(Err(err)) => err.message,
            Err(_) => format!(
                "it did not complete the MCP handshake and tool listing within {} s (startup_timeout_secs)",
                startup.as_secs()
            ),
        };
        failures_in_a_row += 1;
        if failures_in_a_row > options.max_restarts {
            let message = format!(
                "gave up after {} attempts in a row; last: {error}",
                failures_in_a_row
            );
            tracing::error!(server = %server.name, "MCP server failed: {message}");
            server.set_state(ServerState::Failed, Some(message));
            return;
        }
        let backoff = options.backoff(failures_in_a_row);
        tracing::warn!(
            server = %server.name,
            "MCP server stopped ({error}); restarting in {} ms",
            backoff.as_millis()
        );
        server.update(|status| {
            status.state = ServerState::Restarting;
            status.last_error = Some(error);
            status.restarts += 1;
        });
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = shutdown.cancelled() => {
                server.set_state(ServerState::Stopped, None);
                return;
            }
        }
    }
}

/// Serves one connection until it ends (`Some(why)`) or shutdown (`None`).
async fn serve(
    server: &Arc<ServerShared>,
    connected: Connected,
    shutdown: &CancellationToken,
) -> Option<String> {
    let Connected {
        running,
        child,
        diagnostics,
        tools,
    } = connected;
    let closed = CancellationToken::new();
    let peer = running.peer().clone();
    let stop = running.cancellation_token();
    server.install_tools(tools);
    *lock(&server.live) = Some(Live {
        peer: peer.clone(),
        closed: closed.clone(),
    });
    server.set_state(ServerState::Ready, None);
    tracing::info!(server = %server.name, "MCP server ready");
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let shut_down = loop {
        tokio::select! {
            _ = &mut waiting => break false,
            () = shutdown.cancelled() => {
                stop.cancel();
                let _ = (&mut waiting).await;
                break true;
            }
            () = server.refresh.notified() => {
                match tokio::time::timeout(server.call_timeout(), peer.list_all_tools()).await {
                    Ok(Ok(tools)) => server.install_tools(tools),
                    Ok(Err(err)) => tracing::warn!(server = %server.name, "tool list refresh failed: {err}"),
                    Err(_) => tracing::warn!(server = %server.name, "tool list refresh timed out"),
                }
            }
        }
    };
    lock(&server.live).take();
    let grace = if shut_down {
        server.options.shutdown_grace
    } else {
        Duration::from_millis(500)
    };
    let exit = match &child {
        Some(child) => Some(child.terminate(grace).await),
        None => None,
    };
    let reason = match &diagnostics {
        Some(diagnostics) => {
            let cause = diagnostics
                .reason()
                .unwrap_or_else(|| "the connection closed".to_owned());
            describe_failure(&cause, exit.as_deref(), diagnostics)
        }
        None => "the connection closed".to_owned(),
    };
    if shut_down {
        closed.cancel();
        return None;
    }
    // The reason goes in before `closed` fires: in-flight calls read it.
    server.update(|status| {
        status.state = ServerState::Restarting;
        status.last_error = Some(reason.clone());
    });
    closed.cancel();
    Some(reason)
}
