//! `copilot-bridge hook`, the built binary, fed the payloads the real agents
//! send (the shapes of Claude Code 2.1.328 and the Copilot CLI 1.0.102):
//! each answer in the agent's own shape, and every failure a deny.

use std::process::Output;

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::support::{Bridge, stdout_json};

/// Claude Code's `PreToolUse` payload for `tool_input` of `tool` in `ws`.
fn claude_payload(ws: &TempWorkspace, tool: &str, tool_input: Value) -> String {
    json!({
        "session_id": "2f45465e-9b40-475a-98cd-4646abdeba67",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": ws.path(),
        "prompt_id": "198f598b",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "call_b9292ce83f",
    })
    .to_string()
}

fn hook(bridge: &Bridge, args: &[&str], stdin: impl Into<Vec<u8>>) -> Output {
    bridge
        .cmd()
        .arg("hook")
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap()
}

fn claude_decision(output: &Output) -> (Option<String>, String) {
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let answer = stdout_json(output);
    let specific = &answer["hookSpecificOutput"];
    (
        specific["permissionDecision"].as_str().map(str::to_owned),
        specific["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[test]
fn a_safe_command_gets_no_decision_and_is_audited() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = hook(
        &bridge,
        &[],
        claude_payload(
            &ws,
            "Bash",
            json!({"command": "echo hi && ls", "description": "d"}),
        ),
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // Nothing widened: Claude's own permission rules still apply.
    assert_eq!(stdout_json(&output), json!({}));
    let audit = std::fs::read_dir(bridge.state.path().join("audit"))
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .collect::<String>();
    let entry: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(entry["hook"], "pre-tool-use:claude-code");
    assert_eq!(entry["tool"], "Bash");
    assert_eq!(entry["decision"], "allow");
}

#[test]
fn dangerous_commands_writes_in_read_only_mode_and_reads_outside_are_denied() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    for (tool, input, reason) in [
        ("Bash", json!({"command": "sudo rm -rf /var"}), "superuser"),
        (
            "Write",
            json!({"file_path": ws.path().join("a.txt"), "content": "x"}),
            "read-only",
        ),
        (
            "Read",
            json!({"file_path": "/etc/passwd"}),
            "outside the workspace",
        ),
        ("Bash", json!({}), "without a command"),
    ] {
        let output = hook(&bridge, &[], claude_payload(&ws, tool, input));
        let (decision, why) = claude_decision(&output);
        assert_eq!(decision.as_deref(), Some("deny"), "{tool}: {output:?}");
        assert!(why.contains(reason), "{tool}: {why}");
    }
}

#[test]
fn a_command_the_policy_cannot_vouch_for_is_asked_about() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = hook(
        &bridge,
        &["pre-tool-use"],
        claude_payload(&ws, "Bash", json!({"command": "make deploy"})),
    );
    let (decision, why) = claude_decision(&output);
    assert_eq!(decision.as_deref(), Some("ask"), "{output:?}");
    assert!(!why.is_empty());
}

#[test]
fn the_copilot_clis_own_payload_gets_its_flat_answer() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    // Its camelCase events send `toolArgs` JSON-encoded.
    let payload = json!({
        "sessionId": "900bc269",
        "timestamp": 1_795_466_516_059_u64,
        "cwd": ws.path(),
        "toolName": "bash",
        "toolArgs": json!({"command": "sudo reboot"}).to_string(),
    });
    let output = hook(&bridge, &["preToolUse"], payload.to_string());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let answer = stdout_json(&output);
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    assert!(
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("superuser")
    );
}

#[test]
fn blocked_tools_hold_for_claudes_mcp_tools_under_our_names() {
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "[permissions]\nblocked_tools = [\"cbcode__*\"]\n",
    )
    .unwrap();
    let ws = TempWorkspace::new();
    let mut payload: Value = serde_json::from_str(&claude_payload(
        &ws,
        "mcp__cbcode__copilot_read_file",
        json!({"path": "notes.txt"}),
    ))
    .unwrap();
    payload["mcp_server"] = json!({"name": "cbcode", "source": "dynamic"});
    let output = hook(&bridge, &[], payload.to_string());
    let (decision, why) = claude_decision(&output);
    assert_eq!(decision.as_deref(), Some("deny"), "{output:?}");
    assert!(why.contains("cbcode__copilot_read_file"), "{why}");
}

#[test]
fn every_failure_is_a_deny_with_its_reason() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    for (args, stdin, reason) in [
        (&[][..], b"{not json".to_vec(), "not JSON"),
        (&[][..], b"[1, 2]".to_vec(), "not a JSON object"),
        (
            &[][..],
            br#"{"tool_input": {"command": "ls"}}"#.to_vec(),
            "no tool name",
        ),
        (
            &["sideways"][..],
            claude_payload(&ws, "Bash", json!({"command": "ls"})).into_bytes(),
            "unknown hook event",
        ),
    ] {
        let output = hook(&bridge, args, stdin);
        // Exit code 2 blocks in both agents, whatever they make of stdout.
        assert_eq!(output.status.code(), Some(2), "{reason}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(reason), "{reason}: {stderr}");
    }
    // A configuration that cannot be loaded denies, it does not wave through.
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "read_only = \"maybe\"\n",
    )
    .unwrap();
    let output = hook(
        &bridge,
        &[],
        claude_payload(&ws, "Bash", json!({"command": "ls"})),
    );
    let (decision, why) = claude_decision(&output);
    assert_eq!(decision.as_deref(), Some("deny"), "{output:?}");
    assert!(why.contains("configuration"), "{why}");
}

#[test]
fn events_without_a_tool_call_pass() {
    let bridge = Bridge::new();
    for (event, payload) in [
        (
            "session-start",
            json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}),
        ),
        (
            "user-prompt-submit",
            json!({"sessionId": "s", "prompt": "hi", "timestamp": 1}),
        ),
        (
            "session-end",
            json!({"session_id": "s", "hook_event_name": "SessionEnd"}),
        ),
    ] {
        let output = hook(&bridge, &[event], payload.to_string());
        assert_eq!(output.status.code(), Some(0), "{event}: {output:?}");
        assert_eq!(stdout_json(&output), json!({}), "{event}");
    }
}

#[test]
fn an_ask_is_audited_as_an_ask() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = hook(
        &bridge,
        &[],
        claude_payload(&ws, "Bash", json!({"command": "make deploy"})),
    );
    assert_eq!(claude_decision(&output).0.as_deref(), Some("ask"));
    let audit = std::fs::read_dir(bridge.state.path().join("audit"))
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .collect::<String>();
    let entry: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(entry["decision"], "ask", "{entry}");
}

/// Codex 0.169.0's payload for `event` (Claude Code's field names; its
/// PermissionRequest has no `tool_use_id`).
fn codex_payload(ws: &TempWorkspace, event: &str, command: &str) -> String {
    let mut payload = json!({
        "session_id": "01a22133-0002-7bc2-809b-d6fa27e88336",
        "turn_id": "01a22133-0052-7551-bbcf-80fe1cf1575a",
        "transcript_path": "/tmp/rollout.jsonl",
        "cwd": ws.path(),
        "hook_event_name": event,
        "model": "mock-model",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "need to write"},
    });
    if event == "PreToolUse" {
        payload["tool_use_id"] = json!("call_0");
    }
    payload.to_string()
}

#[test]
fn codex_hears_only_denies_and_its_permission_request_leaves_an_ask_to_its_user() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let run = |event: &str, command: &str| {
        let output = hook(
            &bridge,
            &["--agent", "codex"],
            codex_payload(&ws, event, command),
        );
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        stdout_json(&output)
    };
    // Its permission request: a deny in Codex's shape; an ask (no daemon
    // to ask a person) says nothing, so Codex asks its user; a safe call
    // says nothing either (never widened).
    assert_eq!(
        run("PermissionRequest", "sudo true")["hookSpecificOutput"],
        json!({"hookEventName": "PermissionRequest", "decision": {"behavior": "deny",
               "message": "dangerous command: sudo runs commands with superuser privileges"}})
    );
    assert_eq!(run("PermissionRequest", "make deploy"), json!({}));
    assert_eq!(run("PermissionRequest", "ls"), json!({}));
    // PreToolUse: Codex runs what an "ask" answers, so an ask is a deny
    // that says how to let the call through.
    let asked = run("PreToolUse", "make deploy");
    assert_eq!(asked["hookSpecificOutput"]["permissionDecision"], "deny");
    let why = asked["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(why.contains("Codex cannot ask through a hook"), "{why}");
    assert!(why.contains("copilot-bridge approvals"), "{why}");
    assert_eq!(run("PreToolUse", "ls"), json!({}));
    let audit = std::fs::read_dir(bridge.state.path().join("audit"))
        .unwrap()
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(
        audit.contains("\"hook\":\"permission-request:codex\""),
        "{audit}"
    );
}
