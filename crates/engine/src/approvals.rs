//! One queue of questions for every door of a process (the daemon): a
//! session's decision puts an [`Ask`] here through [`QueueApprover`] and
//! waits; any surface lists the pending asks, answers one, or watches them
//! come and go. The first answer wins; a second is told who answered.
//!
//! Bounded: at most [`QueueLimits::per_session`] asks of one session and
//! [`QueueLimits::total`] in all wait at once (one session's flood cannot
//! starve the others or grow memory), and the event history keeps the
//! newest [`QueueLimits::events`]. An ask's id is 128 random bits.
//! Dropping a waiting call (its caller hung up, its task was cancelled)
//! withdraws its ask.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_policy::{Approval, ApprovalFuture, Approver, Ask, Scope, Surface};
use bridge_util::sync::lock;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

/// The bounds of a queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueLimits {
    /// Asks of one session waiting at once.
    pub per_session: usize,
    /// Asks waiting at once, in all.
    pub total: usize,
    /// Events kept for watchers.
    pub events: usize,
    /// Ids of answered asks remembered, to tell a late answer who won.
    pub answered: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        Self {
            per_session: 16,
            total: 256,
            events: 1024,
            answered: 1024,
        }
    }
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub allow: bool,
    /// For an allow (a deny is always for this call).
    pub scope: Scope,
    /// Why (for a deny: what the caller is told).
    pub reason: Option<String>,
    pub surface: Surface,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("no such ask: {0} (it may have timed out or been withdrawn long ago)")]
    NoSuchAsk(String),
    #[error("ask {id} was already answered: {outcome} by {by}")]
    AlreadyAnswered {
        id: String,
        outcome: String,
        by: String,
    },
    #[error("ask {id} offers {choices:?}, not {scope:?}")]
    ScopeNotOffered {
        id: String,
        scope: String,
        choices: Vec<&'static str>,
    },
    #[error("ask {0} cannot be answered from the session that raised it")]
    OwnSession(String),
}

/// An ask as every surface shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingAsk {
    pub id: String,
    #[serde(flatten)]
    pub ask: Ask,
    /// The scopes an answer may take.
    pub choices: Vec<&'static str>,
    /// What a rule grant would keep, exactly.
    pub rules: Vec<String>,
    /// RFC 3339.
    pub asked_at: String,
    /// Seconds left before it times out.
    pub expires_in_secs: u64,
}

/// `requested` (with the ask) or `resolved` (with how).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEvent {
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub session: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask: Option<PendingAsk>,
    /// For `resolved`: `allow`, `deny`, `approval_timeout` or `withdrawn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface: Option<Surface>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'static str>,
}

struct Waiting {
    ask: Ask,
    asked_at: String,
    deadline: Instant,
    reply: oneshot::Sender<Answer>,
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Waiting>,
    /// id → (outcome, by), newest last.
    answered: VecDeque<(String, &'static str, String)>,
    events: VecDeque<QueueEvent>,
    next_seq: u64,
}

/// The queue. Share it as `Arc<ApprovalQueue>`.
pub struct ApprovalQueue {
    state: Mutex<State>,
    limits: QueueLimits,
    /// The sequence number of the newest event.
    changed: watch::Sender<u64>,
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue")
            .field("pending", &lock(&self.state).pending.len())
            .finish_non_exhaustive()
    }
}

impl Default for ApprovalQueue {
    fn default() -> Self {
        Self::new(QueueLimits::default())
    }
}

impl ApprovalQueue {
    pub fn new(limits: QueueLimits) -> Self {
        Self {
            state: Mutex::new(State::default()),
            limits,
            changed: watch::channel(0).0,
        }
    }

    /// Puts `ask` to whoever answers, and waits up to `timeout` for an
    /// answer. Dropping the returned future withdraws the ask.
    pub async fn ask(&self, ask: Ask, timeout: Duration) -> Approval {
        match self.enqueue(ask, timeout) {
            Ok(pending) => pending.wait().await,
            Err(refused) => refused,
        }
    }

    /// Puts `ask` in the queue: its handle (its id known at once, the answer
    /// awaited with [`PendingApproval::wait`]), or the refusal when the
    /// queue is full. Dropping the handle withdraws the ask.
    pub fn enqueue(&self, ask: Ask, timeout: Duration) -> Result<PendingApproval<'_>, Approval> {
        let started = Instant::now();
        let (reply, answer) = oneshot::channel();
        let mut state = lock(&self.state);
        let of_session = state
            .pending
            .values()
            .filter(|waiting| waiting.ask.session == ask.session)
            .count();
        if of_session >= self.limits.per_session || state.pending.len() >= self.limits.total {
            return Err(Approval::QueueFull {
                pending: of_session,
            });
        }
        let id = format!("ask-{}", bridge_util::ids::random_hex(16));
        let waiting = Waiting {
            ask,
            asked_at: bridge_util::time::now_timestamp(),
            deadline: started + timeout,
            reply,
        };
        let shown = pending_ask(&id, &waiting);
        let session = waiting.ask.session.clone();
        state.pending.insert(id.clone(), waiting);
        self.push_event(&mut state, "requested", &id, session, Some(shown), None);
        Ok(PendingApproval {
            withdraw: Withdraw {
                queue: self,
                id: Some(id.clone()),
            },
            id,
            started,
            timeout,
            answer,
        })
    }

    /// The asks waiting, oldest first; of `session` only when given.
    pub fn list(&self, session: Option<&str>) -> Vec<PendingAsk> {
        let state = lock(&self.state);
        let mut asks: Vec<PendingAsk> = state
            .pending
            .iter()
            .filter(|(_, waiting)| session.is_none_or(|s| waiting.ask.session == s))
            .map(|(id, waiting)| pending_ask(id, waiting))
            .collect();
        asks.sort_by(|a, b| a.asked_at.cmp(&b.asked_at));
        asks
    }

    /// One waiting ask.
    pub fn get(&self, id: &str) -> Option<PendingAsk> {
        let state = lock(&self.state);
        state
            .pending
            .get(id)
            .map(|waiting| pending_ask(id, waiting))
    }

    /// Answers ask `id`. `from_session`: the session the answer comes
    /// through, if any (an ask is never answered from its own session).
    pub fn answer(
        &self,
        id: &str,
        answer: Answer,
        from_session: Option<&str>,
    ) -> Result<(), AnswerError> {
        let mut state = lock(&self.state);
        let Some(waiting) = state.pending.get(id) else {
            return Err(
                match state.answered.iter().find(|(known, _, _)| known == id) {
                    Some((_, outcome, by)) => AnswerError::AlreadyAnswered {
                        id: id.to_owned(),
                        outcome: (*outcome).to_owned(),
                        by: by.clone(),
                    },
                    None => AnswerError::NoSuchAsk(id.to_owned()),
                },
            );
        };
        if from_session.is_some_and(|session| session == waiting.ask.session) {
            return Err(AnswerError::OwnSession(id.to_owned()));
        }
        if answer.allow && !waiting.ask.allows(answer.scope) {
            return Err(AnswerError::ScopeNotOffered {
                id: id.to_owned(),
                scope: answer.scope.name().to_owned(),
                choices: waiting.ask.choices(),
            });
        }
        let Some(waiting) = state.pending.remove(id) else {
            return Err(AnswerError::NoSuchAsk(id.to_owned()));
        };
        let outcome = if answer.allow { "allow" } else { "deny" };
        let scope = answer.allow.then(|| answer.scope.name());
        let surface = answer.surface;
        // The waiting call may have gone in between: then nothing runs,
        // and the answer still counts as given.
        let _ = waiting.reply.send(answer);
        self.remember(&mut state, id, outcome, surface.as_str().to_owned());
        self.push_event(
            &mut state,
            "resolved",
            id,
            waiting.ask.session,
            None,
            Some((outcome, Some(surface), scope)),
        );
        Ok(())
    }

    /// Withdraws every ask of `session` (it ended): their calls are told.
    pub fn withdraw_session(&self, session: &str) {
        let ids: Vec<String> = lock(&self.state)
            .pending
            .iter()
            .filter(|(_, waiting)| waiting.ask.session == session)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.resolve(&id, "withdrawn", "the session's end");
        }
    }

    /// Events after `since`, waiting up to `wait` for one when there is
    /// none yet. Returns them and the sequence number to ask from next.
    pub async fn watch(&self, since: u64, wait: Duration) -> (Vec<QueueEvent>, u64) {
        let mut changed = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            {
                let state = lock(&self.state);
                let events: Vec<QueueEvent> = state
                    .events
                    .iter()
                    .filter(|event| event.seq > since)
                    .cloned()
                    .collect();
                if !events.is_empty() || wait.is_zero() {
                    let next = events.last().map_or(since.max(state.next_seq), |e| e.seq);
                    return (events, next);
                }
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                let next = lock(&self.state).next_seq.max(since);
                return (Vec::new(), next);
            }
        }
    }

    /// The sequence number of the newest event, changing with each event.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Ends a waiting ask without an answer (timed out, withdrawn);
    /// `false` if it was no longer waiting.
    fn resolve(&self, id: &str, outcome: &'static str, by: &str) -> bool {
        let mut state = lock(&self.state);
        let Some(waiting) = state.pending.remove(id) else {
            return false;
        };
        self.remember(&mut state, id, outcome, by.to_owned());
        self.push_event(
            &mut state,
            "resolved",
            id,
            waiting.ask.session,
            None,
            Some((outcome, None, None)),
        );
        // Dropping the reply sender tells a waiting call it was withdrawn.
        true
    }

    fn remember(&self, state: &mut State, id: &str, outcome: &'static str, by: String) {
        state.answered.push_back((id.to_owned(), outcome, by));
        while state.answered.len() > self.limits.answered {
            state.answered.pop_front();
        }
    }

    fn push_event(
        &self,
        state: &mut State,
        kind: &'static str,
        id: &str,
        session: String,
        ask: Option<PendingAsk>,
        resolution: Option<(&'static str, Option<Surface>, Option<&'static str>)>,
    ) {
        state.next_seq += 1;
        let (outcome, surface, scope) = match resolution {
            Some((outcome, surface, scope)) => (Some(outcome), surface, scope),
            None => (None, None, None),
        };
        state.events.push_back(QueueEvent {
            seq: state.next_seq,
            kind,
            id: id.to_owned(),
            session,
            ask,
            outcome,
            surface,
            scope,
        });
        while state.events.len() > self.limits.events {
            state.events.pop_front();
        }
        self.changed.send_replace(state.next_seq);
    }
}

fn pending_ask(id: &str, waiting: &Waiting) -> PendingAsk {
    PendingAsk {
        id: id.to_owned(),
        choices: waiting.ask.choices(),
        rules: waiting.ask.rule_texts(),
        ask: waiting.ask.clone(),
        asked_at: waiting.asked_at.clone(),
        expires_in_secs: waiting
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs(),
    }
}

/// An ask in the queue, waiting for its answer.
pub struct PendingApproval<'q> {
    withdraw: Withdraw<'q>,
    id: String,
    started: Instant,
    timeout: Duration,
    answer: oneshot::Receiver<Answer>,
}

impl PendingApproval<'_> {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the answer, up to the ask's timeout.
    pub async fn wait(mut self) -> Approval {
        let queue = self.withdraw.queue;
        let mut answered = tokio::time::timeout(self.timeout, &mut self.answer)
            .await
            .map(|received| received.map_err(|_| ()));
        self.withdraw.id = None;
        if answered.is_err() && !queue.resolve(&self.id, "approval_timeout", "timeout") {
            // Answered as the time ran out: the answer counts.
            answered = Ok(self.answer.try_recv().map_err(|_| ()));
        }
        let waited = self.started.elapsed();
        match answered {
            Ok(Ok(answer)) if answer.allow => Approval::Allowed {
                scope: answer.scope,
                surface: answer.surface,
                waited,
            },
            Ok(Ok(answer)) => Approval::Denied {
                surface: answer.surface,
                reason: answer.reason,
                waited,
            },
            // The sender went away without an answer: the session ended.
            Ok(Err(())) => Approval::Withdrawn { waited },
            Err(_) => Approval::TimedOut { waited },
        }
    }
}

/// Withdraws its ask when the waiting call is dropped before an answer.
struct Withdraw<'q> {
    queue: &'q ApprovalQueue,
    id: Option<String>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.queue.resolve(&id, "withdrawn", "the caller's hang-up");
        }
    }
}

/// The approver of a daemon's sessions: every ask goes to the queue and
/// waits up to `timeout` (zero: nobody is asked, the call is denied at
/// once, as before the queue).
#[derive(Debug, Clone)]
pub struct QueueApprover {
    queue: Arc<ApprovalQueue>,
    timeout: Duration,
}

impl QueueApprover {
    pub fn new(queue: Arc<ApprovalQueue>, timeout: Duration) -> Self {
        Self { queue, timeout }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Approver for QueueApprover {
    fn approve(&self, ask: Ask) -> ApprovalFuture<'_> {
        if self.timeout.is_zero() {
            return Box::pin(std::future::ready(Approval::Unanswerable));
        }
        Box::pin(self.queue.ask(ask, self.timeout))
    }
}

/// The approver of one call whose caller does not wait on the line (an
/// agent's hook that asks again with `approvals.wait`): the ask's id is
/// reported as soon as it is queued, and `cancel` withdraws it (the hook
/// that was to wait went away).
pub struct ReportingApprover {
    queue: Arc<ApprovalQueue>,
    timeout: Duration,
    report: Mutex<Option<oneshot::Sender<String>>>,
    cancel: tokio_util::sync::CancellationToken,
}

impl ReportingApprover {
    pub fn new(
        queue: Arc<ApprovalQueue>,
        timeout: Duration,
        report: oneshot::Sender<String>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        Self {
            queue,
            timeout,
            report: Mutex::new(Some(report)),
            cancel,
        }
    }
}

impl Approver for ReportingApprover {
    fn approve(&self, ask: Ask) -> ApprovalFuture<'_> {
        let started = Instant::now();
        let pending = match self.queue.enqueue(ask, self.timeout) {
            Ok(pending) => pending,
            Err(refused) => return Box::pin(std::future::ready(refused)),
        };
        if let Some(report) = lock(&self.report).take() {
            let _ = report.send(pending.id().to_owned());
        }
        Box::pin(async move {
            tokio::select! {
                approval = pending.wait() => approval,
                // Dropping the pending ask withdraws it from the queue.
                () = self.cancel.cancelled() => Approval::Withdrawn {
                    waited: started.elapsed(),
                },
            }
        })
    }
}

/// A session that ends takes its waiting asks with it: their calls are
/// told they were withdrawn, and no surface shows them any more.
impl crate::SessionListener for ApprovalQueue {
    fn session_ending(
        &self,
        session: &Arc<crate::Session>,
        _deadline: Duration,
    ) -> Vec<crate::ShutdownWaiter> {
        self.withdraw_session(session.id());
        Vec::new()
    }
}

/// An event as JSON (for `/rpc` and notifications).
pub fn event_json(event: &QueueEvent) -> Value {
    serde_json::to_value(event).unwrap_or_else(|_| json!({"seq": event.seq}))
}
