//! `copilot-bridge mcp code` end to end: the official MCP Python SDK
//! (tests/peers/python/mcp_probe.py) against the built binary over stdio
//! and against `copilot-bridge serve` at `/mcp/code`; agent tasks against
//! the mock LLM; clean exits; the time to the first tool listing.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_serve::{ChildGuard, Served};
use crate::support::{Bridge, python};

/// Settings that aim the bridge's agent at the mock as an OpenAI backend.
pub(crate) fn mock_env(mock: &MockLlm) -> Vec<(&'static str, String)> {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", dead_url),
        ("COPILOT_BYOK_PROVIDER", "openai".to_owned()),
        ("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url())),
        ("COPILOT_BYOK_API_KEY", "x".to_owned()),
        ("COPILOT_BYOK_MODEL", "m".to_owned()),
    ]
}

/// Runs the probe with `steps` in `bridge`'s state directory.
pub(crate) fn probe(
    python: &Path,
    mode: &[&str],
    env: &[(&str, String)],
    bridge: &Bridge,
    steps: Value,
) -> Vec<Value> {
    crate::support::mcp_probe(python, mode, env, bridge.state.path(), steps)
}

pub(crate) fn stdio_mode(ws: &TempWorkspace) -> Vec<String> {
    vec![
        "stdio".to_owned(),
        "--".to_owned(),
        assert_cmd::cargo::cargo_bin("copilot-bridge")
            .display()
            .to_string(),
        "mcp".to_owned(),
        "code".to_owned(),
        "--cwd".to_owned(),
        ws.path().display().to_string(),
    ]
}

pub(crate) fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// A bridge whose workspaces are writable (they are read-only by default).
pub(crate) fn writable_bridge() -> Bridge {
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "read_only = false\n",
    )
    .unwrap();
    bridge
}

pub(crate) fn workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write("src/greeting.txt", "hello world\n");
    ws
}

/// A task that reads a file, then answers.
pub(crate) fn reading_task(mock: &MockLlm) {
    mock.push(MockReply::ToolCalls {
        text: None,
        calls: vec![MockToolCall::new(
            "call_read",
            "read_file",
            r#"{"path": "src/greeting.txt"}"#,
        )],
    });
    mock.push(MockReply::text("The greeting says **hello world**."));
}

/// Every tool and every kind of bad input, in one connection.
fn every_tool_and_bad_input(
    python: &Path,
    mode: &[&str],
    env: &[(&str, String)],
    bridge: &Bridge,
    ws: &TempWorkspace,
    mock: &MockLlm,
) {
    reading_task(mock);
    let huge = "x".repeat(1024 * 1024 + 1);
    let results = probe(
        python,
        mode,
        env,
        bridge,
        json!([
            {"list": true},
            {"call": "copilot_read_file", "args": {"path": "src/greeting.txt"}},
            {"call": "copilot_create_file", "args": {"path": "docs/new.md", "content": "# new\n"}},
            {"call": "copilot_list_files", "args": {"directory": "docs"}},
            {"call": "copilot_code_task", "args": {"prompt": "What does the greeting say?"}},
            {"call": "copilot_no_such_tool", "args": {}},
            {"call": "copilot_read_file", "args": {"path": "src/greeting.txt", "_depth": "x"}},
            {"call": "copilot_read_file", "args": {"path": "src/greeting.txt", "_depth": 3}},
            {"call": "copilot_list_files", "args": {"directory": 42}},
            {"call": "copilot_create_file", "args": {"path": "big.txt", "content": huge}},
            {"call": "copilot_read_file", "args": {"path": "../outside.txt"}},
            {"call": "copilot_read_file", "args": {"path": "docs/new.md"}}
        ]),
    );
    let names: Vec<&str> = results[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
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
    for tool in results[0]["tools"].as_array().unwrap() {
        assert_eq!(
            tool["inputSchema"]["properties"]["_depth"]["type"],
            "integer"
        );
    }
    assert_eq!(results[1]["isError"], false);
    assert_eq!(first_text(&results[1]), "hello world\n");
    assert_eq!(first_text(&results[2]), "created docs/new.md (6 bytes)");
    assert_eq!(ws.read("docs/new.md"), "# new\n");
    assert_eq!(first_text(&results[3]), "docs/new.md");
    assert_eq!(results[4]["isError"], false, "{}", results[4]);
    assert_eq!(
        first_text(&results[4]),
        "The greeting says **hello world**."
    );
    assert_eq!(results[4]["structuredContent"]["status"], "completed");
    assert_eq!(
        results[4]["structuredContent"]["toolCalls"],
        json!([{"name": "read_file", "ok": true}])
    );
    assert_eq!(results[5]["error"]["code"], -32602, "{}", results[5]);
    assert_eq!(results[6]["error"]["code"], -32602, "{}", results[6]);
    assert_eq!(results[7]["isError"], true);
    assert!(
        first_text(&results[7]).contains("call depth 3"),
        "{}",
        results[7]
    );
    assert_eq!(results[8]["error"]["code"], -32602, "{}", results[8]);
    assert_eq!(results[9]["error"]["code"], -32602);
    assert!(
        results[9]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 1048576 bytes")
    );
    assert!(!ws.path().join("big.txt").exists());
    assert_eq!(results[10]["isError"], true);
    assert!(
        first_text(&results[10]).starts_with("policy_denied"),
        "{}",
        results[10]
    );
    assert_eq!(first_text(&results[11]), "# new\n", "still serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_calls_every_tool_over_stdio() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let (bridge, ws) = (writable_bridge(), workspace());
    let mode = stdio_mode(&ws);
    let env = mock_env(&mock);
    tokio::task::spawn_blocking(move || {
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        every_tool_and_bad_input(&python, &mode, &env, &bridge, &ws, &mock);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_calls_every_tool_over_streamable_http() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let env = mock_env(&mock);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = Served::start_in(writable_bridge(), workspace(), &env_refs);
    // Without the token: refused before MCP.
    let refused = reqwest::Client::new()
        .post(served.url("/mcp/code"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let url = served.url("/mcp/code");
    tokio::task::spawn_blocking(move || {
        let mode = ["http", url.as_str(), "--token", served.token.as_str()];
        let probe_bridge = Bridge::new();
        every_tool_and_bad_input(&python, &mode, &[], &probe_bridge, &served.workspace, &mock);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_tasks_run_one_after_the_other_and_the_second_hears_its_place() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(vec![
        MockReply::Slow {
            chunks: vec!["first ".into(), "done".into()],
            delay_ms: 300,
        },
        MockReply::text("second done"),
    ])
    .await;
    let (bridge, ws) = (Bridge::new(), workspace());
    let mode = stdio_mode(&ws);
    let env = mock_env(&mock);
    let results = tokio::task::spawn_blocking(move || {
        let mode: Vec<&str> = mode.iter().map(String::as_str).collect();
        probe(
            &python,
            &mode,
            &env,
            &bridge,
            json!([{"parallel": [
                {"call": "copilot_code_task", "args": {"prompt": "one"}, "progress": true},
                {"call": "copilot_code_task", "args": {"prompt": "two"}, "progress": true}
            ]}]),
        )
    })
    .await
    .unwrap();
    // Whichever reached the server first ran first (and got the slow
    // answer); the other waited in line, hearing its place, then ran.
    let messages = |result: &Value| -> Vec<String> {
        result["progress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["message"].as_str().unwrap().to_owned())
            .collect()
    };
    let (ran_first, waited) = if messages(&results[0][0]).is_empty() {
        (&results[0][0], &results[0][1])
    } else {
        (&results[0][1], &results[0][0])
    };
    assert_eq!(first_text(ran_first), "first done", "{ran_first}");
    assert!(messages(ran_first).is_empty());
    assert_eq!(first_text(waited), "second done", "{waited}");
    assert_eq!(
        messages(waited),
        ["queued: 1 task ahead of this one", "running"]
    );
    let chats = mock
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(chats, 2);
}

/// `copilot-bridge mcp code` as a raw process, speaking JSON lines.
struct Raw {
    child: ChildGuard,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Raw {
    fn start(bridge: &Bridge, ws: &TempWorkspace) -> Self {
        Self::start_with(bridge, ws, &[])
    }

    fn start_with(bridge: &Bridge, ws: &TempWorkspace, env: &[(&str, &str)]) -> Self {
        let mut child = crate::cli_serve::command(bridge.state.path())
            .args(["mcp", "code", "--cwd"])
            .arg(ws.path())
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child: ChildGuard(child),
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.0.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = self.lines.next().unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        );
        assert!(self.answer(0)["result"]["serverInfo"]["name"] == "copilot-bridge-code");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Waits (bounded) for the process to exit; its status code.
    fn exit_code_within(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn starts_lazily_answers_malformed_calls_and_exits_cleanly_when_stdin_closes() {
    let (bridge, ws) = (Bridge::new(), workspace());
    let started = Instant::now();
    let mut raw = Raw::start(&bridge, &ws);
    raw.initialize();
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(
        raw.answer(1)["result"]["tools"].as_array().unwrap().len(),
        7
    );
    eprintln!("spawn to first tools/list: {:?}", started.elapsed());
    // Arguments that are not an object: invalid params, and still serving.
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "copilot_read_file", "arguments": "src/greeting.txt"}}));
    assert_eq!(raw.answer(2)["error"]["code"], -32602);
    raw.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "copilot_read_file", "arguments": {"path": "src/greeting.txt"}}}));
    assert_eq!(
        raw.answer(3)["result"]["content"][0]["text"],
        "hello world\n"
    );
    drop(raw.child.0.stdin.take());
    assert_eq!(raw.exit_code_within(Duration::from_secs(3)), Some(0));
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let (bridge, ws) = (Bridge::new(), workspace());
    let mut raw = Raw::start(&bridge, &ws);
    raw.initialize();
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    raw.answer(1);
    let pid = rustix::process::Pid::from_raw(raw.child.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert_eq!(raw.exit_code_within(Duration::from_secs(3)), Some(0));
}

/// `mcp code` over stdio exports its spans (docs/telemetry.md): the
/// `tools/call` continuing the client's `_meta.traceparent`, the tool call
/// under it — flushed when stdin closes and the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_it_exports_its_spans_before_it_exits() {
    use bridge_testkit::otlp::OtlpReceiver;
    const TRACE_ID: &str = "5bf92f3577b34da6a3ce929d0e0e4737";
    let receiver = OtlpReceiver::start().await;
    let endpoint = receiver.endpoint();
    let (bridge, ws) = (Bridge::new(), workspace());
    // A batch delay far longer than the test: only the flush at exit sends.
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
    ];
    let mut raw = Raw::start_with(&bridge, &ws, &env);
    raw.initialize();
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "copilot_read_file", "arguments": {"path": "src/greeting.txt"},
                   "_meta": {"traceparent": format!("00-{TRACE_ID}-00f067aa0ba902b7-01")}}}));
    assert_eq!(
        raw.answer(1)["result"]["content"][0]["text"],
        "hello world\n"
    );
    drop(raw.child.0.stdin.take());
    assert_eq!(raw.exit_code_within(Duration::from_secs(15)), Some(0));

    let spans = receiver.spans();
    let request = spans
        .iter()
        .find(|span| span.name == "tools/call copilot_read_file")
        .unwrap_or_else(|| panic!("exported at exit: {spans:#?}"));
    assert_eq!(request.trace_id, TRACE_ID);
    let tool = spans
        .iter()
        .find(|span| span.name == "execute_tool read_file")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert_eq!(tool.parent_span_id, request.span_id);
    assert_eq!(tool.attributes["copilot_bridge.decision"], "allow");
}

/// Every door that runs a task runs it with the settings of the
/// configuration: a task started through the daemon's `/mcp/code` gets the
/// configured project context, as `copilot-bridge run` does (both are
/// composed by `bridge_compose`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_through_the_daemon_gets_the_project_context_run_gets() {
    let Some(python) = python() else { return };
    const CONTEXT: &str = "House rule 7: greetings are answered in Esperanto.";
    let mock = MockLlm::start(Vec::new()).await;
    let mut env = mock_env(&mock);
    env.push(("COPILOT_PROJECT_CONTEXT", CONTEXT.to_owned()));
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = Served::start_in(writable_bridge(), workspace(), &env_refs);
    mock.push(MockReply::text("Saluton!"));
    let url = served.url("/mcp/code");
    let token = served.token.clone();
    let results = tokio::task::spawn_blocking(move || {
        let mode = ["http", url.as_str(), "--token", token.as_str()];
        probe(
            &python,
            &mode,
            &[],
            &Bridge::new(),
            json!([{"call": "copilot_code_task", "args": {"prompt": "Say hello."}}]),
        )
    })
    .await
    .unwrap();
    assert_eq!(first_text(&results[0]), "Saluton!", "{results:?}");

    mock.push(MockReply::text("Saluton!"));
    let mut run = Bridge::new().cmd();
    run.envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .args(["run", "Say hello.", "--cwd"])
        .arg(served.workspace.path())
        .timeout(Duration::from_secs(60))
        .assert()
        .success();

    let prompts: Vec<String> = mock
        .requests()
        .iter()
        .filter(|request| request.path.ends_with("/chat/completions"))
        .map(|request| request.body["messages"].to_string())
        .collect();
    assert_eq!(prompts.len(), 2, "one model request per door: {prompts:?}");
    for (door, prompt) in ["/mcp/code", "run"].iter().zip(&prompts) {
        assert!(
            prompt.contains(CONTEXT),
            "{door} did not send the project context: {prompt}"
        );
    }
}
