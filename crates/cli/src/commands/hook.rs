//! `copilot-bridge hook [EVENT] [--agent claude|copilot|codex]`: the hub's
//! policy as a Claude Code, Copilot CLI or Codex hook command (see
//! docs/hooks.md).
//!
//! It reads the hook's JSON on stdin, decides a tool call with the one
//! decision path every door takes (permission rules, path containment,
//! shell analysis, read-only mode, the audit log), and answers in the
//! agent's own shape. It fails closed: a payload it cannot read, a
//! configuration it cannot load, a workspace it cannot open, or any other
//! internal error denies the call, with the reason. The agents' dialects,
//! their answers and the chained hooks are `bridge_agents::hook`; here is
//! the decision (a running daemon's, else a session of this process).

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bridge_agents::AgentEnv;
use bridge_agents::hook::{
    self, Dialect, HookAnswer, HookDecision, HookEvent, HookInput, answer, chain, payload,
};
use bridge_policy::AgentAsks;
use bridge_policy::agent_tools::Agent;
use bridge_protocol::DecisionKind;
use serde_json::{Value, json};

use crate::args::{GlobalArgs, HookArgs};

/// A hook's stdin beyond this is refused: a tool input that large (a whole
/// file written at once) is already extreme.
const MAX_PAYLOAD_BYTES: u64 = 64 * 1024 * 1024;

/// Runs the hook and writes its answer; never fails, since every failure
/// is itself an answer (a deny).
pub fn run(global: &GlobalArgs, args: &HookArgs, env: &AgentEnv) -> ExitCode {
    let flag = args.agent.as_deref().and_then(hook::agent_from_flag);
    let fallback = hook::fallback_dialect(flag, env);
    let answer = match read_stdin() {
        Ok(text) => answer(global, args, env, &text, flag, fallback),
        Err(reason) => answer::unreadable(fallback, &reason),
    };
    emit(&answer)
}

fn answer(
    global: &GlobalArgs,
    args: &HookArgs,
    env: &AgentEnv,
    text: &str,
    flag: Option<Agent>,
    fallback: Dialect,
) -> HookAnswer {
    let input = match payload::parse(text, fallback) {
        Ok(input) => input,
        Err(err) => return answer::unreadable(fallback, &err.to_string()),
    };
    let event = match hook::event_of(args.event.as_deref(), &input) {
        Ok(event) => event,
        Err(err) => return answer::unreadable(input.dialect, &err.to_string()),
    };
    let agent = hook::agent_of(flag, input.dialect, env);
    let (decision, context) = match decide(global, env, agent, event, &input) {
        Ok(decided) => decided,
        // Fail closed where it matters: a tool about to run.
        Err(reason) if decides_a_call(event) => (HookDecision::Deny(reason), Vec::new()),
        // Anything else goes on; the agent shows our stderr.
        Err(reason) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "copilot-bridge hook {}: {}",
                event.name(),
                bridge_policy::redact(&reason)
            );
            (HookDecision::Pass, Vec::new())
        }
    };
    match &args.chain {
        None => answer::render(input.dialect, event, &decision, &context),
        Some(path) => match chain::load(path, event, &input) {
            Ok(chained) => {
                chain::combine(input.dialect, event, &decision, &context, &chained, text)
            }
            Err(reason) if decides_a_call(event) => answer::render(
                input.dialect,
                event,
                &HookDecision::Deny(reason.to_string()),
                &[],
            ),
            Err(reason) => {
                let _ = writeln!(std::io::stderr().lock(), "copilot-bridge hook: {reason}");
                answer::render(input.dialect, event, &decision, &context)
            }
        },
    }
}

/// Whether `event` decides whether a tool call runs (and so fails closed).
fn decides_a_call(event: HookEvent) -> bool {
    matches!(event, HookEvent::PreToolUse | HookEvent::PermissionRequest)
}

/// Codex runs a call its PreToolUse hook answers "ask" to (it reads only a
/// deny): an ask that reached no person there is a deny that says how to
/// let it through.
fn for_codex(agent: Agent, event: HookEvent, decision: HookDecision) -> HookDecision {
    match decision {
        HookDecision::Ask(reason) if agent == Agent::Codex && event == HookEvent::PreToolUse => {
            HookDecision::Deny(format!(
                "{reason} (copilot-bridge asks a person about this call, and Codex cannot ask \
                 through a hook: with a daemon running (`copilot-bridge daemon start`) the call \
                 waits for an answer from `copilot-bridge approvals`; or allow it in \
                 .agent-policy.yaml)"
            ))
        }
        other => other,
    }
}

/// How long a running daemon has to answer a hook before the call is
/// denied (a call waiting for a person waits longer: see
/// [`wait_for_approval`]).
const DAEMON_PATIENCE: Duration = Duration::from_secs(5);

/// Beyond the approval timeout, how long a hook waits for the daemon's
/// final answer.
const APPROVAL_GRACE: Duration = Duration::from_secs(10);

/// Waits for the answer to a call the hub put to a person
/// (`approvals.wait`), as long as the daemon said the ask may wait and a
/// little more; the agent is told on stderr where to answer.
async fn wait_for_approval(
    daemon: &bridge_server::GatewayClient,
    approval: &Value,
) -> Result<Value, String> {
    let id = approval["id"]
        .as_str()
        .ok_or_else(|| format!("the daemon's pending answer names no ask: {approval}"))?;
    let patience =
        Duration::from_secs(approval["timeoutSecs"].as_u64().unwrap_or(0)) + APPROVAL_GRACE;
    eprintln!(
        "copilot-bridge: waiting for a person to approve this call ({id}): `copilot-bridge approvals`"
    );
    match tokio::time::timeout(patience, daemon.call("approvals.wait", json!({"id": id}))).await {
        Ok(answer) => {
            answer.map_err(|err| format!("the copilot-bridge daemon refused the hook: {err}"))
        }
        Err(_) => Err(format!("no answer to {id} within {patience:?}")),
    }
}

/// The decision for one event. Only a tool call about to run can be
/// denied; the other events are recorded. With a daemon running, it
/// decides (its providers' hook rules and gates included, and its registry
/// knows the agent's session); else the local policy does.
fn decide(
    global: &GlobalArgs,
    env: &AgentEnv,
    agent: Agent,
    event: HookEvent,
    input: &HookInput,
) -> Result<(HookDecision, Vec<String>), String> {
    let call = input.tool.as_ref();
    if decides_a_call(event) && call.is_none() {
        return Err(format!("a {} hook without a tool call", event.name()));
    }
    let config = global.load_config().map_err(|failure| {
        format!(
            "copilot-bridge cannot load its configuration: {}",
            failure.message
        )
    })?;
    let root = hook::workspace_root(agent, input, env).map_err(|err| err.to_string())?;
    // What the agent names (`CLAUDE_PROJECT_DIR=/`) is its workspace only
    // if it may be one (the daemon checks too).
    let root = bridge_compose::workspace_choice(&config).check(&root)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))?;
    let (decision, context) = runtime.block_on(async {
        match bridge_server::find_running(&config.home).await {
            Some(daemon) => ask_daemon(&daemon, agent, event, input, &root).await,
            None => decide_locally(&config, agent, event, input, &root).await,
        }
    })?;
    Ok((for_codex(agent, event, decision), context))
}

/// The daemon's answer (`agent.hook`, docs/hooks.md).
async fn ask_daemon(
    daemon: &bridge_server::GatewayClient,
    agent: Agent,
    event: HookEvent,
    input: &HookInput,
    root: &std::path::Path,
) -> Result<(HookDecision, Vec<String>), String> {
    let mut params = json!({
        "agent": agent.name(),
        "agentSession": hook::agent_session_id(input),
        "cwd": root,
        "event": event.name(),
    });
    if let Some(call) = &input.tool
        && matches!(
            event,
            HookEvent::PreToolUse | HookEvent::PermissionRequest | HookEvent::PostToolUse
        )
    {
        // The name as the agent gave it: the daemon reads it as ours.
        params["tool"] = json!(call.name);
        params["arguments"] = call.input.clone();
        if let Some(output) = &input.tool_output {
            params["output"] = output.clone();
        }
        // The Copilot CLI's ask reaches no person in a run without a
        // terminal, and Codex reads no ask from a hook: their calls wait on
        // the hub's queue (docs/approvals.md). Claude Code asks its user
        // itself.
        if matches!(agent, Agent::CopilotCli | Agent::Codex) && decides_a_call(event) {
            params["defer"] = json!(true);
        }
    }
    if let Some(prompt) = &input.prompt {
        params["prompt"] = json!(prompt);
    }
    if let Some(error) = &input.error {
        params["message"] = json!(error);
    }
    let mut answer = tokio::time::timeout(DAEMON_PATIENCE, daemon.call("agent.hook", params))
        .await
        .map_err(|_| {
            format!("the copilot-bridge daemon did not answer within {DAEMON_PATIENCE:?}")
        })?
        .map_err(|err| format!("the copilot-bridge daemon refused the hook: {err}"))?;
    let waited = answer["decision"] == "pending";
    if waited {
        answer = wait_for_approval(daemon, &answer["approval"]).await?;
    }
    let reason = answer["reason"].as_str().unwrap_or("").to_owned();
    let outcome = match &answer["decision"] {
        // Events other than a tool call carry no decision.
        Value::Null => DecisionKind::Allow,
        // Anything but a known decision is a deny.
        said => serde_json::from_value(said.clone()).unwrap_or(DecisionKind::Deny),
    };
    let decision = match HookDecision::from_outcome(outcome, &reason) {
        // A person said yes.
        HookDecision::Pass if waited => HookDecision::Approved,
        other => other,
    };
    let context = answer["context"]
        .as_array()
        .map(|texts| {
            texts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok((decision, context))
}

/// The decision of the local policy, in a session of this process.
async fn decide_locally(
    config: &bridge_config::BridgeConfig,
    agent: Agent,
    event: HookEvent,
    input: &HookInput,
    root: &std::path::Path,
) -> Result<(HookDecision, Vec<String>), String> {
    let Some(call) = input.tool.as_ref().filter(|_| {
        matches!(
            event,
            HookEvent::PreToolUse | HookEvent::PermissionRequest | HookEvent::PostToolUse
        )
    }) else {
        return Ok((HookDecision::Pass, Vec::new()));
    };
    // A session that decides an agent's own calls: the policy and audit
    // log alone, no tools to offer.
    let registry = bridge_compose::registry(config, Arc::new(AgentAsks))
        .map_err(|err| super::run::compose_failure(err).message)?;
    let session = super::run::session_in(
        &registry,
        root,
        &format!("{}-{}", agent.name(), hook::agent_session_id(input)),
        &format!("{} hook", agent.display_name()),
    )
    .map_err(|failure| failure.message)?;
    if event == HookEvent::PostToolUse {
        session.record_agent_tool_ran(
            agent,
            event.name(),
            &bridge_engine::agent_names::likeliest_name(agent, &call.name),
            &call.input,
            input.tool_output.as_ref(),
        );
        return Ok((HookDecision::Pass, Vec::new()));
    }
    let (_, verdict) = session
        .check_agent_call(agent, event.name(), &call.name, &call.input)
        .await;
    let decision = HookDecision::from_outcome(verdict.outcome(), verdict.reason());
    Ok((decision, verdict.context))
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_PAYLOAD_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|err| format!("cannot read the hook input: {err}"))?;
    if text.len() as u64 > MAX_PAYLOAD_BYTES {
        return Err(format!(
            "the hook input is larger than {MAX_PAYLOAD_BYTES} bytes"
        ));
    }
    Ok(text)
}

fn emit(answer: &HookAnswer) -> ExitCode {
    if let Some(message) = &answer.stderr {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            bridge_policy::redact(message)
        );
    }
    let mut stdout = std::io::stdout().lock();
    let mut value: Value = answer.stdout.clone();
    bridge_policy::redact_value(&mut value);
    if writeln!(stdout, "{value}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        // An answer the agent cannot read must still block.
        return ExitCode::from(2);
    }
    ExitCode::from(answer.exit_code)
}
