//! What `run` shows while it works: with `--verbose` a numbered log of each
//! step on stdout (`copilot_code_verbose`), and a progress indicator on
//! stderr while the model thinks (only when stderr is a terminal).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bridge_engine::log::{EventLog, LoggedEvent, steps, types};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_TICK: Duration = Duration::from_millis(100);

/// The live view of one run; stops when the run's log closes or
/// [`Live::finish`] is called.
pub struct Live {
    task: Option<JoinHandle<()>>,
    stop: Arc<tokio::sync::Notify>,
}

impl Live {
    /// Starts showing `log`'s events. `asking` is set while an approval
    /// question is on the terminal: the indicator then keeps still.
    pub fn start(log: &EventLog, verbose: bool, progress: bool, asking: Arc<AtomicBool>) -> Self {
        let stop = Arc::new(tokio::sync::Notify::new());
        if !verbose && !progress {
            return Self { task: None, stop };
        }
        let events = log.subscribe();
        let view = View {
            verbose,
            progress,
            asking,
            step: 0,
            waiting_since: None,
            turn: 0,
            frame: 0,
            drawn: false,
        };
        let task = tokio::spawn(view.run(events, stop.clone()));
        Self {
            task: Some(task),
            stop,
        }
    }

    /// Shows what is still queued, then clears the indicator.
    pub async fn finish(mut self) {
        self.stop.notify_one();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

struct View {
    verbose: bool,
    progress: bool,
    asking: Arc<AtomicBool>,
    step: u32,
    /// Set while the model is being waited for.
    waiting_since: Option<Instant>,
    turn: u64,
    frame: usize,
    /// The indicator is on the screen.
    drawn: bool,
}

impl View {
    async fn run(
        mut self,
        mut events: tokio::sync::broadcast::Receiver<LoggedEvent>,
        stop: Arc<tokio::sync::Notify>,
    ) {
        let mut ticks = tokio::time::interval(SPINNER_TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                received = events.recv() => match received {
                    Ok(event) => self.show(&event),
                    Err(RecvError::Lagged(missed)) => {
                        self.print_step(&format!("({missed} steps not shown: the display fell behind)"));
                    }
                    Err(RecvError::Closed) => break,
                },
                _ = ticks.tick(), if self.progress && self.waiting_since.is_some() => self.spin(),
                () = stop.notified() => {
                    // Drain what is already queued, then stop.
                    while let Ok(event) = events.try_recv() {
                        self.show(&event);
                    }
                    break;
                }
            }
        }
        self.clear_spinner();
    }

    fn show(&mut self, event: &LoggedEvent) {
        match event.kind.as_str() {
            types::ASSISTANT_TURN_START => {
                self.turn = event.data.get("turn").and_then(Value::as_u64).unwrap_or(0);
                self.waiting_since = Some(Instant::now());
            }
            types::ASSISTANT_MESSAGE => {
                self.clear_spinner();
                self.waiting_since = None;
            }
            types::SESSION_ERROR => self.clear_spinner(),
            _ => {}
        }
        if self.verbose
            && let Some(line) = steps::describe(event)
        {
            self.print_step(&line);
        }
    }

    /// One numbered line on stdout. Subscribers see events unredacted, so
    /// every line is redacted here.
    fn print_step(&mut self, line: &str) {
        self.clear_spinner();
        self.step += 1;
        let line = bridge_policy::redact(line);
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{}. {line}", self.step);
        let _ = stdout.flush();
    }

    fn spin(&mut self) {
        if self.asking.load(Ordering::SeqCst) {
            return;
        }
        let Some(since) = self.waiting_since else {
            return;
        };
        self.frame = (self.frame + 1) % SPINNER.len();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[K{} waiting for the model (turn {}) {}s",
            SPINNER[self.frame],
            self.turn,
            since.elapsed().as_secs()
        );
        let _ = stderr.flush();
        self.drawn = true;
    }

    fn clear_spinner(&mut self) {
        if self.drawn && !self.asking.load(Ordering::SeqCst) {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[K");
            let _ = stderr.flush();
            self.drawn = false;
        }
    }
}
