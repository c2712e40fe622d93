//! One task delegated to the Copilot CLI: start it, check sign-in, create a
//! session with our hooks, BYOK provider and MCP servers, send the task,
//! answer its hooks and permission prompts with our policy, and fold its
//! events into a [`RunReport`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::{CopilotClient, CopilotError};
use super::config::{CopilotCliConfig, session_create_params};
use super::events::RunState;
use super::policy::{ToolVerdict, check_cli_tool, permission_subject};
use super::rpc::Incoming;
use crate::runner::{RunReport, RunRequest, RunStatus};
use crate::session::Session;

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
    let mut client = match CopilotClient::start(config, session.cwd()).await {
        Ok(client) => client,
        Err(CopilotError(message)) => return Ending::Failed(message),
    };
    let ending = converse(&mut client, session, request, config, state).await;
    client.close().await;
    ending
}

async fn converse(
    client: &mut CopilotClient,
    session: &Arc<Session>,
    request: &RunRequest,
    config: &CopilotCliConfig,
    state: &mut RunState,
) -> Ending {
    // Without BYOK the CLI needs a GitHub sign-in; say so before a session
    // starts rather than after a model call fails.
    if config.byok.is_none() {
        match client.auth_status().await {
            Ok(auth) if !auth.authenticated => return Ending::Failed(auth.user_message()),
            Ok(_) => {}
            Err(CopilotError(message)) => return Ending::Failed(message),
        }
    }
    let cli_session = crate::ids::unique_id("copilot-bridge");
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
                    answer_permission_event(client, session, &cli_session, &data).await;
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
                let answer = answer_request(session, &method, &params).await;
                let sent = match answer {
                    Some(result) => client.process.rpc.respond(id, result).await,
                    None => {
                        client
                            .process
                            .rpc
                            .respond_error(
                                id,
                                -32601,
                                &format!("copilot-bridge does not handle {method}"),
                            )
                            .await
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

/// Answers a request the CLI sent; `None` for a method we do not serve.
async fn answer_request(session: &Session, method: &str, params: &Value) -> Option<Value> {
    match method {
        "hooks.invoke" => Some(json!({"output": answer_hook(session, params).await})),
        // Protocol 2: the prompt is a call and the decision its result.
        "permission.request" => {
            let request = params.get("permissionRequest").unwrap_or(params);
            let verdict = match permission_subject(request) {
                Some((tool, args)) => {
                    check_cli_tool(session, "permission", &tool, &args)
                        .await
                        .allowed
                }
                None => false,
            };
            let kind = if verdict {
                "approved"
            } else {
                "denied-interactively-by-user"
            };
            Some(json!({"result": {"kind": kind}}))
        }
        _ => None,
    }
}

async fn answer_hook(session: &Session, params: &Value) -> Value {
    let hook = params
        .get("hookType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    match hook {
        "preToolUse" => {
            let tool = input
                .get("toolName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // Our checks read named fields of an object; anything else is
            // kept whole under `input`, where blocked patterns still see it.
            let args = match input.get("toolArgs") {
                Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                    Ok(args @ Value::Object(_)) => args,
                    _ => json!({"input": raw}),
                },
                Some(args @ Value::Object(_)) => args.clone(),
                None | Some(Value::Null) => json!({}),
                Some(other) => json!({"input": other}),
            };
            let verdict = if tool.trim().is_empty() {
                ToolVerdict {
                    allowed: false,
                    reason: "a preToolUse hook call without a tool name is refused".to_owned(),
                    context: Vec::new(),
                }
            } else {
                check_cli_tool(session, "preToolUse", tool, &args).await
            };
            let mut output = json!({
                "permissionDecision": if verdict.allowed { "allow" } else { "deny" },
                "permissionDecisionReason": verdict.reason,
            });
            if !verdict.context.is_empty() {
                output["additionalContext"] = json!(verdict.context.join("\n"));
            }
            output
        }
        _ => json!({}),
    }
}

/// Protocol 3: the prompt arrives as an event and is answered by a call.
async fn answer_permission_event(
    client: &mut CopilotClient,
    session: &Session,
    cli_session: &str,
    data: &Value,
) {
    let Some(request_id) = data.get("requestId").and_then(Value::as_str) else {
        return;
    };
    let request = data.get("permissionRequest").unwrap_or(data);
    let verdict = match permission_subject(request) {
        Some((tool, args)) => check_cli_tool(session, "permission", &tool, &args).await,
        None => ToolVerdict {
            allowed: false,
            reason: "copilot-bridge does not know this kind of permission request".to_owned(),
            context: Vec::new(),
        },
    };
    let result = if verdict.allowed {
        json!({"kind": "approve-once"})
    } else {
        json!({"kind": "reject", "feedback": verdict.reason})
    };
    let params = json!({"sessionId": cli_session, "requestId": request_id, "result": result});
    if let Err(err) = client
        .call("session.permissions.handlePendingPermissionRequest", params)
        .await
    {
        tracing::warn!(error = %err, "answering a Copilot CLI permission prompt failed");
    }
}
