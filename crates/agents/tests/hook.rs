//! A hook's payload in each agent's dialect, the answer in its shape, and
//! the user's own hooks chained after ours, run for real.

use std::path::{Path, PathBuf};

use bridge_agents::AgentEnv;
use bridge_agents::hook::{
    self, Dialect, HookDecision, HookEvent, answer, chain, payload, payload::PayloadError,
};
use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

/// Claude Code's `PreToolUse` payload (its shape as of docs/hooks.md).
fn claude_payload(cwd: &str, tool: &str, input: Value) -> String {
    json!({
        "session_id": "2f45465e-9b40", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "call_1",
    })
    .to_string()
}

#[test]
fn claude_codes_payload_is_read_and_denied_in_its_own_shape() {
    let env = AgentEnv::from_vars([("CLAUDECODE", "1"), ("CLAUDE_PROJECT_DIR", "/project")]);
    let text = claude_payload("/project/sub", "Bash", json!({"command": "rm -rf /"}));
    let fallback = hook::fallback_dialect(None, &env);
    let input = payload::parse(&text, fallback).unwrap();
    assert_eq!(input.dialect, Dialect::Claude);
    let event = hook::event_of(None, &input).unwrap();
    assert_eq!(event, HookEvent::PreToolUse);
    let agent = hook::agent_of(None, input.dialect, &env);
    assert_eq!(agent, Agent::ClaudeCode);
    // The project the agent names wins over the payload's cwd.
    assert_eq!(
        hook::workspace_root(agent, &input, &env).unwrap(),
        Path::new("/project")
    );
    assert_eq!(hook::agent_session_id(&input), "2f45465e-9b40");
    let denied = answer::render(
        input.dialect,
        event,
        &HookDecision::Deny("no deleting the root".into()),
        &[],
    );
    assert_eq!(
        denied.stdout,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no deleting the root"}})
    );
    assert_eq!(denied.exit_code, 0);
    assert_eq!(
        denied.stderr.as_deref(),
        Some("copilot-bridge denied this call: no deleting the root")
    );
}

#[test]
fn the_copilot_clis_payload_is_read_and_answered_flat() {
    let env = AgentEnv::from_vars([("COPILOT_CLI", "1")]);
    let text = json!({"sessionId": "s-9", "timestamp": 1, "cwd": "/w", "toolName": "bash",
        "toolArgs": "{\"command\":\"git push\"}"})
    .to_string();
    let input = payload::parse(&text, hook::fallback_dialect(None, &env)).unwrap();
    assert_eq!(input.dialect, Dialect::Copilot);
    let call = input.tool.as_ref().unwrap();
    assert_eq!(call.input, json!({"command": "git push"}));
    let agent = hook::agent_of(None, input.dialect, &env);
    assert_eq!(agent, Agent::CopilotCli);
    // No project named in the environment: the payload's cwd.
    assert_eq!(
        hook::workspace_root(agent, &input, &env).unwrap(),
        PathBuf::from("/w")
    );
    let event = hook::event_of(None, &input).unwrap();
    let asked = answer::render(
        input.dialect,
        event,
        &HookDecision::Ask("pushing".into()),
        &["house rules".into()],
    );
    assert_eq!(
        asked.stdout,
        json!({"permissionDecision": "ask", "permissionDecisionReason": "pushing",
            "additionalContext": "house rules"})
    );
    let passed = answer::render(input.dialect, event, &HookDecision::Pass, &[]);
    assert_eq!(passed.stdout, json!({}), "a pass widens nothing");
}

#[test]
fn the_copilot_cli_speaking_claudes_shape_is_still_the_copilot_cli() {
    let env = AgentEnv::from_vars([("COPILOT_CLI", "1"), ("COPILOT_PROJECT_DIR", "/cp")]);
    let input = payload::parse(&claude_payload("/w", "Bash", json!({})), Dialect::Copilot).unwrap();
    assert_eq!(
        input.dialect,
        Dialect::Claude,
        "answered in the shape it came in"
    );
    let agent = hook::agent_of(None, input.dialect, &env);
    assert_eq!(agent, Agent::CopilotCli);
    assert_eq!(
        hook::workspace_root(agent, &input, &env).unwrap(),
        Path::new("/cp")
    );
    // `--agent` wins over both.
    assert_eq!(
        hook::agent_of(hook::agent_from_flag("claude"), input.dialect, &env),
        Agent::ClaudeCode
    );
}

#[test]
fn an_unknown_or_missing_event_and_a_broken_payload_block_with_exit_code_2() {
    let input = payload::parse(r#"{"session_id": "s"}"#, Dialect::Claude).unwrap();
    let missing = hook::event_of(None, &input).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "the hook event is neither given nor in the payload"
    );
    let unknown = hook::event_of(Some("pre_tool_use"), &input).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown hook event \"pre_tool_use\" (see `copilot-bridge hook --help`)"
    );
    let err = payload::parse("{not json", Dialect::Copilot).unwrap_err();
    assert!(matches!(err, PayloadError::NotJson(_)));
    let blocked = answer::unreadable(Dialect::Copilot, &err.to_string());
    assert_eq!(blocked.exit_code, 2);
    assert_eq!(blocked.stdout["permissionDecision"], "deny");
}

/// A chain file as `hooks install` writes it, with Claude's matcher groups.
fn chain_file(dir: &Path, groups: Value) -> PathBuf {
    let path = dir.join("copilot-bridge-hooks.json");
    std::fs::write(
        &path,
        json!({"version": 1, "hooks": {"PreToolUse": groups}, "restore": {}}).to_string(),
    )
    .unwrap();
    path
}

fn command(command: &str, matcher: &str) -> Value {
    json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})
}

#[test]
fn the_users_hooks_answer_after_ours_in_the_documented_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = claude_payload("/w", "Bash", json!({"command": "ls"}));
    let input = payload::parse(&text, Dialect::Claude).unwrap();
    let event = HookEvent::PreToolUse;
    let user_denies = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"mine"}}'"#;
    let path = chain_file(
        dir.path(),
        json!([
            // Not for Bash: never runs (it would block).
            command("echo nope >&2; exit 2", "Edit|Write"),
            command(user_denies, "*"),
        ]),
    );
    let chained = chain::load(&path, event, &input).unwrap();
    assert_eq!(
        chained.len(),
        1,
        "the matcher leaves out the Edit|Write hook"
    );
    // We pass: the user's explicit decision is the answer, unchanged.
    let theirs = chain::combine(
        input.dialect,
        event,
        &HookDecision::Pass,
        &[],
        &chained,
        &text,
    );
    assert_eq!(
        theirs.stdout["hookSpecificOutput"]["permissionDecisionReason"],
        "mine"
    );
    // We deny: ours is said, whatever theirs.
    let ours = chain::combine(
        input.dialect,
        event,
        &HookDecision::Deny("policy".into()),
        &[],
        &chained,
        &text,
    );
    assert_eq!(
        ours.stdout["hookSpecificOutput"]["permissionDecisionReason"],
        "policy"
    );
}

#[test]
fn a_users_legacy_block_is_a_deny_and_their_input_is_the_agents_payload() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let text = claude_payload("/w", "Bash", json!({"command": "make"}));
    let input = payload::parse(&text, Dialect::Claude).unwrap();
    let blocks = format!(
        "cat > '{}'; echo 'not on fridays' >&2; exit 2",
        seen.display()
    );
    let path = chain_file(dir.path(), json!([command(&blocks, "Bash")]));
    let chained = chain::load(&path, HookEvent::PreToolUse, &input).unwrap();
    let answer = chain::combine(
        input.dialect,
        HookEvent::PreToolUse,
        &HookDecision::Pass,
        &[],
        &chained,
        &text,
    );
    assert_eq!(
        answer.stdout["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    assert_eq!(
        answer.stdout["hookSpecificOutput"]["permissionDecisionReason"],
        "not on fridays"
    );
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), text);
}

#[test]
fn a_missing_chain_file_is_refused_with_the_fix_and_a_broken_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = payload::parse(&claude_payload("/w", "Bash", json!({})), Dialect::Claude).unwrap();
    // `hooks install` always writes one: gone, the user's hooks cannot run.
    let absent = dir.path().join("absent.json");
    let err = chain::load(&absent, HookEvent::PreToolUse, &input).unwrap_err();
    assert!(
        err.to_string().contains("are missing") && err.to_string().contains("hooks install"),
        "{err}"
    );
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{").unwrap();
    let err = chain::load(&broken, HookEvent::PreToolUse, &input).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "the chained hooks {} are not JSON",
            broken.display()
        )),
        "{err}"
    );
}
