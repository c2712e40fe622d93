//! The daemon process: build the sessions and the gateway from the
//! configuration, take the port, publish `gateway.json`, serve, and stop
//! cleanly (on SIGINT/SIGTERM, `gateway.shutdown`, or — detached — after the
//! last session plus the idle grace).

mod bind;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bridge_config::BridgeConfig;
use bridge_engine::approvals::{ApprovalQueue, QueueApprover, QueueLimits};
use bridge_engine::mcp_client::{McpManager, McpOptions};
use bridge_engine::{Session, SessionListener, SessionSpec};
use bridge_gateway::{Gateway, GatewaySettings};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::app::{DaemonFacts, ServerContext, ServerParts};
use crate::client::find_running;
use crate::http::ConnectionLimits;
use crate::lifecycle::{SessionChanges, exit_when_idle, listen_for_signals, stop_on_signals};
use crate::state_file::GatewayFile;
use crate::{process, rpc};
use bind::{bind, connect_host, refuse_open_bind_without_token};
use bridge_util::owner_only::ensure_private_dir;

/// How long open connections get to finish once the daemon stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How to run the daemon.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub config: BridgeConfig,
    /// The default session's workspace (where `serve` was started).
    pub cwd: PathBuf,
    /// Started by `daemon start`: exits once idle.
    pub detached: bool,
    /// Spawn the providers a workspace's `tap.config.json` declares.
    pub trust_project_providers: bool,
    /// Connection cap and request-head timeout of the HTTP server.
    pub limits: ConnectionLimits,
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("a gateway is already running on {address} (pid {pid})")]
    AlreadyRunning { address: String, pid: u32 },
    #[error(
        "port {port} on {ip} is already in use{by}; stop that program, or pick another port with --port or COPILOT_BRIDGE_PORT (0 picks a free one)"
    )]
    PortInUse { ip: IpAddr, port: u16, by: String },
    #[error("cannot listen on {address}: {reason}")]
    Bind { address: SocketAddr, reason: String },
    #[error("configuration error: {0}")]
    Config(String),
    #[error("cannot open {path} as the default session's workspace: {reason}")]
    Workspace { path: PathBuf, reason: String },
    #[error("state directory {path}: {reason}")]
    StateDir { path: PathBuf, reason: String },
    #[error("cannot listen for SIGINT/SIGTERM: {0}")]
    Signals(String),
}

/// A daemon that has bound its port and published `gateway.json`.
pub struct Daemon {
    ctx: ServerContext,
    mcp: Option<Arc<McpManager>>,
    listener: TcpListener,
    home: PathBuf,
    detached: bool,
    idle_grace: Duration,
    /// How long an agent session registered by its hooks lives without one.
    agent_session_idle: Duration,
    sessions_changed: watch::Receiver<u64>,
    file: GatewayFile,
    limits: ConnectionLimits,
    /// The loader to read config.toml again with while running.
    follow: Option<bridge_config::ConfigLoader>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

fn state_dir_error(home: &Path, err: impl std::fmt::Display) -> DaemonError {
    DaemonError::StateDir {
        path: home.to_path_buf(),
        reason: err.to_string(),
    }
}

/// `requests.jsonl` when `request_log` is on; a journal that cannot be
/// opened (a symlink planted at its path, a foreign file) leaves the daemon
/// serving without one, saying why in the log and in `status`.
async fn open_request_journal(
    config: &BridgeConfig,
    home: &Path,
) -> (
    Option<Arc<crate::facade::request_log::RequestJournal>>,
    Option<String>,
) {
    if !config.request_log {
        return (None, None);
    }
    let home = home.to_path_buf();
    let opened = tokio::task::spawn_blocking(move || {
        crate::facade::request_log::RequestJournal::open(&home)
    })
    .await
    .unwrap_or_else(|err| Err(format!("request log: {err}")));
    match opened {
        Ok(journal) => (Some(Arc::new(journal)), None),
        Err(reason) => {
            tracing::error!(
                "{reason}; the request log is off until this is fixed and the daemon restarted"
            );
            (None, Some(reason))
        }
    }
}

/// The default session's workspace: the daemon's working directory, or —
/// when that cannot be a workspace (`/`, a system directory, another
/// user's) — the home directory, with a warning that says why.
async fn default_workspace(
    rule: &Arc<bridge_policy::WorkspaceChoice>,
    cwd: &Path,
) -> Result<PathBuf, DaemonError> {
    let checked = {
        let (rule, cwd) = (rule.clone(), cwd.to_path_buf());
        tokio::task::spawn_blocking(move || rule.check(&cwd))
            .await
            .unwrap_or_else(|err| Err(err.to_string()))
    };
    let refused = match checked {
        Ok(dir) => return Ok(dir),
        Err(refused) => refused,
    };
    let home = match rule.home().map(Path::to_path_buf) {
        Some(home) => {
            let rule = rule.clone();
            tokio::task::spawn_blocking(move || rule.check(&home))
                .await
                .unwrap_or_else(|err| Err(err.to_string()))
        }
        None => Err("there is no home directory".to_owned()),
    };
    match home {
        Ok(home) => {
            tracing::warn!(
                "{refused}; the default session works in the home directory {}",
                home.display()
            );
            Ok(home)
        }
        Err(no_home) => Err(DaemonError::Workspace {
            path: cwd.to_path_buf(),
            reason: format!("{refused}; nor can the home directory be used instead: {no_home}"),
        }),
    }
}

impl Daemon {
    /// Everything up to serving: refuses to start twice, binds, creates the
    /// default session and writes `gateway.json`.
    pub async fn start(options: DaemonOptions) -> Result<Self, DaemonError> {
        let config = &options.config;
        let home = config.home.clone();
        // Listening for signals before anything is published: a SIGTERM
        // that arrives once gateway.json exists must stop us cleanly, not
        // kill us with the file left behind.
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signals(listen_for_signals()?, shutdown.clone()));
        // Every door's asks wait in one queue for a person's answer
        // (docs/approvals.md); a timeout of 0 denies them at once.
        let approvals = Arc::new(ApprovalQueue::new(QueueLimits::default()));
        let approval_timeout = Duration::from_secs(config.approval_timeout_secs);
        let registry = bridge_compose::registry(
            config,
            Arc::new(QueueApprover::new(approvals.clone(), approval_timeout)),
        )
        .map_err(|err| DaemonError::Config(err.to_string()))?;
        refuse_open_bind_without_token(config)?;
        {
            let home = home.clone();
            tokio::task::spawn_blocking(move || ensure_private_dir(&home))
                .await
                .map_err(|err| state_dir_error(&config.home, err))?
                .map_err(|err| state_dir_error(&config.home, err))?;
        }
        if let Some(running) = find_running(&home).await {
            return Err(DaemonError::AlreadyRunning {
                address: running.address(),
                pid: running.file().pid,
            });
        }
        let listener = bind(&home, config.bind_address, config.port).await?;
        let port = listener
            .local_addr()
            .map_err(|err| DaemonError::Bind {
                address: SocketAddr::new(config.bind_address, config.port),
                reason: err.to_string(),
            })?
            .port();
        crate::telemetry::start(config, port)?;

        let (changes_tx, sessions_changed) = watch::channel(0);
        registry.add_listener(Arc::new(SessionChanges(changes_tx)));
        registry.add_listener(approvals.clone());
        let transcripts = Arc::new(crate::transcripts::Transcripts::new(
            crate::transcripts::TranscriptFiles::kept(config.keep_transcripts, &home),
        ));
        registry.add_listener(Arc::new(crate::transcripts::feed::TranscriptFeed(
            transcripts.clone(),
        )));
        // MCP servers from the configuration serve every session's tool
        // table, the default session's included (it is created below).
        let mcp = if config.mcp.servers.is_empty() {
            None
        } else {
            let manager = Arc::new(
                McpManager::start(
                    &config.mcp.servers,
                    McpOptions::default(),
                    CancellationToken::new(),
                )
                .await,
            );
            for status in manager.status() {
                match &status.last_error {
                    Some(error) => {
                        tracing::warn!(server = %status.name, "MCP server not ready: {error}")
                    }
                    None => {
                        tracing::info!(server = %status.name, tools = status.tools.len(), "MCP server ready")
                    }
                }
            }
            registry.add_listener(Arc::new(McpSessions(manager.clone())));
            Some(manager)
        };
        // OpenClaw: the gateway connection (when configured), the memory
        // server sharing it, and their tools in every session from the
        // first one on.
        // An openclaw.json that could not be used changes which workspace
        // and gateway are used: say so.
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        let openclaw = crate::openclaw::start_gateway(config, &shutdown);
        let openclaw_memory = bridge_compose::OpenClawMemory::detect(config)
            .with_gateway(config.openclaw.gateway_enabled());
        tracing::info!("{}", openclaw_memory.describe());
        if let Some(tools) = openclaw_memory.session_tools(Some(openclaw.clone())) {
            registry.add_listener(tools);
        }
        openclaw_memory.warm_up_in_background();
        let idle_grace = Duration::from_secs(config.idle_exit_secs);
        let settings = GatewaySettings {
            idle_exit_grace: idle_grace,
            ..GatewaySettings::default()
        };
        let gateway = Gateway::new(registry.clone(), settings, home.clone());
        let backends = Arc::new(
            bridge_compose::build_backends(
                config,
                vec![crate::vscode::VscodeBackend::entry(gateway.clone())],
            )
            .await,
        );
        // First probes in the background, so the first /healthz has answers.
        tokio::spawn({
            let backends = backends.clone();
            async move {
                backends.health().await;
            }
        });
        let host = connect_host(config.bind_address);
        let authority = SocketAddr::new(host, port).to_string();
        gateway.set_public_url(format!("ws://{authority}/"));
        if options.trust_project_providers {
            gateway.trust_project_providers(true);
        }

        // The daemon's working directory is named, not chosen, like any
        // client's: refused, the default session says so and works in home.
        let workspaces = Arc::new(bridge_compose::workspace_choice(config));
        let default_cwd = default_workspace(&workspaces, &options.cwd).await?;
        let label = crate::rpc::params::dir_label(&default_cwd);
        let default_session = {
            let registry = registry.clone();
            let spec = SessionSpec {
                id: None,
                label,
                cwd: default_cwd.clone(),
                foreground: true,
                door: bridge_engine::Door::Rpc,
            };
            tokio::task::spawn_blocking(move || registry.create(spec))
                .await
                .map_err(|err| DaemonError::Workspace {
                    path: options.cwd.clone(),
                    reason: err.to_string(),
                })?
                .map_err(|err| DaemonError::Workspace {
                    path: options.cwd.clone(),
                    reason: err.to_string(),
                })?
        };
        // Every client without a session of its own calls in this one.
        default_session.mark_shared();
        let provider_token = gateway
            .issue_project_token(default_session.id())
            .map_err(|err| state_dir_error(&home, err))?;
        let started_at = bridge_util::time::now_timestamp();
        let pid = process::own_pid();
        // Kept before gateway.json names the daemon: a scraper that finds
        // the daemon finds its token.
        let metrics_token = if config.telemetry.serves_prometheus() {
            let home = home.clone();
            let token =
                tokio::task::spawn_blocking(move || crate::state_file::keep_metrics_token(&home))
                    .await
                    .map_err(|err| state_dir_error(&config.home, err))?
                    .map_err(|err| {
                        state_dir_error(
                            &config.home,
                            format!("cannot keep the metrics token: {err}"),
                        )
                    })?;
            Some(Arc::from(token.as_str()))
        } else {
            None
        };
        let file = GatewayFile {
            port,
            pid,
            host: host.to_string(),
            token: match &config.token {
                Some(token) => token.expose().to_owned(),
                None => crate::state_file::kept_token(&home)
                    .map_err(|err| DaemonError::Config(err.to_string()))?
                    .unwrap_or_else(|| bridge_util::ids::token("btk")),
            },
            provider_token,
            default_session: default_session.id().to_owned(),
            started_at: started_at.clone(),
            version: crate::VERSION.to_owned(),
        };
        {
            let file = file.clone();
            let home = home.clone();
            tokio::task::spawn_blocking(move || file.write(&home))
                .await
                .map_err(|err| state_dir_error(&config.home, err))?
                .map_err(|err| {
                    state_dir_error(&config.home, format!("cannot write gateway.json: {err}"))
                })?;
        }
        let approver_token = {
            let home = home.clone();
            tokio::task::spawn_blocking(move || crate::state_file::keep_approver_token(&home))
                .await
                .map_err(|err| state_dir_error(&config.home, err))?
                .map_err(|err| {
                    state_dir_error(
                        &config.home,
                        format!("cannot keep the approver token: {err}"),
                    )
                })?
        };
        let (request_journal, request_log_refused) = open_request_journal(config, &home).await;
        let ctx = ServerContext::new(ServerParts {
            gateway,
            token: Arc::from(file.token.as_str()),
            approver_token: Arc::from(approver_token.as_str()),
            approvals,
            approval_timeout,
            deferred_hooks: Arc::default(),
            ui: Arc::new(crate::ui::UiAuth::new(port)),
            shutdown,
            config: Arc::new(crate::config_watch::ConfigWatch::new(
                config,
                registry.live_permission().clone(),
                backends.clone(),
            )),
            backends,
            native: Arc::new(bridge_compose::native_settings(config)),
            openclaw_memory,
            openclaw,
            agent_sessions: Arc::default(),
            workspaces,
            transcripts,
            chat: Arc::default(),
            orchestrations: Arc::new(crate::orchestrations::Orchestrations::new(Arc::new(
                config.clone(),
            ))),
            request_journal,
            otlp: bridge_telemetry::forward::Forwarder::new(&config.telemetry, crate::VERSION)
                .map(Arc::new),
            metrics_token,
            request_log_refused,
            responses: Arc::new(crate::facade::store::ResponseStore::new(
                home.join("responses"),
                crate::facade::store::StoreLimits::default(),
            )),
            facts: Arc::new(DaemonFacts {
                pid,
                home: home.clone(),
                port,
                started_at,
                default_session: default_session.id().to_owned(),
                bind_address: config.bind_address,
                connect_host: host,
                allowed_hosts: config.allowed_hosts.clone(),
            }),
        });
        crate::telemetry::gauges(&ctx);
        tracing::info!(
            "copilot-bridge {} listening on {authority} (providers: ws://{authority}/, JSON-RPC: http://{authority}/rpc, \
             OpenAI facade: http://{authority}/v1 (chat/completions, responses, models), \
             Anthropic facade: http://{authority} (v1/messages), MCP: http://{authority}/mcp/{{code,memory,session}}); \
             default session {} in {}; state file {}",
            crate::VERSION,
            default_session.id(),
            default_session.cwd().display(),
            GatewayFile::path(&home).display(),
        );
        Ok(Self {
            ctx,
            mcp,
            listener,
            home,
            detached: options.detached,
            idle_grace,
            agent_session_idle: Duration::from_secs(config.agent_session_idle_secs),
            sessions_changed,
            file,
            limits: options.limits,
            follow: None,
        })
    }

    /// Follows config.toml while running: its edits are loaded again by
    /// `loader` (the one `options.config` came from, so that the
    /// environment and flags keep their precedence) and applied live
    /// where they can be (crate::config_watch).
    pub fn follow_config(mut self, loader: bridge_config::ConfigLoader) -> Self {
        self.follow = Some(loader);
        self
    }

    pub fn port(&self) -> u16 {
        self.file.port
    }

    pub fn context(&self) -> &ServerContext {
        &self.ctx
    }

    /// Serves until asked to stop, then shuts the gateway down and removes
    /// `gateway.json` (if it is still ours).
    pub async fn run(self) {
        let Self {
            ctx,
            mcp,
            listener,
            home,
            detached,
            idle_grace,
            agent_session_idle,
            sessions_changed,
            file,
            limits,
            follow,
        } = self;
        let shutdown = ctx.shutdown.clone();
        if let Some(loader) = follow {
            tokio::spawn(ctx.config.clone().follow(loader, shutdown.clone()));
        }
        if agent_session_idle > Duration::ZERO {
            tokio::spawn(crate::rpc::agent_hook::end_idle_agent_sessions(
                ctx.registry().clone(),
                ctx.agent_sessions.clone(),
                agent_session_idle,
                shutdown.clone(),
            ));
        }
        if detached {
            tokio::spawn(exit_when_idle(
                ctx.registry().clone(),
                sessions_changed,
                idle_grace,
                shutdown.clone(),
            ));
        }
        let app = crate::app::router(ctx.clone(), rpc::methods::builtin());
        let graceful = shutdown.clone();
        let mut server = tokio::spawn(crate::http::serve(listener, app, limits, graceful));
        // Biased: the server loop returns as soon as `shutdown` is
        // cancelled, so both branches are often ready at once, and only the
        // first is a normal stop.
        tokio::select! {
            biased;
            () = shutdown.cancelled() => {}
            finished = &mut server => {
                match finished {
                    Err(err) => tracing::error!(error = %err, "the HTTP server task failed; stopping"),
                    Ok(()) => tracing::error!("the HTTP server stopped before a shutdown was asked for; stopping"),
                }
                shutdown.cancel();
            }
        }
        tracing::info!("shutting down");
        ctx.gateway.shutdown().await;
        if let Some(mcp) = &mcp {
            mcp.shutdown().await;
        }
        if !server.is_finished()
            && tokio::time::timeout(DRAIN_TIMEOUT, &mut server)
                .await
                .is_err()
        {
            tracing::warn!("connections still open after {DRAIN_TIMEOUT:?}; closing them");
            server.abort();
        }
        crate::telemetry::flush().await;
        // Every tool call has returned or been dropped by now: the audit
        // entries still queued go to disk before anyone can see us gone
        // (gateway.json removed); a blocking wait, so off the runtime.
        match tokio::task::spawn_blocking(bridge_policy::audit::flush_all).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::error!(error = %err, "audit entries lost at shutdown"),
            Err(err) => tracing::error!(error = %err, "cannot flush the audit log"),
        }
        let pid = file.pid;
        match tokio::task::spawn_blocking(move || GatewayFile::remove_if_owned_by(&home, pid)).await
        {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::warn!(error = %err, "cannot remove gateway.json"),
            Err(err) => tracing::warn!(error = %err, "cannot remove gateway.json"),
        }
        tracing::info!("stopped");
    }
}

/// Registers the MCP servers' tools into every new session.
struct McpSessions(Arc<McpManager>);

impl SessionListener for McpSessions {
    fn session_started(&self, session: &Arc<Session>) {
        if let Err(err) = self.0.register_into(session) {
            tracing::warn!(session = %session.id(), error = %err, "some MCP tools could not be registered");
        }
    }
}
