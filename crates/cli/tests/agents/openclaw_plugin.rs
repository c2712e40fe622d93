//! The OpenClaw plugin (crates/agents/assets/openclaw-plugin/index.js) under
//! the pinned Node 24, driven by a small stand-in for OpenClaw's plugin
//! `api` (openclaw_plugin_harness.mjs: `register`, the tool factory with the
//! agent's `ctx.workspaceDir`, `execute(toolCallId, params, signal,
//! onUpdate)`), against a real daemon whose backend is the mock. The
//! harness prints what happened as one JSON document: every partial result
//! handed to `onUpdate`, the result, whether `execute` threw.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, TempWorkspace, agent_cli};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{chat_requests, serve_with_env};
use crate::cli_serve::Served;

/// A harness run: Node's start, the plugin's calls, the daemon's tasks.
pub(super) const HARNESS_PATIENCE: Duration = Duration::from_secs(60);

pub(super) const TOOLS: [&str; 3] = [
    "copilot_code",
    "copilot_code_verbose",
    "copilot_orchestrate",
];

/// The pinned Node 24 (scripts/install-test-deps.sh); without it the test
/// is skipped loudly, and fails in CI.
pub(super) fn node() -> Option<PathBuf> {
    agent_cli("node24", "node")
}

/// The daemon with the mock as its backend, allowed to write.
pub(super) fn writable_daemon(mock: &MockLlm) -> Served {
    serve_with_env(
        mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_READ_ONLY", "false")],
    )
}

/// The harness as a child process: its input sent as the first line of
/// its stdin, its output read line by line.
pub(super) struct Harness {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

impl Harness {
    /// Starts the harness with `input`, nothing of the developer's
    /// environment but PATH, HOME = `home`, `env`, in `cwd`.
    pub(super) async fn start(
        node: &Path,
        input: &Value,
        home: &Path,
        cwd: &Path,
        env: &[(&str, &str)],
    ) -> Self {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/openclaw_plugin_harness.mjs");
        let mut command = tokio::process::Command::new(node);
        command
            .arg(script)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .envs(env.iter().copied())
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("node starts");
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{input}\n").as_bytes())
            .await
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
            stderr,
        }
    }

    /// The next line of stdout as JSON.
    pub(super) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(HARNESS_PATIENCE, self.lines.next_line())
            .await
            .expect("the harness answers in time")
            .unwrap()
            .unwrap_or_else(|| panic!("the harness printed nothing more"));
        serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("the harness printed no JSON ({err}): {line}"))
    }

    /// Waits until the harness said the call (with `abort.onStdin`) runs.
    pub(super) async fn running(&mut self) {
        let line = self.next().await;
        assert!(line.get("running").is_some(), "{line}");
    }

    /// Fires the running call's AbortSignal.
    pub(super) async fn abort(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"abort\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// What happened, once the harness is done.
    pub(super) async fn report(mut self) -> Value {
        drop(self.stdin.take());
        let report = self.next().await;
        let status = tokio::time::timeout(HARNESS_PATIENCE, self.child.wait())
            .await
            .expect("the harness exits")
            .unwrap();
        let stderr = self.stderr.await.unwrap();
        assert!(status.success(), "harness: {status}\nstderr: {stderr}");
        assert!(
            report.get("harnessError").is_none(),
            "{report}\nstderr: {stderr}"
        );
        report
    }
}

/// One harness run to its end.
pub(super) async fn run_harness(
    node: &Path,
    input: &Value,
    home: &Path,
    env: &[(&str, &str)],
) -> Value {
    Harness::start(node, input, home, home, env)
        .await
        .report()
        .await
}

/// The text of an OpenClaw tool result (or partial result), checking its
/// shape on the way: `{content: [{type: "text", text}], details: {...}}`.
pub(super) fn text_of(result: &Value) -> String {
    let content = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("content is a list: {result}"));
    assert!(!content.is_empty(), "{result}");
    assert!(result["details"].is_object(), "details: {result}");
    content
        .iter()
        .map(|block| {
            assert_eq!(block["type"], "text", "{result}");
            block["text"]
                .as_str()
                .unwrap_or_else(|| panic!("a text block: {result}"))
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one call of `report`, which returned (did not throw).
pub(super) fn only_call(report: &Value) -> &Value {
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{report}");
    returned(&calls[0])
}

pub(super) fn returned(call: &Value) -> &Value {
    assert_eq!(call["threw"], Value::Null, "execute does not throw: {call}");
    call
}

pub(super) fn updates(call: &Value) -> &[Value] {
    call["updates"].as_array().unwrap()
}

/// Neither the daemon's token nor anything like it reaches OpenClaw.
pub(super) fn assert_no_token(report: &Value, token: &str) {
    assert!(!token.is_empty());
    let printed = report.to_string();
    assert!(
        !printed.contains(token),
        "the token is in what OpenClaw got: {printed}"
    );
    assert!(!printed.contains("Bearer"), "{printed}");
}

/// Every event of the daemon's session logs.
pub(super) fn session_events(state: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(state.join("sessions")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
        .flat_map(|entry| {
            std::fs::read_to_string(entry.path())
                .unwrap_or_default()
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect::<Vec<Value>>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_code_verbose_streams_its_steps_and_works_in_the_agents_workspace() {
    const TASK: &str = "VERBOSE: create hello.txt, then read it back";
    const IN_SUB: &str = "RELATIVE: create there.txt where you are";
    /// How long the model takes over its final answer: the steps before it
    /// reach OpenClaw at least this long before the result does.
    const LAST_TURN_MS: u64 = 400;
    let Some(node) = node() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    mock.route(
        TASK,
        MockReply::tool_call(
            "call_w_1",
            "create_file",
            &json!({"path": "hello.txt", "content": "hello from the plugin\n"}),
        ),
    );
    mock.route(
        TASK,
        MockReply::tool_call("call_r_1", "read_file", &json!({"path": "hello.txt"})),
    );
    mock.route(
        TASK,
        MockReply::Slow {
            chunks: vec!["I created and read hello.txt.".into()],
            delay_ms: LAST_TURN_MS,
        },
    );
    mock.route(
        IN_SUB,
        MockReply::tool_call(
            "call_w_2",
            "create_file",
            &json!({"path": "there.txt", "content": "in sub\n"}),
        ),
    );
    mock.route(IN_SUB, MockReply::text("I created there.txt."));
    let served = writable_daemon(&mock);
    // OpenClaw's agent works elsewhere than the daemon.
    let agent = TempWorkspace::new();
    std::fs::create_dir(agent.path().join("sub")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let report = run_harness(
        &node,
        &json!({
            // A binary that does not exist: the running daemon is found,
            // none is started.
            "pluginConfig": {"home": served.state(), "binary": "/nonexistent/copilot-bridge"},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [
                {"tool": "copilot_code_verbose", "toolCallId": "call-verbose", "params": {"task": TASK}},
                {"tool": "copilot_code_verbose", "toolCallId": "call-sub", "params": {"task": IN_SUB, "workingDir": "sub"}}
            ]
        }),
        home.path(),
        &[],
    )
    .await;
    eprintln!(
        "two verbose tasks through the plugin: {:?}",
        started.elapsed()
    );

    // What OpenClaw got from `register`: one factory for the three tools,
    // each visible to the model by name.
    assert_eq!(
        report["registered"],
        json!([{"factory": true, "opts": {"names": TOOLS}}])
    );
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS);
    for tool in tools {
        assert_eq!(tool["catalogMode"], "direct-only", "{tool}");
        assert_eq!(tool["hasExecute"], true, "{tool}");
        assert_eq!(tool["parameters"]["required"], json!(["task"]), "{tool}");
    }

    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{report}");
    let verbose = returned(&calls[0]);
    let workspace = agent.path().display().to_string();
    // A partial result per tool call of the daemon's loop, while it ran.
    let partials = updates(verbose);
    assert!(partials.len() >= 2, "{verbose}");
    assert_eq!(verbose["updatesBeforeReturn"], partials.len(), "{verbose}");
    let mut last_steps = 0;
    for update in partials {
        let partial = &update["partial"];
        let text = text_of(partial);
        assert_eq!(partial["content"].as_array().unwrap().len(), 1, "{partial}");
        // The tool-call steps so far, numbered as in the whole step log.
        let numbers: Vec<u64> = text
            .lines()
            .map(|line| {
                line.split_once(". ")
                    .and_then(|(number, _)| number.parse().ok())
                    .unwrap_or_else(|| panic!("a numbered step: {text}"))
            })
            .collect();
        assert!(numbers.is_sorted_by(|a, b| a < b), "{text}");
        let details = &partial["details"];
        assert_eq!(details["status"], "running", "{partial}");
        assert_eq!(details["tool"], "copilot_code_verbose", "{partial}");
        assert_eq!(details["workingDir"], workspace, "{partial}");
        let steps = details["steps"].as_u64().unwrap();
        assert!(steps > last_steps, "each update adds a step: {partials:?}");
        assert_eq!(text.lines().count() as u64, steps, "{text}");
        last_steps = steps;
    }
    let texts: Vec<String> = partials.iter().map(|u| text_of(&u["partial"])).collect();
    let first_with = |needle: &str| {
        partials
            .iter()
            .zip(&texts)
            .find(|(_, text)| text.contains(needle))
            .map(|(update, _)| update["atMs"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("no update with {needle}: {texts:?}"))
    };
    let elapsed = verbose["elapsedMs"].as_u64().unwrap();
    let created = first_with("✓ create_file");
    let read = first_with("✓ read_file");
    assert!(created <= read, "{texts:?}");
    // Streamed, not sent at the end: the update arrived well before the
    // result (the last turn's update races the start of that turn's
    // request by a few ms, so half the turn's delay is the margin).
    assert!(
        read + LAST_TURN_MS / 2 <= elapsed,
        "the steps were streamed before the model's last turn ended: read at {read} ms, result at {elapsed} ms"
    );
    // The result: the numbered step log, then the daemon's report.
    let result = &verbose["result"];
    let text = text_of(result);
    let (steps, rest) = text
        .strip_prefix("## Steps\n\n")
        .and_then(|text| text.split_once("\n\n## Result\n\n"))
        .unwrap_or_else(|| panic!("the step log, then the result: {text}"));
    for (index, line) in steps.lines().enumerate() {
        assert!(
            line.starts_with(&format!("{}. ", index + 1)),
            "step {}: {steps}",
            index + 1
        );
    }
    assert!(steps.starts_with("1. turn 1: asking the model"), "{steps}");
    assert!(
        steps.contains("✓ create_file") && steps.contains("✓ read_file"),
        "{steps}"
    );
    assert!(rest.starts_with("I created and read hello.txt."), "{rest}");
    assert!(
        rest.contains("## Tool calls") && rest.contains("`create_file`"),
        "{rest}"
    );
    let details = &result["details"];
    assert_eq!(details["status"], "completed", "{result}");
    assert_eq!(details["tool"], "copilot_code_verbose", "{result}");
    assert_eq!(details["workingDir"], workspace, "{result}");
    assert_eq!(details["steps"], partials.len(), "{result}");
    assert!(details["structured"].is_object(), "{result}");
    assert_eq!(
        std::fs::read_to_string(agent.path().join("hello.txt")).unwrap(),
        "hello from the plugin\n",
        "the file is in the agent's workspace"
    );
    assert!(!served.workspace.path().join("hello.txt").exists());

    // A relative workingDir is taken from the agent's workspace.
    let relative = returned(&calls[1]);
    let result = &relative["result"];
    assert!(
        text_of(result).contains("I created there.txt."),
        "{relative}"
    );
    assert_eq!(result["details"]["status"], "completed", "{result}");
    assert_eq!(
        result["details"]["workingDir"],
        agent.path().join("sub").display().to_string()
    );
    assert!(!updates(relative).is_empty(), "{relative}");
    assert_eq!(
        std::fs::read_to_string(agent.path().join("sub/there.txt")).unwrap(),
        "in sub\n"
    );
    assert!(!agent.path().join("there.txt").exists());
    assert!(!served.workspace.path().join("there.txt").exists());
    assert!(!served.workspace.path().join("sub").exists());

    assert_eq!(mock.routed_remaining(), 0);
    assert_eq!(chat_requests(&mock).len(), 5);
    assert_no_token(&report, &served.token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_orchestrate_returns_a_report_per_sub_task() {
    let Some(node) = node() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    // The planner's answer: two independent read-only sub-tasks, one wave.
    mock.push(MockReply::text(
        json!({"tasks": [
            {"id": "t1", "description": "Name the first colour", "estimatedComplexity": "S", "files": [], "readOnly": true},
            {"id": "t2", "description": "Name the second colour", "estimatedComplexity": "S", "files": [], "readOnly": true}],
            "dependencies": {}})
        .to_string(),
    ));
    mock.route(
        "Your sub-task (t1)",
        MockReply::text("t1: the first colour is teal"),
    );
    mock.route(
        "Your sub-task (t2)",
        MockReply::text("t2: the second colour is amber"),
    );
    let served = writable_daemon(&mock);
    let agent = TempWorkspace::new();
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let report = run_harness(
        &node,
        &json!({
            "pluginConfig": {"home": served.state()},
            "ctx": {"workspaceDir": agent.path()},
            "calls": [{"tool": "copilot_orchestrate", "params": {"task": "Name two colours", "maxConcurrency": 2}}]
        }),
        home.path(),
        &[],
    )
    .await;
    eprintln!(
        "an orchestration through the plugin: {:?}",
        started.elapsed()
    );
    let call = only_call(&report);
    let result = &call["result"];
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "progress, then the report: {result}");
    let progress = content[0]["text"].as_str().unwrap();
    assert!(progress.starts_with("## Progress\n\n1. "), "{progress}");
    let markdown = content[1]["text"].as_str().unwrap();
    assert!(
        markdown.starts_with("## Orchestrated: completed"),
        "{markdown}"
    );
    for (id, answer) in [
        ("t1", "t1: the first colour is teal"),
        ("t2", "t2: the second colour is amber"),
    ] {
        assert!(
            markdown.contains(&format!("| {id} | completed | 1 |")),
            "{markdown}"
        );
        let section = markdown
            .split_once(&format!("\n### {id}: "))
            .map(|(_, rest)| rest)
            .unwrap_or_else(|| panic!("a section for {id}: {markdown}"));
        let section = section.split("\n### ").next().unwrap();
        assert!(section.contains(answer), "{id}: {section}");
    }
    let details = &result["details"];
    assert_eq!(details["status"], "completed", "{result}");
    assert_eq!(details["tool"], "copilot_orchestrate");
    assert_eq!(details["workingDir"], agent.path().display().to_string());
    let structured = &details["structured"];
    assert_eq!(structured["status"], "completed", "{structured}");
    assert_eq!(structured["waves"], json!([["t1", "t2"]]), "{structured}");
    // Each sub-task's start and end streamed as it happened.
    let texts: Vec<String> = updates(call)
        .iter()
        .map(|u| text_of(&u["partial"]))
        .collect();
    for expected in [
        "Running t1 (wave 1",
        "Running t2 (wave 1",
        "Finished t1 in",
        "Finished t2 in",
    ] {
        assert!(
            texts.iter().any(|text| text.contains(expected)),
            "{expected}: {texts:?}"
        );
        assert!(progress.contains(expected), "{expected}: {progress}");
    }
    for update in updates(call) {
        assert_eq!(update["partial"]["details"]["status"], "running");
        assert_eq!(update["partial"]["details"]["tool"], "copilot_orchestrate");
    }
    assert_eq!(mock.routed_remaining(), 0);
    assert_eq!(mock.remaining(), 0, "the plan was asked for");
    assert_no_token(&report, &served.token);
}
