//! What every session is doing, as a person watches it: one transcript per
//! hub session (fed by its events, [`feed`]) and per conversation an agent
//! holds through the facade ([`facade`]), joined when both are the same
//! agent session (`claude-code-<id>`: its hooks' session and its model
//! requests). Read by the dashboard's Sessions page and `session.events`.
//!
//! Memory only, and bounded: each transcript keeps its newest events
//! (at most [`KEPT_EVENTS`] and [`KEPT_BYTES`]; texts cut to
//! [`KEPT_TEXT_CHARS`], redacted first), and the daemon keeps at most
//! [`KEPT_TRANSCRIPTS`], the least recently active finished ones dropped
//! first. With `keep_transcripts` on, the facade's conversations are also
//! written to disk ([`disk`]); hub tasks have their own event logs.

mod disk;
pub mod facade;
pub mod feed;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_engine::Door;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

pub use disk::TranscriptFiles;

/// Events one transcript keeps.
pub const KEPT_EVENTS: usize = 2_000;
/// Bytes of events (as JSON) one transcript keeps.
pub const KEPT_BYTES: usize = 1024 * 1024;
/// Characters of one text kept in an event (a long answer is kept whole
/// up to this).
pub const KEPT_TEXT_CHARS: usize = 64 * 1024;
/// How long a reader that polls counts as watching after each call.
pub const POLLED_WATCH: std::time::Duration = std::time::Duration::from_secs(30);
/// Transcripts the daemon keeps.
pub const KEPT_TRANSCRIPTS: usize = 200;
/// Events one `session.events` answer carries at most.
pub const MAX_PAGE: usize = 500;

/// Every transcript of the daemon.
#[derive(Debug)]
pub struct Transcripts {
    by_id: Mutex<HashMap<String, Arc<Transcript>>>,
    /// Bumped when a transcript starts, ends or is dropped.
    changed: watch::Sender<u64>,
    files: Option<TranscriptFiles>,
}

/// One session's or conversation's events, newest kept.
#[derive(Debug)]
pub struct Transcript {
    id: String,
    door: Door,
    state: Mutex<State>,
    /// The sequence number of the newest event.
    newest: watch::Sender<u64>,
    /// Viewers following it live ([`Transcript::viewer`]): streamed text
    /// is kept only while someone watches (the whole answer replaces it).
    viewers: AtomicUsize,
    /// A reader that polls (`session.events`) counts as watching until
    /// then: between two of its calls streamed text must not be lost.
    polled_until: Mutex<Option<std::time::Instant>>,
    files: Option<TranscriptFiles>,
}

/// A live viewer of a transcript, for as long as it is held.
#[derive(Debug)]
pub struct Viewer(Arc<Transcript>);

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.viewers.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct State {
    title: String,
    cwd: Option<PathBuf>,
    started_at: String,
    updated_at: String,
    live: bool,
    model: Option<String>,
    tokens_in: u64,
    tokens_out: u64,
    /// `(seq, event, size)`, oldest first.
    events: VecDeque<(u64, Value, usize)>,
    bytes: usize,
    next_seq: u64,
    /// Where the answer being streamed began: its deltas are dropped once
    /// the whole answer is kept.
    streaming_since: Option<u64>,
}

/// What a page of a transcript holds.
#[derive(Debug)]
pub struct Page {
    pub events: Vec<Value>,
    /// Ask for events after this next time.
    pub next: u64,
    /// Events after `since` no longer kept (the transcript moved on).
    pub missed: bool,
}

impl Page {
    /// `events` read after `since` from a file (nothing missed there).
    pub fn after(since: u64, events: Vec<Value>) -> Self {
        let next = events
            .last()
            .and_then(|event| event["seq"].as_u64())
            .unwrap_or(since);
        Self {
            events,
            next,
            missed: false,
        }
    }
}

impl Transcripts {
    /// An empty set; `files` when `keep_transcripts` is on.
    pub fn new(files: Option<TranscriptFiles>) -> Self {
        Self {
            by_id: Mutex::new(HashMap::new()),
            changed: watch::channel(0).0,
            files,
        }
    }

    /// The transcript `id`, started now as `door`'s with `title` unless
    /// it exists (then it is live again, and learns a workspace it lacked).
    pub fn open(&self, id: &str, door: Door, title: &str, cwd: Option<PathBuf>) -> Arc<Transcript> {
        let mut by_id = bridge_util::sync::lock(&self.by_id);
        if let Some(found) = by_id.get(id) {
            let mut state = bridge_util::sync::lock(&found.state);
            let revived = !state.live;
            state.live = true;
            if state.cwd.is_none() {
                state.cwd = cwd;
            }
            drop(state);
            let found = found.clone();
            drop(by_id);
            if revived {
                self.changed.send_modify(|n| *n += 1);
            }
            return found;
        }
        if by_id.len() >= KEPT_TRANSCRIPTS {
            drop_least_recent(&mut by_id);
        }
        let now = bridge_util::time::now_timestamp();
        let transcript = Arc::new(Transcript {
            id: id.to_owned(),
            door,
            state: Mutex::new(State {
                title: bridge_policy::redact::printable(title, 200),
                cwd,
                started_at: now.clone(),
                updated_at: now,
                live: true,
                model: None,
                tokens_in: 0,
                tokens_out: 0,
                events: VecDeque::new(),
                bytes: 0,
                next_seq: 1,
                streaming_since: None,
            }),
            newest: watch::channel(0).0,
            viewers: AtomicUsize::new(0),
            polled_until: Mutex::new(None),
            files: self.files.clone(),
        });
        by_id.insert(id.to_owned(), transcript.clone());
        drop(by_id);
        self.changed.send_modify(|n| *n += 1);
        transcript
    }

    pub fn get(&self, id: &str) -> Option<Arc<Transcript>> {
        bridge_util::sync::lock(&self.by_id).get(id).cloned()
    }

    /// The transcript `id` is over (its session ended).
    pub fn finish(&self, id: &str) {
        if let Some(transcript) = self.get(id) {
            bridge_util::sync::lock(&transcript.state).live = false;
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Every transcript's summary, the most recently active first.
    pub fn list(&self) -> Vec<Value> {
        let mut all: Vec<Arc<Transcript>> = bridge_util::sync::lock(&self.by_id)
            .values()
            .cloned()
            .collect();
        let mut rows: Vec<(String, Value)> = all
            .drain(..)
            .map(|transcript| {
                let summary = transcript.summary();
                let updated = summary["updatedAt"].as_str().unwrap_or_default().to_owned();
                (updated, summary)
            })
            .collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0));
        rows.into_iter().map(|(_, row)| row).collect()
    }

    /// Changes to the set (a transcript started, ended, dropped).
    pub fn watch_set(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Where conversations are kept on disk, when they are.
    pub fn files(&self) -> Option<&TranscriptFiles> {
        self.files.as_ref()
    }
}

/// Drops the finished transcript least recently active (a live one only
/// when every one is live).
fn drop_least_recent(by_id: &mut HashMap<String, Arc<Transcript>>) {
    let oldest = |live: bool| {
        by_id
            .values()
            .filter_map(|t| {
                let state = bridge_util::sync::lock(&t.state);
                (state.live == live).then(|| (state.updated_at.clone(), t.id.clone()))
            })
            .min()
    };
    if let Some((_, id)) = oldest(false).or_else(|| oldest(true)) {
        by_id.remove(&id);
    }
}

impl Transcript {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `{id, door, doorName, title, cwd, live, startedAt, updatedAt, model,
    /// tokensIn, tokensOut, events}`.
    pub fn summary(&self) -> Value {
        let state = bridge_util::sync::lock(&self.state);
        json!({
            "id": self.id,
            "door": self.door,
            "doorName": self.door.display_name(),
            "title": state.title,
            "cwd": state.cwd,
            "live": state.live,
            "startedAt": state.started_at,
            "updatedAt": state.updated_at,
            "model": state.model,
            "tokensIn": state.tokens_in,
            "tokensOut": state.tokens_out,
            "events": state.next_seq - 1,
        })
    }

    /// Keeps one event of `kind` with `data` (an object; its texts are
    /// redacted and cut here); returns its `seq` (`None`: streamed text
    /// nobody watches, not kept).
    pub fn push(&self, kind: &str, data: Value) -> Option<u64> {
        self.keep(kind, data, cut_texts)
    }

    /// [`Self::push`] for data the engine already redacted (a tool call's
    /// records, a runner's answer): only texts too long are cut (and
    /// redacted once more as they are), so a tool call does not run the
    /// redactor twice over its arguments and result.
    pub fn push_redacted(&self, kind: &str, data: Value) -> Option<u64> {
        self.keep(kind, data, cut_long_texts)
    }

    fn keep(&self, kind: &str, data: Value, cut: fn(&mut Value)) -> Option<u64> {
        if kind == "assistant.message_delta" && !self.is_watched() {
            return None;
        }
        let mut data = match data {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_owned(), other)]),
        };
        data.values_mut().for_each(cut);
        let mut state = bridge_util::sync::lock(&self.state);
        let seq = state.next_seq;
        state.next_seq += 1;
        let at = bridge_util::time::now_timestamp();
        state.updated_at.clone_from(&at);
        data.insert("seq".to_owned(), Value::from(seq));
        data.insert("at".to_owned(), Value::from(at));
        data.insert("type".to_owned(), Value::from(kind));
        let event = Value::Object(data);
        match kind {
            "assistant.message_delta" => {
                state.streaming_since.get_or_insert(seq);
            }
            "assistant.message" => {
                // The whole answer replaces what streamed of it.
                if let Some(since) = state.streaming_since.take() {
                    let mut freed = 0;
                    state.events.retain(|(seq, event, size)| {
                        let streamed = *seq >= since && event["type"] == "assistant.message_delta";
                        if streamed {
                            freed += size;
                        }
                        !streamed
                    });
                    state.bytes -= freed;
                }
            }
            _ => {}
        }
        if let Some(files) = &self.files
            && kind != "assistant.message_delta"
        {
            files.append(&self.id, &event);
        }
        let size = approx_size(&event);
        state.events.push_back((seq, event, size));
        state.bytes += size;
        while state.events.len() > 1
            && (state.events.len() > KEPT_EVENTS || state.bytes > KEPT_BYTES)
        {
            if let Some((_, _, size)) = state.events.pop_front() {
                state.bytes -= size;
            }
        }
        drop(state);
        self.newest.send_replace(seq);
        Some(seq)
    }

    /// Counts a live viewer until the returned guard is dropped.
    pub fn viewer(self: &Arc<Self>) -> Viewer {
        self.viewers.fetch_add(1, Ordering::Relaxed);
        Viewer(self.clone())
    }

    /// A reader polled: it counts as watching for [`POLLED_WATCH`].
    pub fn polled(&self) {
        *bridge_util::sync::lock(&self.polled_until) =
            Some(std::time::Instant::now() + POLLED_WATCH);
    }

    pub fn is_watched(&self) -> bool {
        self.viewers.load(Ordering::Relaxed) > 0
            || bridge_util::sync::lock(&self.polled_until)
                .is_some_and(|until| std::time::Instant::now() < until)
    }

    /// The model a conversation uses and the tokens it spent.
    pub fn note_usage(&self, model: Option<&str>, tokens_in: u64, tokens_out: u64) {
        let mut state = bridge_util::sync::lock(&self.state);
        if let Some(model) = model {
            state.model = Some(model.to_owned());
        }
        state.tokens_in += tokens_in;
        state.tokens_out += tokens_out;
    }

    /// The kept events after `since`, at most `limit`. A `since` past
    /// the newest event (a viewer of an earlier daemon) reads from the
    /// start.
    pub fn page(&self, since: u64, limit: usize) -> Page {
        let state = bridge_util::sync::lock(&self.state);
        let newest = state.next_seq - 1;
        let since = if since > newest { 0 } else { since };
        let oldest = state
            .events
            .front()
            .map_or(state.next_seq, |(seq, _, _)| *seq);
        let events: Vec<Value> = state
            .events
            .iter()
            .filter(|(seq, _, _)| *seq > since)
            .take(limit)
            .map(|(_, event, _)| event.clone())
            .collect();
        let next = events
            .last()
            .and_then(|event| event["seq"].as_u64())
            .unwrap_or(since);
        Page {
            missed: since + 1 < oldest,
            events,
            next,
        }
    }

    /// Waits up to `wait` for an event after `since`.
    pub async fn wait_after(&self, since: u64, wait: Duration) {
        let mut newest = self.newest.subscribe();
        let _ = tokio::time::timeout(wait, newest.wait_for(|seq| *seq > since)).await;
    }

    pub fn is_live(&self) -> bool {
        bridge_util::sync::lock(&self.state).live
    }
}

/// Every string in `value` redacted and cut to [`KEPT_TEXT_CHARS`].
fn cut_texts(value: &mut Value) {
    match value {
        Value::String(text) => *text = bridge_policy::redact::shorten(text, KEPT_TEXT_CHARS),
        Value::Array(items) => items.iter_mut().for_each(cut_texts),
        Value::Object(map) => map.values_mut().for_each(cut_texts),
        _ => {}
    }
}

/// About the bytes `value` takes as JSON (its texts, and a little for
/// each part): what the transcript's bound counts, without writing it out.
fn approx_size(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(approx_size).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(key, value)| key.len() + 4 + approx_size(value))
                .sum::<usize>()
        }
        _ => 8,
    }
}

/// Every string in `value` longer than [`KEPT_TEXT_CHARS`] cut to it
/// (redacted as it is cut); shorter ones left as they are.
fn cut_long_texts(value: &mut Value) {
    match value {
        Value::String(text) if text.len() > KEPT_TEXT_CHARS => {
            *text = bridge_policy::redact::shorten(text, KEPT_TEXT_CHARS);
        }
        Value::Array(items) => items.iter_mut().for_each(cut_long_texts),
        Value::Object(map) => map.values_mut().for_each(cut_long_texts),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
