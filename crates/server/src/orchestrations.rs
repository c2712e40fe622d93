//! The daemon's orchestrations: started by `/rpc` (`orchestrate.start`) or
//! `/mcp/code` (`copilot_orchestrate`), run on the daemon's sessions and
//! default backend, watched (`orchestrate.watch`: the events since a
//! sequence number, waiting for new ones) and cancelled
//! (`orchestrate.cancel`). Finished plans stay watchable until
//! [`KEPT_FINISHED`] newer ones finished.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_config::BridgeConfig;
use bridge_engine::SessionRegistry;
use bridge_engine::orchestrate::{OrchestratedResult, PlanSource, Planned, TaskPlan};
use serde_json::{Value, json};
use tokio::sync::{broadcast::error::RecvError, watch};
use tokio_util::sync::CancellationToken;

use bridge_compose::{Backends, PlanningBackend};

/// Finished orchestrations kept for watchers.
pub const KEPT_FINISHED: usize = 32;
/// Events of one orchestration kept for watchers (the log has them all).
pub const KEPT_EVENTS: usize = 10_000;
/// Bytes of events (as JSON) one running orchestration keeps for watchers;
/// a finished one keeps [`KEPT_FINISHED_EVENT_BYTES`].
pub const KEPT_EVENT_BYTES: usize = 4 * 1024 * 1024;
pub const KEPT_FINISHED_EVENT_BYTES: usize = 256 * 1024;
/// Characters of one text (a task, a description, an output) kept in
/// memory for watchers; the log on disk has it whole.
pub const KEPT_TEXT_CHARS: usize = 16 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct StartRequest {
    pub task: String,
    /// Given: run it (already validated); else the model plans.
    pub plan: Option<TaskPlan>,
    pub cwd: PathBuf,
    pub max_concurrency: usize,
    pub timeout: Option<Duration>,
}

/// One orchestration of the daemon.
pub struct RunningPlan {
    pub id: String,
    pub waves: Vec<Vec<String>>,
    pub plan: TaskPlan,
    pub source: PlanSource,
    cancel: CancellationToken,
    state: Mutex<PlanState>,
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct PlanState {
    /// `{seq, type, data}` of each event after the plan, with its size.
    events: VecDeque<(Value, usize)>,
    /// The sizes of `events`, summed.
    event_bytes: usize,
    result: Option<OrchestratedResult>,
}

impl PlanState {
    /// Keeps `event`, dropping the oldest past `max_bytes` or
    /// [`KEPT_EVENTS`] (the newest always stays).
    fn keep(&mut self, event: Value) {
        let size = serde_json::to_vec(&event).map_or(0, |bytes| bytes.len());
        self.events.push_back((event, size));
        self.event_bytes += size;
        self.trim(KEPT_EVENT_BYTES);
    }

    fn trim(&mut self, max_bytes: usize) {
        while self.events.len() > 1
            && (self.event_bytes > max_bytes || self.events.len() > KEPT_EVENTS)
        {
            if let Some((_, size)) = self.events.pop_front() {
                self.event_bytes -= size;
            }
        }
    }
}

/// `value` with every string longer than [`KEPT_TEXT_CHARS`] cut: what is
/// kept in memory of a big task or output (the log has it whole).
fn keep_short(value: &mut Value) {
    match value {
        Value::String(text) if text.len() > KEPT_TEXT_CHARS => {
            *text = bridge_policy::redact::shorten(text, KEPT_TEXT_CHARS);
        }
        Value::Array(items) => items.iter_mut().for_each(keep_short),
        Value::Object(map) => map.values_mut().for_each(keep_short),
        _ => {}
    }
}

/// What a finished orchestration keeps of its result for watchers: every
/// text cut to [`KEPT_TEXT_CHARS`] (the task of 15 MiB a caller gave, say).
fn kept_result(result: OrchestratedResult) -> OrchestratedResult {
    let mut result = result;
    let cut = |text: &mut String| {
        if text.len() > KEPT_TEXT_CHARS {
            *text = bridge_policy::redact::shorten(text, KEPT_TEXT_CHARS);
        }
    };
    cut(&mut result.task);
    cut(&mut result.summary);
    for task in &mut result.plan.tasks {
        cut(&mut task.description);
    }
    for task in &mut result.tasks {
        cut(&mut task.output);
    }
    result
}

impl RunningPlan {
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    pub fn result(&self) -> Option<OrchestratedResult> {
        bridge_util::sync::lock(&self.state).result.clone()
    }

    pub fn is_finished(&self) -> bool {
        bridge_util::sync::lock(&self.state).result.is_some()
    }

    /// Waits for the plan to end; its result.
    pub async fn finished(&self) -> OrchestratedResult {
        let mut changed = self.changed.subscribe();
        loop {
            changed.borrow_and_update();
            if let Some(result) = self.result() {
                return result;
            }
            // The sender lives as long as `self`.
            let _ = changed.changed().await;
        }
    }

    /// Events with `seq` above `since`, and the result once finished;
    /// waits up to `wait` for something new when there is nothing yet.
    pub async fn watch(
        &self,
        since: u64,
        wait: Duration,
    ) -> (Vec<Value>, Option<OrchestratedResult>) {
        let mut changed = self.changed.subscribe();
        let newer = |state: &PlanState| -> Vec<Value> {
            state
                .events
                .iter()
                .filter(|(e, _)| e["seq"].as_u64().unwrap_or(0) > since)
                .map(|(e, _)| e.clone())
                .collect()
        };
        loop {
            changed.borrow_and_update();
            {
                let state = bridge_util::sync::lock(&self.state);
                let events = newer(&state);
                if !events.is_empty() || state.result.is_some() {
                    return (events, state.result.clone());
                }
            }
            if tokio::time::timeout(wait, changed.changed()).await.is_err() {
                return (Vec::new(), None);
            }
        }
    }
}

/// The daemon's orchestrations.
pub struct Orchestrations {
    config: Arc<BridgeConfig>,
    plans: Mutex<VecDeque<Arc<RunningPlan>>>,
    /// Bumped when a plan starts or ends.
    changed: Arc<watch::Sender<u64>>,
}

impl Orchestrations {
    pub fn new(config: Arc<BridgeConfig>) -> Self {
        Self {
            config,
            plans: Mutex::new(VecDeque::new()),
            changed: Arc::new(watch::channel(0).0),
        }
    }

    /// Changes to the set: a plan started or ended.
    pub fn watch_set(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn get(&self, id: &str) -> Option<Arc<RunningPlan>> {
        bridge_util::sync::lock(&self.plans)
            .iter()
            .find(|p| p.id == id)
            .cloned()
    }

    pub fn list(&self) -> Vec<Arc<RunningPlan>> {
        bridge_util::sync::lock(&self.plans)
            .iter()
            .cloned()
            .collect()
    }

    /// Plans (unless given a plan) and starts `request` in the background;
    /// `stop` (the daemon's shutdown) cancels it too. `progress` hears a
    /// line per sub-task's start and end. `Err`: it could not start.
    pub async fn start(
        &self,
        registry: &SessionRegistry,
        backends: &Backends,
        request: StartRequest,
        stop: &CancellationToken,
        progress: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    ) -> Result<Arc<RunningPlan>, String> {
        let backend = backends
            .default_entry()
            .map(|entry| PlanningBackend::of_entry(entry));
        let orchestrator = bridge_compose::orchestrator(
            &self.config,
            registry.clone(),
            backend.as_ref(),
            request.max_concurrency,
            Vec::new(),
        );
        let planned = match (request.plan, &backend) {
            (Some(plan), _) => Planned {
                plan,
                source: PlanSource::Given,
                usage: Default::default(),
            },
            (None, Some(backend)) => bridge_compose::planner(backend).plan(&request.task).await,
            (None, None) => {
                return Err("the daemon has no chat backend to plan with (see `copilot-bridge validate`); give a plan".to_owned());
            }
        };
        let opened = orchestrator
            .open(&request.task, &request.cwd, planned.plan, planned.source)
            .await
            .map_err(|err| err.to_string())?;
        let cancel = stop.child_token();
        let (changed, _) = watch::channel(0);
        let running = Arc::new(RunningPlan {
            id: opened.id.clone(),
            waves: opened.wave_ids(),
            plan: {
                let mut plan = opened.plan.clone();
                for task in &mut plan.tasks {
                    if task.description.len() > KEPT_TEXT_CHARS {
                        task.description =
                            bridge_policy::redact::shorten(&task.description, KEPT_TEXT_CHARS);
                    }
                }
                plan
            },
            source: opened.source.clone(),
            cancel: cancel.clone(),
            state: Mutex::new(PlanState::default()),
            changed,
        });
        let mut events = opened.log.subscribe();
        let collector = tokio::spawn({
            let running = running.clone();
            async move {
                loop {
                    match events.recv().await {
                        Ok(event) => {
                            let mut data = event.data;
                            bridge_policy::redact_value(&mut data);
                            keep_short(&mut data);
                            let kept = json!({"seq": event.seq, "type": event.kind, "data": data});
                            bridge_util::sync::lock(&running.state).keep(kept);
                            running.changed.send_modify(|n| *n += 1);
                        }
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    }
                }
            }
        });
        let forward = progress
            .map(|sink| bridge_engine::orchestrate::progress::forward_lines(&opened.log, sink));
        self.remember(running.clone());
        let timeout = request.timeout;
        tokio::spawn({
            let running = running.clone();
            let set_changed = self.changed.clone();
            async move {
                let result = orchestrator.execute(opened, cancel, timeout).await;
                let _ = collector.await;
                if let Some(forward) = forward {
                    let _ = forward.await;
                }
                {
                    let mut state = bridge_util::sync::lock(&running.state);
                    state.result = Some(kept_result(result));
                    state.trim(KEPT_FINISHED_EVENT_BYTES);
                }
                running.changed.send_modify(|n| *n += 1);
                set_changed.send_modify(|n| *n += 1);
            }
        });
        Ok(running)
    }

    /// Keeps `running`, forgetting the oldest finished plans past
    /// [`KEPT_FINISHED`].
    fn remember(&self, running: Arc<RunningPlan>) {
        let mut plans = bridge_util::sync::lock(&self.plans);
        plans.push_back(running);
        let finished = plans.iter().filter(|p| p.is_finished()).count();
        if finished > KEPT_FINISHED
            && let Some(at) = plans.iter().position(|p| p.is_finished())
        {
            plans.remove(at);
        }
        drop(plans);
        self.changed.send_modify(|n| *n += 1);
    }
}
