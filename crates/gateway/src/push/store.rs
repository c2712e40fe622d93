//! EventStreams and their filters, per session. A stream is named
//! `stream@provider` and lives as long as its session: providers come and
//! go (and reconnect), their history stays queryable.

use std::collections::{HashMap, VecDeque};
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
    bytes: usize,
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
    sessions: Mutex<HashMap<String, SessionStreams>>,
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
        let streams = sessions.entry(session_id.to_owned()).or_default();
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
        let bytes = event.event.len()
            + event.ts.len()
            + event
                .metadata
                .as_ref()
                .map_or(0, |m| serde_json::to_string(m).map_or(0, |s| s.len()));
        stream.events.push_back(StoredEvent {
            seq,
            ts: event.ts,
            event: event.event,
            level: event.level,
            metadata: event.metadata,
            bytes,
        });
        stream.bytes += bytes;
        // The newest event always stays, whatever its size.
        while stream.events.len() > 1
            && (stream.events.len() > limits.retention || stream.bytes > limits.max_bytes)
        {
            if let Some(evicted) = stream.events.pop_front() {
                stream.bytes -= evicted.bytes;
            }
        }
        seq
    }

    /// Re-labels a stored event (a held inject that was paused instead).
    pub(crate) fn relevel(&self, session_id: &str, key: &str, seq: u64, level: Level) {
        let mut sessions = lock(&self.sessions);
        if let Some(event) = sessions
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
        let streams = sessions.entry(session_id.to_owned()).or_default();
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

    /// The newest `last` events of `key`, newest first (empty if the stream
    /// does not exist).
    pub(crate) fn history(&self, session_id: &str, key: &str, last: usize) -> Vec<StreamEntry> {
        let sessions = lock(&self.sessions);
        let Some(stream) = sessions.get(session_id).and_then(|s| s.streams.get(key)) else {
            return Vec::new();
        };
        stream
            .events
            .iter()
            .rev()
            .take(last)
            .map(|e| StreamEntry {
                ts: e.ts.clone(),
                event: e.event.clone(),
                level: Some(e.level.as_str().to_owned()),
                metadata: e.metadata.clone(),
            })
            .collect()
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
        lock(&self.sessions).remove(session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: StreamLimits = StreamLimits {
        retention: 3,
        max_bytes: 1000,
        max_streams: 2,
    };

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
        let events: Vec<String> = store
            .history("s", "a@p", 10)
            .into_iter()
            .map(|e| e.event)
            .collect();
        assert_eq!(events, ["e4", "e3", "e2"]);
        assert_eq!(store.history("s", "a@p", 1)[0].event, "e4");
    }

    #[test]
    fn a_byte_budget_evicts_the_oldest_but_keeps_the_newest() {
        let store = StreamStore::default();
        store.append("s", "a@p", "p", event(&"x".repeat(600)), LIMITS);
        store.append("s", "a@p", "p", event(&"y".repeat(600)), LIMITS);
        let events = store.history("s", "a@p", 10);
        assert_eq!(events.len(), 1);
        assert!(events[0].event.starts_with('y'));
        store.append("s", "a@p", "p", event(&"z".repeat(5000)), LIMITS);
        assert_eq!(store.history("s", "a@p", 10).len(), 1);
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
        let levels: Vec<Option<String>> = store
            .history("s", "a@p", 10)
            .into_iter()
            .map(|e| e.level)
            .collect();
        assert_eq!(levels, [Some("inject".into()), Some("keep".into())]);
    }
}
