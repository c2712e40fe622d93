//! The run's steps as events of the session log, when the run has one.

use serde_json::{Value, json};

use crate::log::{EventLog, types};

/// Appends to the run's log, or does nothing for a run without one (the
/// benchmark, embedders that keep no history).
#[derive(Clone)]
pub(super) struct Journal {
    log: Option<EventLog>,
}

impl Journal {
    pub(super) fn new(log: Option<EventLog>) -> Self {
        Self { log }
    }

    /// Queues a durable event; its id, for `parentId` of what follows.
    pub(super) fn append(&self, kind: &str, data: Value, parent: Option<&str>) -> Option<String> {
        self.log
            .as_ref()
            .map(|log| log.append(kind, data, parent).id)
    }

    /// Whether durable events are kept at all: building their data can be
    /// skipped when not.
    pub(super) fn is_on(&self) -> bool {
        self.log.is_some()
    }

    pub(super) fn ephemeral(&self, kind: &str, data: Value) {
        if let Some(log) = &self.log {
            log.ephemeral(kind, data);
        }
    }

    /// `hook.start` and `hook.end` of a hook that acted: `detail` is what it
    /// did.
    pub(super) fn hook(&self, hook: &str, detail: Value, parent: Option<&str>) {
        if !self.is_on() {
            return;
        }
        let start = self.append(types::HOOK_START, json!({"hook": hook}), parent);
        let mut end = json!({"hook": hook});
        if let (Value::Object(end), Value::Object(detail)) = (&mut end, detail) {
            end.extend(detail);
        }
        self.append(types::HOOK_END, end, start.as_deref());
    }

    pub(super) async fn flush(&self) {
        if let Some(log) = &self.log
            && let Err(err) = log.flush().await
        {
            tracing::warn!(session = log.session_id(), error = %err, "the session log could not be flushed");
        }
    }
}
