//! `/ui/api/stream`: everything live a tab shows, as server-sent events,
//! one stream per tab. Always the approval queue (`approval`); with
//! `?session=ID` that transcript's events (`transcript`); with
//! `?orchestration=ID` that plan's events (`orchestration`, and
//! `orchestration.done` at its end); with `?sessions=1` and
//! `?orchestrations=1` a `sessions` / `orchestrations` event when the set
//! changes (the page reads the new list). `sessionSince` and
//! `orchestrationSince` say what the page already read.
//!
//! Each event's id is the stream's cursor after it (`A.T.P`: the last
//! approval, transcript and plan event sent), so a browser that reconnects
//! (`Last-Event-ID`) resumes after the last one it saw. The daemon keeps
//! nothing per tab but the open request; waiting costs no timer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::watch;

use crate::orchestrations::RunningPlan;
use crate::rpc::RpcState;
use crate::transcripts::{Transcript, Viewer};

/// How long one wait lasts before everything is looked at again.
const WAIT: Duration = Duration::from_secs(25);
/// Transcript events sent at once.
const BATCH: usize = 200;

/// What a tab follows besides the approval queue.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Topics {
    session: Option<String>,
    /// The transcript's events the page already read (`session.events`).
    #[serde(rename = "sessionSince", default)]
    session_since: u64,
    orchestration: Option<String>,
    /// The plan's events the page already read (`orchestrate.watch`).
    #[serde(rename = "orchestrationSince", default)]
    orchestration_since: u64,
    #[serde(default)]
    sessions: bool,
    #[serde(default)]
    orchestrations: bool,
}

/// The last event of each kind a tab has seen.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    approvals: u64,
    transcript: u64,
    plan: u64,
}

impl Cursor {
    fn parse(text: &str) -> Self {
        let mut parts = text.split('.').map(|part| part.parse::<u64>().unwrap_or(0));
        Self {
            approvals: parts.next().unwrap_or(0),
            transcript: parts.next().unwrap_or(0),
            plan: parts.next().unwrap_or(0),
        }
    }

    fn id(self) -> String {
        format!("{}.{}.{}", self.approvals, self.transcript, self.plan)
    }
}

pub(super) async fn follow(
    State(state): State<RpcState>,
    Query(topics): Query<Topics>,
    headers: HeaderMap,
) -> Response {
    if super::logged_in(&state, &headers).is_none() {
        return super::unauthorized();
    }
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(Cursor::parse);
    let ctx = state.ctx();
    let transcript = topics
        .session
        .as_deref()
        .and_then(|id| ctx.transcripts.get(id));
    let plan = topics
        .orchestration
        .as_deref()
        .and_then(|id| ctx.orchestrations.get(id));
    // A first connection has just read the lists; a reconnection may have
    // missed a change.
    let followed = |set: watch::Receiver<u64>| {
        let seen = if resumed.is_some() {
            None
        } else {
            Some(*set.borrow())
        };
        Set { set, seen }
    };
    let sessions = topics
        .sessions
        .then(|| followed(ctx.transcripts.watch_set()));
    let plans = topics
        .orchestrations
        .then(|| followed(ctx.orchestrations.watch_set()));
    let following = Following {
        approvals: ctx.approvals.subscribe(),
        _viewer: transcript.as_ref().map(Transcript::viewer),
        transcript,
        plan_done: false,
        plan,
        sessions,
        plans,
        cursor: resumed.unwrap_or(Cursor {
            approvals: 0,
            transcript: topics.session_since,
            plan: topics.orchestration_since,
        }),
        state: state.clone(),
    };
    Sse::new(events(following))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

struct Following {
    state: RpcState,
    approvals: watch::Receiver<u64>,
    transcript: Option<Arc<Transcript>>,
    /// Keeps streamed text coming while the tab is open.
    _viewer: Option<Viewer>,
    plan: Option<Arc<RunningPlan>>,
    plan_done: bool,
    sessions: Option<Set>,
    plans: Option<Set>,
    cursor: Cursor,
}

/// A set the tab follows: its version, and the version the tab last heard
/// of (`None`: it may have missed one).
struct Set {
    set: watch::Receiver<u64>,
    seen: Option<u64>,
}

fn events(following: Following) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(following, |mut following| async move {
        let batch = following.next_batch().await?;
        Some((stream::iter(batch.into_iter().map(Ok)), following))
    })
    .flatten()
}

impl Following {
    /// The next events, waiting for some; `None` when the daemon stops.
    async fn next_batch(&mut self) -> Option<Vec<Event>> {
        let shutdown = self.state.ctx().shutdown.clone();
        loop {
            let batch = self.ready().await;
            if !batch.is_empty() {
                return Some(batch);
            }
            let transcript = self.transcript.clone();
            let plan = self.plan.clone().filter(|_| !self.plan_done);
            let cursor = self.cursor;
            tokio::select! {
                _ = self.approvals.changed() => {}
                () = async {
                    match &transcript {
                        Some(transcript) => transcript.wait_after(cursor.transcript, WAIT).await,
                        None => std::future::pending().await,
                    }
                } => {}
                () = async {
                    match &plan {
                        Some(plan) => { plan.watch(cursor.plan, WAIT).await; }
                        None => std::future::pending().await,
                    }
                } => {}
                () = changed(&mut self.sessions) => {}
                () = changed(&mut self.plans) => {}
                () = tokio::time::sleep(WAIT) => {}
                () = shutdown.cancelled() => return None,
            }
        }
    }

    /// What is there to send now, without waiting.
    async fn ready(&mut self) -> Vec<Event> {
        let mut batch = Vec::new();
        let ctx = self.state.ctx();
        self.approvals.borrow_and_update();
        let (queued, _) = ctx
            .approvals
            .watch(self.cursor.approvals, Duration::ZERO)
            .await;
        for event in &queued {
            self.cursor.approvals = event.seq;
            batch.push(self.event(
                "approval",
                bridge_engine::approvals::event_json(event).to_string(),
            ));
        }
        if let Some(transcript) = &self.transcript {
            let page = transcript.page(self.cursor.transcript, BATCH);
            if page.missed {
                batch.push(self.event("transcript.missed", "{}".to_owned()));
            }
            for event in page.events {
                self.cursor.transcript = event["seq"].as_u64().unwrap_or(self.cursor.transcript);
                batch.push(self.event("transcript", event.to_string()));
            }
        }
        if let Some(plan) = self.plan.clone().filter(|_| !self.plan_done) {
            let (events, result) = plan.watch(self.cursor.plan, Duration::ZERO).await;
            for event in events {
                self.cursor.plan = event["seq"].as_u64().unwrap_or(self.cursor.plan);
                batch.push(self.event("orchestration", event.to_string()));
            }
            if let Some(result) = result {
                self.plan_done = true;
                let mut result = serde_json::to_value(result).unwrap_or_default();
                bridge_policy::redact_value(&mut result);
                batch.push(self.event("orchestration.done", result.to_string()));
            }
        }
        for (set, name) in [
            (&mut self.sessions, "sessions"),
            (&mut self.plans, "orchestrations"),
        ] {
            if let Some(set) = set {
                let now = *set.set.borrow_and_update();
                if set.seen == Some(now) {
                    continue;
                }
                set.seen = Some(now);
                batch.push(
                    Event::default()
                        .id(self.cursor.id())
                        .event(name)
                        .data(json!({}).to_string()),
                );
            }
        }
        batch
    }

    fn event(&self, kind: &str, data: String) -> Event {
        Event::default().id(self.cursor.id()).event(kind).data(data)
    }
}

/// Completes when the set changes; never without a set to follow.
async fn changed(set: &mut Option<Set>) {
    match set {
        Some(set) => {
            if set.set.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}
