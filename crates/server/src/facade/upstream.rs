//! A facade request's trip to its backend: the wait counted as upstream
//! time, the outcome noted for the backend's health, a failure turned into
//! the client's error.

use bridge_compose::{Availability, BackendEntry, Backends};
use bridge_llm::{ChatRequest, ChatResponse, ChatStream, LlmError};

use super::errors::FacadeError;
use super::request_log::RequestNote;
use super::timing::Overhead;

/// `entry`'s whole answer to `request`, its usage noted for the request
/// log.
pub(super) async fn answer_whole(
    backends: &Backends,
    entry: &BackendEntry,
    request: ChatRequest,
    clock: &mut Overhead,
    note: &RequestNote,
) -> Result<ChatResponse, FacadeError> {
    let answered = clock.upstream(entry.backend.complete(&request)).await;
    let whole = answered.map_err(|err| failure(backends, entry, &err))?;
    backends.record(&entry.name, Availability::Ok);
    if let Some(usage) = whole.usage {
        note.usage(usage);
    }
    Ok(whole)
}

/// `entry`'s streamed answer to `request`, once the upstream answered its
/// head.
pub(super) async fn open_stream(
    backends: &Backends,
    entry: &BackendEntry,
    request: ChatRequest,
    clock: &mut Overhead,
) -> Result<ChatStream, FacadeError> {
    let started = clock.upstream(entry.backend.stream(&request)).await;
    let events = started.map_err(|err| failure(backends, entry, &err))?;
    backends.record(&entry.name, Availability::Ok);
    Ok(events)
}

/// The client's error for a failed upstream request, with what it says
/// about the backend noted ([`Backends::note_failure`]).
pub(super) fn failure(backends: &Backends, entry: &BackendEntry, err: &LlmError) -> FacadeError {
    backends.note_failure(entry, err);
    let error = FacadeError::from_llm(entry.kind, err);
    tracing::warn!(backend = %entry.name, code = error.code, "upstream failed: {}", error.message);
    error
}
