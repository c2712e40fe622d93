//! `/ui/api/stream`: the approval queue's events as server-sent events,
//! one stream per tab. Each event carries its sequence number as its id,
//! so a browser that reconnects (`Last-Event-ID`) resumes after the last
//! one it saw; the daemon keeps nothing per tab but the open request.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};

use crate::rpc::RpcState;

/// How long one wait on the queue lasts before it is asked again.
const WAIT: Duration = Duration::from_secs(25);

pub(super) async fn approvals(State(state): State<RpcState>, headers: HeaderMap) -> Response {
    if super::logged_in(&state, &headers).is_none() {
        return super::unauthorized();
    }
    let since = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    Sse::new(events(state, since))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// The queue's events after `since`, as they come, until the daemon stops.
fn events(state: RpcState, since: u64) -> impl Stream<Item = Result<Event, Infallible>> {
    let shutdown = state.ctx().shutdown.clone();
    stream::unfold((state, since), move |(state, since)| {
        let shutdown = shutdown.clone();
        async move {
            let (events, next) = tokio::select! {
                watched = state.ctx().approvals.watch(since, WAIT) => watched,
                () = shutdown.cancelled() => return None,
            };
            let batch: Vec<Result<Event, Infallible>> = events
                .iter()
                .map(|event| {
                    Ok(Event::default()
                        .id(event.seq.to_string())
                        .event("approval")
                        .data(bridge_engine::approvals::event_json(event).to_string()))
                })
                .collect();
            Some((stream::iter(batch), (state, next)))
        }
    })
    .flatten()
}
