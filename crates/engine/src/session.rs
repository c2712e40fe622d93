//! One session: its workspace, tools, rules, transforms, context and
//! timeline.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bridge_policy::{Approver, RuleStore, SessionGrants};
use bridge_policy::{AuditLog, Guard, LiveGuard};
use serde::Serialize;
use tokio::sync::{broadcast, watch};

use crate::events::{SessionEvent, TimelineEntry};
use crate::hooks::HookRule;
use crate::registry::{Listeners, RegistrySettings};
use crate::tools::{ToolConflict, ToolEntry, ToolOwner, ToolTable, read_lock, write_lock};
use crate::transforms::{self, Transform, TransformError, TransformTable, is_protected};

/// Timeline lines a session keeps for late readers.
const TIMELINE_KEEP: usize = 200;
/// Events buffered per subscriber before a slow one starts missing some.
const EVENT_BUFFER: usize = 1024;

/// What [`Session::set_event_sink`] takes.
pub type EventSink = std::sync::Arc<dyn Fn(&SessionEvent) + Send + Sync>;

/// What the registry reports about a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub label: String,
    pub cwd: PathBuf,
    pub foreground: bool,
    pub door: crate::Door,
    pub created_at: String,
}

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// No work in flight.
    Idle,
    /// A turn is running (an inject or a user message started it).
    Busy,
    /// `end` was called; providers are cleaning up.
    Ending,
}

pub struct Session {
    id: Arc<str>,
    info: SessionInfo,
    state: Mutex<SessionState>,
    tools: ToolTable,
    /// Bumped whenever the tool table may have changed (MCP servers announce
    /// `tools/list_changed` from it).
    tools_changed: watch::Sender<u64>,
    rules: RwLock<Vec<(String, Arc<[HookRule]>)>>,
    transforms: Mutex<TransformTable>,
    context: Mutex<Vec<(String, String)>>,
    startup_context: Mutex<Vec<(String, String)>>,
    events: broadcast::Sender<SessionEvent>,
    /// Hears every event as it is emitted, on the emitter's thread (the
    /// daemon's transcripts): no copy per subscriber, no task to wake.
    sink: std::sync::OnceLock<EventSink>,
    timeline: Mutex<VecDeque<TimelineEntry>>,
    /// User messages so far: lets the gateway tell "a user message arrived
    /// since" (it resumes paused injects) without subscribing to events.
    user_messages: AtomicU64,
    /// The model its runs use unless a run names one; `None`: the backend's.
    model: Mutex<Option<String>>,
    /// Which runner does its work.
    runner: Mutex<crate::runner::RunnerKind>,
    /// The workspace's guard, following edits of its policy file.
    guard: Arc<LiveGuard>,
    approver: Arc<dyn Approver>,
    /// What its people allowed for the rest of the session.
    grants: SessionGrants,
    /// Rules kept per workspace, shared by the registry's sessions.
    approval_rules: Option<Arc<RuleStore>>,
    /// Several clients share it (the daemon's default session): a grant
    /// for the session reaches all of them, and an ask says so.
    shared: AtomicBool,
    audit: Option<AuditLog>,
    settings: Arc<RegistrySettings>,
    listeners: Arc<Listeners>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

pub(crate) struct SessionParts {
    pub info: SessionInfo,
    pub guard: Arc<LiveGuard>,
    pub approver: Arc<dyn Approver>,
    pub rules: Option<Arc<RuleStore>>,
    pub audit: Option<AuditLog>,
    pub settings: Arc<RegistrySettings>,
    pub listeners: Arc<Listeners>,
}

impl Session {
    pub(crate) fn new(parts: SessionParts) -> Self {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Self {
            id: Arc::from(parts.info.id.as_str()),
            info: parts.info,
            state: Mutex::new(SessionState::Idle),
            tools: ToolTable::default(),
            tools_changed: watch::channel(0).0,
            rules: RwLock::new(Vec::new()),
            transforms: Mutex::new(TransformTable::default()),
            context: Mutex::new(Vec::new()),
            startup_context: Mutex::new(Vec::new()),
            events,
            sink: std::sync::OnceLock::new(),
            timeline: Mutex::new(VecDeque::new()),
            user_messages: AtomicU64::new(0),
            model: Mutex::new(None),
            runner: Mutex::new(crate::runner::RunnerKind::default()),
            guard: parts.guard,
            approver: parts.approver,
            grants: SessionGrants::default(),
            approval_rules: parts.rules,
            shared: AtomicBool::new(false),
            audit: parts.audit,
            settings: parts.settings,
            listeners: parts.listeners,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn id_arc(&self) -> &Arc<str> {
        &self.id
    }

    pub fn info(&self) -> &SessionInfo {
        &self.info
    }

    pub fn cwd(&self) -> &Path {
        &self.info.cwd
    }

    pub fn state(&self) -> SessionState {
        *lock(&self.state)
    }

    pub(crate) fn set_ending(&self) {
        *lock(&self.state) = SessionState::Ending;
    }

    /// The model this session's runs use when a run names none.
    pub fn model(&self) -> Option<String> {
        lock(&self.model).clone()
    }

    pub fn set_model(&self, model: Option<String>) {
        *lock(&self.model) = model;
    }

    /// The runner that does this session's work (native by default).
    pub fn runner_kind(&self) -> crate::runner::RunnerKind {
        *lock(&self.runner)
    }

    pub fn set_runner_kind(&self, kind: crate::runner::RunnerKind) {
        *lock(&self.runner) = kind;
    }

    /// The guard in force (the workspace's policy file read again when it
    /// changed).
    pub fn guard(&self) -> Arc<Guard> {
        self.guard.current()
    }

    /// The guard that follows the policy file: when it was loaded, why an
    /// edit is not in force.
    pub fn live_guard(&self) -> &Arc<LiveGuard> {
        &self.guard
    }

    pub(crate) fn approver(&self) -> &Arc<dyn Approver> {
        &self.approver
    }

    /// What the session's people allowed for the rest of it.
    pub fn grants(&self) -> &SessionGrants {
        &self.grants
    }

    pub(crate) fn approval_rules(&self) -> Option<&Arc<RuleStore>> {
        self.approval_rules.as_ref()
    }

    /// Marks the session as shared by several clients (see [`Self::shared`]).
    pub fn mark_shared(&self) {
        self.shared.store(true, Ordering::Relaxed);
    }

    /// Several clients share the session: a session grant reaches them all.
    pub fn shared(&self) -> bool {
        self.shared.load(Ordering::Relaxed)
    }

    pub(crate) fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    pub(crate) fn settings(&self) -> &RegistrySettings {
        &self.settings
    }

    // ---- tools ----

    pub fn tool(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.tools.get(name)
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> Vec<Arc<ToolEntry>> {
        self.tools.list()
    }

    pub fn tool_owner(&self, name: &str) -> Option<ToolOwner> {
        self.tools.owner_of(name)
    }

    /// Adds or replaces `owner`'s tools named in `entries`; all or nothing.
    pub fn register_tools(
        &self,
        owner: &ToolOwner,
        entries: Vec<ToolEntry>,
    ) -> Result<(), ToolConflict> {
        self.tools.register(owner, entries)?;
        self.bump_tools_changed();
        Ok(())
    }

    /// Makes `entries` exactly what `owner` serves; all or nothing.
    pub fn replace_tools(
        &self,
        owner: &ToolOwner,
        entries: Vec<ToolEntry>,
    ) -> Result<(), ToolConflict> {
        self.tools.replace_owner(owner, entries)?;
        self.bump_tools_changed();
        Ok(())
    }

    pub fn unregister_tools(&self, owner: &ToolOwner, names: &[String]) -> usize {
        let removed = self.tools.unregister(owner, names);
        if removed > 0 {
            self.bump_tools_changed();
        }
        removed
    }

    /// A receiver that sees a new value after every change to the tool
    /// table (a replacement with identical tools counts too: compare the
    /// lists if that matters).
    pub fn tools_changed(&self) -> watch::Receiver<u64> {
        self.tools_changed.subscribe()
    }

    fn bump_tools_changed(&self) {
        self.tools_changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Removes everything `owner` holds: tools, rules, transforms, context.
    pub fn remove_owner(&self, owner: &ToolOwner) {
        if self.tools.unregister_owner(owner) > 0 {
            self.bump_tools_changed();
        }
        if let Some(name) = owner.provider_name() {
            self.set_rules(name, Vec::new());
            lock(&self.transforms).remove_owner(name);
            self.set_context(name, None);
            self.set_startup_context(name, None);
        }
    }

    // ---- hook rules ----

    /// Replaces `owner`'s `onPreToolUse` rules. Owners keep the position of
    /// their first registration.
    pub fn set_rules(&self, owner: &str, rules: Vec<HookRule>) {
        let mut table = write_lock(&self.rules);
        let position = table.iter().position(|(o, _)| o == owner);
        match (position, rules.is_empty()) {
            (Some(i), true) => {
                table.remove(i);
            }
            (Some(i), false) => table[i].1 = Arc::from(rules),
            (None, false) => table.push((owner.to_owned(), Arc::from(rules))),
            (None, true) => {}
        }
    }

    pub fn rule_count(&self, owner: &str) -> usize {
        read_lock(&self.rules)
            .iter()
            .find(|(o, _)| o == owner)
            .map_or(0, |(_, rules)| rules.len())
    }

    pub(crate) fn rules_snapshot(&self) -> Vec<(String, Arc<[HookRule]>)> {
        read_lock(&self.rules).clone()
    }

    // ---- transforms ----

    pub fn set_transform(
        &self,
        owner: &str,
        section: &str,
        transform: Option<Transform>,
    ) -> Result<(), TransformError> {
        lock(&self.transforms).set(owner, section, transform)
    }

    /// The text of `section` after every transform, in registration order.
    pub async fn render_section(&self, section: &str, base: &str) -> String {
        let transforms = lock(&self.transforms).for_section(section);
        transforms::apply(
            &self.id,
            section,
            base.to_owned(),
            transforms,
            self.settings.transform_timeout,
        )
        .await
    }

    /// Renders every section (`base` gives the starting text of each; a
    /// section only transforms know starts empty). Protected sections come
    /// last, so safety content has the last word.
    pub async fn render_prompt(&self, base: &[(String, String)]) -> Vec<(String, String)> {
        let mut names: Vec<String> = base.iter().map(|(name, _)| name.clone()).collect();
        for section in lock(&self.transforms).sections() {
            if !names.contains(&section) {
                names.push(section);
            }
        }
        names.sort_by_key(|name| is_protected(name));
        let mut rendered = Vec::with_capacity(names.len());
        for name in names {
            let start = base
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| text.as_str())
                .unwrap_or("");
            let text = self.render_section(&name, start).await;
            rendered.push((name, text));
        }
        rendered
    }

    // ---- context ----

    /// Ambient context injected on every prompt; `None` clears `owner`'s.
    pub fn set_context(&self, owner: &str, text: Option<String>) {
        set_owned(&self.context, owner, text);
    }

    pub fn set_startup_context(&self, owner: &str, text: Option<String>) {
        set_owned(&self.startup_context, owner, text);
    }

    pub fn context(&self) -> Vec<(String, String)> {
        lock(&self.context).clone()
    }

    pub fn startup_context(&self) -> Vec<(String, String)> {
        lock(&self.startup_context).clone()
    }

    // ---- events and timeline ----

    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    /// Whether anyone listens to this session's events; the call path skips
    /// building an event nobody will read.
    pub(crate) fn has_event_subscribers(&self) -> bool {
        self.sink.get().is_some() || self.events.receiver_count() > 0
    }

    /// Hands every event of this session to `sink` as it is emitted (at
    /// most one sink; a second is refused). It runs on the thread that
    /// emits (a tool call's, a runner's): it must be quick and not block.
    pub fn set_event_sink(&self, sink: EventSink) -> bool {
        self.sink.set(sink).is_ok()
    }

    /// Whether a call's arguments and result must be recorded (audit log or
    /// event subscribers).
    pub(crate) fn keeps_records(&self) -> bool {
        self.audit.is_some() || self.has_event_subscribers()
    }

    pub(crate) fn emit(&self, event: SessionEvent) {
        if let Some(sink) = self.sink.get() {
            sink(&event);
        }
        // No subscriber is fine: events are a view, not a store.
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(event);
        }
    }

    /// A line in the session timeline (`session.log()`).
    pub fn log(&self, source: &str, text: &str) {
        let text = bridge_policy::redact(text).into_owned();
        {
            let mut timeline = lock(&self.timeline);
            if timeline.len() == TIMELINE_KEEP {
                timeline.pop_front();
            }
            timeline.push_back(TimelineEntry {
                ts: bridge_util::time::now_timestamp(),
                source: source.to_owned(),
                text: text.clone(),
            });
        }
        tracing::info!(session = %self.id, %source, "{text}");
        self.emit(SessionEvent::Log {
            source: source.to_owned(),
            text,
        });
    }

    /// The newest `last` timeline lines, oldest first.
    pub fn timeline(&self, last: usize) -> Vec<TimelineEntry> {
        let timeline = lock(&self.timeline);
        let skip = timeline.len().saturating_sub(last);
        timeline.iter().skip(skip).cloned().collect()
    }

    /// Asks for an AI turn (a push at level `inject`): the session is busy
    /// until [`turn_finished`](Self::turn_finished).
    pub fn inject(
        &self,
        source: &str,
        stream: &str,
        text: &str,
        metadata: Option<serde_json::Value>,
    ) {
        self.begin_turn();
        self.log(source, &format!("[{stream}] {text}"));
        self.emit(SessionEvent::Inject {
            source: source.to_owned(),
            stream: stream.to_owned(),
            text: text.to_owned(),
            metadata,
        });
    }

    /// A user prompt arrived: a turn starts.
    pub fn user_message(&self, content: &str) {
        self.user_messages.fetch_add(1, Ordering::Relaxed);
        self.begin_turn();
        self.emit(SessionEvent::UserMessage {
            content: content.to_owned(),
        });
    }

    /// How many user messages this session has had; compare two readings to
    /// learn whether one arrived in between.
    pub fn user_message_count(&self) -> u64 {
        self.user_messages.load(Ordering::Relaxed)
    }

    pub fn assistant_message(&self, content: &str, tool_requests: Vec<serde_json::Value>) {
        self.emit(SessionEvent::AssistantMessage {
            content: content.to_owned(),
            tool_requests,
        });
    }

    /// Streamed text of the answer being written, for live viewers only
    /// (redacted by whoever shows it).
    pub fn assistant_delta(&self, delta: &str) {
        if self.has_event_subscribers() {
            self.emit(SessionEvent::AssistantDelta {
                delta: delta.to_owned(),
            });
        }
    }

    pub fn assistant_intent(&self, intent: &str) {
        self.emit(SessionEvent::AssistantIntent {
            intent: intent.to_owned(),
        });
    }

    /// The running turn ended: the session is idle, and listeners hear so.
    pub fn turn_finished(self: &Arc<Self>) {
        {
            let mut state = lock(&self.state);
            if *state != SessionState::Busy {
                return;
            }
            *state = SessionState::Idle;
        }
        self.emit(SessionEvent::Idle);
        self.listeners.idle(self);
    }

    fn begin_turn(&self) {
        let mut state = lock(&self.state);
        if *state == SessionState::Idle {
            *state = SessionState::Busy;
        }
    }
}

fn set_owned(list: &Mutex<Vec<(String, String)>>, owner: &str, text: Option<String>) {
    let mut list = lock(list);
    let position = list.iter().position(|(o, _)| o == owner);
    match (position, text) {
        (Some(i), Some(text)) => list[i].1 = text,
        (Some(i), None) => {
            list.remove(i);
        }
        (None, Some(text)) => list.push((owner.to_owned(), text)),
        (None, None) => {}
    }
}

/// The crate's locks tolerate a panicked holder (see `bridge_util::sync`).
pub(crate) use bridge_util::sync::lock;
