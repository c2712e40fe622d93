//! A tool call as an OpenTelemetry `execute_tool` span (docs/telemetry.md),
//! recorded by `Session::call_tool` after the call, only when telemetry is
//! on: the door, the decision and its reason, the failure's code, the wait
//! for a person as a child span, and — with `capture_content` — the
//! redacted arguments and result, cut. Also the one way a model call's
//! content is captured ([`captured_input`], [`captured_output`]), for the
//! native loop here and the facade's requests.

use std::time::{Duration, SystemTime};

use bridge_policy::audit::Redacted;
use bridge_protocol::Decision;
use bridge_telemetry::Telemetry;
use bridge_telemetry::spans::{ApprovalRecord, ToolCallRecord};
use serde_json::Value;

use crate::call::{CallOrigin, ToolFailure};

/// The most of an argument or result a span carries (its head).
const MAX_CONTENT_CHARS: usize = 8 * 1024;

/// What one call gives its span.
pub(crate) struct ToolSpan<'a> {
    pub session: &'a str,
    pub tool: &'a str,
    pub call_id: &'a str,
    pub origin: CallOrigin,
    pub decision: &'a Decision,
    pub elapsed: Duration,
    pub outcome: Result<(), &'a ToolFailure>,
    /// The audit log's record of a person's answer (`answer`, `waitedMs`).
    pub approval: Option<&'a Value>,
    pub arguments: Option<&'a Redacted>,
    pub result: Option<&'a Redacted>,
}

pub(crate) fn record_tool_call(telemetry: &Telemetry, call: ToolSpan<'_>) {
    let ended = SystemTime::now();
    let started = ended.checked_sub(call.elapsed).unwrap_or(ended);
    let approval = call.approval.map(|record| {
        let waited = Duration::from_millis(record["waitedMs"].as_u64().unwrap_or(0));
        ApprovalRecord {
            // The wait came before the tool ran: from the call's start.
            started,
            waited: waited.min(call.elapsed),
            outcome: record["answer"].as_str().unwrap_or("unknown"),
        }
    });
    let content = |record: Option<&Redacted>| {
        telemetry
            .captures_content()
            .then(|| record.map(|record| cut(&record.as_value().to_string())))
            .flatten()
    };
    telemetry.tool_call(
        &ToolCallRecord {
            tool: call.tool,
            call_id: call.call_id,
            door: call.origin.as_str(),
            session: call.session,
            decision: call.decision.decision.as_str(),
            reason: call.decision.reason.as_deref(),
            started,
            duration: call.elapsed,
            error: call.outcome.err().map(|failure| failure.code.as_str()),
            approval,
            arguments: content(call.arguments),
            result: content(call.result),
        },
        None,
    );
}

fn cut(text: &str) -> String {
    bridge_policy::redact::shorten(text, MAX_CONTENT_CHARS)
}

/// A model call of the native loop as a `chat` span (under the run's
/// `invoke_agent`), with its tokens, finish reason and time to the first
/// chunk.
pub(crate) fn record_model_call(
    telemetry: &Telemetry,
    backend: &str,
    request: &bridge_llm::ChatRequest,
    answered: Result<&bridge_llm::ChatResponse, &bridge_llm::LlmError>,
    elapsed: Duration,
    first_chunk: Option<Duration>,
) {
    let answer = answered.ok();
    let error = answered.err().map(|err| err.to_string());
    let finish_reasons = answer
        .and_then(|answer| answer.finish.as_ref())
        .map(|finish| vec![finish_reason(finish)])
        .unwrap_or_default();
    telemetry.chat(
        &bridge_telemetry::ChatRecord {
            provider: backend,
            request_model: request.model.as_deref(),
            input_tokens: answer
                .and_then(|a| a.usage)
                .map(|usage| usage.prompt_tokens),
            output_tokens: answer
                .and_then(|a| a.usage)
                .map(|usage| usage.completion_tokens),
            finish_reasons,
            started: SystemTime::now().checked_sub(elapsed),
            duration: elapsed,
            first_chunk,
            error: error.as_deref().map(|_| "model_error"),
            input: telemetry
                .captures_content()
                .then(|| captured_input(request)),
            output: answer
                .filter(|_| telemetry.captures_content())
                .map(captured_output),
            ..Default::default()
        },
        None,
    );
}

/// The conversation a model call sends, as a span carries it with
/// `capture_content` on (`gen_ai.input.messages`): redacted, cut.
pub fn captured_input(request: &bridge_llm::ChatRequest) -> String {
    cut(&serde_json::to_string(&request.messages).unwrap_or_default())
}

/// An answer's text, as a span carries it (`gen_ai.output.messages`):
/// redacted, cut.
pub fn captured_output(answer: &bridge_llm::ChatResponse) -> String {
    cut(&answer.text)
}

fn finish_reason(finish: &bridge_llm::FinishReason) -> String {
    match finish {
        bridge_llm::FinishReason::Stop => "stop".to_owned(),
        bridge_llm::FinishReason::Length => "length".to_owned(),
        bridge_llm::FinishReason::ToolCalls => "tool_calls".to_owned(),
        bridge_llm::FinishReason::ContentFilter => "content_filter".to_owned(),
        bridge_llm::FinishReason::Other(other) => other.clone(),
    }
}
