//! Live progress of an orchestration, from its log's events: one line per
//! start, end and skip on stderr (cargo's style: a right-aligned verb, the
//! task, its time), and on a terminal a status line of what runs, with
//! each sub-task's elapsed time.

use std::io::Write;
use std::time::Duration;

use bridge_engine::log::LoggedEvent;
use bridge_engine::orchestrate::Opened;
use bridge_engine::orchestrate::progress::{ProgressLines, plural};
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

async fn show(
    mut events: tokio::sync::broadcast::Receiver<LoggedEvent>,
    terminal: bool,
    total: usize,
) {
    let mut lines = ProgressLines::default();
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
            _ = ticks.tick(), if terminal && lines.any_running() => {
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
