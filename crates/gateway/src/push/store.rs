//! EventStreams and their filters, per session. A stream is named
//! `stream@provider` and lives as long as its session: providers come and
//! go (and reconnect), their history stays queryable.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bridge_protocol::provider::StreamEntry;
use serde_json::Value;

use crate::provider::lock;
use crate::push::filter::{Filter, Level};

/// The bounds of one provider's streams in one session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLimits {
    /// Events kept per stream (oldest evicted).
    pub retention: usize,
    /// Bytes kept per stream (oldest evicted): 200 events of up to 2 MB
    /// each must not pin 400 MB.
    pub max_bytes: usize,
    /// Streams (and, separately, filters) per provider per session.
    pub max_streams: usize,
    /// Bytes kept in every stream of every session together; past it the
    /// holder of the most (a provider in a session) loses its oldest.
    pub store_max_bytes: usize,
}

/// One event to store.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent {
    pub ts: String,
    pub event: String,
    pub level: Level,
    pub metadata: Option<Value>,
}

#[derive(Debug)]
struct StoredEvent {
    seq: u64,
    ts: String,
    event: String,
    level: Level,
    metadata: Option<Value>,
    /// What the event adds to a `stream.history` answer (its JSON, escapes
    /// included), which is also what it is charged to the budgets.
    bytes: usize,
}

impl StoredEvent {
    fn entry(&self) -> StreamEntry {
        StreamEntry {
            ts: self.ts.clone(),
            event: self.event.clone(),
            level: Some(self.level.as_str().to_owned()),
            metadata: self.metadata.clone(),
        }
    }
}

#[derive(Debug)]
struct EventStream {
    /// The provider name of `stream@provider`.
    provider: String,
    events: VecDeque<StoredEvent>,
    bytes: usize,
}

#[derive(Debug, Default)]
struct SessionStreams {
    streams: HashMap<String, EventStream>,
    /// By `stream@provider`; a filter may exist before its stream does.
    filters: HashMap<String, (String, Arc<Filter>)>,
    next_seq: u64,
}

/// Every session's streams and filters.
#[derive(Debug, Default)]
pub(crate) struct StreamStore {
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    by_id: HashMap<String, SessionStreams>,
    /// Bytes of every stored event of every session.
    bytes: usize,
}

impl Sessions {
    fn get(&self, session_id: &str) -> Option<&SessionStreams> {
        self.by_id.get(session_id)
    }

    /// Evicts oldest events until the store is within `max_bytes`, always
    /// from whoever (a provider in a session) holds the most bytes: the
    /// providers that flood lose their own history first.
    fn shed(&mut self, max_bytes: usize) {
        if self.bytes <= max_bytes {
            return;
        }
        let mut held: HashMap<(String, String), usize> = HashMap::new();
        for (session_id, session) in &self.by_id {
            for stream in session.streams.values() {
                *held
                    .entry((session_id.clone(), stream.provider.clone()))
                    .or_default() += stream.bytes;
            }
        }
        while self.bytes > max_bytes {
            let Some(holder) = held
                .iter()
                .max_by_key(|(_, bytes)| **bytes)
                .map(|(holder, _)| holder.clone())
            else {
                return;
            };
            let (session_id, provider) = &holder;
            let oldest = self.by_id.get_mut(session_id).and_then(|session| {
                session
                    .streams
                    .values_mut()
                    .filter(|stream| &stream.provider == provider)
                    .filter_map(|stream| Some((stream.events.front()?.seq, stream)))
                    .min_by_key(|(seq, _)| *seq)
                    .map(|(_, stream)| stream)
            });
            let Some(stream) = oldest else {
                held.remove(&holder);
                continue;
            };
            let Some(evicted) = stream.events.pop_front() else {
                return;
            };
            stream.bytes -= evicted.bytes;
            self.bytes -= evicted.bytes;
            if let Some(bytes) = held.get_mut(&holder) {
                *bytes = bytes.saturating_sub(evicted.bytes);
            }
        }
    }
}

/// A `stream.history` answer's streams, newest first.
#[derive(Debug, Default)]
pub(crate) struct Histories {
    pub streams: BTreeMap<String, Vec<StreamEntry>>,
    /// Events within `last` were left out for the answer's byte bound.
    pub truncated: bool,
}

/// `stream@provider`.
pub(crate) fn stream_key(stream: &str, provider: &str) -> String {
    format!("{stream}@{provider}")
}

impl StreamStore {
    pub(crate) fn filter(&self, session_id: &str, key: &str) -> Option<Arc<Filter>> {
        lock(&self.sessions)
            .get(session_id)
            .and_then(|s| s.filters.get(key))
            .map(|(_, filter)| filter.clone())
    }

    /// Whether `provider` may store into `key` (an existing stream, or a new
    /// one within its stream count).
    pub(crate) fn has_room(
        &self,
        session_id: &str,
        key: &str,
        provider: &str,
        limits: StreamLimits,
    ) -> bool {
        let sessions = lock(&self.sessions);
        let Some(streams) = sessions.get(session_id) else {
            return limits.max_streams > 0;
        };
        streams.streams.contains_key(key)
            || streams
                .streams
                .values()
                .filter(|s| s.provider == provider)
                .count()
                < limits.max_streams
    }

    /// Stores an event (creating the stream), evicting the oldest beyond
    /// the limits. Returns the event's sequence number.
    pub(crate) fn append(
        &self,
        session_id: &str,
        key: &str,
        provider: &str,
        event: NewEvent,
        limits: StreamLimits,
    ) -> u64 {
        let mut sessions = lock(&self.sessions);
        let sessions = &mut *sessions;
        let streams = sessions.by_id.entry(session_id.to_owned()).or_default();
        streams.next_seq += 1;
        let seq = streams.next_seq;
        let stream = streams
            .streams
            .entry(key.to_owned())
            .or_insert_with(|| EventStream {
                provider: provider.to_owned(),
                events: VecDeque::new(),
                bytes: 0,
            });
        let bytes = bridge_util::json::encoded_len(&StreamEntry {
            ts: event.ts.clone(),
            event: String::new(),
            level: Some(event.level.as_str().to_owned()),
            metadata: None,
        }) + bridge_util::json::encoded_len(&event.event)
            + event
                .metadata
                .as_ref()
                .map_or(0, bridge_util::json::encoded_len);
        stream.events.push_back(StoredEvent {
            seq,
            ts: event.ts,
            event: event.event,
            level: event.level,
            metadata: event.metadata,
            bytes,
        });
        stream.bytes += bytes;
        sessions.bytes += bytes;
        // The newest event always stays, whatever its size.
        while stream.events.len() > 1
            && (stream.events.len() > limits.retention || stream.bytes > limits.max_bytes)
        {
            if let Some(evicted) = stream.events.pop_front() {
                stream.bytes -= evicted.bytes;
                sessions.bytes -= evicted.bytes;
            }
        }
        sessions.shed(limits.store_max_bytes);
        seq
    }

    /// Re-labels a stored event (a held inject that was paused instead).
    pub(crate) fn relevel(&self, session_id: &str, key: &str, seq: u64, level: Level) {
        let mut sessions = lock(&self.sessions);
        if let Some(event) = sessions
            .by_id
            .get_mut(session_id)
            .and_then(|s| s.streams.get_mut(key))
            .and_then(|s| s.events.iter_mut().find(|e| e.seq == seq))
        {
            event.level = level;
        }
    }

    /// Sets (or with `None` removes) the filter of `key`. Refused when the
    /// provider already has `max_streams` filters in the session.
    pub(crate) fn set_filter(
        &self,
        session_id: &str,
        key: &str,
        provider: &str,
        filter: Option<Filter>,
        max_filters: usize,
    ) -> Result<(), usize> {
        let mut sessions = lock(&self.sessions);
        let streams = sessions.by_id.entry(session_id.to_owned()).or_default();
        match filter {
            None => {
                streams.filters.remove(key);
            }
            Some(filter) => {
                let owned = streams
                    .filters
                    .values()
                    .filter(|(owner, _)| owner == provider)
                    .count();
                if !streams.filters.contains_key(key) && owned >= max_filters {
                    return Err(max_filters);
                }
                streams
                    .filters
                    .insert(key.to_owned(), (provider.to_owned(), Arc::new(filter)));
            }
        }
        Ok(())
    }

    /// The newest `last` events of each of `keys`, newest first, within
    /// `max_bytes` of events in all: taken a depth at a time across the
    /// streams, so one large stream cannot starve the others. A stream that
    /// does not exist answers empty.
    pub(crate) fn histories(
        &self,
        session_id: &str,
        keys: Vec<String>,
        last: usize,
        max_bytes: usize,
    ) -> Histories {
        let sessions = lock(&self.sessions);
        let mut answer = Histories::default();
        let session = sessions.get(session_id);
        let mut open: Vec<(String, Option<&EventStream>)> = keys
            .into_iter()
            .map(|key| {
                let stream = session.and_then(|s| s.streams.get(&key));
                answer.streams.insert(key.clone(), Vec::new());
                (key, stream)
            })
            .collect();
        let mut room = max_bytes;
        for depth in 0..last {
            open.retain(|(_, stream)| stream.is_some_and(|s| depth < s.events.len()));
            if open.is_empty() {
                break;
            }
            for (key, stream) in &mut open {
                let Some(events) = stream.map(|s| &s.events) else {
                    continue;
                };
                let event = &events[events.len() - 1 - depth];
                if event.bytes > room {
                    // Older events of this stream would break its order.
                    answer.truncated = true;
                    *stream = None;
                    continue;
                }
                room -= event.bytes;
                if let Some(entries) = answer.streams.get_mut(key.as_str()) {
                    entries.push(event.entry());
                }
            }
        }
        answer
    }

    /// The keys of `provider`'s streams in the session.
    pub(crate) fn streams_of(&self, session_id: &str, provider: &str) -> Vec<String> {
        let sessions = lock(&self.sessions);
        let mut keys: Vec<String> = sessions
            .get(session_id)
            .map(|s| {
                s.streams
                    .iter()
                    .filter(|(_, stream)| stream.provider == provider)
                    .map(|(key, _)| key.clone())
                    .collect()
            })
            .unwrap_or_default();
        keys.sort();
        keys
    }

    pub(crate) fn drop_session(&self, session_id: &str) {
        let mut sessions = lock(&self.sessions);
        if let Some(session) = sessions.by_id.remove(session_id) {
            sessions.bytes -= session.streams.values().map(|s| s.bytes).sum::<usize>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: StreamLimits = StreamLimits {
        retention: 3,
        max_bytes: 1000,
        max_streams: 2,
        store_max_bytes: 1 << 20,
    };

    fn history(store: &StreamStore, session_id: &str, key: &str, last: usize) -> Vec<StreamEntry> {
        store
            .histories(session_id, vec![key.to_owned()], last, usize::MAX)
            .streams
            .remove(key)
            .unwrap_or_default()
    }

    fn texts(entries: &[StreamEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.event.as_str()).collect()
    }

    fn event(text: &str) -> NewEvent {
        NewEvent {
            ts: "t".to_owned(),
            event: text.to_owned(),
            level: Level::Keep,
            metadata: None,
        }
    }

    #[test]
    fn streams_keep_the_newest_events_newest_first() {
        let store = StreamStore::default();
        for i in 0..5 {
            store.append("s", "a@p", "p", event(&format!("e{i}")), LIMITS);
        }
        let events: Vec<String> = history(&store, "s", "a@p", 10)
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(events, ["e4", "e3", "e2"]);
        assert_eq!(history(&store, "s", "a@p", 1)[0].event, "e4");
    }

    #[test]
    fn a_byte_budget_evicts_the_oldest_but_keeps_the_newest() {
        let store = StreamStore::default();
        store.append("s", "a@p", "p", event(&"x".repeat(600)), LIMITS);
        store.append("s", "a@p", "p", event(&"y".repeat(600)), LIMITS);
        let events = history(&store, "s", "a@p", 10);
        assert_eq!(events.len(), 1);
        assert!(events[0].event.starts_with('y'));
        store.append("s", "a@p", "p", event(&"z".repeat(5000)), LIMITS);
        assert_eq!(history(&store, "s", "a@p", 10).len(), 1);
    }

    #[test]
    fn stream_count_is_per_provider_and_session() {
        let store = StreamStore::default();
        store.append("s", "a@p", "p", event("1"), LIMITS);
        store.append("s", "b@p", "p", event("1"), LIMITS);
        assert!(store.has_room("s", "a@p", "p", LIMITS));
        assert!(!store.has_room("s", "c@p", "p", LIMITS));
        assert!(store.has_room("s", "c@q", "q", LIMITS));
        assert!(store.has_room("other", "c@p", "p", LIMITS));
        assert_eq!(store.streams_of("s", "p"), ["a@p", "b@p"]);
        store.drop_session("s");
        assert!(store.streams_of("s", "p").is_empty());
    }

    #[test]
    fn relevel_changes_one_stored_event() {
        let store = StreamStore::default();
        let first = NewEvent {
            level: Level::Inject,
            ..event("1")
        };
        let seq = store.append("s", "a@p", "p", first.clone(), LIMITS);
        store.append("s", "a@p", "p", first, LIMITS);
        store.relevel("s", "a@p", seq, Level::Keep);
        let levels: Vec<Option<String>> = history(&store, "s", "a@p", 10)
            .into_iter()
            .map(|e| e.level)
            .collect();
        assert_eq!(levels, [Some("inject".into()), Some("keep".into())]);
    }

    #[test]
    fn past_the_store_budget_the_biggest_holder_loses_its_oldest_first() {
        let store = StreamStore::default();
        let limits = StreamLimits {
            retention: 100,
            max_bytes: 1 << 20,
            max_streams: 5,
            store_max_bytes: 4000,
        };
        store.append(
            "s",
            "quiet@victim",
            "victim",
            event(&"v".repeat(500)),
            limits,
        );
        for i in 0..10 {
            let text = format!("{i}{}", "f".repeat(499));
            store.append("s", "flood@flooder", "flooder", event(&text), limits);
            store.append("other", "flood@flooder", "flooder", event(&text), limits);
        }
        // The victim's one event stays; each flooder (one per session) keeps
        // its newest within what is left.
        assert_eq!(history(&store, "s", "quiet@victim", 10).len(), 1);
        let flood = history(&store, "s", "flood@flooder", 100);
        assert!(flood.len() < 10, "{} events kept", flood.len());
        assert!(flood[0].event.starts_with('9'), "the newest stays");
        let kept: usize = ["s", "other"]
            .iter()
            .flat_map(|s| ["quiet@victim", "flood@flooder"].map(|key| history(&store, s, key, 100)))
            .flatten()
            .map(|e| e.event.len() + 40)
            .sum();
        assert!(kept <= 4000, "{kept} bytes kept");
        // Dropping a session gives its bytes back to the others.
        store.drop_session("other");
        store.append("s", "flood@flooder", "flooder", event("x"), limits);
        assert!(history(&store, "s", "flood@flooder", 100).len() > flood.len());
    }

    #[test]
    fn an_answer_stays_within_its_bytes_a_depth_at_a_time_and_says_so() {
        let store = StreamStore::default();
        let limits = StreamLimits {
            retention: 100,
            ..LIMITS
        };
        for i in 0..5 {
            store.append(
                "s",
                "a@p",
                "p",
                event(&format!("a{i}{}", "x".repeat(98))),
                limits,
            );
            store.append("s", "b@p", "p", event(&format!("b{i}")), limits);
        }
        let keys = || vec!["a@p".to_owned(), "b@p".to_owned(), "none@p".to_owned()];
        let whole = store.histories("s", keys(), 10, usize::MAX);
        assert!(!whole.truncated);
        assert_eq!(texts(&whole.streams["b@p"]), ["b4", "b3", "b2", "b1", "b0"]);
        assert!(whole.streams["none@p"].is_empty());
        // Room for about three long events: both streams get their newest,
        // the short stream goes on after the long one ran out of room.
        let bounded = store.histories("s", keys(), 10, 400);
        assert!(bounded.truncated);
        // (an entry is its event and ~40 bytes of JSON around it)
        let a = texts(&bounded.streams["a@p"]);
        assert_eq!(a.len(), 2, "{a:?}");
        assert!(a[0].starts_with("a4") && a[1].starts_with("a3"));
        assert_eq!(texts(&bounded.streams["b@p"]), ["b4", "b3", "b2"]);
        let json_bytes: usize = bounded
            .streams
            .values()
            .flatten()
            .map(bridge_util::json::encoded_len)
            .sum();
        assert!(json_bytes <= 400, "{json_bytes} bytes");
        // Asking for fewer than there are is not a truncation.
        assert!(!store.histories("s", keys(), 2, usize::MAX).truncated);
        // An event larger than the whole answer is left out, said so.
        let tiny = store.histories("s", vec!["a@p".to_owned()], 10, 50);
        assert!(tiny.truncated && tiny.streams["a@p"].is_empty());
    }
}
