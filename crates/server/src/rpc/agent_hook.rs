//! `agent.hook`: an agent's hook (`copilot-bridge hook`) asking the daemon,
//! so the sessions of agents the hub does not run (Claude Code, the
//! Copilot CLI or Codex started in a terminal) get everything a hub session has:
//! providers see them in `sessions` and can bind to them, and their hook
//! rules and gates apply to the agent's tool calls.
//!
//! Params: `session` (optional: an existing hub session to act in instead of
//! registering one), `agent` (`claude-code` | `copilot-cli` | `codex`),
//! `agentSession` (the agent's own session id), `cwd` (absolute), `event`
//! (`session-start`, `session-end`, `user-prompt-submit`, `pre-tool-use`,
//! `permission-request` (Codex's, decided like `pre-tool-use`),
//! `post-tool-use`, `error`), and by event `tool` (the name as the agent gave it: `Bash`,
//! `mcp__github__list_issues`, `github-list_issues`; read as the hub's
//! naming, `bridge_engine::agent_names`), `mcpServer` (accepted and
//! ignored: the server a tool's name carries is its server), `arguments`,
//! `output`, `prompt`, `message`, `label`. The first hook of
//! an agent session registers it (id `<agent>-<agentSession>`); it ends at
//! `session-end` or after [`AGENT_SESSION_IDLE`] without a hook.
//!
//! Answer: `{session, decision?, reason?, context?}`; `decision` (for
//! `pre-tool-use` and `permission-request`) is `allow`, `ask` (the agent
//! asks its user) or `deny`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_engine::approvals::ReportingApprover;
use bridge_engine::{Door, RegistryError, Session, SessionRegistry, SessionSpec, Verdict};
use bridge_policy::AgentAsks;
use bridge_policy::agent_tools::Agent;
use bridge_protocol::jsonrpc::ErrorObject;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::params::invalid;
use super::{Params, RpcResult, SERVER_ERROR};
use crate::app::ServerContext;

/// An agent session without a hook for this long has gone away (an agent
/// killed before its session-end hook ran).
pub const AGENT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// How long the providers of an ending agent session get to let it go.
const SESSION_END_DEADLINE: Duration = Duration::from_secs(5);

/// Agent sessions (registered by hooks, or by `/mcp/code?workspace=`) the
/// daemon keeps at once: a burst of registrations ends the least recently
/// heard of first, so memory stays bounded.
pub const MAX_AGENT_SESSIONS: usize = 256;

/// The longest agent session id taken into a hub session id.
const MAX_AGENT_SESSION_CHARS: usize = 128;

const EVENTS: &[&str] = &[
    "session-start",
    "session-end",
    "user-prompt-submit",
    "pre-tool-use",
    "permission-request",
    "post-tool-use",
    "error",
];

const PARAMS: &[&str] = &[
    "session",
    "agent",
    "agentSession",
    "cwd",
    "event",
    "tool",
    "mcpServer",
    "arguments",
    "output",
    "prompt",
    "message",
    "label",
    "defer",
];

/// When each agent session registered through a hook last heard of it.
#[derive(Debug, Default)]
pub struct AgentSessions {
    last_seen: Mutex<HashMap<String, Instant>>,
}

impl AgentSessions {
    pub(crate) fn touch(&self, id: &str) {
        bridge_util::sync::lock(&self.last_seen).insert(id.to_owned(), Instant::now());
    }

    fn forget(&self, id: &str) {
        bridge_util::sync::lock(&self.last_seen).remove(id);
    }

    /// Makes room for one more under [`MAX_AGENT_SESSIONS`]: the sessions
    /// least recently heard of, forgotten (the caller ends them).
    pub(crate) fn make_room(&self) -> Vec<String> {
        let mut seen = bridge_util::sync::lock(&self.last_seen);
        let excess = (seen.len() + 1).saturating_sub(MAX_AGENT_SESSIONS);
        if excess == 0 {
            return Vec::new();
        }
        let mut by_age: Vec<(Instant, String)> =
            seen.iter().map(|(id, at)| (*at, id.clone())).collect();
        by_age.sort();
        let oldest: Vec<String> = by_age.into_iter().take(excess).map(|(_, id)| id).collect();
        for id in &oldest {
            seen.remove(id);
        }
        oldest
    }

    /// The sessions not heard of for `idle`, forgotten.
    fn take_idle(&self, idle: Duration) -> Vec<String> {
        let mut seen = bridge_util::sync::lock(&self.last_seen);
        let idle_ids: Vec<String> = seen
            .iter()
            .filter(|(_, at)| at.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle_ids {
            seen.remove(id);
        }
        idle_ids
    }
}

/// Ends the sessions [`AgentSessions::make_room`] gave up, in the
/// background (their providers get their time to let go).
pub(crate) fn end_least_recent(ctx: &ServerContext, ids: Vec<String>) {
    for id in ids {
        tracing::info!(session = %id, "more than {MAX_AGENT_SESSIONS} agent sessions: ending the least recently heard of");
        let registry = ctx.registry().clone();
        tokio::spawn(async move {
            let _ = registry.end(&id, Some(SESSION_END_DEADLINE)).await;
        });
    }
}

/// Ends the agent sessions idle for `idle`, until `shutdown`.
pub async fn end_idle_agent_sessions(
    registry: SessionRegistry,
    sessions: Arc<AgentSessions>,
    idle: Duration,
    shutdown: CancellationToken,
) {
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        for id in sessions.take_idle(idle) {
            tracing::info!(session = %id, "agent session idle for {idle:?}: ending it");
            let _ = registry.end(&id, Some(SESSION_END_DEADLINE)).await;
        }
    }
}

pub(super) async fn agent_hook(ctx: ServerContext, params: Params) -> RpcResult {
    params.only(PARAMS)?;
    let agent_name = params.required_str("agent")?;
    let agent = Agent::from_name(agent_name)
        .ok_or_else(|| invalid("agent", "must be claude-code, copilot-cli or codex"))?;
    let event = params.required_str("event")?.to_owned();
    if !EVENTS.contains(&event.as_str()) {
        return Err(invalid(
            "event",
            &format!("must be one of {}", EVENTS.join(", ")),
        ));
    }
    if matches!(
        event.as_str(),
        "pre-tool-use" | "permission-request" | "post-tool-use"
    ) {
        params.required_str("tool")?;
    }
    let session = agent_session(&ctx, agent, &params).await?;
    let id = session.id().to_owned();
    match event.as_str() {
        "session-start" => Ok(json!({
            "session": id,
            "context": context_texts(None, &session.startup_context()),
        })),
        "session-end" if params.optional_str("session")?.is_some() => {
            // A session the agent joined lives on without it.
            Ok(json!({"session": id, "ending": false}))
        }
        "session-end" => {
            ctx.agent_sessions.forget(&id);
            // The agent is leaving: it does not wait while the session's
            // providers get their time to let go.
            let registry = ctx.registry().clone();
            let ending = id.clone();
            tokio::spawn(async move {
                if let Err(err) = registry.end(&ending, Some(SESSION_END_DEADLINE)).await {
                    tracing::debug!(session = %ending, "agent session end: {err}");
                }
            });
            Ok(json!({"session": id, "ending": true}))
        }
        // Codex's permission request is decided like the call it is about.
        "pre-tool-use" | "permission-request" => {
            let (tool, arguments) = tool_call(&params)?;
            if params.optional_bool("defer")? == Some(true) {
                return deferred_pre_tool_use(&ctx, session, agent, event, &tool, &arguments).await;
            }
            let (_, verdict) = session
                .check_agent_call(agent, &event, &tool, &arguments)
                .await;
            Ok(pre_tool_use_answer(&id, &verdict))
        }
        "post-tool-use" => {
            let (tool, arguments) = tool_call(&params)?;
            let output = params.optional_value("output")?;
            let name = bridge_engine::agent_names::likeliest_name(agent, &tool);
            session.record_agent_tool_ran(agent, &event, &name, &arguments, output);
            let mut answer = json!({"session": id});
            // The output as the model may see it, when redaction changed it
            // (for agents that let a hook replace a tool's result).
            if let Some(Value::String(text)) = output {
                let redacted = bridge_policy::redact(text);
                if redacted != text.as_str() {
                    answer["output"] = json!(redacted);
                }
            }
            Ok(answer)
        }
        "user-prompt-submit" => {
            if let Some(prompt) = params.optional_str("prompt")? {
                session.record_agent_prompt(prompt);
            }
            Ok(json!({
                "session": id,
                "context": context_texts(ctx.native.project_context.as_deref(), &session.context()),
            }))
        }
        "error" => {
            let message = params.optional_str("message")?.unwrap_or("(no message)");
            session.log(agent.name(), &format!("error: {message}"));
            Ok(json!({"session": id}))
        }
        _ => Err(invalid(
            "event",
            &format!("must be one of {}", EVENTS.join(", ")),
        )),
    }
}

/// What `pre-tool-use` answers (and `approvals.wait` for a deferred one).
fn pre_tool_use_answer(session: &str, verdict: &Verdict) -> Value {
    json!({
        "session": session,
        "decision": verdict.outcome().as_str(),
        "reason": verdict.reason(),
        "context": verdict.context,
    })
}

/// `pre-tool-use` with `defer: true` (the Copilot CLI's hook and extension,
/// which have no prompt of their own that reaches the hub): a call the
/// policy asks about goes to the approval queue, and the hook gets the
/// ask's id at once to wait on with `approvals.wait`
/// (crate::rpc::hook_waits). Anything else is answered as without
/// `defer`; with an approval timeout of 0 an ask goes back to the agent.
async fn deferred_pre_tool_use(
    ctx: &ServerContext,
    session: Arc<Session>,
    agent: Agent,
    event: String,
    tool: &str,
    arguments: &Value,
) -> RpcResult {
    let call = session.decide_agent_call(agent, tool, arguments).await;
    let id = session.id().to_owned();
    if call.verdict.question.is_none() || ctx.approval_timeout.is_zero() {
        let (_, verdict) = session.finish_agent_call(&event, call, &AgentAsks).await;
        return Ok(pre_tool_use_answer(&id, &verdict));
    }
    let (report, reported) = tokio::sync::oneshot::channel();
    let (answer_tx, answer_rx) = tokio::sync::watch::channel(None);
    let cancel = CancellationToken::new();
    let approver = ReportingApprover::new(
        ctx.approvals.clone(),
        ctx.approval_timeout,
        report,
        cancel.clone(),
    );
    let session_id = id.clone();
    let mut decided = tokio::spawn(async move {
        let (_, verdict) = session.finish_agent_call(&event, call, &approver).await;
        let answer = pre_tool_use_answer(&session_id, &verdict);
        let _ = answer_tx.send(Some(answer.clone()));
        answer
    });
    let ask_id = tokio::select! {
        reported = reported => reported.ok(),
        // Decided without a question after all (the queue was full).
        finished = &mut decided => return finished.map_err(|err| {
            ErrorObject::new(SERVER_ERROR, format!("agent.hook failed: {err}"))
        }),
    };
    let Some(ask_id) = ask_id else {
        return decided
            .await
            .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("agent.hook failed: {err}")));
    };
    if !ctx
        .deferred_hooks
        .keep(ask_id.clone(), answer_rx, cancel, ctx.approval_timeout)
    {
        // Too many kept: this hook waits on the line instead.
        return decided
            .await
            .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("agent.hook failed: {err}")));
    }
    Ok(json!({
        "session": id,
        "decision": "pending",
        "approval": {"id": ask_id, "timeoutSecs": ctx.approval_timeout.as_secs()},
    }))
}

/// The project context and the providers' contexts as the agent is given
/// them (`additionalContext`), redacted.
fn context_texts(project_context: Option<&str>, ambient: &[(String, String)]) -> Vec<String> {
    bridge_engine::runner::native::context_blocks(project_context, ambient)
        .into_iter()
        .map(|(_, block)| bridge_policy::redact(&block).into_owned())
        .collect()
}

/// The call of a tool event: the tool's name as the agent gave it (read as
/// ours by the decision, whatever the agent's dialect) and its arguments
/// (any JSON: the decision checks what is not an object whole).
fn tool_call(params: &Params) -> Result<(String, Value), ErrorObject> {
    let tool = params.required_str("tool")?.to_owned();
    let arguments = params
        .optional_value("arguments")?
        .cloned()
        .unwrap_or_else(|| json!({}));
    Ok((tool, arguments))
}

/// The hub session of this agent session, registered on its first hook.
async fn agent_session(
    ctx: &ServerContext,
    agent: Agent,
    params: &Params,
) -> Result<Arc<Session>, ErrorObject> {
    let own_id = params.required_str("agentSession")?;
    if own_id.chars().count() > MAX_AGENT_SESSION_CHARS
        || !own_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            "agentSession",
            &format!("must be at most {MAX_AGENT_SESSION_CHARS} letters, digits, '-', '_' or '.'"),
        ));
    }
    let cwd = PathBuf::from(params.required_str("cwd")?);
    if !cwd.is_absolute() {
        return Err(invalid("cwd", "must be an absolute path"));
    }
    // An agent joining a hub session of its choice (the Copilot CLI
    // extension with COPILOT_BRIDGE_SESSION) is not registered anew.
    if let Some(named) = params.optional_str("session")? {
        return ctx
            .session(named)
            .ok_or_else(|| super::methods::no_session(ctx, named));
    }
    let id = format!("{}-{own_id}", agent.name());
    if let Some(session) = ctx.registry().get(&id) {
        ctx.agent_sessions.touch(&id);
        return Ok(session);
    }
    // What the agent names is its workspace only if it may be one.
    let cwd = super::params::named_workspace(ctx, "cwd", &cwd).await?;
    let label = match params.optional_str("label")? {
        Some(label) => label.to_owned(),
        None => format!(
            "{} · {}",
            agent.display_name(),
            super::params::dir_label(&cwd)
        ),
    };
    end_least_recent(ctx, ctx.agent_sessions.make_room());
    let spec = SessionSpec {
        id: Some(id.clone()),
        label,
        cwd,
        foreground: true,
        door: Door::of_agent(agent),
    };
    let registry = ctx.registry().clone();
    // Opening a workspace reads its policy file.
    let created = tokio::task::spawn_blocking(move || {
        registry.create_with_approver(spec, Arc::new(AgentAsks))
    })
    .await
    .map_err(|err| ErrorObject::new(SERVER_ERROR, format!("agent.hook failed: {err}")))?;
    let session = match created {
        Ok(session) => session,
        // Two hooks of a new session at once: the other one created it.
        Err(RegistryError::Duplicate(_)) => ctx
            .registry()
            .get(&id)
            .ok_or_else(|| ErrorObject::new(SERVER_ERROR, format!("session {id} vanished")))?,
        Err(err) => {
            return Err(invalid("cwd", &format!("cannot open the workspace: {err}")));
        }
    };
    ctx.agent_sessions.touch(&id);
    Ok(session)
}
