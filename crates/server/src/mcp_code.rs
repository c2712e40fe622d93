//! The code MCP server as the daemon serves it (`/mcp/code`): file tools in
//! the daemon's default session (or `?session=ID`), agent tasks by the
//! native runner over the daemon's default chat backend, with the settings
//! `copilot-bridge run` uses (`bridge_compose::native_settings`).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use bridge_engine::log::new_session_id;
use bridge_engine::orchestrate::OrchestratedResult;
use bridge_engine::runner::native::{DEFAULT_MAX_TURNS, NativeRunner};
use bridge_engine::runner::{RunReport, RunRequest, RunnerKind};
use bridge_engine::task::{TaskLog, TaskMeta, TaskRun};
use bridge_engine::{Session, SessionSpec};
use bridge_mcp::code::{
    CodeServer, CodeTask, LineSink, OrchestrateTask, SessionSource, StepSink, TaskRunner,
};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::Digest as _;
use tokio_util::sync::CancellationToken;

use crate::app::ServerContext;
use crate::orchestrations::StartRequest;

/// The `/mcp/code` service: one [`CodeServer`] shared by every MCP client,
/// so tasks from all of them wait in one line.
pub(crate) fn service(
    ctx: ServerContext,
) -> StreamableHttpService<CodeServer, LocalSessionManager> {
    let server = CodeServer::new(
        Arc::new(DaemonSessions { ctx: ctx.clone() }),
        Arc::new(DaemonTasks { ctx }),
    );
    bridge_mcp::serve::http_service(move || Ok(server.clone()))
}

struct DaemonSessions {
    ctx: ServerContext,
}

/// The daemon's sessions as MCP servers find them (`?session=ID`, the
/// default session, `?workspace=DIR`).
pub(crate) fn sessions(ctx: ServerContext) -> Arc<dyn SessionSource> {
    Arc::new(DaemonSessions { ctx })
}

impl DaemonSessions {
    fn resolve(ctx: &ServerContext, requested: Option<&str>) -> Result<Arc<Session>, String> {
        match requested {
            Some(id) => ctx
                .session(id)
                .ok_or_else(|| format!("the daemon has no session {id:?}")),
            None => ctx.default_session().ok_or_else(|| {
                "the daemon's default session has ended; name one with ?session=ID".to_owned()
            }),
        }
    }
}

#[async_trait]
impl SessionSource for DaemonSessions {
    async fn session(&self, requested: Option<&str>) -> Result<Arc<Session>, String> {
        Self::resolve(&self.ctx, requested)
    }

    /// One session per directory asked for with `?workspace=`, made on
    /// first use and ended when idle like an agent's hook session.
    async fn session_in(&self, dir: &Path) -> Result<Arc<Session>, String> {
        let shown = dir.display().to_string();
        // Named by the client: a workspace only if it may be one.
        let canonical = self.ctx.workspace(dir).await?;
        let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        let id = format!("workspace-{}", bridge_util::ids::hex(&digest[..6]));
        if let Some(session) = self.ctx.registry().get(&id) {
            self.ctx.agent_sessions.touch(&id);
            return Ok(session);
        }
        let label = format!(
            "MCP · {}",
            canonical
                .file_name()
                .map_or_else(|| shown.clone(), |name| name.to_string_lossy().into_owned())
        );
        crate::rpc::agent_hook::end_least_recent(&self.ctx, self.ctx.agent_sessions.make_room());
        let spec = SessionSpec {
            id: Some(id.clone()),
            label,
            cwd: canonical,
            foreground: false,
            door: bridge_engine::Door::Mcp,
        };
        let registry = self.ctx.registry().clone();
        // Opening a workspace reads its policy file.
        let created = tokio::task::spawn_blocking(move || registry.create(spec))
            .await
            .map_err(|err| format!("cannot open the workspace {shown}: {err}"))?;
        let session = match created {
            Ok(session) => session,
            Err(bridge_engine::RegistryError::Duplicate(_)) => self
                .ctx
                .registry()
                .get(&id)
                .ok_or_else(|| format!("the session of {shown} ended as it was made"))?,
            Err(err) => return Err(format!("cannot open the workspace {shown}: {err}")),
        };
        self.ctx.agent_sessions.touch(&id);
        Ok(session)
    }
}

struct DaemonTasks {
    ctx: ServerContext,
}

#[async_trait]
impl TaskRunner for DaemonTasks {
    async fn run_task(
        &self,
        task: CodeTask,
        cancel: CancellationToken,
        steps: Option<StepSink>,
    ) -> Result<RunReport, String> {
        let entry = self.ctx.backends.default_entry().cloned().ok_or_else(|| {
            "the daemon has no chat backend configured (see `copilot-bridge validate`)".to_owned()
        })?;
        let named = DaemonSessions::resolve(&self.ctx, task.session.as_deref())?;
        // A task in another directory gets a session of its own, ended after.
        let wanted = task
            .working_dir
            .as_deref()
            .map(|dir| bridge_mcp::code::task_dir(named.cwd(), Some(dir)));
        let (session, transient) = match wanted {
            Some(cwd) if !same_dir(&cwd, named.cwd()) => {
                let cwd = self.ctx.workspace(&cwd).await?;
                let session = self
                    .ctx
                    .registry()
                    .create(SessionSpec {
                        id: None,
                        label: "mcp code task".to_owned(),
                        cwd,
                        foreground: false,
                        door: bridge_engine::Door::Mcp,
                    })
                    .map_err(|err| err.to_string())?;
                (session, true)
            }
            _ => (named, false),
        };
        let runner = NativeRunner::new(entry.backend.clone(), (*self.ctx.native).clone());
        let model = task
            .model
            .clone()
            .or_else(|| session.model())
            .or_else(|| entry.default_model.clone());
        // Every task the daemon runs has its log (`sessions show`, resume).
        let meta = TaskMeta {
            cwd: session.cwd().to_path_buf(),
            model: model.clone(),
            runner: RunnerKind::Native,
            backend: Some(entry.name.clone()),
            label: "mcp code task".to_owned(),
            orchestration: None,
        };
        let log = TaskLog::create(
            &self.ctx.facts.home.join("sessions"),
            &new_session_id(),
            &meta,
        )
        .await
        .map_err(|err| format!("cannot start the task's log: {err}"))?;
        let request = RunRequest {
            task: task.prompt,
            model,
            max_turns: DEFAULT_MAX_TURNS,
            timeout: task.timeout,
        };
        // The run stops when the caller cancels or the daemon shuts down.
        let stop = self.ctx.shutdown.child_token();
        let relay = tokio::spawn({
            let stop = stop.clone();
            async move {
                cancel.cancelled().await;
                stop.cancel();
            }
        });
        let report = log
            .run(TaskRun {
                runner: Arc::new(runner),
                session: session.clone(),
                request,
                cancel: stop,
                steps,
            })
            .await;
        relay.abort();
        if transient && let Err(err) = self.ctx.registry().end(session.id(), None).await {
            tracing::debug!(error = %err, "the task's session was already gone");
        }
        Ok(report)
    }

    async fn orchestrate(
        &self,
        task: OrchestrateTask,
        cancel: CancellationToken,
        progress: LineSink,
    ) -> Result<OrchestratedResult, String> {
        let named = DaemonSessions::resolve(&self.ctx, task.session.as_deref())?;
        let mut cwd = bridge_mcp::code::task_dir(named.cwd(), task.working_dir.as_deref());
        if !same_dir(&cwd, named.cwd()) {
            cwd = self.ctx.workspace(&cwd).await?;
        }
        let request = StartRequest {
            task: task.task,
            plan: None,
            cwd,
            max_concurrency: task.max_concurrency,
            timeout: task.timeout,
        };
        let running = self
            .ctx
            .orchestrations
            .start(
                self.ctx.registry(),
                &self.ctx.backends,
                request,
                &self.ctx.shutdown,
                Some(progress),
            )
            .await?;
        // The caller leaving cancels the plan.
        tokio::select! {
            result = running.finished() => Ok(result),
            () = cancel.cancelled() => {
                running.cancel();
                Ok(running.finished().await)
            }
        }
    }
}

/// Whether two absolute paths name one directory (`Path::join` keeps an
/// absolute `workingDir` as it is).
fn same_dir(a: &Path, b: &Path) -> bool {
    let canonical =
        |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    canonical(a) == canonical(b)
}
