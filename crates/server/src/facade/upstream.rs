//! A facade request's trip to its backend: the wait counted as upstream
//! time, the outcome noted for the backend's health, a failure turned into
//! the client's error.

use bridge_compose::{Availability, BackendEntry, Backends};
use bridge_llm::{ChatRequest, ChatResponse, ChatStream, LlmError};

use super::errors::FacadeError;
use super::request_log::RequestNote;
use super::timing::Overhead;

/// What the facade asks of the daemon's backends.
pub trait Upstream {
    /// `entry`'s whole answer to `request`, its usage noted for the request
    /// log.
    async fn answer_whole(
        &self,
        entry: &BackendEntry,
        request: ChatRequest,
        clock: &mut Overhead,
        note: &RequestNote,
    ) -> Result<ChatResponse, FacadeError>;

    /// `entry`'s streamed answer to `request`, once the upstream answered
    /// its head.
    async fn open_stream(
        &self,
        entry: &BackendEntry,
        request: ChatRequest,
        clock: &mut Overhead,
    ) -> Result<ChatStream, FacadeError>;

    /// The client's error for a failed upstream request, with what it says
    /// about the backend noted ([`Backends::note_failure`]).
    fn failure(&self, entry: &BackendEntry, err: &LlmError) -> FacadeError;
}

impl Upstream for Backends {
    async fn answer_whole(
        &self,
        entry: &BackendEntry,
        request: ChatRequest,
        clock: &mut Overhead,
        note: &RequestNote,
    ) -> Result<ChatResponse, FacadeError> {
        let answered = clock.upstream(entry.backend.complete(&request)).await;
        let whole = answered.map_err(|err| self.failure(entry, &err))?;
        self.record(&entry.name, Availability::Ok);
        if let Some(usage) = whole.usage {
            note.usage(usage);
        }
        Ok(whole)
    }

    async fn open_stream(
        &self,
        entry: &BackendEntry,
        request: ChatRequest,
        clock: &mut Overhead,
    ) -> Result<ChatStream, FacadeError> {
        let started = clock.upstream(entry.backend.stream(&request)).await;
        let events = started.map_err(|err| self.failure(entry, &err))?;
        self.record(&entry.name, Availability::Ok);
        Ok(events)
    }

    fn failure(&self, entry: &BackendEntry, err: &LlmError) -> FacadeError {
        self.note_failure(entry, err);
        let error = FacadeError::from_llm(entry.kind, err);
        tracing::warn!(backend = %entry.name, code = error.code, "upstream failed: {}", error.message);
        error
    }
}
