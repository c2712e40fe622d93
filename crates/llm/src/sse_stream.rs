//! The one driver from an SSE response body to a [`ChatStream`], shared by
//! the wire formats: each brings a [`WireMapper`] that turns its SSE events
//! into [`ChatEvent`]s; decoding, early release of the connection and the
//! end-of-body rules live here once.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::http::{BodyError, error_chain};
use crate::sse::{SseDecoder, SseEvent};
use crate::{ChatEvent, ChatStream, LlmError};

/// One wire format's view of a streamed answer.
pub(crate) trait WireMapper {
    /// The answer is complete: the body can be dropped.
    fn is_done(&self) -> bool;
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<ChatEvent>, LlmError>;
    /// The body ended; what that means depends on what was seen.
    fn on_end_of_body(&mut self) -> Result<Vec<ChatEvent>, LlmError>;
    /// The connection broke before the answer was complete.
    fn ended_early(&self, why: &str) -> LlmError;
    /// The bytes were not the format's SSE.
    fn protocol(&self, message: String) -> LlmError;
}

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

struct Decoding<M> {
    /// `None` once the answer is complete or failed, so the connection is
    /// released at once, not when the caller drops the stream.
    body: Option<Body>,
    decoder: SseDecoder,
    mapper: M,
    ready: VecDeque<Result<ChatEvent, LlmError>>,
}

impl<M: WireMapper> Decoding<M> {
    fn on_bytes(&mut self, bytes: &[u8]) {
        let events = match self.decoder.push(bytes) {
            Ok(events) => events,
            Err(err) => return self.fail(self.mapper.protocol(err.to_string())),
        };
        for event in events {
            match self.mapper.on_event(event) {
                Ok(mapped) => self.ready.extend(mapped.into_iter().map(Ok)),
                Err(err) => return self.fail(err),
            }
            if self.mapper.is_done() {
                self.body = None;
                return;
            }
        }
    }

    fn fail(&mut self, err: LlmError) {
        self.ready.push_back(Err(err));
        self.body = None;
    }
}

/// Runs a whole streamed body, given as the reads of the connection, through
/// the SSE decoder and `mapper` (a backend's event mapping), and counts the
/// events; the first error ends it. Only for the benchmarks, which measure a
/// backend's own cost per chunk without a network.
pub(crate) fn count_events_for_bench<M>(mapper: M, reads: &[Bytes]) -> Result<usize, LlmError>
where
    M: WireMapper + Send + 'static,
{
    use futures::TryStreamExt as _;
    // The body stream must own its reads: cloning `Bytes` only counts a reference.
    let owned_reads = reads.to_vec();
    let body = futures::stream::iter(owned_reads.into_iter().map(Ok));
    let events = chat_stream(mapper, body, crate::sse::DEFAULT_MAX_LINE_BYTES);
    futures::executor::block_on(events.try_fold(0, |count, _| async move { Ok(count + 1) }))
}

/// The events of an SSE body. The stream ends after [`ChatEvent::Finish`] or
/// the first error; dropping it drops the body and with it the connection.
pub(crate) fn chat_stream<M, S>(mapper: M, body: S, max_line_bytes: usize) -> ChatStream
where
    M: WireMapper + Send + 'static,
    S: Stream<Item = Result<Bytes, BodyError>> + Send + 'static,
{
    let state = Decoding {
        body: Some(Box::pin(body)),
        decoder: SseDecoder::new(max_line_bytes),
        mapper,
        ready: VecDeque::new(),
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.ready.pop_front() {
                return Some((item, state));
            }
            let body = state.body.as_mut()?;
            match body.next().await {
                Some(Ok(bytes)) => state.on_bytes(&bytes),
                Some(Err(BodyError::Idle(err))) => state.fail(err),
                Some(Err(BodyError::Read(err))) => {
                    let why = format!("connection lost: {}", error_chain(&err));
                    let err = state.mapper.ended_early(&why);
                    state.fail(err);
                }
                None => {
                    state.body = None;
                    match state.mapper.on_end_of_body() {
                        Ok(events) => state.ready.extend(events.into_iter().map(Ok)),
                        Err(err) => state.fail(err),
                    }
                }
            }
        }
    })
    .boxed()
}
