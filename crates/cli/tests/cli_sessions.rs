//! `copilot-bridge sessions list|show|rm|resume` on real session files.

use std::path::PathBuf;
use std::process::Stdio;

use bridge_engine::log::{replay, session_file};
use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use predicates::str::contains;
use serde_json::{Value, json};

use crate::cli_serve::{ChildGuard, command, wait_until};
use crate::support::{Bridge, stdout_json};

fn line(seq: u64, kind: &str, data: Value) -> String {
    let event = json!({"seq": seq, "id": format!("e{seq}"), "parentId": null,
        "timestamp": format!("2026-11-21T10:00:{seq:02}.000Z"), "type": kind, "data": data});
    format!("{event}\n")
}

fn sessions_dir(bridge: &Bridge) -> PathBuf {
    bridge.state.path().join("sessions")
}

fn write_session(bridge: &Bridge, id: &str, text: &str) -> PathBuf {
    let dir = sessions_dir(bridge);
    std::fs::create_dir_all(&dir).unwrap();
    let path = session_file(&dir, id);
    std::fs::write(&path, text).unwrap();
    path
}

/// A finished run: a prompt, two tool calls (one failed), an answer.
fn finished_session(cwd: &str) -> String {
    [
        line(
            1,
            "session.start",
            json!({"sessionId": "s-done", "model": "m", "runner": "native", "cwd": cwd}),
        ),
        line(
            2,
            "user.message",
            json!({"content": "fix the failing test"}),
        ),
        line(
            3,
            "session.usage",
            json!({"promptTokens": 100, "completionTokens": 20}),
        ),
        line(
            4,
            "assistant.message",
            json!({"content": "Let me look.", "toolRequests": [
            {"toolCallId": "c1", "name": "read_file", "arguments": {"path": "src/lib.rs"}},
            {"toolCallId": "c2", "name": "run_shell", "arguments": {"command": "cargo test"}}]}),
        ),
        line(
            5,
            "tool.execution_complete",
            json!({"toolCallId": "c1", "toolName": "read_file",
            "success": true, "result": {"content": "fn answer() -> u32 { 41 }"}, "durationMs": 2}),
        ),
        line(
            6,
            "tool.execution_complete",
            json!({"toolCallId": "c2", "toolName": "run_shell",
            "success": false, "error": {"message": "exit status 101", "code": "exit_status"}}),
        ),
        line(
            7,
            "session.error",
            json!({"errorType": "model", "message": "429 slow down"}),
        ),
        line(
            8,
            "assistant.message",
            json!({"content": "Fixed the off-by-one.", "toolRequests": []}),
        ),
        line(
            9,
            "session.idle",
            json!({"status": "completed", "turns": 2, "toolCalls": 2}),
        ),
    ]
    .concat()
}

#[test]
fn list_without_sessions_says_so() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .args(["sessions", "list"])
        .assert()
        .success()
        .stdout(contains("No sessions"));
    let output = bridge
        .cmd()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(stdout_json(&output), json!([]));
}

#[test]
fn list_shows_status_events_and_first_prompt() {
    let bridge = Bridge::new();
    write_session(&bridge, "s-done", &finished_session("/w"));
    let crashed = [
        line(1, "session.start", json!({})),
        line(
            2,
            "user.message",
            json!({"content": "long task\nwith details"}),
        ),
        line(3, "tool.execution_start", json!({"toolCallId": "c1"})),
    ]
    .concat()
        + "{\"seq\":4,\"id\":";
    write_session(&bridge, "s-crashed", &crashed);
    std::fs::write(sessions_dir(&bridge).join("not a session.jsonl"), "x").unwrap();

    let output = bridge
        .cmd()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let list = stdout_json(&output);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let find = |id: &str| list.iter().find(|s| s["id"] == id).unwrap().clone();
    let done = find("s-done");
    assert_eq!(
        (done["status"].as_str(), done["events"].as_u64()),
        (Some("idle"), Some(9))
    );
    assert_eq!(done["firstPrompt"], "fix the failing test");
    assert_eq!(done["lastRun"], "completed");
    let crashed = find("s-crashed");
    assert_eq!(
        (crashed["status"].as_str(), crashed["events"].as_u64()),
        (Some("interrupted"), Some(3))
    );
    assert_eq!(crashed["firstPrompt"], "long task…");

    let table = bridge.cmd().args(["sessions", "list"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let done_row = table.lines().find(|l| l.starts_with("s-done ")).unwrap();
    assert!(
        done_row.contains("idle") && done_row.contains("fix the failing test"),
        "{table}"
    );
}

/// The mock serves on the runtime's workers while this thread waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_right_after_its_start_is_listed_interrupted() {
    let mock = MockLlm::start(vec![MockReply::text("never asked")]).await;
    let bridge = Bridge::new();
    let workspace = TempWorkspace::new();
    // An MCP server that never answers its handshake holds the run between
    // `session.start` and its first prompt; it exits once its stdin closes
    // (when the run dies).
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "[mcp.servers.stuck]\ncommand = \"sh\"\nargs = [\"-c\", \"cat > /dev/null\"]\n",
    )
    .unwrap();
    let mut run = command(bridge.state.path());
    run.env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", "http://127.0.0.1:9")
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m")
        .args(["run", "a task that never starts", "--cwd"])
        .arg(workspace.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut run = ChildGuard(run.spawn().unwrap());
    let dir = sessions_dir(&bridge);
    let started = || {
        let logs = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        logs.filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
            .any(|text| text.contains("\"session.start\""))
    };
    wait_until("the run logs session.start", started);
    run.kill().unwrap();
    run.wait().unwrap();

    let output = bridge
        .cmd()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let list = stdout_json(&output);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["events"], 1, "killed before its prompt: {list}");
    assert_eq!(list[0]["status"], "interrupted", "{list}");
    let chats = mock.requests().into_iter();
    let mut chats = chats.filter(|r| r.path == "/v1/chat/completions");
    assert!(chats.next().is_none(), "the model was never asked");
}

#[test]
fn show_prints_a_transcript_with_tool_status_errors_and_usage() {
    let bridge = Bridge::new();
    write_session(&bridge, "s-done", &finished_session("/w"));
    let output = bridge
        .cmd()
        .args(["sessions", "show", "s-done"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "# Session s-done",
        "## Prompt",
        "fix the failing test",
        "Let me look.",
        "- ✓ read_file {\"path\":\"src/lib.rs\"} (2 ms) → fn answer() -> u32 { 41 }",
        "- ✗ run_shell {\"command\":\"cargo test\"}: exit status 101 [exit_status]",
        "**Error** (model)",
        "429 slow down",
        "Fixed the off-by-one.",
        "Run completed",
        "Usage: 1 model requests, 100 prompt + 20 completion tokens",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(!text.contains("Skipped"), "{text}");
}

#[test]
fn show_of_a_damaged_log_prints_what_it_can_and_names_what_it_skipped() {
    let bridge = Bridge::new();
    let mut lines: Vec<String> = finished_session("/w")
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    // A corrupt line and binary junk in the middle (file lines 4 and 5), and
    // a torn tail (line 12).
    lines.insert(3, "{\"seq\": 4, \"broken\n\u{fffd}\u{0}\n".to_owned());
    let mut text = lines.concat();
    text.push_str("{\"seq\":10,\"id\":\"e10\",\"ty");
    write_session(&bridge, "s-bad", &text);

    let output = bridge
        .cmd()
        .args(["sessions", "show", "s-bad"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("Fixed the off-by-one."), "{stdout}");
    assert!(
        stdout.contains("Skipped 2 unreadable line(s) of the log: 4, 5"),
        "{stdout}"
    );
    assert!(
        stdout.contains("The last line (12) was cut short"),
        "{stdout}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("2 unreadable line(s)"), "{stderr}");

    let output = bridge
        .cmd()
        .args(["sessions", "show", "s-bad", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json = stdout_json(&output);
    assert_eq!(json["events"].as_array().unwrap().len(), 9);
    assert_eq!(json["skipped"][0]["line"], 4);
    assert_eq!(json["tornTail"], 12);
}

#[test]
fn show_and_rm_refuse_bad_ids_unknown_sessions_and_non_files() {
    let bridge = Bridge::new();
    std::fs::create_dir_all(sessions_dir(&bridge)).unwrap();
    // A file the id "../outside" would name if ids were not checked.
    std::fs::write(
        bridge.state.path().join("outside.jsonl"),
        line(1, "session.start", json!({})),
    )
    .unwrap();
    for command in [
        ["sessions", "show", "../outside"],
        ["sessions", "rm", "../outside"],
    ] {
        bridge
            .cmd()
            .args(command)
            .assert()
            .code(2)
            .stderr(contains("invalid session id"));
    }
    assert!(bridge.state.path().join("outside.jsonl").exists());
    for command in [["sessions", "show", "nope"], ["sessions", "rm", "nope"]] {
        bridge
            .cmd()
            .args(command)
            .assert()
            .code(2)
            .stderr(contains("no session nope"));
    }
    std::fs::create_dir(session_file(&sessions_dir(&bridge), "dir")).unwrap();
    for command in [["sessions", "show", "dir"], ["sessions", "rm", "dir"]] {
        bridge
            .cmd()
            .args(command)
            .assert()
            .code(1)
            .stderr(contains("not a regular file"));
    }
}

#[test]
fn rm_removes_the_log() {
    let bridge = Bridge::new();
    let path = write_session(&bridge, "s-done", &finished_session("/w"));
    bridge
        .cmd()
        .args(["sessions", "rm", "s-done"])
        .assert()
        .success()
        .stdout(contains("removed session s-done"));
    assert!(!path.exists());
    bridge
        .cmd()
        .args(["sessions", "rm", "s-done"])
        .assert()
        .code(2);
}

#[test]
fn resume_of_an_unknown_or_invalid_session_is_a_usage_error() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .args(["sessions", "resume", "nope", "go on"])
        .assert()
        .code(2)
        .stderr(contains("no session nope"));
    bridge
        .cmd()
        .args(["sessions", "resume", "a/b", "go on"])
        .assert()
        .code(2)
        .stderr(contains("invalid session id"));
}

/// The binary blocks this thread; the mock serves on the worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continues_the_conversation_and_the_log() {
    let mock = MockLlm::start(vec![MockReply::text("The second task is done.")]).await;
    let bridge = Bridge::new();
    let workspace = TempWorkspace::new();
    let cwd = workspace.path().to_str().unwrap().to_owned();
    let history = [
        line(
            1,
            "session.start",
            json!({"sessionId": "s-prev", "runner": "native", "cwd": cwd, "model": "m"}),
        ),
        line(2, "user.message", json!({"content": "first task"})),
        line(
            3,
            "assistant.message",
            json!({"content": "first answer", "toolRequests": []}),
        ),
        line(4, "session.idle", json!({"status": "completed"})),
    ]
    .concat();
    // A crash left half a line.
    let path = write_session(&bridge, "s-prev", &(history + "{\"seq\":5"));

    let output = bridge
        .cmd()
        .args(["sessions", "resume", "s-prev", "second task"])
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", "http://127.0.0.1:9")
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("The second task is done."), "{stdout}");

    // The model saw the earlier conversation before the new task.
    let requests = mock.requests();
    let chat = requests
        .iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    let contents: Vec<String> = chat.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        contents[..3],
        ["first task", "first answer", "second task"],
        "{contents:?}"
    );

    // The log continues where it stopped: torn tail gone, seq contiguous.
    let events: Vec<_> = replay(&path).unwrap().map(Result::unwrap).collect();
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.seq, index as u64 + 1);
    }
    assert_eq!(events[4].kind, "session.resume");
    assert!(
        events
            .iter()
            .any(|e| e.kind == "user.message" && e.data["content"] == "second task")
    );
}

#[tokio::test]
async fn list_shows_the_running_daemons_sessions_agents_included() {
    let served = crate::cli_serve::Served::start();
    // A Claude Code session, registered by its first hook.
    served
        .rpc(
            "agent.hook",
            json!({"agent": "claude-code", "agentSession": "a1b2", "event": "session-start",
                   "cwd": served.workspace.path()}),
        )
        .await;
    let output = served
        .cli()
        .args(["sessions", "list"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("IN THE RUNNING DAEMON"), "{table}");
    assert!(table.contains("claude-code-a1b2"), "{table}");
    assert!(table.contains("Claude Code · "), "{table}");
    let default = served.file["defaultSession"].as_str().unwrap();
    assert!(table.contains(default), "{table}");
    let output = served
        .cli()
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    let listed = stdout_json(&output);
    let agent = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["id"] == "claude-code-a1b2")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(agent["status"], "live", "{agent}");
    assert_eq!(agent["kind"], "daemon session", "{agent}");
}
