//! The writer thread of an [`AuditLog`](super::AuditLog), the bounded queue
//! that feeds it, and the day's file it keeps open.
//!
//! Callers push onto the queue and return; the writer takes everything
//! queued at once, turns it into lines and writes them with one `write`.
//! A thread rather than a task: the log is used from one-shot commands
//! without a runtime as well as from tokio workers, which must not wait for
//! the disk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use super::{AUDIT_QUEUE_CAPACITY, AuditEntry};
use crate::PolicyError;
use bridge_util::sync::lock;

mod batch;
use batch::Lines;

/// What callers hand the writer.
pub(super) enum Item {
    /// An entry as the caller gave it, when it was appended (its
    /// timestamp when it has none), and whether its input and output are
    /// [`Redacted`](super::Redacted) records already.
    Entry {
        entry: AuditEntry,
        called_at: DateTime<Utc>,
        redacted: bool,
    },
    /// Open (or check) the file of `date` now and say whether it worked.
    Probe {
        date: NaiveDate,
        reply: SyncSender<Result<(), PolicyError>>,
    },
}

/// How long the writer, woken by an entry, waits for more before it
/// writes. What a crash can lose is still bounded by the queue's capacity;
/// within that bound it may now include the entries of the last window.
const BATCH_WINDOW: Duration = Duration::from_millis(5);
/// Entries that end the window early (well below the queue's capacity, so
/// appenders never wait for a writer that is only batching).
const BATCH_WAKE_ITEMS: usize = 64;

/// No open or write tried yet.
const UNKNOWN: u8 = 0;
/// The last open or write worked.
const HEALTHY: u8 = 1;
/// The last open or write failed.
const FAILED: u8 = 2;

/// What callers and the writer thread share.
struct Shared {
    dir: PathBuf,
    queue: Mutex<Queue>,
    /// The writer waits here for items (or the close).
    work: Condvar,
    /// Appenders wait here for room, flushers for their entries.
    progress: Condvar,
    health: AtomicU8,
    /// The latest UTC day (days from the common era) whose file the writer
    /// opened or wrote without error.
    healthy_day: AtomicI32,
}

#[derive(Default)]
struct Queue {
    items: Vec<Item>,
    /// Items ever queued; an item's sequence number is this count after
    /// its push.
    accepted: u64,
    /// Items the writer is finished with (written, or failed). Items count
    /// against the capacity until then, so `accepted - done` is everything
    /// a crash would lose.
    done: u64,
    /// The writer sleeps on `work`: the next push must wake it. Pushes
    /// while it writes need no wake-up (a syscall each).
    writer_idle: bool,
    /// The writer waits out its batching window (`BATCH_WINDOW`): only a
    /// push that cannot wait wakes it early.
    batching: bool,
    /// Someone waits for the writer (a probe, a flush): end the window now.
    urgent: bool,
    /// Threads sleeping on `progress`, so the writer wakes nobody in vain.
    waiting: usize,
    /// The last handle is gone: write what is queued and stop.
    closed: bool,
    /// The writer thread is gone (closed, or it panicked).
    stopped: bool,
    /// Sequence number of the last entry a failed write lost, and why.
    lost_through: u64,
    last_failure: Option<Failure>,
    /// `lost_through` as the last flush reported it.
    reported_through: u64,
}

#[derive(Clone)]
struct Failure {
    path: String,
    reason: String,
}

impl Failure {
    fn error(&self) -> PolicyError {
        PolicyError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(self.reason.clone()),
        }
    }
}

/// Every log of the process with a running writer, for [`flush_all`].
static LOGS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

pub(super) fn flush_all() -> Result<(), PolicyError> {
    let logs: Vec<Arc<Shared>> = {
        let mut logs = lock(&LOGS);
        logs.retain(|log| log.strong_count() > 0);
        logs.iter().filter_map(Weak::upgrade).collect()
    };
    let mut first_error = None;
    for log in logs {
        if let Err(err) = log.flush() {
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// One log's writer: the queue, and the thread once started. Shared by the
/// clones of an `AuditLog`; dropping it writes what is queued and joins.
pub(super) struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    started: AtomicBool,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("dir", &self.shared.dir)
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Writer {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            shared: Arc::new(Shared {
                dir,
                queue: Mutex::default(),
                work: Condvar::new(),
                progress: Condvar::new(),
                health: AtomicU8::new(UNKNOWN),
                healthy_day: AtomicI32::new(i32::MIN),
            }),
            thread: Mutex::new(None),
            started: AtomicBool::new(false),
        }
    }

    pub(super) fn dir(&self) -> &Path {
        &self.shared.dir
    }

    pub(super) fn is_healthy(&self) -> bool {
        self.shared.health.load(Ordering::Acquire) == HEALTHY
    }

    /// Healthy, and the file of `day` (days from the common era) was opened
    /// or written: today's check needs no file system call.
    pub(super) fn is_healthy_on(&self, day: i32) -> bool {
        self.is_healthy() && self.shared.healthy_day.load(Ordering::Acquire) == day
    }

    /// Queues `item`, waiting while the writer is a full queue behind.
    pub(super) fn submit(&self, item: Item) -> Result<(), PolicyError> {
        self.start()?;
        let shared = &*self.shared;
        let mut queue = lock(&shared.queue);
        while !queue.stopped && queue.accepted - queue.done >= AUDIT_QUEUE_CAPACITY as u64 {
            queue = shared.wait_for_progress(queue);
        }
        if queue.stopped {
            return Err(shared.stopped_error());
        }
        let urgent = matches!(item, Item::Probe { .. });
        queue.items.push(item);
        queue.accepted += 1;
        queue.urgent |= urgent;
        let window_full = queue.items.len() == BATCH_WAKE_ITEMS;
        let wake =
            std::mem::take(&mut queue.writer_idle) || (queue.batching && (urgent || window_full));
        drop(queue);
        if wake {
            shared.work.notify_one();
        }
        Ok(())
    }

    /// Has the writer open (or check) the file of `date` and waits for the
    /// answer: behind everything queued before, so the answer is current.
    pub(super) fn probe(&self, date: NaiveDate) -> Result<(), PolicyError> {
        let (reply, answer) = sync_channel(1);
        self.submit(Item::Probe { date, reply })?;
        // A writer that stopped dropped the item and with it `reply`.
        answer
            .recv()
            .unwrap_or_else(|_| Err(self.shared.stopped_error()))
    }

    pub(super) fn flush(&self) -> Result<(), PolicyError> {
        if !self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        self.shared.flush()
    }

    fn start(&self) -> Result<(), PolicyError> {
        if self.started.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut thread = lock(&self.thread);
        if thread.is_some() {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let handle = std::thread::Builder::new()
            .name("audit-writer".to_owned())
            .spawn(move || run(&shared))
            .map_err(|source| PolicyError::Io {
                path: self.shared.dir.display().to_string(),
                source: std::io::Error::new(
                    source.kind(),
                    format!("cannot start the audit writer thread: {source}"),
                ),
            })?;
        *thread = Some(handle);
        {
            let mut logs = lock(&LOGS);
            logs.retain(|log| log.strong_count() > 0);
            logs.push(Arc::downgrade(&self.shared));
        }
        self.started.store(true, Ordering::Release);
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(thread) = thread else { return };
        lock(&self.shared.queue).closed = true;
        self.shared.work.notify_one();
        if thread.join().is_err() {
            tracing::error!(
                dir = %self.shared.dir.display(),
                "the audit writer thread panicked; entries queued then are lost"
            );
        }
    }
}

impl Shared {
    fn wait_for_progress<'a>(&self, mut queue: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        queue.waiting += 1;
        let mut queue = self
            .progress
            .wait(queue)
            .unwrap_or_else(PoisonError::into_inner);
        queue.waiting -= 1;
        queue
    }

    fn flush(&self) -> Result<(), PolicyError> {
        let mut queue = lock(&self.queue);
        let target = queue.accepted;
        if queue.done < target {
            queue.urgent = true;
            if queue.batching {
                self.work.notify_one();
            }
        }
        while queue.done < target && !queue.stopped {
            queue = self.wait_for_progress(queue);
        }
        if queue.done < target {
            return Err(self.stopped_error());
        }
        if queue.lost_through > queue.reported_through {
            queue.reported_through = queue.lost_through;
            if let Some(failure) = &queue.last_failure {
                return Err(failure.error());
            }
        }
        Ok(())
    }

    fn stopped_error(&self) -> PolicyError {
        PolicyError::Io {
            path: self.dir.display().to_string(),
            source: std::io::Error::other("the audit writer thread stopped"),
        }
    }

    fn note(&self, date: NaiveDate, worked: bool) {
        if worked {
            self.healthy_day
                .fetch_max(date.num_days_from_ce(), Ordering::AcqRel);
            self.health.store(HEALTHY, Ordering::Release);
        } else {
            self.health.store(FAILED, Ordering::Release);
        }
    }

    /// Entries appended within `BATCH_WINDOW` of the first one share its
    /// `write`: at a steady trickle of calls the writer then wakes (a
    /// context switch) and writes once per window, not once per call. A
    /// probe, a flush, the close or a full window end it early.
    fn wait_out_window<'a>(&self, mut queue: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        let deadline = Instant::now() + BATCH_WINDOW;
        queue.batching = true;
        while !queue.closed && !queue.urgent && queue.items.len() < BATCH_WAKE_ITEMS {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            queue = self
                .work
                .wait_timeout(queue, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        queue.batching = false;
        queue.urgent = false;
        queue
    }
}

/// Marks the writer stopped however its thread ends (a panic included), so
/// that nobody waits for it forever and every later call fails closed.
struct StopGuard<'a>(&'a Shared);

impl Drop for StopGuard<'_> {
    fn drop(&mut self) {
        self.0.health.store(FAILED, Ordering::Release);
        let mut queue = lock(&self.0.queue);
        queue.stopped = true;
        // Dropping a probe's reply sender answers its caller.
        queue.items.clear();
        drop(queue);
        self.0.progress.notify_all();
    }
}

/// The writer thread.
fn run(shared: &Shared) {
    let _stopped = StopGuard(shared);
    let mut lines = Lines::new(shared.dir.clone());
    let mut items = Vec::new();
    loop {
        {
            let mut queue = lock(&shared.queue);
            while queue.items.is_empty() && !queue.closed {
                queue.writer_idle = true;
                queue = shared
                    .work
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            queue.writer_idle = false;
            if queue.items.is_empty() {
                return; // closed, and everything written
            }
            queue = shared.wait_out_window(queue);
            std::mem::swap(&mut queue.items, &mut items);
        }
        let count = items.len() as u64;
        let lost = lines.write_batch(shared, &mut items);
        let mut queue = lock(&shared.queue);
        queue.done += count;
        if let Some((through, failure)) = lost {
            queue.lost_through = through;
            queue.last_failure = Some(failure);
        }
        if queue.waiting > 0 {
            shared.progress.notify_all();
        }
    }
}
