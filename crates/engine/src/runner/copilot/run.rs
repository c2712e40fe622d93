//! One task delegated to the Copilot CLI: start it, check sign-in, create a
//! session with our hooks, BYOK provider and MCP servers, send the task,
//! answer its hooks and permission prompts with our policy, and fold its
//! events into a [`RunReport`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_policy::Approver;
use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

use super::client::{CopilotClient, CopilotError};
use super::config::{CopilotCliConfig, McpServer, session_create_params};
use super::events::RunState;
use super::policy::{AskedOnce, CliToolNames, permission_subject};
use super::rpc::Incoming;
use crate::decide::Verdict;
use crate::runner::{RunReport, RunRequest, RunStatus};
use crate::session::Session;
use crate::tools::ToolOwner;

/// How a run loop ended, before the report is written.
enum Ending {
    Idle,
    MaxTurns,
    TimedOut,
    Failed(String),
}

/// Runs `request` on the Copilot CLI for `session` (in the session's
/// workspace). Never panics and never hangs past `request.timeout`: every
/// failure, from a missing CLI to one that dies mid-run, is a
/// [`RunStatus::Failed`] report whose `error` tells the user why.
pub async fn run_copilot(
    session: &Arc<Session>,
    request: &RunRequest,
    config: &CopilotCliConfig,
) -> RunReport {
    let started = Instant::now();
    let deadline = request.timeout.map(|t| started + t);
    let mut state = RunState::default();
    session.user_message(&request.task);
    let ending = match deadline {
        Some(deadline) => {
            match tokio::time::timeout_at(
                deadline.into(),
                drive(session, request, config, &mut state),
            )
            .await
            {
                Ok(ending) => ending,
                Err(_) => Ending::TimedOut,
            }
        }
        None => drive(session, request, config, &mut state).await,
    };
    session.turn_finished();
    let (status, error) = match ending {
        Ending::Idle => match state.error.take() {
            Some(error) if state.final_text.is_empty() => (RunStatus::Failed, Some(error)),
            other => (RunStatus::Completed, other),
        },
        Ending::MaxTurns => (
            RunStatus::MaxTurns,
            Some(format!(
                "stopped after {} turns (max_turns)",
                request.max_turns
            )),
        ),
        Ending::TimedOut => (
            RunStatus::TimedOut,
            Some(format!(
                "the Copilot CLI did not finish within {} ms",
                request.timeout.unwrap_or_default().as_millis()
            )),
        ),
        Ending::Failed(error) => (RunStatus::Failed, Some(error)),
    };
    RunReport {
        session_id: session.id().to_owned(),
        status,
        final_text: state.final_text,
        tool_calls: state.tool_calls,
        turns: state.turns,
        usage: state.usage,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        error,
    }
}

async fn drive(
    session: &Arc<Session>,
    request: &RunRequest,
    config: &CopilotCliConfig,
    state: &mut RunState,
) -> Ending {
    // The session's own tools for the CLI, served while it runs (the
    // guard in `served` stops the server when this returns).
    let served = match &config.session_tools {
        Some(server) => server.serve(session).await.unwrap_or_else(|err| {
            tracing::warn!(error = %err, "the session's tools could not be served to the Copilot CLI");
            None
        }),
        None => None,
    };
    let with_served;
    let config = match &served {
        Some(served) => {
            let mut config = config.clone();
            config
                .mcp_servers
                .insert(served.name.clone(), McpServer::served(served));
            with_served = config;
            &with_served
        }
        None => config,
    };
    let mut names = CliToolNames::new(config.mcp_servers.keys());
    if let Some(served) = &served {
        names = names.with_hub_server(&served.name);
    }
    let mut client = match CopilotClient::start(config, session.cwd()).await {
        Ok(client) => client,
        Err(CopilotError(message)) => return Ending::Failed(message),
    };
    let ending = converse(&mut client, session, request, config, &names, state).await;
    client.close().await;
    ending
}

async fn converse(
    client: &mut CopilotClient,
    session: &Arc<Session>,
    request: &RunRequest,
    config: &CopilotCliConfig,
    names: &CliToolNames,
    state: &mut RunState,
) -> Ending {
    // Without BYOK the CLI needs a GitHub sign-in; say so before a session
    // starts rather than after a model call fails.
    if config.provider.is_none() {
        match client.auth_status().await {
            Ok(auth) if !auth.authenticated => return Ending::Failed(auth.user_message()),
            Ok(_) => {}
            Err(CopilotError(message)) => return Ending::Failed(message),
        }
    }
    let cli_session = bridge_util::ids::unique_id("copilot-bridge");
    let params = session_create_params(config, request, &cli_session, session.cwd());
    if let Err(err) = client.call("session.create", params).await {
        return Ending::Failed(
            client
                .fail("the Copilot CLI refused the session", err)
                .await
                .0,
        );
    }
    let send = json!({"sessionId": cli_session, "prompt": request.task});
    if let Err(err) = client.call("session.send", send).await {
        return Ending::Failed(client.fail("the Copilot CLI refused the task", err).await.0);
    }
    // The CLI asks about a call twice (hook, then permission prompt): one
    // person's answer serves both.
    let asking = AskedOnce::new(session.approver().clone());
    let ending = loop {
        let Some(message) = client.process.incoming.recv().await else {
            let reason = client
                .process
                .exit_summary(Duration::from_millis(500))
                .await;
            break Ending::Failed(format!(
                "the Copilot CLI stopped before the task finished: {reason}"
            ));
        };
        match message {
            Incoming::Notification { method, params } if method == "session.event" => {
                if params.get("sessionId").and_then(Value::as_str) != Some(cli_session.as_str()) {
                    continue;
                }
                let kind = params
                    .pointer("/event/type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let data = params
                    .pointer("/event/data")
                    .cloned()
                    .unwrap_or(Value::Null);
                if kind == "permission.requested" {
                    answer_permission_event(client, session, names, &cli_session, &data, &asking)
                        .await;
                    continue;
                }
                state.apply(session, kind, &data);
                if state.idle {
                    break Ending::Idle;
                }
                if state.turns > request.max_turns {
                    break Ending::MaxTurns;
                }
            }
            Incoming::Notification { .. } => {}
            Incoming::Request { id, method, params } => {
                let answer = answer_request(session, names, &method, &params, &asking).await;
                let rpc = &client.process.rpc;
                let sent = match answer {
                    Answer::Result(result) => rpc.respond(id, result).await,
                    Answer::Refused(reason) => rpc.respond_error(id, REFUSED, &reason).await,
                    Answer::Unhandled => {
                        let message = format!("copilot-bridge does not handle {method}");
                        rpc.respond_error(id, -32601, &message).await
                    }
                };
                if let Err(err) = sent {
                    break Ending::Failed(
                        client.fail("answering the Copilot CLI failed", err).await.0,
                    );
                }
            }
        }
    };
    if !matches!(ending, Ending::Idle | Ending::Failed(_)) {
        let _ = client
            .call("session.abort", json!({"sessionId": cli_session}))
            .await;
    }
    ending
}

/// The JSON-RPC error code of a hook answered with a refusal.
const REFUSED: i64 = -32000;

/// What we answer a request of the CLI with.
enum Answer {
    Result(Value),
    /// An error response carrying our reason: how a hook whose output has
    /// no deny (`preMcpToolCall`) refuses.
    Refused(String),
    /// A method we do not serve.
    Unhandled,
}

/// Answers a request the CLI sent.
async fn answer_request(
    session: &Session,
    names: &CliToolNames,
    method: &str,
    params: &Value,
    asking: &dyn Approver,
) -> Answer {
    match method {
        "hooks.invoke" => match answer_hook(session, names, params, asking).await {
            Ok(output) => Answer::Result(json!({ "output": output })),
            Err(reason) => Answer::Refused(reason),
        },
        // Protocol 2: the prompt is a call and the decision its result.
        "permission.request" => {
            let request = params.get("permissionRequest").unwrap_or(params);
            let allowed = answer_permission(session, names, request, asking)
                .await
                .allowed();
            let kind = if allowed {
                "approved"
            } else {
                "denied-interactively-by-user"
            };
            Answer::Result(json!({"result": {"kind": kind}}))
        }
        _ => Answer::Unhandled,
    }
}

/// A permission prompt, decided; one of a kind we do not know is refused.
async fn answer_permission(
    session: &Session,
    names: &CliToolNames,
    request: &Value,
    asking: &dyn Approver,
) -> Verdict {
    match permission_subject(request) {
        Some((_, owner, _)) if names.served_by_hub(&owner) => hub_served(),
        Some((tool, owner, args)) => {
            session
                .check_agent_tool_asking(
                    Agent::CopilotCli,
                    "permissionRequest",
                    &tool,
                    &owner,
                    &args,
                    asking,
                )
                .await
        }
        None => Verdict::denied("copilot-bridge does not know this kind of permission request"),
    }
}

/// A hook's output, or the reason to refuse it with an error.
async fn answer_hook(
    session: &Session,
    names: &CliToolNames,
    params: &Value,
    asking: &dyn Approver,
) -> Result<Value, String> {
    let hook = params
        .get("hookType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    let text = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
    };
    match hook {
        "preToolUse" => {
            let verdict = match text("toolName") {
                Some(tool) if names.served_by_hub(&names.subject(tool).1) => hub_served(),
                Some(tool) => {
                    let (tool, owner) = names.subject(tool);
                    let args = tool_arguments(input.get("toolArgs"));
                    session
                        .check_agent_tool_asking(
                            Agent::CopilotCli,
                            hook,
                            &tool,
                            &owner,
                            &args,
                            asking,
                        )
                        .await
                }
                None => Verdict::denied("a preToolUse hook call without a tool name is refused"),
            };
            let mut output = json!({
                "permissionDecision": if verdict.allowed() { "allow" } else { "deny" },
                "permissionDecisionReason": verdict.reason(),
            });
            if !verdict.context.is_empty() {
                output["additionalContext"] = json!(verdict.context.join("\n"));
            }
            Ok(output)
        }
        // The CLI's last word before it calls an MCP tool, with the server
        // and tool named apart (so no name splitting can be fooled). Its
        // answer can only change the request's `_meta`; a deny is reported
        // as an error, and `preToolUse` has already refused the same call.
        "preMcpToolCall" => {
            let verdict = match (text("serverName"), text("toolName")) {
                (Some(server), Some(_))
                    if names.served_by_hub(&ToolOwner::Mcp(server.to_owned())) =>
                {
                    hub_served()
                }
                (Some(server), Some(tool)) => {
                    let name = crate::mcp_client::exposed_name(server, tool);
                    let owner = ToolOwner::Mcp(server.to_owned());
                    let args = tool_arguments(input.get("arguments"));
                    session
                        .check_agent_tool_asking(
                            Agent::CopilotCli,
                            hook,
                            &name,
                            &owner,
                            &args,
                            asking,
                        )
                        .await
                }
                _ => Verdict::denied(
                    "a preMcpToolCall hook call without a server and tool name is refused",
                ),
            };
            if verdict.allowed() {
                Ok(json!({}))
            } else {
                Err(verdict.reason().to_owned())
            }
        }
        _ => Ok(json!({})),
    }
}

/// The answer for a tool of the server this process serves the session's
/// own tools on: let through, because its call is decided (and audited,
/// and its result redacted) by `Session::call_tool` when the server runs
/// it, and deciding here too would ask a person twice.
fn hub_served() -> Verdict {
    Verdict::allowed_for("decided by copilot-bridge when its server runs the call")
}

/// A tool's arguments as our checks read them: an object (the CLI sends
/// them as an object or as a JSON string); anything else is kept whole
/// under `input`, where blocked patterns still see it.
fn tool_arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
            Ok(args @ Value::Object(_)) => args,
            _ => json!({"input": raw}),
        },
        Some(args @ Value::Object(_)) => args.clone(),
        None | Some(Value::Null) => json!({}),
        Some(other) => json!({"input": other}),
    }
}

/// Protocol 3: the prompt arrives as an event and is answered by a call.
async fn answer_permission_event(
    client: &mut CopilotClient,
    session: &Session,
    names: &CliToolNames,
    cli_session: &str,
    data: &Value,
    asking: &dyn Approver,
) {
    let Some(request_id) = data.get("requestId").and_then(Value::as_str) else {
        return;
    };
    let request = data.get("permissionRequest").unwrap_or(data);
    let verdict = answer_permission(session, names, request, asking).await;
    let result = if verdict.allowed() {
        json!({"kind": "approve-once"})
    } else {
        json!({"kind": "reject", "feedback": verdict.reason()})
    };
    let params = json!({"sessionId": cli_session, "requestId": request_id, "result": result});
    if let Err(err) = client
        .call("session.permissions.handlePendingPermissionRequest", params)
        .await
    {
        tracing::warn!(error = %err, "answering a Copilot CLI permission prompt failed");
    }
}
