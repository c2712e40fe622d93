//! [`EventLog`]: the handle a session appends through, and its writer task.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::files::{create_private_dir, create_session_file, lock_for_writing, open_session_file};
use super::replay::Replay;
use super::resume::{ConversationBuilder, Replayed};
use super::{LogError, LoggedEvent, MAX_LINE_BYTES, session_file, types, validate_session_id};

/// Version of the line format, in `session.start`.
pub const FORMAT_VERSION: u64 = 1;

/// Events a slow subscriber may fall behind by before it misses some.
const SUBSCRIBER_BACKLOG: usize = 4096;

/// Events written with one `write(2)` at most, so one flush never builds
/// an unbounded buffer.
const MAX_BATCH_EVENTS: usize = 8192;

/// Batches of at most this many events are encoded and written on the
/// writer task itself: a loop's step appends a few events at a time, and
/// handing each such batch to the blocking pool cost more thread switches
/// than the write (one `write(2)` of a few KiB to the page cache). Bursts
/// go to the blocking pool.
const INLINE_BATCH_EVENTS: usize = 16;
/// Text (strings and keys of the events' data) above which even a small
/// batch goes to the blocking pool: redacting and writing a large tool
/// result would hold up the runtime's worker.
const INLINE_BATCH_TEXT_BYTES: usize = 64 * 1024;

/// What is kept of an event's `data` that would make its line longer than
/// [`MAX_LINE_BYTES`].
const OVERSIZED_PREVIEW_BYTES: usize = 64 * 1024;

/// Where an appended event sits in its log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventRef {
    pub seq: u64,
    pub id: String,
}

/// The append handle of one session's log. Clones share the writer;
/// dropping the last clone lets the writer write what is queued and stop
/// (call [`EventLog::close`] to wait for that and learn of errors).
#[derive(Debug, Clone)]
pub struct EventLog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    session_id: String,
    path: PathBuf,
    /// Taken for the few instructions that number an event and queue it,
    /// so file order, `seq` order and subscriber order are one order.
    order: Mutex<Order>,
    live: broadcast::Sender<LoggedEvent>,
}

#[derive(Debug)]
struct Order {
    next_seq: u64,
    /// `None` once closed.
    queue: Option<mpsc::UnboundedSender<Command>>,
}

enum Command {
    Event(LoggedEvent),
    Flush(oneshot::Sender<Result<(), LogError>>),
    Close(oneshot::Sender<Result<(), LogError>>),
}

impl EventLog {
    /// Starts the log of a new session `session_id` in `dir` and writes its
    /// `session.start` event, whose data is `meta` (an object; anything
    /// else is kept under `meta`) plus `sessionId` and `formatVersion`.
    /// Fails with [`LogError::Exists`] if the session already has a log.
    pub async fn create(dir: &Path, session_id: &str, meta: Value) -> Result<Self, LogError> {
        validate_session_id(session_id)?;
        let dir = dir.to_path_buf();
        let id = session_id.to_owned();
        let (file, path) = blocking(move || {
            create_private_dir(&dir)?;
            let path = session_file(&dir, &id);
            let file = create_session_file(&path, &id)?;
            Ok((file, path))
        })
        .await?;
        let log = Self::start(session_id, path, file, 1);
        let mut data = match meta {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                let mut map = serde_json::Map::new();
                map.insert("meta".to_owned(), other);
                map
            }
        };
        data.insert("sessionId".to_owned(), json!(session_id));
        data.insert("formatVersion".to_owned(), json!(FORMAT_VERSION));
        log.append(types::SESSION_START, Value::Object(data), None);
        Ok(log)
    }

    /// Reopens session `session_id` in `dir`: replays its log, cuts off a
    /// torn last line, continues its `seq` and writes `session.resume`.
    /// Corrupt lines in the middle are skipped and listed in
    /// [`Replayed::skipped`] (and in the `session.resume` data). Fails with
    /// [`LogError::NotFound`], [`LogError::Busy`] (another writer has it
    /// open), or [`LogError::Corrupt`] if no line of the file is an event.
    pub async fn resume(dir: &Path, session_id: &str) -> Result<(Self, Replayed), LogError> {
        validate_session_id(session_id)?;
        let path = session_file(dir, session_id);
        let id = session_id.to_owned();
        let read_path = path.clone();
        let (file, replayed) = blocking(move || replay_for_resume(&read_path, &id)).await?;
        let log = Self::start(session_id, path, file, replayed.last_seq + 1);
        let skipped: Vec<u64> = replayed.skipped.iter().map(|line| line.line).collect();
        log.append(
            types::SESSION_RESUME,
            json!({
                "resumedAfterSeq": replayed.last_seq,
                "skippedLines": skipped,
                "tornTail": replayed.torn_tail,
            }),
            replayed.last_event_id.as_deref(),
        );
        Ok((log, replayed))
    }

    fn start(session_id: &str, path: PathBuf, file: File, next_seq: u64) -> Self {
        let (queue, commands) = mpsc::unbounded_channel();
        let (live, _) = broadcast::channel(SUBSCRIBER_BACKLOG);
        tokio::spawn(write_loop(
            Arc::new(file),
            path.clone(),
            session_id.to_owned(),
            commands,
        ));
        Self {
            shared: Arc::new(Shared {
                session_id: session_id.to_owned(),
                path,
                order: Mutex::new(Order {
                    next_seq,
                    queue: Some(queue),
                }),
                live,
            }),
        }
    }

    pub fn session_id(&self) -> &str {
        &self.shared.session_id
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Queues a durable event and returns at once; events reach the file
    /// and subscribers in the order of their `seq`. `parent_id` is the id
    /// of the event this one follows from.
    ///
    /// Never blocks and never fails: if the writer has stopped (a write
    /// error, or [`EventLog::close`]), the event is dropped and the next
    /// `flush` or `close` reports why. An event whose line would exceed
    /// [`MAX_LINE_BYTES`] is written with its data replaced by
    /// `{truncated: true, originalBytes, preview}`.
    pub fn append(&self, kind: &str, data: Value, parent_id: Option<&str>) -> EventRef {
        let mut order = self.lock_order();
        let seq = order.next_seq;
        let event = new_event(seq, kind, data, parent_id);
        let event_ref = EventRef {
            seq,
            id: event.id.clone(),
        };
        if self.shared.live.receiver_count() > 0 {
            let _ = self.shared.live.send(event.clone());
        }
        match &order.queue {
            Some(queue) if queue.send(Command::Event(event)).is_ok() => order.next_seq += 1,
            _ => tracing::warn!(
                session = %self.shared.session_id,
                kind,
                "event dropped: the session log is closed"
            ),
        }
        event_ref
    }

    /// Sends an event to live subscribers only (streamed text, progress).
    /// Its `seq` is 0: it has no place in the file.
    pub fn ephemeral(&self, kind: &str, data: Value) {
        if self.shared.live.receiver_count() == 0 {
            return;
        }
        let _order = self.lock_order();
        let _ = self.shared.live.send(new_event(0, kind, data, None));
    }

    /// Every event from now on, durable and ephemeral, in order. A
    /// subscriber more than a few thousand events behind gets
    /// `RecvError::Lagged` and misses some.
    pub fn subscribe(&self) -> broadcast::Receiver<LoggedEvent> {
        self.shared.live.subscribe()
    }

    /// Returns once every event appended before the call is written and
    /// synced to disk (`fdatasync`), or with the error that stopped the
    /// writer.
    pub async fn flush(&self) -> Result<(), LogError> {
        self.send_control(false).await
    }

    /// Flushes, then stops the writer and releases the file. Later appends
    /// are dropped; closing twice is fine.
    pub async fn close(&self) -> Result<(), LogError> {
        self.send_control(true).await
    }

    async fn send_control(&self, close: bool) -> Result<(), LogError> {
        let (reply, done) = oneshot::channel();
        let command = match close {
            true => Command::Close(reply),
            false => Command::Flush(reply),
        };
        let sent = {
            let mut order = self.lock_order();
            let sent = order
                .queue
                .as_ref()
                .map(|queue| queue.send(command).is_ok());
            if close {
                order.queue = None;
            }
            sent
        };
        match sent {
            // Already closed: nothing is queued any more.
            None => return Ok(()),
            Some(false) => return Err(LogError::Closed(self.shared.session_id.clone())),
            Some(true) => {}
        }
        done.await
            .unwrap_or_else(|_| Err(LogError::Closed(self.shared.session_id.clone())))
    }

    fn lock_order(&self) -> MutexGuard<'_, Order> {
        // A panic while numbering an event leaves the counter consistent:
        // keep going rather than poison every later append.
        bridge_util::sync::lock(&self.shared.order)
    }
}

fn new_event(seq: u64, kind: &str, data: Value, parent_id: Option<&str>) -> LoggedEvent {
    LoggedEvent {
        seq,
        id: bridge_util::ids::unique_id("ev"),
        parent_id: parent_id.map(str::to_owned),
        timestamp: bridge_util::time::now_timestamp(),
        kind: kind.to_owned(),
        data,
    }
}

/// Runs blocking file work off the runtime threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, LogError> + Send + 'static,
) -> Result<T, LogError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| {
            Err(LogError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(format!("session log task failed: {err}")),
            })
        })
}

/// Opens the file for appending under the writer lock, replays it, and
/// makes sure the next line starts on a fresh line.
fn replay_for_resume(path: &Path, id: &str) -> Result<(File, Replayed), LogError> {
    let file = open_session_file(path, id, true)?;
    lock_for_writing(&file, path, id)?;
    let reader = file.try_clone().map_err(|err| LogError::io(path, err))?;
    let mut replay = Replay::from_file(reader, path);
    let mut builder = ConversationBuilder::new(id);
    while let Some(item) = replay.next_with(|line| builder.push_line(line)) {
        match item {
            Ok(()) => {}
            Err(LogError::Corrupt { line, reason, .. }) => {
                tracing::warn!(path = %path.display(), line, %reason, "skipping a corrupt line of a session log");
                builder.skip(line, reason);
            }
            Err(other) => return Err(other),
        }
    }
    let torn_line = replay.torn_tail();
    let replayed = builder.finish(torn_line.is_some());
    if replayed.events == 0 {
        return Err(LogError::Corrupt {
            path: path.to_path_buf(),
            line: 1,
            reason: "no line of the file is a session event".to_owned(),
        });
    }
    if torn_line.is_some() {
        // The only rewrite the log ever does: a crash's half line would
        // otherwise become a corrupt line in the middle.
        file.set_len(replay.valid_len())
            .map_err(|err| LogError::io(path, err))?;
    } else if replay.needs_newline() {
        (&file)
            .write_all(b"\n")
            .map_err(|err| LogError::io(path, err))?;
    }
    Ok((file, replayed))
}

/// The writer task: drains the queue in batches, one `write(2)` per batch
/// (small batches on the task itself, bursts on the blocking pool), syncs
/// on flush and close. Ends when closed or
/// when every [`EventLog`] clone is gone.
async fn write_loop(
    file: Arc<File>,
    path: PathBuf,
    session_id: String,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut failure: Option<String> = None;
    let mut buffer = Vec::new();
    let mut batch = Vec::new();
    let mut controls = Vec::new();
    while let Some(first) = commands.recv().await {
        let mut next = Some(first);
        // Take what is queued, up to the first flush/close (events after it
        // wait for the next round, so the reply means what it says).
        while let Some(command) = next.take() {
            match command {
                Command::Event(event) => {
                    batch.push(event);
                    if batch.len() < MAX_BATCH_EVENTS {
                        next = commands.try_recv().ok();
                    }
                }
                control => controls.push(control),
            }
        }
        if !batch.is_empty() {
            if failure.is_some() {
                batch.clear();
            } else {
                let events = std::mem::take(&mut batch);
                let buffer_in = std::mem::take(&mut buffer);
                let inline = events.len() <= INLINE_BATCH_EVENTS
                    && text_within(&events, INLINE_BATCH_TEXT_BYTES);
                let (returned, result) = if inline {
                    encode_and_write(&file, events, buffer_in)
                } else {
                    write_batch(Arc::clone(&file), events, buffer_in).await
                };
                buffer = returned;
                if let Err(err) = result {
                    tracing::error!(session = %session_id, path = %path.display(), error = %err,
                        "cannot write the session log; later events of this session are dropped");
                    failure = Some(err.to_string());
                }
            }
        }
        let mut closed = Vec::new();
        for control in controls.drain(..) {
            let (reply, close) = match control {
                Command::Flush(reply) => (reply, false),
                Command::Close(reply) => (reply, true),
                Command::Event(_) => continue,
            };
            let result = match &failure {
                Some(message) => Err(stopped(&path, message)),
                None => sync(Arc::clone(&file), &path).await,
            };
            if close {
                closed.push((reply, result));
            } else {
                let _ = reply.send(result);
            }
        }
        if !closed.is_empty() {
            // The file (and its writer lock) is released before `close`
            // returns, so the caller may reopen it at once.
            drop(file);
            for (reply, result) in closed {
                let _ = reply.send(result);
            }
            return;
        }
    }
    if failure.is_none() {
        let _ = sync(file, &path).await;
    }
}

fn stopped(path: &Path, message: &str) -> LogError {
    LogError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("an earlier write failed: {message}")),
    }
}

async fn sync(file: Arc<File>, path: &Path) -> Result<(), LogError> {
    let path = path.to_path_buf();
    blocking(move || file.sync_data().map_err(|err| LogError::io(&path, err))).await
}

/// Serializes `events` (redacted, one line each) into `buffer` and writes
/// it with one call. Returns the buffer for reuse.
async fn write_batch(
    file: Arc<File>,
    events: Vec<LoggedEvent>,
    buffer: Vec<u8>,
) -> (Vec<u8>, std::io::Result<()>) {
    let work = move || encode_and_write(&file, events, buffer);
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(err) => (
            Vec::new(),
            Err(std::io::Error::other(format!(
                "session log write task failed: {err}"
            ))),
        ),
    }
}

/// Whether the events' data holds at most about `limit` bytes of text
/// (stops counting past it).
fn text_within(events: &[LoggedEvent], limit: usize) -> bool {
    let mut total = 0;
    let mut pending: Vec<&Value> = events.iter().map(|event| &event.data).collect();
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => total += text.len(),
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                for (key, inner) in map {
                    total += key.len();
                    pending.push(inner);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => total += 8,
        }
        if total > limit {
            return false;
        }
    }
    true
}

/// Serializes `events` into `buffer` and writes it with one call; returns
/// the buffer for reuse.
fn encode_and_write(
    file: &File,
    events: Vec<LoggedEvent>,
    mut buffer: Vec<u8>,
) -> (Vec<u8>, std::io::Result<()>) {
    buffer.clear();
    for event in events {
        encode_line(event, &mut buffer);
    }
    let mut out = file;
    let result = out.write_all(&buffer);
    if buffer.capacity() > 4 * MAX_LINE_BYTES {
        buffer = Vec::new();
    }
    (buffer, result)
}

/// Appends `event` as one line, secrets redacted, its data cut down if the
/// line would be longer than [`MAX_LINE_BYTES`].
fn encode_line(mut event: LoggedEvent, buffer: &mut Vec<u8>) {
    bridge_policy::redact_value(&mut event.data);
    let start = buffer.len();
    let fits = serde_json::to_writer(&mut *buffer, &event).is_ok()
        && buffer.len() - start < MAX_LINE_BYTES;
    if !fits {
        buffer.truncate(start);
        let data = serde_json::to_string(&event.data).unwrap_or_default();
        let mut cut = OVERSIZED_PREVIEW_BYTES.min(data.len());
        while !data.is_char_boundary(cut) {
            cut -= 1;
        }
        event.data = json!({
            "truncated": true,
            "originalBytes": data.len(),
            "preview": &data[..cut],
        });
        // Cannot fail: ids and the preview are bounded strings.
        let _ = serde_json::to_writer(&mut *buffer, &event);
    }
    buffer.push(b'\n');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::{LoggedEvent, text_within};

    fn event(data: Value) -> LoggedEvent {
        LoggedEvent {
            seq: 1,
            id: "e-1".into(),
            parent_id: None,
            timestamp: "2026-11-26T00:00:00.000Z".into(),
            kind: "tool.result".into(),
            data,
        }
    }

    /// A loop step's few small events stay on the worker; one large tool
    /// result, or a deep pile of small values, goes to the blocking pool.
    #[test]
    fn only_small_batches_are_written_on_the_worker() {
        let small = vec![event(json!({"text": "hello", "n": 1})); 16];
        assert!(text_within(&small, 64 * 1024));
        let large = vec![event(json!({"output": "x".repeat(70 * 1024)}))];
        assert!(!text_within(&large, 64 * 1024));
        let many = vec![event(json!({"items": vec![1; 10_000]}))];
        assert!(!text_within(&many, 64 * 1024));
    }
}
