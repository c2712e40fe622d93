//! The code server: the workspace as OpenClaw's `copilot_*` tools.
//!
//! - `copilot_read_file`, `copilot_create_file`, `copilot_list_files`: the
//!   engine's `read_file`, `create_file` and `list_files` through
//!   [`Session::call_tool`], so the policy, redaction and the audit log see
//!   every call;
//! - `copilot_code_task`: a whole agent task, run by a [`TaskRunner`] the
//!   host provides (the CLI over its configured backend, the daemon over
//!   its own), one at a time ([`queue`]), the place in line reported as
//!   progress;
//! - `copilot_code` (the task's report as Markdown: answer, tool calls,
//!   statistics), `copilot_code_verbose` (the same after a numbered step
//!   log, each tool call also a progress notification) and
//!   `copilot_orchestrate` (the task planned and run in parallel waves,
//!   each sub-task's start and end a progress notification), in the same
//!   line ([`delegate`]).
//!
//! Initialization is lazy: answering `initialize` and `tools/list` builds
//! no session, no backend and touches no network; the [`SessionSource`]
//! is asked for a session on the first file tool call.

mod delegate;
mod queue;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::orchestrate::OrchestratedResult;
use bridge_engine::runner::RunReport;
use bridge_engine::{CallOrigin, Session};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use queue::{Place, TaskQueue};

use crate::depth::{self, DepthError};

pub use bridge_engine::log::steps::StepSink;
/// Where an orchestration's progress lines go.
pub type LineSink = tokio::sync::mpsc::UnboundedSender<String>;

/// One `copilot_code_task` / `copilot_code` call, as the host's runner
/// gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeTask {
    pub prompt: String,
    /// `None`: the configured model.
    pub model: Option<String>,
    /// `workingDir` as given (`None`: the server's workspace).
    pub working_dir: Option<PathBuf>,
    pub timeout: Option<Duration>,
    /// The `_depth` the agent's own MCP calls must carry (this call's
    /// depth + 1): hosts hand it to the MCP servers the agent starts.
    pub onward_depth: u64,
    /// The session the HTTP endpoint named (`?session=ID`), if any.
    pub session: Option<String>,
}

/// A task's directory: `working_dir` (`workingDir`) taken from `base`,
/// the host's workspace, when relative; `base` itself when not given.
pub fn task_dir(base: &Path, working_dir: Option<&Path>) -> PathBuf {
    // `join` keeps an absolute `workingDir` as it is.
    working_dir.map_or_else(|| base.to_path_buf(), |dir| base.join(dir))
}

/// One `copilot_orchestrate` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrchestrateTask {
    pub task: String,
    pub working_dir: Option<PathBuf>,
    pub max_concurrency: usize,
    pub timeout: Option<Duration>,
    pub onward_depth: u64,
    pub session: Option<String>,
}

/// Runs agent tasks and orchestrations for the code server. The CLI and
/// the daemon implement it with the runners they already build.
#[async_trait]
pub trait TaskRunner: Send + Sync {
    /// Runs `task` to its end (or until `cancel`), each step to `steps`
    /// when given (`bridge_engine::log::steps::forward`). `Err`: it could
    /// not start (no backend, bad working directory), said in one sentence.
    async fn run_task(
        &self,
        task: CodeTask,
        cancel: CancellationToken,
        steps: Option<StepSink>,
    ) -> Result<RunReport, String>;

    /// Plans and runs `task` (or until `cancel`), a line per sub-task's
    /// start and end to `progress`.
    async fn orchestrate(
        &self,
        task: OrchestrateTask,
        cancel: CancellationToken,
        progress: LineSink,
    ) -> Result<OrchestratedResult, String>;
}

/// Where the file tools find their session.
#[async_trait]
pub trait SessionSource: Send + Sync {
    /// The session for a call; `requested` is the `?session=ID` of the
    /// HTTP endpoint. `Err`: a sentence saying why there is none.
    async fn session(&self, requested: Option<&str>) -> Result<Arc<Session>, String>;

    /// The session for `?workspace=DIR` (an absolute directory): one
    /// working there. Hosts that serve a single workspace refuse.
    async fn session_in(&self, dir: &Path) -> Result<Arc<Session>, String> {
        Err(format!(
            "this server serves one workspace; it cannot open {}",
            dir.display()
        ))
    }
}

/// The code server. Cheap to clone: clones share the task line, so the
/// daemon's per-client instances still run one task at a time.
#[derive(Clone)]
pub struct CodeServer {
    shared: Arc<Shared>,
}

struct Shared {
    sessions: Arc<dyn SessionSource>,
    tasks: Arc<dyn TaskRunner>,
    queue: TaskQueue,
    /// The least depth every call counts as (from the environment of a
    /// server an agent started, see [`depth::floor_from_env`]).
    depth_floor: u64,
    tools: Arc<[Tool]>,
}

impl std::fmt::Debug for CodeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeServer")
            .field("queue", &self.shared.queue)
            .field("depth_floor", &self.shared.depth_floor)
            .finish_non_exhaustive()
    }
}

impl CodeServer {
    pub fn new(sessions: Arc<dyn SessionSource>, tasks: Arc<dyn TaskRunner>) -> Self {
        Self::with_depth_floor(sessions, tasks, 0)
    }

    /// A server whose calls count as at least `depth_floor` deep.
    pub fn with_depth_floor(
        sessions: Arc<dyn SessionSource>,
        tasks: Arc<dyn TaskRunner>,
        depth_floor: u64,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                sessions,
                tasks,
                queue: TaskQueue::new(),
                depth_floor,
                tools: tools::listing(),
            }),
        }
    }

    /// The task line (running and waiting tasks).
    pub fn queue(&self) -> &TaskQueue {
        &self.shared.queue
    }

    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.as_ref();
        if !tools::NAMES.contains(&name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {name:?}: this server has {}",
                    tools::NAMES.join(", ")
                ),
                None,
            ));
        }
        let mut args = request.arguments.unwrap_or_default();
        tools::check_size(name, &args)?;
        let asked = match depth::take_depth(&mut args) {
            Ok(asked) => asked,
            Err(DepthError::Invalid(message)) => {
                return Err(tools::invalid_params(format!("{name}: {message}")));
            }
            Err(DepthError::TooDeep(asked)) => return Ok(depth::too_deep_result(asked)),
        };
        let http = HttpFacts::of(&context);
        let depth = asked.max(self.shared.depth_floor).max(http.depth_floor);
        if depth >= depth::MAX_CALL_DEPTH {
            return Ok(depth::too_deep_result(depth));
        }
        if let Some(problem) = http.problem {
            return Err(tools::invalid_params(format!("{name}: {problem}")));
        }
        match name {
            tools::CODE_TASK => self.code_task(args, depth, http, context).await,
            tools::CODE => self.code(args, depth, http, context, false).await,
            tools::CODE_VERBOSE => self.code(args, depth, http, context, true).await,
            tools::ORCHESTRATE => self.orchestrate(args, depth, http, context).await,
            _ => self.file_tool(name, args, &http).await,
        }
    }

    async fn file_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
        http: &HttpFacts,
    ) -> Result<CallToolResult, ErrorData> {
        let (engine_tool, call) = match name {
            tools::READ_FILE => (
                "read_file",
                tools::read_file_call(tools::parse(name, args)?),
            ),
            tools::CREATE_FILE => (
                "create_file",
                tools::create_file_call(tools::parse(name, args)?),
            ),
            _ => (
                "list_files",
                tools::list_files_call(tools::parse(name, args)?),
            ),
        };
        let found = match &http.workspace {
            Some(dir) => self.shared.sessions.session_in(dir).await,
            None => self.shared.sessions.session(http.session.as_deref()).await,
        };
        let session = match found {
            Ok(session) => session,
            Err(reason) => {
                return Ok(CallToolResult::error(vec![
                    rmcp::model::ContentBlock::text(format!(
                        "{name}: no workspace session: {reason}"
                    )),
                ]));
            }
        };
        let outcome = session.call_tool(engine_tool, call, CallOrigin::Mcp).await;
        tools::file_result(name, outcome)
    }

    async fn code_task(
        &self,
        args: Map<String, Value>,
        depth: u64,
        http: HttpFacts,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args: tools::CodeTaskArgs = tools::parse(tools::CODE_TASK, args)?;
        if args.prompt.trim().is_empty() {
            return Err(tools::invalid_params(format!(
                "{}: the prompt is empty: say what to do",
                tools::CODE_TASK
            )));
        }
        if args.timeout == Some(0) {
            return Err(tools::invalid_params(format!(
                "{}: timeout must be at least 1 second",
                tools::CODE_TASK
            )));
        }
        let task = CodeTask {
            prompt: args.prompt,
            model: None,
            working_dir: http.working_dir(args.working_dir),
            timeout: args.timeout.map(Duration::from_secs),
            onward_depth: depth::onward(depth),
            session: http.session,
        };
        let progress = Progress::new(&context);
        let place = self.wait_in_line(&progress, &context).await?;
        let outcome = self
            .shared
            .tasks
            .run_task(task, context.ct.clone(), None)
            .await;
        drop(place);
        Ok(match outcome {
            Ok(report) => tools::task_result(&report),
            Err(reason) => tools::task_error(&reason),
        })
    }
}

/// Progress notifications for one call, when the client asked for them
/// (sent a `progressToken`).
pub(crate) struct Progress {
    token: Option<ProgressToken>,
    peer: rmcp::Peer<RoleServer>,
    sent: std::sync::atomic::AtomicU32,
}

impl Progress {
    pub(crate) fn new(context: &RequestContext<RoleServer>) -> Self {
        Self {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            sent: std::sync::atomic::AtomicU32::new(0),
        }
    }

    pub(crate) async fn send(&self, message: String) {
        let Some(token) = &self.token else { return };
        // Progress must grow with every notification.
        let step = self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let params =
            ProgressNotificationParam::new(token.clone(), f64::from(step)).with_message(message);
        if let Err(err) = self.peer.notify_progress(params).await {
            tracing::debug!(error = %err, "a progress notification could not be sent");
        }
    }
}

/// What the HTTP request behind a call says (nothing over stdio).
#[derive(Default)]
pub(crate) struct HttpFacts {
    /// `?session=ID`.
    session: Option<String>,
    /// `?workspace=DIR`: the directory file tools and tasks work in (a
    /// client registered for one agent's workspace, e.g. OpenClaw's).
    workspace: Option<PathBuf>,
    /// Why the query cannot be served, if it cannot.
    problem: Option<String>,
    depth_floor: u64,
}

impl HttpFacts {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
            return Self::default();
        };
        let mut facts = Self::default();
        let query = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri);
        match query {
            Ok(axum::extract::Query(pairs)) => {
                let value = |key: &str| -> Result<Option<&String>, String> {
                    let mut given = pairs.iter().filter(|(name, _)| name == key);
                    let first = given.next().map(|(_, value)| value);
                    if given.next().is_some() {
                        // Two readers could take different ones.
                        return Err(format!("?{key}= is given more than once; give it once"));
                    }
                    Ok(first)
                };
                let (session, workspace) = match (value("session"), value("workspace")) {
                    (Ok(session), Ok(workspace)) => (session, workspace),
                    (Err(problem), _) | (_, Err(problem)) => {
                        facts.problem = Some(problem);
                        return facts;
                    }
                };
                facts.session = session.filter(|id| !id.is_empty()).cloned();
                match workspace.map(PathBuf::from) {
                    Some(dir) if dir.is_absolute() => facts.workspace = Some(dir),
                    Some(dir) => {
                        facts.problem = Some(format!(
                            "?workspace= must be an absolute directory, not {:?}",
                            dir.display().to_string()
                        ));
                    }
                    None => {}
                }
            }
            Err(err) => facts.problem = Some(format!("the URL's query does not parse: {err}")),
        }
        facts.depth_floor = parts
            .headers
            .get(depth::DEPTH_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        facts
    }

    /// A task's directory: `workingDir` (relative to `?workspace=` when
    /// both are given), else the `?workspace=` directory, else `None` (the
    /// host's session).
    pub(crate) fn working_dir(&self, asked: Option<String>) -> Option<PathBuf> {
        let asked = asked.map(PathBuf::from);
        match &self.workspace {
            Some(workspace) => Some(task_dir(workspace, asked.as_deref())),
            None => asked,
        }
    }
}

impl ServerHandler for CodeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "copilot-bridge-code",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The workspace through copilot-bridge: read, create and list files, or delegate a whole coding task (copilot_code_task, one at a time). Every call goes through the bridge's policy and audit log.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let meta = Some(context.meta.clone());
        let extensions = context.extensions.clone();
        crate::telemetry::tools_call(&tool, meta.as_ref(), &extensions, async {
            self.dispatch(request, context).await.map(Into::into)
        })
        .await
    }

    /// rmcp hands over a `tools/call` whose params do not parse (arguments
    /// that are not an object, a name that is not a string) as an unknown
    /// method; the caller should hear that its params are wrong.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "tools/call" {
            return Err(ErrorData::invalid_params(
                "tools/call: params must be an object with a string `name` and an object `arguments`",
                None,
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }
}
