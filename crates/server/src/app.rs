//! The routes on the daemon's one port and what every handler shares.

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use axum::routing::get;
use bridge_engine::{Session, SessionRegistry};
use bridge_gateway::Gateway;
use tokio_util::sync::CancellationToken;

use crate::rpc::MethodTable;
use crate::{facade, guard, health, mcp_http, rpc};
use bridge_compose::Backends;

/// The session id that names the daemon's default session.
pub const DEFAULT_ALIAS: &str = "default";

/// Facts about the running daemon that handlers report.
#[derive(Debug, Clone)]
pub struct DaemonFacts {
    pub pid: u32,
    /// The state directory (`sessions/` holds the logs of the tasks and
    /// orchestrations the daemon runs).
    pub home: std::path::PathBuf,
    pub port: u16,
    pub started_at: String,
    /// The session created at start, which `default` names for good: once
    /// it has ended, `default` names nothing rather than quietly another
    /// workspace.
    pub default_session: String,
    /// The address the daemon listens on (`COPILOT_BRIDGE_BIND`).
    pub bind_address: std::net::IpAddr,
    /// The host clients connect to (loopback when bound to all interfaces).
    pub connect_host: std::net::IpAddr,
    /// Host names accepted besides loopback and IP literals (`allowed_hosts`).
    pub allowed_hosts: Vec<String>,
}

/// What every handler shares: one reference count to clone, however many
/// parts it has (handlers and middleware clone it for every request).
#[derive(Clone)]
pub struct ServerContext(Arc<ServerParts>);

impl ServerContext {
    pub fn new(parts: ServerParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for ServerContext {
    type Target = ServerParts;

    fn deref(&self) -> &ServerParts {
        &self.0
    }
}

/// The parts of a [`ServerContext`].
pub struct ServerParts {
    pub gateway: Gateway,
    /// The bearer token `/rpc` requires.
    pub token: Arc<str>,
    /// The token that may also answer approvals (`approver-token` in the
    /// state directory; never handed to agents).
    pub approver_token: Arc<str>,
    /// The one queue of every door's asks (docs/approvals.md).
    pub approvals: Arc<bridge_engine::approvals::ApprovalQueue>,
    /// How long an ask waits for an answer (`approvals.timeout_secs`).
    pub approval_timeout: std::time::Duration,
    /// Hook calls waiting for a person, by ask id (`approvals.wait`).
    pub deferred_hooks: Arc<crate::rpc::hook_waits::DeferredHooks>,
    /// The dashboard's login codes and sessions (crate::ui).
    pub ui: Arc<crate::ui::UiAuth>,
    /// Cancelled to stop the daemon (`gateway.shutdown`, a signal, idle exit).
    pub shutdown: CancellationToken,
    /// config.toml as it is in force, followed while the daemon runs.
    pub config: Arc<crate::config_watch::ConfigWatch>,
    pub facts: Arc<DaemonFacts>,
    /// The chat backends the facade serves.
    pub backends: Arc<Backends>,
    /// How the agent loop runs the tasks this daemon starts (`/mcp/code`),
    /// as `run` would (see `bridge_compose::settings`).
    pub native: Arc<bridge_engine::runner::native::NativeSettings>,
    /// OpenClaw's memory (`/mcp/memory` and the sessions' memory tools,
    /// its indexes shared), and whether sessions get it.
    pub openclaw_memory: bridge_compose::OpenClawMemory,
    /// The Responses API's kept conversations (`previous_response_id`).
    pub responses: Arc<crate::facade::store::ResponseStore>,
    /// The agent sessions registered by their hooks (`agent.hook`).
    pub agent_sessions: Arc<crate::rpc::agent_hook::AgentSessions>,
    /// `requests.jsonl`, when `request_log` is on and its file could be
    /// opened.
    pub request_journal: Option<Arc<crate::facade::request_log::RequestJournal>>,
    /// Forwards the agents' own OTLP telemetry to the hub's exporter
    /// (`/v1/traces`, `/v1/metrics`, `/v1/logs`), when it exports.
    pub otlp: Option<Arc<bridge_telemetry::forward::Forwarder>>,
    /// The token of `GET /metrics` alone, when the daemon serves it
    /// (`metrics-token` in the state directory).
    pub metrics_token: Option<Arc<str>>,
    /// Why `request_log` is on but no journal is written (`status` shows it).
    pub request_log_refused: Option<String>,
    /// Which directories a client may name as a workspace.
    pub workspaces: Arc<bridge_policy::WorkspaceChoice>,
    /// The turns of the hub's own agent running in daemon sessions
    /// (`session.prompt`, crate::chat).
    pub chat: Arc<crate::chat::ChatTurns>,
    /// What every session and facade conversation is doing
    /// (crate::transcripts).
    pub transcripts: Arc<crate::transcripts::Transcripts>,
    /// The plans `orchestrate.*` and `copilot_orchestrate` started.
    pub orchestrations: Arc<crate::orchestrations::Orchestrations>,
    /// The OpenClaw gateway connection, when configured (crate::openclaw).
    pub openclaw: Option<bridge_openclaw::Gateway>,
}

impl std::fmt::Debug for ServerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerContext")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl ServerContext {
    pub fn registry(&self) -> &SessionRegistry {
        self.gateway.registry()
    }

    /// Resolves a session id; `default` names the daemon's default session
    /// (unless a session is literally called so).
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        let registry = self.registry();
        registry.get(id).or_else(|| {
            if id == DEFAULT_ALIAS {
                self.default_session()
            } else {
                None
            }
        })
    }

    /// The directory a client named as a workspace (canonical), or why it
    /// cannot be one (docs/policy.md, "Which directories may be a
    /// workspace").
    pub async fn workspace(&self, asked: &std::path::Path) -> Result<std::path::PathBuf, String> {
        let rule = self.workspaces.clone();
        let asked = asked.to_path_buf();
        tokio::task::spawn_blocking(move || rule.check(&asked))
            .await
            .unwrap_or_else(|err| Err(format!("cannot check the workspace: {err}")))
    }

    /// The session created at start, while it lives. The registry moves its
    /// own default (where providers that name no session bind) to the
    /// oldest remaining session; `/rpc` does not follow, so that a
    /// `tool --session default` written against one workspace never runs in
    /// another.
    pub fn default_session(&self) -> Option<Arc<Session>> {
        self.registry().get(&self.facts.default_session)
    }
}

/// The whole application: `/` (provider gateway), `/rpc`, `/healthz`,
/// `/metrics`, the
/// dashboard (`/ui`), all behind the `Host` check; `/rpc` and `/healthz`
/// also behind the `Origin` check, `/ui` behind its own stricter one.
/// `methods` is the JSON-RPC method table (see
/// [`rpc::methods::builtin`]).
pub fn router(ctx: ServerContext, methods: MethodTable) -> Router {
    let rpc_state = rpc::RpcState::new(ctx.clone(), methods);
    // The dashboard checks origins more strictly than the loopback check.
    let dashboard = crate::ui::routes(rpc_state.clone());
    let checked = Router::new()
        .route(
            "/rpc",
            get(rpc::transport::websocket).post(rpc::transport::http_post),
        )
        .with_state(rpc_state)
        .route("/healthz", get(health::healthz).with_state(ctx.clone()))
        .route(
            "/metrics",
            get(crate::telemetry::metrics).with_state(ctx.clone()),
        )
        .merge(crate::otlp::routes(ctx.clone()))
        .merge(facade::routes(ctx.clone()))
        .merge(mcp_http::routes(ctx.clone()))
        .route_layer(middleware::from_fn(guard::require_loopback_origin));
    Router::new()
        .merge(ctx.gateway.router())
        .merge(checked)
        .merge(dashboard)
        .fallback(guard::not_found)
        .layer(middleware::from_fn_with_state(
            guard::HostPolicy {
                ip_literals: !ctx.facts.bind_address.is_loopback(),
                names: ctx.facts.allowed_hosts.clone().into(),
            },
            guard::require_allowed_host,
        ))
}
