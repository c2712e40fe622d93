//! Live progress of an orchestration, from its log's events: one line per
//! start, end and skip on stderr (cargo's style: a right-aligned verb, the
//! task, its time), and on a terminal a status line of what runs, with
//! each sub-task's elapsed time.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use bridge_engine::log::LoggedEvent;
use bridge_engine::orchestrate::{Opened, events};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

const TICK: Duration = Duration::from_millis(250);

/// The progress view; stops when the orchestration's log closes.
pub struct Progress {
    task: JoinHandle<()>,
}

impl Progress {
    pub fn start(opened: &Opened) -> Self {
        let waves = opened.wave_ids();
        let total: usize = waves.iter().map(Vec::len).sum();
        let planned = format!(
            "{} sub-task{} in {} wave{}{} ({})",
            total,
            plural(total),
            waves.len(),
            plural(waves.len()),
            match opened.to_run() {
                n if n == total => String::new(),
                n => format!(", {n} to run"),
            },
            opened.id
        );
        eprintln!("{:>12} {planned}", "Planned");
        let events = opened.log.subscribe();
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let task = tokio::spawn(show(events, terminal, total));
        Self { task }
    }

    pub async fn finish(self) {
        let _ = self.task.await;
    }
}

/// Sends each progress line of `opened` to `sink` until its log closes
/// (the `copilot_orchestrate` tool's progress notifications).
pub fn forward_lines(
    opened: &Opened,
    sink: tokio::sync::mpsc::UnboundedSender<String>,
) -> JoinHandle<()> {
    let mut events = opened.log.subscribe();
    tokio::spawn(async move {
        let mut lines = Lines::default();
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

async fn show(
    mut events: tokio::sync::broadcast::Receiver<LoggedEvent>,
    terminal: bool,
    total: usize,
) {
    let mut lines = Lines::default();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut drawn = false;
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => {
                    if let Some(line) = lines.line_for(&event) {
                        let mut stderr = std::io::stderr().lock();
                        if drawn {
                            let _ = write!(stderr, "\r\x1b[K");
                            drawn = false;
                        }
                        let _ = writeln!(stderr, "{}", bridge_policy::redact(&line));
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            },
            _ = ticks.tick(), if terminal && !lines.running.is_empty() => {
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "\r\x1b[K{}", lines.status_line(total));
                let _ = stderr.flush();
                drawn = true;
            }
        }
    }
    if drawn {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
    }
}

/// Turns events into lines, keeping what runs.
#[derive(Default)]
struct Lines {
    running: BTreeMap<String, Instant>,
    ended: usize,
}

impl Lines {
    fn line_for(&mut self, event: &LoggedEvent) -> Option<String> {
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

    fn status_line(&self, total: usize) -> String {
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

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
