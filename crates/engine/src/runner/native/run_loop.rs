//! The loop: prompt, then turns of model and tools, under the run's
//! deadline and cancellation.

use std::sync::Arc;
use std::time::Instant;

use bridge_llm::{ChatBackend, ChatRequest, FinishReason, Message, Role, ToolDefinition};
use serde_json::json;

use super::execute::run_calls;
use super::journal::Journal;
use super::lifecycle::submit_prompt;
use super::model::ask;
use super::prompt::system_prompt;
use super::{NativeRunner, NativeSettings};
use crate::log::{ToolRequest, types};
use crate::runner::{RunContext, RunReport, RunRequest, RunStatus, ToolCallRecord, UsageTotals};
use crate::session::Session;

/// What every step of a run reads.
pub(super) struct LoopContext<'a> {
    pub session: &'a Session,
    pub backend: &'a dyn ChatBackend,
    pub settings: &'a NativeSettings,
    pub journal: Journal,
}

/// Why a run stopped without an answer.
#[derive(Debug)]
pub(super) struct RunFailure {
    pub status: RunStatus,
    pub message: String,
}

/// What the run has done so far; kept outside the loop's future so that a
/// deadline or a cancellation, which drop that future, still report it.
#[derive(Default)]
struct Progress {
    turns: u32,
    usage: UsageTotals,
    tool_calls: Vec<ToolCallRecord>,
    /// The last text the model wrote, for a run that stops early.
    last_text: String,
}

pub(super) async fn drive(
    runner: &NativeRunner,
    session: Arc<Session>,
    request: RunRequest,
    messages: Vec<Message>,
    context: RunContext,
) -> RunReport {
    let started = Instant::now();
    let cx = LoopContext {
        session: &session,
        backend: runner.backend.as_ref(),
        settings: &runner.settings,
        journal: Journal::new(context.log().cloned()),
    };
    let model = request.model.clone().or_else(|| session.model());
    let mut progress = Progress::default();
    let ending = {
        let work = run_turns(&cx, &request, model.as_deref(), messages, &mut progress);
        let deadline = async {
            match request.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ending = work => ending,
            () = context.cancel_token().cancelled() => Err(RunFailure {
                status: RunStatus::Cancelled,
                message: "the run was cancelled".to_owned(),
            }),
            () = deadline => Err(RunFailure {
                status: RunStatus::TimedOut,
                // Debug form: "300ms", "90s"; an embedder's deadline may be
                // under a second, which whole seconds would show as 0.
                message: format!(
                    "the run did not finish within {:?}",
                    request.timeout.unwrap_or_default()
                ),
            }),
        }
    };
    let (status, final_text, error) = match ending {
        Ok(text) => (RunStatus::Completed, text, None),
        Err(failure) => {
            if failure.status != RunStatus::Failed {
                // Failures were logged where they happened.
                cx.journal.append(
                    types::SESSION_ERROR,
                    json!({"errorType": failure.status, "message": failure.message}),
                    None,
                );
            }
            let text = std::mem::take(&mut progress.last_text);
            (failure.status, text, Some(failure.message))
        }
    };
    cx.journal.append(
        types::SESSION_IDLE,
        json!({"status": status, "turns": progress.turns, "toolCalls": progress.tool_calls.len()}),
        None,
    );
    cx.journal.flush().await;
    session.turn_finished();
    RunReport {
        session_id: session.id().to_owned(),
        status,
        final_text,
        tool_calls: progress.tool_calls,
        turns: progress.turns,
        usage: progress.usage,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        error,
    }
}

async fn run_turns(
    cx: &LoopContext<'_>,
    request: &RunRequest,
    model: Option<&str>,
    mut messages: Vec<Message>,
    progress: &mut Progress,
) -> Result<String, RunFailure> {
    let prompt = submit_prompt(
        &request.task,
        cx.settings.project_context.as_deref(),
        &cx.session.context(),
    );
    if prompt.redacted || !prompt.injected.is_empty() {
        cx.journal.hook(
            "onUserPromptSubmitted",
            json!({"redacted": prompt.redacted, "injected": prompt.injected}),
            None,
        );
    }
    cx.session.user_message(&prompt.text);
    let prompt_id = cx
        .journal
        .append(types::USER_MESSAGE, types::user_message(&prompt.text), None);
    messages.push(Message::text(Role::User, prompt.text));
    // One request for the whole run: the conversation is the request's own
    // messages, grown in place, and each turn lends it to the backend, so no
    // turn copies the conversation (the backend still serializes it whole).
    let system = Message::text(Role::System, system_prompt(cx.session).await);
    messages.insert(0, system);
    let mut chat = ChatRequest {
        model: model.map(str::to_owned),
        messages,
        tools: tool_definitions(cx.session),
        ..ChatRequest::default()
    };
    let mut invalid_answers = 0;
    let mut parent = prompt_id;
    for turn in 1..=request.max_turns {
        progress.turns = turn;
        let turn_id = cx.journal.append(
            types::ASSISTANT_TURN_START,
            json!({"turn": turn}),
            parent.as_deref(),
        );
        let answer = ask(cx, &chat, turn_id.as_deref()).await?;
        if let Some(usage) = answer.usage {
            progress.usage.prompt_tokens += usage.prompt_tokens;
            progress.usage.completion_tokens += usage.completion_tokens;
        }
        progress.usage.requests += 1;
        cx.journal.append(
            types::SESSION_USAGE,
            types::usage(
                model,
                answer.usage.map_or(0, |u| u.prompt_tokens),
                answer.usage.map_or(0, |u| u.completion_tokens),
            ),
            turn_id.as_deref(),
        );
        let message_id = record_answer(cx, &answer, turn_id.as_deref());
        progress.last_text.clone_from(&answer.text);
        chat.messages.push(Message {
            role: Role::Assistant,
            content: (!answer.text.is_empty()).then(|| answer.text.clone()),
            tool_calls: answer.tool_calls.clone(),
            tool_call_id: None,
        });
        if answer.tool_calls.is_empty() {
            cx.journal.append(
                types::ASSISTANT_TURN_END,
                json!({"turn": turn}),
                turn_id.as_deref(),
            );
            if answer.finish == Some(FinishReason::Length) && answer.text.is_empty() {
                return Err(RunFailure {
                    status: RunStatus::Failed,
                    message: "the model stopped at its output limit without answering".into(),
                });
            }
            return Ok(answer.text);
        }
        let executed = run_calls(cx, &answer.tool_calls, message_id.as_deref()).await;
        let all_invalid = executed.iter().all(|e| e.invalid_arguments);
        for result in executed {
            chat.messages
                .push(Message::tool_result(result.call_id, result.content));
            progress.tool_calls.push(result.record);
        }
        cx.journal.append(
            types::ASSISTANT_TURN_END,
            json!({"turn": turn}),
            turn_id.as_deref(),
        );
        parent = turn_id;
        invalid_answers = if all_invalid { invalid_answers + 1 } else { 0 };
        if invalid_answers >= cx.settings.max_invalid_answers {
            let message = format!(
                "the model sent tool calls with invalid JSON arguments {invalid_answers} times in a row"
            );
            cx.journal.append(
                types::SESSION_ERROR,
                types::session_error("invalid_tool_call", &message),
                parent.as_deref(),
            );
            return Err(RunFailure {
                status: RunStatus::Failed,
                message,
            });
        }
    }
    Err(RunFailure {
        status: RunStatus::MaxTurns,
        message: format!(
            "the task was not finished within {} turns",
            request.max_turns
        ),
    })
}

/// Logs the answer (`assistant.message`) and tells the session's
/// subscribers; fills in a missing call id, which every later message must
/// be able to name.
fn record_answer(
    cx: &LoopContext<'_>,
    answer: &super::model::Answer,
    parent: Option<&str>,
) -> Option<String> {
    let requests: Vec<ToolRequest> = answer
        .tool_calls
        .iter()
        .map(|call| {
            let mut arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            bridge_policy::redact_value(&mut arguments);
            ToolRequest {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                arguments,
            }
        })
        .collect();
    let shown: Vec<serde_json::Value> = requests
        .iter()
        .map(|r| json!({"toolCallId": r.tool_call_id, "name": r.name, "arguments": r.arguments}))
        .collect();
    cx.session
        .assistant_message(&bridge_policy::redact(&answer.text), shown);
    cx.journal.append(
        types::ASSISTANT_MESSAGE,
        types::assistant_message(&answer.text, &requests),
        parent,
    )
}

fn tool_definitions(session: &Session) -> Vec<ToolDefinition> {
    session
        .tools()
        .iter()
        .map(|entry| ToolDefinition {
            name: entry.spec.name.clone(),
            description: entry.spec.description.clone(),
            parameters: entry.spec.input_schema.clone(),
        })
        .collect()
}
