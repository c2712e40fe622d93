//! The tool calls of one answer: batches, `onPreToolUse` through
//! [`Session::call_tool`], timeouts, `onErrorOccurred`, `onPostToolUse`.

use std::time::Instant;

use bridge_llm::ToolCall;
use bridge_policy::audit::{Redacted, summarize_for_audit};
use bridge_protocol::{ToolEffect, json_kind};
use bridge_util::recovery::RecoveryAction;
use futures::StreamExt;
use serde_json::{Value, json};

use super::lifecycle::{retry_backoff, tool_failure_class, tool_recovery, truncate_for_model};
use super::run_loop::LoopContext;
use crate::call::{CallOrigin, CallOutcome, ToolFailure};
use crate::log::types;
use crate::runner::ToolCallRecord;

/// Characters of a result the run report keeps per call.
const SUMMARY_CHARS: usize = 160;

/// One call as the model asked for it, checked.
struct Planned<'a> {
    call: &'a ToolCall,
    /// `Err`: the arguments were not a JSON object; the reason.
    args: Result<Value, String>,
    effect: Option<ToolEffect>,
    /// Past the per-answer limit: answered without running; the reason.
    over_limit: Option<String>,
}

impl Planned<'_> {
    /// Writes and executions run alone; an unknown tool, broken arguments
    /// or a call past the limit fail without running, so they need no turn
    /// of their own.
    fn runs_alone(&self) -> bool {
        self.args.is_ok()
            && self.over_limit.is_none()
            && matches!(self.effect, Some(ToolEffect::Write | ToolEffect::Execute))
    }
}

/// What one call gave.
pub(super) struct Executed {
    pub call_id: String,
    /// What the model is shown.
    pub content: String,
    pub record: ToolCallRecord,
    pub invalid_arguments: bool,
}

/// Runs the calls of one answer and returns their results in the order of
/// the calls. Consecutive read-only calls run together (bounded); a call
/// that writes or executes waits for everything before it and runs alone.
pub(super) async fn run_calls(
    cx: &LoopContext<'_>,
    calls: &[ToolCall],
    parent: Option<&str>,
) -> Vec<Executed> {
    let limit = cx.settings.max_tool_calls_per_answer;
    let planned: Vec<Planned<'_>> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| Planned {
            call,
            args: parse_arguments(&call.arguments),
            effect: cx.session.tool(&call.name).map(|entry| entry.spec.effect),
            over_limit: (index >= limit).then(|| {
                format!(
                    "{} was not called: an answer may make at most {limit} tool calls and this was call {}. Ask for it again in your next answer if it is still needed.",
                    call.name,
                    index + 1
                )
            }),
        })
        .collect();
    let mut executed = Vec::with_capacity(planned.len());
    let mut rest = planned.as_slice();
    while let Some(first) = rest.first() {
        if first.runs_alone() {
            executed.push(run_one(cx, first, parent).await);
            rest = &rest[1..];
            continue;
        }
        let batch_len = rest
            .iter()
            .position(Planned::runs_alone)
            .unwrap_or(rest.len());
        let (batch, after) = rest.split_at(batch_len);
        if let [only] = batch {
            executed.push(run_one(cx, only, parent).await);
        } else {
            // The futures are made first: a stream of a borrowing closure
            // would not be `Send` for every lifetime, which `Runner` needs.
            let calls: Vec<_> = batch
                .iter()
                .map(|planned| run_one(cx, planned, parent))
                .collect();
            let results: Vec<Executed> = futures::stream::iter(calls)
                .buffered(cx.settings.max_parallel_tools.max(1))
                .collect()
                .await;
            executed.extend(results);
        }
        rest = after;
    }
    executed
}

/// Arguments as the model wrote them: a JSON object, or empty (some models
/// send nothing for a call without parameters).
fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, got {}",
            json_kind(&other)
        )),
        Err(err) => Err(format!("the arguments are not valid JSON ({err})")),
    }
}

/// The arguments as logs and reports keep them: redacted, bounded.
fn recorded_arguments(planned: &Planned<'_>) -> Value {
    match &planned.args {
        Ok(args) => Redacted::record_of(args).into_value(),
        Err(_) => summarize_for_audit(&Value::String(
            bridge_policy::redact(&planned.call.arguments).into_owned(),
        )),
    }
}

async fn run_one(cx: &LoopContext<'_>, planned: &Planned<'_>, parent: Option<&str>) -> Executed {
    let call = planned.call;
    let started = Instant::now();
    let arguments = recorded_arguments(planned);
    let start_id = cx.journal.append(
        types::TOOL_EXECUTION_START,
        types::tool_start(&call.id, &call.name, &arguments),
        parent,
    );
    let start_id = start_id.as_deref();
    let outcome = match (&planned.over_limit, &planned.args) {
        (Some(message), _) => {
            cx.journal.append(
                types::SESSION_ERROR,
                json!({"errorType": "too_many_tool_calls", "message": message, "toolCallId": call.id}),
                start_id,
            );
            CallOutcome {
                call_id: String::new(),
                result: Err(ToolFailure::new("too_many_tool_calls", message.clone())),
                context: Vec::new(),
            }
        }
        (None, Ok(args)) => call_with_recovery(cx, planned, args, start_id).await,
        (None, Err(reason)) => {
            let message = format!(
                "{} was not called: {reason}. Send the arguments again as one JSON object.",
                call.name
            );
            cx.journal.append(
                types::SESSION_ERROR,
                json!({"errorType": "invalid_tool_call", "message": message, "toolCallId": call.id}),
                start_id,
            );
            CallOutcome {
                call_id: String::new(),
                result: Err(ToolFailure::new("invalid_arguments", message)),
                context: Vec::new(),
            }
        }
    };
    if let Err(failure) = &outcome.result
        && failure.is_denied()
    {
        cx.journal.hook(
            "onPreToolUse",
            json!({"toolCallId": call.id, "decision": "deny", "reason": failure.message}),
            start_id,
        );
    }
    let (content, cut) =
        truncate_for_model(outcome.to_json().to_string(), cx.settings.tool_result_limit);
    if cut > 0 {
        cx.journal.hook(
            "onPostToolUse",
            json!({"toolCallId": call.id, "truncatedBytes": cut}),
            start_id,
        );
    }
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let ok = outcome.result.is_ok();
    if cx.journal.is_on() {
        let mut data = types::tool_complete(&call.id, &call.name, ok, &content);
        data["durationMs"] = json!(duration_ms);
        if let Err(failure) = &outcome.result {
            data["error"]["code"] = json!(failure.code);
        }
        if cut > 0 {
            data["truncatedBytes"] = json!(cut);
        }
        cx.journal
            .append(types::TOOL_EXECUTION_COMPLETE, data, start_id);
    }
    let summary = match &outcome.result {
        Ok(value) => bridge_policy::redact::preview(&value.to_string(), SUMMARY_CHARS),
        Err(failure) => bridge_policy::redact::preview(&failure.to_string(), SUMMARY_CHARS),
    };
    Executed {
        call_id: call.id.clone(),
        content,
        invalid_arguments: planned.args.is_err(),
        record: ToolCallRecord {
            name: call.name.clone(),
            arguments,
            ok,
            summary,
            duration_ms,
        },
    }
}

/// Calls the tool through the session (the one path: policy, rules and
/// gates, redaction, audit) under the tool timeout, retrying what
/// `onErrorOccurred` says may be retried.
async fn call_with_recovery(
    cx: &LoopContext<'_>,
    planned: &Planned<'_>,
    args: &Value,
    parent: Option<&str>,
) -> CallOutcome {
    let name = planned.call.name.as_str();
    let mut retries_made = 0;
    loop {
        let call = cx.session.call_tool(name, args.clone(), CallOrigin::Engine);
        let outcome = match tokio::time::timeout(cx.settings.tool_timeout, call).await {
            Ok(outcome) => outcome,
            Err(_) => CallOutcome {
                call_id: String::new(),
                result: Err(ToolFailure::new(
                    "timeout",
                    // Debug form: "150ms", "600s"; whole seconds would
                    // say 0 for a sub-second limit.
                    format!(
                        "{name} did not finish within {:?} and was cancelled",
                        cx.settings.tool_timeout
                    ),
                )),
                context: Vec::new(),
            },
        };
        let Err(failure) = &outcome.result else {
            return outcome;
        };
        if failure.is_denied() {
            return outcome;
        }
        let action = tool_recovery(
            &cx.settings.error_policy,
            failure,
            planned.effect,
            retries_made,
        );
        cx.journal.hook(
            "onErrorOccurred",
            json!({
                "source": "tool",
                "toolCallId": planned.call.id,
                "class": tool_failure_class(failure),
                "action": action,
                "retry": retries_made,
                "message": failure.message,
            }),
            parent,
        );
        if action != RecoveryAction::Retry {
            return outcome;
        }
        tokio::time::sleep(retry_backoff(cx.settings.retry_base_delay).delay(retries_made)).await;
        retries_made += 1;
    }
}
