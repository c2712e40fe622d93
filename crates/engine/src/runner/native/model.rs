//! One model request: streamed, assembled into an answer, with
//! `onErrorOccurred` for failures.

use bridge_llm::retry::error_class;
use bridge_llm::{ChatEvent, ChatRequest, LlmError, ResponseBuilder};
use bridge_util::recovery::{ErrorClass, RecoveryAction};
use futures::StreamExt;
use serde_json::json;

use super::lifecycle::retry_backoff;
use super::run_loop::{LoopContext, RunFailure};
use crate::log::types;
use crate::runner::RunStatus;

/// One model answer, collected.
pub(super) type Answer = bridge_llm::ChatResponse;

/// How far a failed request got.
struct Failed {
    error: LlmError,
    /// Some of the answer had arrived: the backend's own retries no longer
    /// apply, so the loop decides.
    after_start: bool,
}

/// Asks the model; retries an answer that broke off once it had started
/// (the backend retried what failed before that), within the policy's
/// budget.
pub(super) async fn ask(
    cx: &LoopContext<'_>,
    request: &ChatRequest,
    parent: Option<&str>,
) -> Result<Answer, RunFailure> {
    let mut retries_made = 0;
    loop {
        let failed = match stream_answer(cx, request).await {
            Ok(answer) => return Ok(answer),
            Err(failed) => failed,
        };
        let class = answer_error_class(&failed);
        let action = match class {
            _ if !failed.after_start => RecoveryAction::Abort,
            ErrorClass::NotFound => RecoveryAction::Abort,
            _ => cx.settings.error_policy.decide(class, retries_made),
        };
        let message = failed.error.to_string();
        cx.journal.append(
            types::SESSION_ERROR,
            json!({
                "errorType": "model",
                "message": message,
                "class": class,
                "action": action,
                "retry": retries_made,
            }),
            parent,
        );
        cx.journal.hook(
            "onErrorOccurred",
            json!({"source": "model", "class": class, "action": action}),
            parent,
        );
        if action != RecoveryAction::Retry {
            return Err(RunFailure {
                status: RunStatus::Failed,
                message: format!("the model request failed: {message}"),
            });
        }
        tokio::time::sleep(retry_backoff(cx.settings.retry_base_delay).delay(retries_made)).await;
        retries_made += 1;
    }
}

/// The class of a failed answer for `onErrorOccurred`. A stream that broke
/// off once it had started (the connection dropped, the body ended without
/// its end marker) is a hiccup of the way to the model, not bad output:
/// transient, so the loop asks again (docs/hooks.md). The backends report
/// it as a protocol error whose message says "stream ended early", which
/// the message-based classification alone would call "other" and abort.
fn answer_error_class(failed: &Failed) -> ErrorClass {
    match &failed.error {
        LlmError::Protocol { message, .. }
            if failed.after_start && message.contains("stream ended early") =>
        {
            ErrorClass::Transient
        }
        error => error_class(error),
    }
}

/// One model request as the model answered it, recorded as a `chat` span
/// when telemetry is on (crate::telemetry).
async fn stream_answer(cx: &LoopContext<'_>, request: &ChatRequest) -> Result<Answer, Failed> {
    let started = std::time::Instant::now();
    let mut first_chunk = None;
    let answered = stream_answer_timed(cx, request, started, &mut first_chunk).await;
    if let Some(telemetry) = bridge_telemetry::active() {
        crate::telemetry::record_model_call(
            telemetry,
            cx.backend.name(),
            request,
            answered.as_ref().map_err(|failed| &failed.error),
            started.elapsed(),
            first_chunk,
        );
    }
    answered
}

async fn stream_answer_timed(
    cx: &LoopContext<'_>,
    request: &ChatRequest,
    started_at: std::time::Instant,
    first_chunk: &mut Option<std::time::Duration>,
) -> Result<Answer, Failed> {
    let mut stream = cx.backend.stream(request).await.map_err(|error| Failed {
        error,
        after_start: false,
    })?;
    let idle = cx.settings.model_idle_timeout;
    let mut answer = ResponseBuilder::default();
    let mut started = false;
    loop {
        let event = match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(error))) => {
                return Err(Failed {
                    error,
                    after_start: started,
                });
            }
            Ok(None) => break,
            Err(_) => {
                return Err(Failed {
                    error: LlmError::Timeout {
                        backend: cx.backend.name().to_owned(),
                        after: idle,
                    },
                    // The backend's retries cannot see a stalled stream.
                    after_start: true,
                });
            }
        };
        if !started {
            *first_chunk = Some(started_at.elapsed());
        }
        started = true;
        if let ChatEvent::TextDelta { text } = &event {
            cx.journal
                .ephemeral(types::ASSISTANT_MESSAGE_DELTA, json!({"delta": text}));
            cx.session.assistant_delta(text);
        }
        answer.push(event);
    }
    let mut answer = answer.finish();
    // Every result must name its call; a model that sent no id gets one.
    for call in &mut answer.tool_calls {
        if call.id.trim().is_empty() {
            call.id = bridge_util::ids::unique_id("call");
        }
    }
    Ok(answer)
}
