//! The code server in-process, driven by the rmcp client over a duplex
//! pipe: the tools through a real engine session on a temp workspace, the
//! task line with a scripted task runner, cycle detection, bad input.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bridge_engine::log::steps::Step;
use bridge_engine::orchestrate::OrchestratedResult;
use bridge_engine::runner::{RunReport, RunStatus, UsageTotals};
use bridge_engine::{Session, SessionDefaults, SessionRegistry, SessionSpec};
use bridge_mcp::code::{
    CodeServer, CodeTask, LineSink, OrchestrateTask, SessionSource, StepSink, TaskRunner,
};
use bridge_testkit::TempWorkspace;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// A real session of a temp workspace, counted on use.
pub(crate) struct Workspace {
    session: Arc<Session>,
    asked: AtomicUsize,
}

#[async_trait]
impl SessionSource for Workspace {
    async fn session(&self, _requested: Option<&str>) -> Result<Arc<Session>, String> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(self.session.clone())
    }
}

/// Tasks that finish when the test says so, recording what they got and
/// how many ran at once.
#[derive(Default)]
pub(crate) struct Scripted {
    pub(crate) seen: Mutex<Vec<CodeTask>>,
    pub(crate) running: AtomicUsize,
    pub(crate) most_at_once: AtomicUsize,
    pub(crate) release: Notify,
    pub(crate) hold: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl TaskRunner for Scripted {
    async fn run_task(
        &self,
        task: CodeTask,
        _cancel: CancellationToken,
        steps: Option<StepSink>,
    ) -> Result<RunReport, String> {
        if let Some(steps) = steps {
            for (line, tool_call) in [
                ("1. tool read_file {}", false),
                ("2. ✓ read_file (1 ms)", true),
            ] {
                let _ = steps.send(Step {
                    line: line.to_owned(),
                    tool_call,
                });
            }
        }
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let prompt = task.prompt.clone();
        self.seen.lock().unwrap().push(task);
        if self.hold.load(Ordering::SeqCst) {
            self.release.notified().await;
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        if prompt == "fail" {
            return Err("no chat backend is configured".to_owned());
        }
        Ok(RunReport {
            session_id: "s-test".to_owned(),
            status: RunStatus::Completed,
            final_text: format!("done: {prompt}"),
            tool_calls: Vec::new(),
            turns: 1,
            usage: UsageTotals::default(),
            duration_ms: 1,
            error: None,
        })
    }

    async fn orchestrate(
        &self,
        task: OrchestrateTask,
        _cancel: CancellationToken,
        progress: LineSink,
    ) -> Result<OrchestratedResult, String> {
        let _ = progress.send(format!("Running t1 of {}", task.task));
        Err(format!(
            "no planner here (maxConcurrency {})",
            task.max_concurrency
        ))
    }
}

/// A client that passes progress notifications to the test.
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Listener {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

pub(crate) struct Harness {
    pub(crate) ws: TempWorkspace,
    pub(crate) _audit: tempfile::TempDir,
    pub(crate) audit_dir: std::path::PathBuf,
    pub(crate) source: Arc<Workspace>,
    pub(crate) tasks: Arc<Scripted>,
    pub(crate) client: RunningService<RoleClient, Listener>,
    pub(crate) progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
}

pub(crate) async fn harness_with_floor(depth_floor: u64) -> Harness {
    let ws = TempWorkspace::new();
    ws.write("src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    ws.write("README.md", "# demo\n");
    let audit = tempfile::TempDir::new().unwrap();
    let mut defaults = SessionDefaults::restrictive().unwrap();
    defaults.read_only = false;
    defaults.audit = Some(bridge_policy::AuditLog::new(audit.path()));
    let registry = SessionRegistry::new(defaults, Default::default());
    let session = registry
        .create(SessionSpec {
            id: None,
            label: "test".to_owned(),
            cwd: ws.path().to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    let source = Arc::new(Workspace {
        session,
        asked: AtomicUsize::new(0),
    });
    let tasks = Arc::new(Scripted::default());
    let server = CodeServer::with_depth_floor(source.clone(), tasks.clone(), depth_floor);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_io);
        if let Ok(running) = server.serve((read, write)).await {
            let _ = running.waiting().await;
        }
    });
    let (sender, progress) = mpsc::unbounded_channel();
    let (read, write) = tokio::io::split(client_io);
    let client = Listener { progress: sender }
        .serve((read, write))
        .await
        .unwrap();
    let audit_dir = audit.path().to_path_buf();
    Harness {
        ws,
        _audit: audit,
        audit_dir,
        source,
        tasks,
        client,
        progress,
    }
}

pub(crate) async fn harness() -> Harness {
    harness_with_floor(0).await
}

pub(crate) fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

impl Harness {
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Value,
    ) -> Result<CallToolResult, ServiceError> {
        self.client.peer().call_tool(params(name, args)).await
    }

    pub(crate) async fn ok(&self, name: &str, args: Value) -> CallToolResult {
        let result = self.call(name, args).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
        result
    }

    /// The JSON-RPC error code of a call that must fail as a protocol error.
    pub(crate) async fn error_code(&self, name: &str, args: Value) -> (i32, String) {
        match self.call(name, args).await {
            Err(ServiceError::McpError(err)) => (err.code.0, err.message.to_string()),
            other => panic!("{name}: expected an MCP error, got {other:?}"),
        }
    }
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn lists_seven_tools_each_taking_depth_without_building_a_session() {
    let h = harness().await;
    let tools = h.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "copilot_read_file",
            "copilot_create_file",
            "copilot_list_files",
            "copilot_code_task",
            "copilot_code",
            "copilot_code_verbose",
            "copilot_orchestrate"
        ]
    );
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(
            schema["properties"]["_depth"]["type"], "integer",
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    let required = |i: usize| Value::Object((*tools[i].input_schema).clone())["required"].clone();
    assert_eq!(required(0), json!(["path"]));
    assert_eq!(required(1), json!(["path", "content"]));
    assert_eq!(
        required(2),
        Value::Null,
        "no required arguments: no `required`"
    );
    assert_eq!(required(3), json!(["prompt"]));
    // Lazy: listing asked for no session.
    assert_eq!(h.source.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn file_tools_go_through_the_session_and_its_audit_log() {
    let h = harness().await;
    let read = h
        .ok("copilot_read_file", json!({"path": "src/lib.rs"}))
        .await;
    assert_eq!(text(&read), "pub fn answer() -> u32 { 42 }\n");
    assert_eq!(read.structured_content.as_ref().unwrap()["totalLines"], 1);

    let created = h
        .ok(
            "copilot_create_file",
            json!({"path": "notes/todo.md", "content": "- ship it\n"}),
        )
        .await;
    assert_eq!(text(&created), "created notes/todo.md (10 bytes)");
    assert_eq!(h.ws.read("notes/todo.md"), "- ship it\n");

    let listed = h.ok("copilot_list_files", json!({})).await;
    assert_eq!(text(&listed), "README.md\nnotes/todo.md\nsrc/lib.rs");
    let in_src = h
        .ok("copilot_list_files", json!({"directory": "src"}))
        .await;
    assert_eq!(text(&in_src), "src/lib.rs");

    // One audit entry per call, each from the MCP door.
    bridge_policy::audit::flush_all().unwrap();
    let audit: String = std::fs::read_dir(&h.audit_dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    let entries: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let tools: Vec<&str> = entries
        .iter()
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["read_file", "create_file", "list_files", "list_files"],
        "{audit}"
    );
    assert!(
        entries.iter().all(|e| e["hook"] == "toolCall:mcp"),
        "{audit}"
    );
}

#[tokio::test]
async fn policy_denials_and_tool_failures_are_error_results() {
    let h = harness().await;
    let outside = h
        .call("copilot_read_file", json!({"path": "../../etc/passwd"}))
        .await
        .unwrap();
    assert_eq!(outside.is_error, Some(true));
    assert!(
        text(&outside).starts_with("policy_denied: "),
        "{}",
        text(&outside)
    );

    let missing = h
        .call("copilot_read_file", json!({"path": "nope.txt"}))
        .await
        .unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(
        text(&missing).starts_with("not_found: "),
        "{}",
        text(&missing)
    );

    let exists = h
        .call(
            "copilot_create_file",
            json!({"path": "README.md", "content": "x"}),
        )
        .await
        .unwrap();
    assert_eq!(exists.is_error, Some(true));
    assert!(text(&exists).starts_with("conflict: "), "{}", text(&exists));
    assert_eq!(h.ws.read("README.md"), "# demo\n");
    let replaced = h
        .ok(
            "copilot_create_file",
            json!({"path": "README.md", "content": "x", "overwrite": true}),
        )
        .await;
    assert_eq!(text(&replaced), "replaced README.md (1 bytes)");
}

#[tokio::test]
async fn bad_input_is_an_invalid_params_error_and_the_server_keeps_serving() {
    let h = harness().await;
    let (code, message) = h.error_code("copilot_delete_everything", json!({})).await;
    assert_eq!(code, -32602);
    assert!(message.contains("unknown tool"), "{message}");

    let (code, message) = h.error_code("copilot_read_file", json!({"path": 7})).await;
    assert_eq!(code, -32602);
    assert!(
        message.contains("copilot_read_file: invalid arguments"),
        "{message}"
    );

    let (code, _) = h.error_code("copilot_read_file", json!({})).await;
    assert_eq!(code, -32602, "a missing path");
    let (code, message) = h
        .error_code("copilot_list_files", json!({"dir": "src"}))
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("unknown field `dir`"), "{message}");
    let (code, _) = h
        .error_code("copilot_code_task", json!({"prompt": "  "}))
        .await;
    assert_eq!(code, -32602, "an empty prompt");
    let (code, _) = h
        .error_code(
            "copilot_code_task",
            json!({"prompt": "x", "timeout": "soon"}),
        )
        .await;
    assert_eq!(code, -32602);

    let huge = "x".repeat(bridge_mcp::code::tools::MAX_ARGUMENT_BYTES);
    let (code, message) = h
        .error_code(
            "copilot_create_file",
            json!({"path": "big.txt", "content": huge}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("the limit is 1048576 bytes"), "{message}");
    assert!(!h.ws.path().join("big.txt").exists());

    // Still serving.
    h.ok("copilot_read_file", json!({"path": "README.md"}))
        .await;
    assert!(h.tasks.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn depth_three_is_refused_and_a_bad_depth_is_invalid() {
    let h = harness().await;
    for tool in ["copilot_read_file", "copilot_code_task"] {
        let refused = h
            .call(
                tool,
                json!({"path": "README.md", "prompt": "x", "_depth": 3}),
            )
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true), "{tool}");
        assert!(text(&refused).contains("call depth 3 reaches the limit of 3"));
    }
    assert!(h.tasks.seen.lock().unwrap().is_empty(), "nothing ran");
    for bad in [json!("x"), json!(-1), json!(1.5)] {
        let (code, message) = h
            .error_code(
                "copilot_read_file",
                json!({"path": "README.md", "_depth": bad}),
            )
            .await;
        assert_eq!(code, -32602);
        assert!(
            message.contains("`_depth` must be a non-negative integer"),
            "{message}"
        );
    }
    // Depth 2 still runs, and the task's own MCP calls carry 3.
    h.ok(
        "copilot_read_file",
        json!({"path": "README.md", "_depth": 2}),
    )
    .await;
    let done = h
        .ok("copilot_code_task", json!({"prompt": "go", "_depth": 2}))
        .await;
    assert_eq!(text(&done), "done: go");
    assert_eq!(h.tasks.seen.lock().unwrap()[0].onward_depth, 3);
}

#[tokio::test]
async fn the_environment_floor_counts_as_depth() {
    let h = harness_with_floor(3).await;
    let refused = h.call("copilot_list_files", json!({})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    let h = harness_with_floor(1).await;
    h.ok("copilot_code_task", json!({"prompt": "go", "_depth": 0}))
        .await;
    assert_eq!(h.tasks.seen.lock().unwrap()[0].onward_depth, 2);
}
