//! `copilot-bridge mcp code`: the code tools over stdio, for OpenClaw and
//! other MCP agents. stdout carries the protocol; logs go to stderr.
//!
//! Nothing is built before it is needed: the workspace session on the
//! first file tool call, the chat backend on each `copilot_code_task` (as
//! `copilot-bridge run` builds it), so starting and listing tools is fast.
//! The server stops when stdin closes, on SIGTERM or SIGINT.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_agents::AgentEnv;
use bridge_config::BridgeConfig;
use bridge_engine::Session;
use bridge_engine::log::new_session_id;
use bridge_engine::orchestrate::{OrchestratedResult, SubTaskRunner};
use bridge_engine::runner::native::DEFAULT_MAX_TURNS;
use bridge_engine::runner::{RunReport, RunnerKind};
use bridge_mcp::code::{
    CodeServer, CodeTask, LineSink, OrchestrateTask, SessionSource, StepSink, TaskRunner, task_dir,
};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::args::McpCodeArgs;
use crate::commands::orchestrate::{OrchestrateOptions, orchestrate_task};
use crate::commands::run::{Attended, Start, TaskOptions, create_session, run_task};
use crate::exit::Failure;

pub async fn run(
    config: &BridgeConfig,
    args: McpCodeArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let cwd = match args.cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|err| Failure::usage(format!("cannot read the current directory: {err}")))?,
    };
    let config = Arc::new(config.clone());
    let server = CodeServer::with_depth_floor(
        Arc::new(LazySession {
            config: config.clone(),
            cwd: cwd.clone(),
            session: OnceCell::new(),
        }),
        Arc::new(CliTasks {
            config,
            cwd,
            env: env.clone(),
        }),
        bridge_mcp::depth::floor_from_env(),
    );
    bridge_mcp::serve::serve_stdio(server, CancellationToken::new())
        .await
        .map_err(|err| Failure::internal(err.to_string()))?;
    // `exit_now` skips the flush the command's wrapper would do.
    crate::flush_telemetry().await;
    exit_now()
}

/// Ends the process at once. After a signal, the runtime's stdin reader is
/// still blocked in `read(2)` on a thread nobody can interrupt, and
/// dropping the runtime would wait for it forever; everything that matters
/// (responses, audit entries) is written first: `exit` runs no destructor,
/// so the audit log's writer is flushed here.
fn exit_now() -> ! {
    use std::io::Write;
    crate::flush_audit();
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

/// The workspace session, created on first use and kept.
struct LazySession {
    config: Arc<BridgeConfig>,
    cwd: PathBuf,
    session: OnceCell<Arc<Session>>,
}

#[async_trait]
impl SessionSource for LazySession {
    async fn session(&self, _requested: Option<&str>) -> Result<Arc<Session>, String> {
        self.session
            .get_or_try_init(|| async {
                // Nobody can answer an "ask" over MCP: it is denied.
                create_session(
                    &self.config,
                    &self.cwd,
                    &new_session_id(),
                    "mcp code",
                    Arc::new(bridge_policy::DenyAll),
                )
                .map_err(|failure| failure.message)
            })
            .await
            .cloned()
    }
}

/// Tasks run as `copilot-bridge run` runs them, unattended.
struct CliTasks {
    config: Arc<BridgeConfig>,
    cwd: PathBuf,
    /// The nested agents' settings and binaries.
    env: AgentEnv,
}

#[async_trait]
impl TaskRunner for CliTasks {
    async fn run_task(
        &self,
        task: CodeTask,
        cancel: CancellationToken,
        steps: Option<StepSink>,
    ) -> Result<RunReport, String> {
        let options = TaskOptions {
            task: task.prompt,
            model: task.model,
            cwd: Some(task_dir(&self.cwd, task.working_dir.as_deref())),
            timeout: task.timeout,
            runner: RunnerKind::Native,
            max_turns: DEFAULT_MAX_TURNS,
            verbose: false,
            json: false,
            steps,
        };
        let attended = Attended::Unattended {
            cancel,
            mcp_depth: task.onward_depth,
        };
        run_task(&self.config, &options, Start::New, attended)
            .await
            .map_err(|failure| failure.message)
    }

    async fn orchestrate(
        &self,
        task: OrchestrateTask,
        cancel: CancellationToken,
        progress: LineSink,
    ) -> Result<OrchestratedResult, String> {
        let config = bridge_compose::with_mcp_depth(&self.config, task.onward_depth);
        let options = OrchestrateOptions {
            max_concurrency: task.max_concurrency,
            model: None,
            default_runner: SubTaskRunner::Native,
            nested_agents: self.env.clone(),
        };
        let cwd = task_dir(&self.cwd, task.working_dir.as_deref());
        orchestrate_task(
            &config,
            &options,
            &task.task,
            &cwd,
            task.timeout,
            cancel,
            Some(progress),
        )
        .await
        .map_err(|failure| failure.message)
    }
}
