//! A facade request's trip to its backend: the wait counted as upstream
//! time, the outcome noted for the backend's health, a failure turned into
//! the client's error.

use bridge_compose::{Availability, BackendEntry, Backends};
use bridge_llm::{ChatRequest, ChatResponse, ChatStream, LlmError};

use super::FacadeCall;
use super::errors::FacadeError;
use super::timing::Overhead;
use crate::transcripts::facade as transcript;

/// `entry`'s whole answer to `request`, its usage noted for the request
/// log, the exchange shown in its conversation's transcript.
pub(super) async fn answer_whole(
    call: &FacadeCall,
    entry: &BackendEntry,
    request: ChatRequest,
    clock: &mut Overhead,
) -> Result<ChatResponse, FacadeError> {
    let backends = &call.ctx.backends;
    let shown = shown_in_transcript(call, entry, &request);
    let capturing = captures_content(call, &request);
    // The client's trace goes on to the backend (its `traceparent`).
    let parent = bridge_telemetry::propagation::parent_of(&call.headers);
    let answered = clock
        .upstream(bridge_telemetry::propagation::traced(
            parent,
            entry.backend.complete(&request),
        ))
        .await;
    let whole = answered.map_err(|err| {
        transcript::record_failure(&shown, &err);
        failure(backends, entry, &err)
    })?;
    backends.record(&entry.name, Availability::Ok);
    if let Some(usage) = whole.usage {
        call.note.usage(usage);
        shown.note_usage(None, usage.prompt_tokens, usage.completion_tokens);
    }
    transcript::record_answer(&shown, &whole);
    if capturing {
        call.note
            .capture_output(bridge_engine::telemetry::captured_output(&whole));
    }
    Ok(whole)
}

/// `entry`'s streamed answer to `request`, once the upstream answered its
/// head; the exchange shown in its conversation's transcript as it streams.
pub(super) async fn open_stream(
    call: &FacadeCall,
    entry: &BackendEntry,
    request: ChatRequest,
    clock: &mut Overhead,
) -> Result<ChatStream, FacadeError> {
    let backends = &call.ctx.backends;
    let shown = shown_in_transcript(call, entry, &request);
    let on_answer = captures_content(call, &request).then(|| {
        let note = call.note.clone();
        Box::new(move |answer: &ChatResponse| {
            note.capture_output(bridge_engine::telemetry::captured_output(answer));
        }) as transcript::OnAnswer
    });
    let parent = bridge_telemetry::propagation::parent_of(&call.headers);
    let started = clock
        .upstream(bridge_telemetry::propagation::traced(
            parent,
            entry.backend.stream(&request),
        ))
        .await;
    let events = started.map_err(|err| {
        transcript::record_failure(&shown, &err);
        failure(backends, entry, &err)
    })?;
    backends.record(&entry.name, Availability::Ok);
    Ok(transcript::tap(events, shown, on_answer))
}

/// Whether the request's span carries its content (`capture_content` on);
/// when it does, the conversation sent is noted now.
fn captures_content(call: &FacadeCall, request: &ChatRequest) -> bool {
    let capturing = bridge_telemetry::active().is_some_and(|t| t.captures_content());
    if capturing {
        call.note
            .capture_input(bridge_engine::telemetry::captured_input(request));
    }
    capturing
}

/// The transcript of the conversation `request` belongs to, told what it
/// adds.
fn shown_in_transcript(
    call: &FacadeCall,
    entry: &BackendEntry,
    request: &ChatRequest,
) -> std::sync::Arc<crate::transcripts::Transcript> {
    transcript::record_request(
        &call.ctx.transcripts,
        &call.headers,
        request,
        &call.path,
        &entry.name,
    )
}

/// The client's error for a failed upstream request, with what it says
/// about the backend noted ([`Backends::note_failure`]).
pub(super) fn failure(backends: &Backends, entry: &BackendEntry, err: &LlmError) -> FacadeError {
    backends.note_failure(entry, err);
    let error = FacadeError::from_llm(entry.kind, err);
    tracing::warn!(backend = %entry.name, code = error.code, "upstream failed: {}", error.message);
    error
}
