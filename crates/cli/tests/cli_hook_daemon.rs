//! `copilot-bridge hook` with a daemon running: the agent's session joins
//! the daemon's registry on its first hook, a provider bound to it gates
//! the agent's tool calls and hears what ran, and the session leaves at
//! `session-end` or when its hooks fall silent.

use std::process::Stdio;
use std::time::{Duration, Instant};

use bridge_testkit::{ProviderClient, TempWorkspace};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::cli_serve::Served;
use crate::support::Bridge;

const AGENT_SESSION: &str = "3f1c2b7a-claude";
const HUB_SESSION: &str = "claude-code-3f1c2b7a-claude";

/// Claude's payload for `event` with `fields` added.
fn payload(served: &Served, event: &str, fields: Value) -> Value {
    let mut payload = json!({
        "session_id": AGENT_SESSION,
        "cwd": served.workspace.path(),
        "hook_event_name": event,
    });
    if let (Some(target), Value::Object(extra)) = (payload.as_object_mut(), fields) {
        target.extend(extra);
    }
    payload
}

/// Runs `copilot-bridge hook` against `served` with `payload` on stdin:
/// (exit code, stdout as JSON, stderr).
async fn hook(served: &Served, payload: &Value) -> (i32, Value, String) {
    let mut child = served
        .cli()
        .args(["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(payload.to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the hook answers")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let answer = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("not JSON ({err}): {stdout}"));
    (
        output.status.code().unwrap_or(-1),
        answer,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn bash(served: &Served, event: &str, command: &str) -> Value {
    payload(
        served,
        event,
        json!({"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t1"}),
    )
}

fn decision(answer: &Value) -> (Option<&str>, &str) {
    let specific = &answer["hookSpecificOutput"];
    (
        specific["permissionDecision"].as_str(),
        specific["permissionDecisionReason"].as_str().unwrap_or(""),
    )
}

async fn session_ids(served: &Served) -> Vec<String> {
    served
        .rpc("session.list", json!({}))
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|session| session["id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_provider_bound_to_the_agents_session_gates_its_calls_and_hears_what_ran() {
    let served = Served::start();
    let (code, answer, _) = hook(&served, &payload(&served, "SessionStart", json!({}))).await;
    assert_eq!((code, answer), (0, json!({})));
    let sessions = served.rpc("session.list", json!({})).await;
    let session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["id"] == HUB_SESSION)
        .unwrap_or_else(|| panic!("the agent's session is registered: {sessions}"));
    assert!(
        session["label"]
            .as_str()
            .unwrap()
            .starts_with("Claude Code · "),
        "{session}"
    );

    let token = served.provider_token_for(HUB_SESSION).await;
    let (mut reviewer, ack) = ProviderClient::register(
        &served.ws_url(),
        &token,
        "reviewer",
        json!({
            "session": HUB_SESSION,
            "subscribe": ["tool.execution_complete"],
            "hooks": {"onPreToolUse": [{"match": {"tool": "Bash"}, "action": "gate", "gateId": "review"}]},
        }),
    )
    .await
    .unwrap();
    assert_eq!(ack["sessions"], json!([HUB_SESSION]), "{ack}");

    // A command our policy lets through goes to the provider's gate, whose
    // deny is the answer.
    let gated = bash(&served, "PreToolUse", "echo hi");
    let gatekeeping = async {
        let check = reviewer
            .expect_within("gate.check", Duration::from_secs(30))
            .await
            .unwrap();
        reviewer
            .send(
                json!({"type": "gate.result", "gateId": check["gateId"], "callId": check["callId"],
                         "decision": "deny", "reason": "the reviewer says no"}),
            )
            .await
            .unwrap();
        check
    };
    let ((code, answer, _), check) = tokio::join!(hook(&served, &gated), gatekeeping);
    assert_eq!(check["tool"], "Bash", "{check}");
    assert_eq!(code, 0);
    let (kind, reason) = decision(&answer);
    assert_eq!(kind, Some("deny"), "{answer}");
    assert!(reason.contains("the reviewer says no"), "{reason}");

    // What the policy itself denies never reaches the gate.
    let (_, answer, _) = hook(&served, &bash(&served, "PreToolUse", "sudo true")).await;
    assert_eq!(decision(&answer).0, Some("deny"), "{answer}");

    // What ran is an event for the session's providers.
    let mut ran = bash(&served, "PostToolUse", "echo hi");
    ran["tool_response"] = json!({"stdout": "hi", "stderr": ""});
    let (code, answer, _) = hook(&served, &ran).await;
    assert_eq!((code, answer), (0, json!({})));
    let event = reviewer.expect("session.event").await.unwrap();
    assert_eq!(event["event"], "tool.execution_complete", "{event}");
    assert_eq!(event["data"]["tool"], "Bash", "{event}");

    let started = Instant::now();
    let (code, _, _) = hook(&served, &payload(&served, "SessionEnd", json!({}))).await;
    assert_eq!(code, 0);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the agent waited for the session to end"
    );
    let (ending, _) = reviewer.expect_skipping("session.lifecycle").await.unwrap();
    assert_eq!(ending["state"], "shutdown.pending", "{ending}");
    wait_until_gone(&served).await;
}

async fn wait_until_gone(served: &Served) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while session_ids(served).await.contains(&HUB_SESSION.to_owned()) {
        assert!(Instant::now() < deadline, "the agent session did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_agent_session_whose_hooks_fall_silent_ends() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_AGENT_SESSION_IDLE_SECS", "1")],
    );
    hook(&served, &payload(&served, "SessionStart", json!({}))).await;
    assert!(session_ids(&served).await.contains(&HUB_SESSION.to_owned()));
    wait_until_gone(&served).await;
}

#[tokio::test]
async fn a_daemon_that_refuses_the_hook_is_a_deny() {
    let served = Served::start();
    // The daemon runs but refuses the hook's token (one left from an
    // earlier daemon): the call must not go through.
    let mut stale = served.file.clone();
    stale["token"] = json!("a-token-of-another-daemon");
    let gateway_json = served.bridge.state.path().join("gateway.json");
    std::fs::write(&gateway_json, stale.to_string()).unwrap();
    let (code, answer, _) = hook(&served, &bash(&served, "PreToolUse", "echo hi")).await;
    assert_eq!(code, 0);
    let (kind, reason) = decision(&answer);
    assert_eq!(kind, Some("deny"), "{answer}");
    assert!(reason.contains("daemon"), "{reason}");
}

#[tokio::test]
async fn agent_hook_refuses_malformed_params_by_name_and_keeps_serving() {
    let served = Served::start();
    let cwd = served.workspace.path().to_str().unwrap().to_owned();
    let base = json!({"agent": "claude-code", "agentSession": "s1", "cwd": cwd, "event": "pre-tool-use",
                      "tool": "Bash", "arguments": {"command": "ls"}});
    let with = |field: &str, value: Value| {
        let mut params = base.clone();
        params[field] = value;
        params
    };
    for (params, field) in [
        (with("agent", json!("vim")), "agent"),
        (with("event", json!("sideways")), "event"),
        (with("cwd", json!("relative/dir")), "cwd"),
        (with("tool", json!(7)), "tool"),
        (with("agentSession", json!("../../etc")), "agentSession"),
        (with("surprise", json!(true)), "surprise"),
        (
            json!({"agent": "claude-code", "agentSession": "s2", "cwd": cwd, "event": "pre-tool-use"}),
            "tool",
        ),
    ] {
        let answer = served.rpc_raw("agent.hook", params.clone()).await;
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
        assert_eq!(
            answer["error"]["data"]["field"], field,
            "{params}: {answer}"
        );
    }
    let answer = served.rpc("agent.hook", base).await;
    assert_eq!(answer["decision"], "allow", "{answer}");
}

#[tokio::test]
async fn prompts_and_session_starts_get_the_project_and_provider_context() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_PROJECT_CONTEXT", "Use pnpm, never npm.")],
    );
    hook(&served, &payload(&served, "SessionStart", json!({}))).await;
    let token = served.provider_token_for(HUB_SESSION).await;
    let (_ci, _) = ProviderClient::register(
        &served.ws_url(),
        &token,
        "ci",
        json!({"session": HUB_SESSION, "context": "CI is green on main.",
               "startup_context": "The CI provider is watching."}),
    )
    .await
    .unwrap();
    let prompt = payload(
        &served,
        "UserPromptSubmit",
        json!({"prompt": "fix the build"}),
    );
    let (code, answer, _) = hook(&served, &prompt).await;
    assert_eq!(code, 0);
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no additionalContext: {answer}"));
    assert!(
        context.contains("<project_context>\nUse pnpm, never npm."),
        "{context}"
    );
    assert!(
        context.contains("<context source=\"ci\">\nCI is green on main."),
        "{context}"
    );
    let (_, answer, _) = hook(&served, &payload(&served, "SessionStart", json!({}))).await;
    assert!(
        answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|context| context.contains("The CI provider is watching.")),
        "{answer}"
    );
}

#[tokio::test]
async fn session_render_applies_transforms_and_refuses_bad_params() {
    let served = Served::start();
    let (_docs, _) = ProviderClient::register(
        &served.ws_url(),
        &served.provider_token(),
        "docs",
        json!({"hooks": {"transforms": {"code_change_rules": {"action": "append", "content": "Run cargo fmt."}}}}),
    )
    .await
    .unwrap();
    let rendered = served
        .rpc(
            "session.render",
            json!({"session": "default", "section": "code_change_rules", "content": "Be careful."}),
        )
        .await;
    let content = rendered["content"].as_str().unwrap();
    assert!(
        content.starts_with("Be careful.") && content.contains("Run cargo fmt."),
        "{content}"
    );
    for (params, field) in [
        (json!({"session": "nope", "section": "tone"}), None),
        (
            json!({"session": "default", "section": "../etc"}),
            Some("section"),
        ),
        (
            json!({"session": "default", "section": "tone", "content": "x".repeat(300 * 1024)}),
            Some("content"),
        ),
        (
            json!({"session": "default", "section": "tone", "extra": 1}),
            Some("extra"),
        ),
    ] {
        let answer = served.rpc_raw("session.render", params).await;
        assert!(answer.get("error").is_some(), "{answer}");
        if let Some(field) = field {
            assert_eq!(answer["error"]["data"]["field"], field, "{answer}");
        }
    }
}
