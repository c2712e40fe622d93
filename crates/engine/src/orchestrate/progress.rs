//! An orchestration's progress as lines, from its log's events (cargo's
//! style: a right-aligned verb, the task, its time): what `orchestrate`
//! prints on stderr, what `copilot_orchestrate` sends as progress
//! notifications and `/rpc` watchers can show.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::events;
use crate::log::{EventLog, LoggedEvent};

/// Turns events into lines, keeping what runs.
#[derive(Debug, Default)]
pub struct ProgressLines {
    running: BTreeMap<String, Instant>,
    ended: usize,
}

impl ProgressLines {
    /// The line of `event`, if it makes one (not redacted).
    pub fn line_for(&mut self, event: &LoggedEvent) -> Option<String> {
        let data = &event.data;
        let id = text(data, "taskId").to_owned();
        match event.kind.as_str() {
            events::TASK_START => {
                self.running.insert(id.clone(), Instant::now());
                let wave = data.get("wave").and_then(Value::as_u64).unwrap_or(0) + 1;
                Some(format!(
                    "{:>12} {id} (wave {wave}, {}, {})",
                    "Running",
                    text(data, "runner"),
                    text(data, "workdir")
                ))
            }
            events::TASK_COMPLETE => {
                self.running.remove(&id);
                self.ended += 1;
                let seconds =
                    data.get("durationMs").and_then(Value::as_u64).unwrap_or(0) as f64 / 1000.0;
                let calls = data
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let error = text(data, "error");
                Some(match text(data, "status") {
                    "completed" => format!(
                        "{:>12} {id} in {seconds:.1}s ({calls} tool call{})",
                        "Finished",
                        plural(calls)
                    ),
                    "conflict" => format!("{:>12} {id}: {error}", "Conflict"),
                    "cancelled" => format!("{:>12} {id} after {seconds:.1}s", "Cancelled"),
                    _ => format!("{:>12} {id} in {seconds:.1}s: {error}", "Failed"),
                })
            }
            events::TASK_SKIPPED => {
                self.ended += 1;
                Some(format!("{:>12} {id}: {}", "Skipped", text(data, "reason")))
            }
            events::PLAN_COMPLETE => {
                let seconds =
                    data.get("durationMs").and_then(Value::as_u64).unwrap_or(0) as f64 / 1000.0;
                Some(format!(
                    "{:>12} {} in {seconds:.1}s",
                    "Done",
                    text(data, "summary")
                ))
            }
            _ => None,
        }
    }

    /// What runs now, with each sub-task's elapsed time.
    pub fn status_line(&self, total: usize) -> String {
        let running: Vec<String> = self
            .running
            .iter()
            .map(|(id, since)| format!("{id} {}s", since.elapsed().as_secs()))
            .collect();
        format!(
            "{:>12} [{}/{total}] {}",
            "Building",
            self.ended,
            running.join(", ")
        )
    }
}

fn text<'a>(data: &'a Value, key: &str) -> &'a str {
    data.get(key).and_then(Value::as_str).unwrap_or("")
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl ProgressLines {
    /// Whether a sub-task runs now.
    pub fn any_running(&self) -> bool {
        !self.running.is_empty()
    }
}

/// Sends each progress line of `log` (redacted, without the alignment) to
/// `sink` until the log closes.
pub fn forward_lines(
    log: &EventLog,
    sink: tokio::sync::mpsc::UnboundedSender<String>,
) -> tokio::task::JoinHandle<()> {
    let mut events = log.subscribe();
    tokio::spawn(async move {
        let mut lines = ProgressLines::default();
        loop {
            match events.recv().await {
                Ok(event) => {
                    if let Some(line) = lines.line_for(&event) {
                        let _ = sink.send(bridge_policy::redact(line.trim_start()).into_owned());
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
    })
}
