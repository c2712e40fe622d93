//! The code server in-process, driven by the rmcp client over a duplex
//! pipe: the tools through a real engine session on a temp workspace, the
//! task line with a scripted task runner, cycle detection, bad input.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::log::steps::Step;
use bridge_engine::orchestrate::OrchestratedResult;
use bridge_engine::runner::{RunReport, RunStatus, UsageTotals};
use bridge_engine::{Session, SessionDefaults, SessionRegistry, SessionSpec};
use bridge_mcp::code::{
    CodeServer, CodeTask, LineSink, OrchestrateTask, SessionSource, StepSink, TaskRunner,
};
use bridge_testkit::TempWorkspace;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// A real session of a temp workspace, counted on use.
struct Workspace {
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
struct Scripted {
    seen: Mutex<Vec<CodeTask>>,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    release: Notify,
    hold: std::sync::atomic::AtomicBool,
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
struct Listener {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
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

struct Harness {
    ws: TempWorkspace,
    _audit: tempfile::TempDir,
    audit_dir: std::path::PathBuf,
    source: Arc<Workspace>,
    tasks: Arc<Scripted>,
    client: RunningService<RoleClient, Listener>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
}

async fn harness_with_floor(depth_floor: u64) -> Harness {
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

async fn harness() -> Harness {
    harness_with_floor(0).await
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

impl Harness {
    async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        self.client.peer().call_tool(params(name, args)).await
    }

    async fn ok(&self, name: &str, args: Value) -> CallToolResult {
        let result = self.call(name, args).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
        result
    }

    /// The JSON-RPC error code of a call that must fail as a protocol error.
    async fn error_code(&self, name: &str, args: Value) -> (i32, String) {
        match self.call(name, args).await {
            Err(ServiceError::McpError(err)) => (err.code.0, err.message.to_string()),
            other => panic!("{name}: expected an MCP error, got {other:?}"),
        }
    }
}

fn text(result: &CallToolResult) -> String {
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

#[tokio::test]
async fn tasks_run_one_at_a_time_and_a_waiting_one_hears_its_place() {
    let mut h = harness().await;
    h.tasks.hold.store(true, Ordering::SeqCst);
    let peer = h.client.peer().clone();
    let first = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.call_tool(params(
                "copilot_code_task",
                json!({"prompt": "one", "workingDir": "sub", "timeout": 30}),
            ))
            .await
        }
    });
    // The first is running once the runner has seen it.
    while h.tasks.seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut second_params = params("copilot_code_task", json!({"prompt": "two"}));
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(77)));
    second_params.meta = Some(meta);
    let second = tokio::spawn(async move { peer.call_tool(second_params).await });

    let queued = h.progress.recv().await.unwrap();
    assert_eq!(
        queued.message.as_deref(),
        Some("queued: 1 task ahead of this one")
    );
    assert_eq!(h.tasks.seen.lock().unwrap().len(), 1, "the second waits");

    h.tasks.hold.store(false, Ordering::SeqCst);
    h.tasks.release.notify_one();
    let first = first.await.unwrap().unwrap();
    assert_eq!(text(&first), "done: one");
    let running = h.progress.recv().await.unwrap();
    assert_eq!(running.message.as_deref(), Some("running"));
    assert_eq!(running.progress_token, queued.progress_token);
    assert!(running.progress > queued.progress);
    let second = second.await.unwrap().unwrap();
    assert_eq!(text(&second), "done: two");
    assert_eq!(h.tasks.most_at_once.load(Ordering::SeqCst), 1);

    let seen = h.tasks.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].working_dir.as_deref(),
        Some(std::path::Path::new("sub"))
    );
    assert_eq!(seen[0].timeout, Some(Duration::from_secs(30)));
    assert_eq!(seen[0].onward_depth, 1);
    assert_eq!(seen[1].prompt, "two");
}

#[tokio::test]
async fn the_verbose_tool_numbers_its_steps_and_sends_one_notification_per_tool_call() {
    let mut h = harness().await;
    let mut call = params(
        "copilot_code_verbose",
        json!({"task": "look", "model": "m2"}),
    );
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(5)));
    call.meta = Some(meta);
    let result = h.client.peer().call_tool(call).await.unwrap();
    let shown = text(&result);
    assert!(
        shown.starts_with(
            "## Steps\n\n1. tool read_file {}\n2. ✓ read_file (1 ms)\n\n## Result\n\ndone: look"
        ),
        "{shown}"
    );
    assert!(shown.contains("## Statistics"), "{shown}");
    let note = h.progress.recv().await.unwrap();
    assert_eq!(note.message.as_deref(), Some("2. ✓ read_file (1 ms)"));
    assert!(
        h.progress.try_recv().is_err(),
        "one notification per tool call"
    );
    assert_eq!(h.tasks.seen.lock().unwrap()[0].model.as_deref(), Some("m2"));
    // The plain tool gives the same report without the steps.
    let plain = h
        .client
        .peer()
        .call_tool(params("copilot_code", json!({"task": "look"})))
        .await
        .unwrap();
    assert!(text(&plain).starts_with("done: look"), "{}", text(&plain));
}

#[tokio::test]
async fn orchestrate_checks_its_arguments_and_streams_progress() {
    let mut h = harness().await;
    for bad in [
        json!({"task": " "}),
        json!({"task": "x", "maxConcurrency": 0}),
        json!({"task": "x", "maxConcurrency": 65}),
        json!({"task": "x", "timeout": 0}),
        json!({"task": "x", "colour": "red"}),
    ] {
        let err = h
            .client
            .peer()
            .call_tool(params("copilot_orchestrate", bad.clone()))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("copilot_orchestrate"),
            "{bad}: {err}"
        );
    }
    let mut call = params(
        "copilot_orchestrate",
        json!({"task": "split it", "maxConcurrency": 2}),
    );
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(9)));
    call.meta = Some(meta);
    let result = h.client.peer().call_tool(call).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("no planner here (maxConcurrency 2)"),
        "{}",
        text(&result)
    );
    let note = h.progress.recv().await.unwrap();
    assert_eq!(note.message.as_deref(), Some("Running t1 of split it"));
}

#[tokio::test]
async fn a_task_that_cannot_start_is_an_error_result() {
    let h = harness().await;
    let failed = h
        .call("copilot_code_task", json!({"prompt": "fail"}))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(
        text(&failed),
        "the task could not start: no chat backend is configured"
    );
    // The line is free again.
    assert!(
        h.ok("copilot_code_task", json!({"prompt": "after"}))
            .await
            .is_error
            != Some(true)
    );
}
