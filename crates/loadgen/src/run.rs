//! The open loop (fixed rate, latency from the due time) and the closed
//! loop (fixed concurrency, back to back) over a pool of connections.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::timeout_at;

use crate::client::{Connection, Failure, RequestTemplate};
use crate::schedule::{Schedule, spawn_pacer};
use crate::stats::{Recorder, Report};

/// How long a run sends, and how long answers may still come after it.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    pub duration: Duration,
    /// After the last request is due (open) or the sending stops (closed),
    /// in-flight requests have this long; then they count as `timeout`.
    pub drain: Duration,
}

/// Lets the pacer thread and the workers get going before the first due time.
const LEAD_TIME: Duration = Duration::from_millis(5);

/// Sends `rate` requests/s for the phase over `connections` (one request
/// in flight per connection); each latency counts from the request's due
/// time. Requests still unsent when the drain time ends are reported as
/// `unsent` errors, with the time they had waited by then as latency.
pub async fn open_loop(
    connections: Vec<Connection>,
    template: Arc<RequestTemplate>,
    rate: f64,
    phase: Phase,
) -> Result<(Vec<Connection>, Report), String> {
    let start = Instant::now() + LEAD_TIME;
    let schedule = Schedule::at_rate(start, rate, phase.duration)?;
    let deadline = schedule.end() + phase.drain;
    let (due_sender, due_receiver) = tokio::sync::mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let pacer = spawn_pacer(schedule, Arc::clone(&stop), due_sender)
        .map_err(|err| format!("cannot start the pacer thread: {err}"))?;
    let due_receiver = Arc::new(Mutex::new(due_receiver));
    let taken = Arc::new(AtomicU64::new(0));

    let workers: Vec<_> = connections
        .into_iter()
        .map(|connection| {
            tokio::spawn(open_worker(
                connection,
                Arc::clone(&template),
                Arc::clone(&due_receiver),
                Arc::clone(&taken),
                deadline,
            ))
        })
        .collect();
    let (connections, mut total) = join_workers(workers).await?;
    stop.store(true, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || pacer.join())
        .await
        .map_err(|err| format!("the pacer thread failed: {err}"))?
        .map_err(|_| "the pacer thread panicked".to_owned())?;

    // Due times are handed out in order, so the unsent ones are the last.
    let taken = taken.load(Ordering::Relaxed).min(schedule.count);
    for index in taken..schedule.count {
        let waited = deadline.saturating_duration_since(schedule.due(index));
        total.failure(&Failure::Unsent, waited);
    }
    let finished = total.last_done.unwrap_or(deadline).max(schedule.end());
    let elapsed = finished.saturating_duration_since(start);
    let mut report = Report::new(&total, elapsed, schedule.count, schedule.count - taken);
    report.mode = "open";
    report.rate = Some(rate);
    report.connections = connections.len();
    Ok((connections, report))
}

async fn open_worker(
    mut connection: Connection,
    template: Arc<RequestTemplate>,
    due_receiver: Arc<Mutex<UnboundedReceiver<Instant>>>,
    taken: Arc<AtomicU64>,
    deadline: Instant,
) -> (Connection, Recorder) {
    let mut recorder = Recorder::default();
    let deadline = tokio::time::Instant::from_std(deadline);
    loop {
        // Idle workers queue on the lock: the next due request goes to the
        // one idle longest, and a busy worker takes none.
        let due = {
            let mut receiver = due_receiver.lock().await;
            match timeout_at(deadline, receiver.recv()).await {
                Ok(Some(due)) => due,
                Ok(None) | Err(_) => break,
            }
        };
        taken.fetch_add(1, Ordering::Relaxed);
        if !exchange_once(&mut connection, &template, due, deadline, &mut recorder).await {
            break;
        }
    }
    (connection, recorder)
}

/// Runs one exchange and records it; false once the deadline has passed.
async fn exchange_once(
    connection: &mut Connection,
    template: &RequestTemplate,
    due: Instant,
    deadline: tokio::time::Instant,
    recorder: &mut Recorder,
) -> bool {
    match timeout_at(deadline, connection.exchange(template)).await {
        Ok(Ok(exchange)) => recorder.success(due, &exchange),
        Ok(Err(failure)) => recorder.failure(&failure, due.elapsed()),
        Err(_) => {
            recorder.failure(&Failure::Timeout, due.elapsed());
            // The abandoned exchange left the connection mid-answer.
            connection.reset();
            return false;
        }
    }
    true
}

/// `concurrency` workers, one connection each, send back to back for the
/// phase; latency is each request's own round trip.
pub async fn closed_loop(
    connections: Vec<Connection>,
    template: Arc<RequestTemplate>,
    phase: Phase,
) -> Result<(Vec<Connection>, Report), String> {
    let concurrency = connections.len();
    let start = Instant::now();
    let end = start + phase.duration;
    let deadline = end + phase.drain;
    let workers: Vec<_> = connections
        .into_iter()
        .map(|connection| {
            tokio::spawn(closed_worker(
                connection,
                Arc::clone(&template),
                end,
                deadline,
            ))
        })
        .collect();
    let (connections, total) = join_workers(workers).await?;
    let finished = total.last_done.unwrap_or(end).max(end);
    let elapsed = finished.saturating_duration_since(start);
    let requests = total.ok + total.failed();
    let mut report = Report::new(&total, elapsed, requests, 0);
    report.mode = "closed";
    report.concurrency = Some(concurrency);
    report.connections = concurrency;
    Ok((connections, report))
}

async fn closed_worker(
    mut connection: Connection,
    template: Arc<RequestTemplate>,
    end: Instant,
    deadline: Instant,
) -> (Connection, Recorder) {
    let mut recorder = Recorder::default();
    let deadline = tokio::time::Instant::from_std(deadline);
    while Instant::now() < end {
        let due = Instant::now();
        if !exchange_once(&mut connection, &template, due, deadline, &mut recorder).await {
            break;
        }
    }
    (connection, recorder)
}

type Worker = tokio::task::JoinHandle<(Connection, Recorder)>;

async fn join_workers(workers: Vec<Worker>) -> Result<(Vec<Connection>, Recorder), String> {
    let mut connections = Vec::with_capacity(workers.len());
    let mut total = Recorder::default();
    for worker in workers {
        let (connection, recorder) = worker
            .await
            .map_err(|err| format!("a load worker failed: {err}"))?;
        connections.push(connection);
        total.merge(recorder);
    }
    Ok((connections, total))
}
