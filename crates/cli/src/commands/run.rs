//! `copilot-bridge run "TASK"`: one task, start to finish, in a fresh
//! session of the current directory (or `--cwd`), printed as Markdown with
//! the tool calls and statistics; `--verbose` adds a numbered live log.
//!
//! The backend is chosen exactly as `validate` chooses it; without a usable
//! one the command fails at once (exit 3) naming the settings to set. Every
//! step goes to the session's log (`$COPILOT_BRIDGE_HOME/sessions/ID.jsonl`),
//! which [`execute`] with [`Start::Resume`] continues (`sessions resume`).

mod live;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bridge_compose::ComposeError;
use bridge_config::BridgeConfig;
use bridge_engine::log::new_session_id;
use bridge_engine::mcp_client::{McpManager, McpOptions};
use bridge_engine::runner::native::DEFAULT_MAX_TURNS;
use bridge_engine::runner::{RunReport, RunRequest, RunStatus, RunnerKind};
use bridge_engine::task::{TaskLog, TaskMeta, TaskRun};
use bridge_engine::{RegistryError, Session, SessionSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::RunArgs;
use crate::exit::{self, Failure};

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const CANCELLED: u8 = 130;

/// How to run one task, from the command line.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    pub task: String,
    pub model: Option<String>,
    pub cwd: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub runner: RunnerKind,
    pub max_turns: u32,
    pub verbose: bool,
    pub json: bool,
    /// Each step of the run, numbered (`copilot_code_verbose`).
    pub steps: Option<bridge_mcp::code::StepSink>,
}

/// Who is at the other end of a run.
#[derive(Debug, Clone)]
pub enum Attended {
    /// A person at a terminal: "ask" rules ask on it, progress shows on
    /// stderr, Ctrl-C cancels.
    Terminal,
    /// A program (`copilot-bridge mcp code`): nobody to ask (every "ask" is
    /// denied), nothing on stderr but logs, `cancel` stops the run, and the
    /// MCP servers the agent uses get `mcp_depth` (cycle detection).
    Unattended {
        cancel: CancellationToken,
        mcp_depth: u64,
    },
}

/// A new session, or one whose log is continued.
#[derive(Debug, Clone)]
pub enum Start {
    New,
    Resume { session_id: String },
}

pub async fn run(config: &BridgeConfig, args: RunArgs) -> Result<ExitCode, Failure> {
    let runner: RunnerKind = args.runner.parse().map_err(Failure::usage)?;
    let options = TaskOptions {
        task: args.task,
        model: args.model,
        cwd: args.cwd,
        timeout: args.timeout.map(Duration::from_secs),
        runner,
        max_turns: args.max_turns,
        verbose: args.verbose,
        json: args.json,
        steps: None,
    };
    execute(config, options, Start::New).await
}

/// Runs a task in a new or resumed session and prints the report. The
/// `sessions resume` command calls this with [`Start::Resume`].
pub async fn execute(
    config: &BridgeConfig,
    options: TaskOptions,
    start: Start,
) -> Result<ExitCode, Failure> {
    let report = run_task(config, &options, start, Attended::Terminal).await?;
    print_report(&report, options.json)?;
    Ok(exit_code(&report))
}

/// Runs a task in a new or resumed session to its report (the session's
/// log written, its MCP servers stopped), printing nothing.
pub async fn run_task(
    config: &BridgeConfig,
    options: &TaskOptions,
    start: Start,
    attended: Attended,
) -> Result<RunReport, Failure> {
    let depth_config;
    let config = match &attended {
        Attended::Terminal => config,
        Attended::Unattended { mcp_depth, .. } => {
            depth_config = bridge_compose::with_mcp_depth(config, *mcp_depth);
            &depth_config
        }
    };
    if options.task.trim().is_empty() {
        return Err(Failure::usage("the task is empty: say what to do"));
    }
    if options.max_turns == 0 {
        return Err(Failure::usage("--max-turns must be at least 1"));
    }
    let sessions_dir = config.home.join("sessions");
    // The log is opened first on resume: it says where and how the session ran.
    let (resumed, session_id) = match &start {
        Start::New => (None, new_session_id()),
        Start::Resume { session_id } => {
            let log = TaskLog::resume(&sessions_dir, session_id)
                .await
                .map_err(|err| Failure::new(exit::FAILED, format!("cannot resume: {err}")))?;
            (Some(log), session_id.clone())
        }
    };
    let remembered = resumed
        .as_ref()
        .map(TaskLog::remembered)
        .unwrap_or_default();
    let runner_kind = remembered.runner.unwrap_or(options.runner);
    let built = bridge_compose::runner(config, runner_kind)
        .await
        .map_err(compose_failure)?;
    let cwd = match (&options.cwd, remembered.cwd) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => dir,
        (None, None) => std::env::current_dir()
            .map_err(|err| Failure::usage(format!("cannot read the current directory: {err}")))?,
    };
    let model = options.model.clone().or(remembered.model);
    let asking = Arc::new(AtomicBool::new(false));
    let approver = match attended {
        Attended::Terminal => crate::approver::for_this_terminal(asking.clone()),
        Attended::Unattended { .. } => Arc::new(bridge_policy::DenyAll),
    };
    let session = create_session(config, &cwd, &session_id, "run", approver)?;
    session.set_model(model.clone());
    session.set_runner_kind(runner_kind);
    let log = match resumed {
        Some(log) => log,
        None => {
            let meta = TaskMeta {
                cwd: session.cwd().to_path_buf(),
                model,
                runner: runner_kind,
                backend: Some(built.backend),
                label: "run".to_owned(),
                orchestration: None,
            };
            TaskLog::create(&sessions_dir, &session_id, &meta)
                .await
                .map_err(|err| {
                    Failure::new(exit::FAILED, format!("cannot start the session log: {err}"))
                })?
        }
    };
    // The native loop calls MCP tools itself; the Copilot CLI gets the
    // servers in its own session configuration instead.
    let mcp = if runner_kind == RunnerKind::Native && !config.mcp.servers.is_empty() {
        let manager = McpManager::start(
            &config.mcp.servers,
            McpOptions::default(),
            CancellationToken::new(),
        )
        .await;
        if let Err(err) = manager.register_into(&session) {
            tracing::warn!(error = %err, "some MCP tools could not be registered");
        }
        for status in manager.status() {
            if let Some(error) = &status.last_error {
                tracing::warn!(server = %status.name, "MCP server not ready: {error}");
            }
        }
        Some(manager)
    } else {
        None
    };
    let request = RunRequest {
        task: options.task.clone(),
        model: options.model.clone(),
        max_turns: options.max_turns,
        timeout: options.timeout,
    };
    let at_terminal = matches!(attended, Attended::Terminal);
    let progress =
        at_terminal && !options.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let live = live::Live::start(
        log.events(),
        at_terminal && options.verbose && !options.json,
        progress,
        asking,
    );
    let (cancel, on_interrupt) = match attended {
        Attended::Terminal => {
            let cancel = CancellationToken::new();
            let on_interrupt = tokio::spawn(cancel_on_interrupt(cancel.clone()));
            (cancel, Some(on_interrupt))
        }
        Attended::Unattended { cancel, .. } => (cancel, None),
    };
    let report = log
        .run(TaskRun {
            runner: built.runner,
            session,
            request,
            cancel,
            steps: options.steps.clone(),
        })
        .await;
    if let Some(on_interrupt) = on_interrupt {
        on_interrupt.abort();
    }
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    live.finish().await;
    Ok(report)
}

/// How a part the configuration could not make fails the command: a
/// configuration problem (exit 3), or a usage error.
pub(crate) fn compose_failure(err: ComposeError) -> Failure {
    match err {
        ComposeError::Config(_) => Failure::new(exit::CONFIG, err.to_string()),
        ComposeError::NoBackend(_) => Failure::new(exit::CONFIG, format!("cannot run: {err}")),
        ComposeError::Unsupported(_) => Failure::usage(err.to_string()),
    }
}

/// A session of `cwd` in a registry of its own, with the configured
/// policy and audit log and the tools every session the hub creates gets
/// (OpenClaw's memory, when configured): `run`, `tool`, `mcp code`.
pub(crate) fn create_session(
    config: &BridgeConfig,
    cwd: &std::path::Path,
    id: &str,
    label: &str,
    approver: Arc<dyn bridge_policy::Approver>,
) -> Result<Arc<Session>, Failure> {
    let registry = bridge_compose::task_registry(config, approver).map_err(compose_failure)?;
    session_in(&registry, cwd, id, label)
}

/// A session of `cwd` in `registry`, the failure said as the CLI says it.
pub(crate) fn session_in(
    registry: &bridge_engine::SessionRegistry,
    cwd: &std::path::Path,
    id: &str,
    label: &str,
) -> Result<Arc<Session>, Failure> {
    registry
        .create(SessionSpec {
            id: Some(id.to_owned()),
            label: label.to_owned(),
            cwd: cwd.to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Cli,
        })
        .map_err(|err| match err {
            RegistryError::WorkspacePolicy(_) => Failure::new(exit::CONFIG, err.to_string()),
            other => Failure::usage(other.to_string()),
        })
}

pub(crate) async fn cancel_on_interrupt(cancel: CancellationToken) {
    if tokio::signal::ctrl_c().await.is_ok() {
        cancel.cancel();
    }
}

fn print_report(report: &RunReport, as_json: bool) -> Result<(), Failure> {
    if as_json {
        let mut value = serde_json::to_value(report).unwrap_or(Value::Null);
        bridge_policy::redact_value(&mut value);
        return super::tool::print_json(&value, false);
    }
    let mut text = report.markdown();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if report.status != RunStatus::Completed {
        // The reason also goes to stderr, where scripts look for it.
        let reason = report.error.as_deref().unwrap_or("no reason given");
        eprintln!(
            "copilot-bridge: run {}: {}",
            report.status.word(),
            bridge_policy::redact(reason)
        );
    }
    super::tool::write_stdout(&text)
}

fn exit_code(report: &RunReport) -> ExitCode {
    match report.status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Cancelled => ExitCode::from(CANCELLED),
        RunStatus::Failed | RunStatus::MaxTurns | RunStatus::TimedOut => {
            ExitCode::from(exit::FAILED)
        }
    }
}

/// The default of `--max-turns`, for the argument parser.
pub const fn default_max_turns() -> u32 {
    DEFAULT_MAX_TURNS
}
