//! The session event log: append-only JSONL, one file per session
//! (`<home>/sessions/<id>.jsonl`), one writer task per file, streamed replay
//! that skips a torn last line.
//!
//! Each line is one [`LoggedEvent`]: `{seq, id, parentId, timestamp, type,
//! data}`. Ephemeral events (streaming deltas, progress) go to live
//! subscribers only and are never written.
//!
//! # API
//!
//! - [`EventLog::create`]`(dir, id, meta)` makes `dir` (mode 0700) and a new
//!   file (mode 0600, `O_APPEND`) and writes `session.start` with `meta`.
//! - [`EventLog::resume`]`(dir, id)` replays the file, continues its `seq`,
//!   writes `session.resume` and hands back a [`Replayed`]: the conversation
//!   ([`ConversationItem`]s: prompts, assistant messages with their tool
//!   calls, tool results) a runner needs to carry on.
//! - [`EventLog::append`]`(kind, data, parent)` queues one durable event and
//!   returns its [`EventRef`] at once; [`EventLog::ephemeral`] only reaches
//!   live subscribers; [`EventLog::subscribe`] sees both, in order.
//! - [`EventLog::flush`] returns once everything queued is on disk
//!   (`fdatasync`); [`EventLog::close`] flushes and stops the writer.
//! - [`replay`]`(path)` streams a file line by line; [`list`]`(dir)` and
//!   [`remove`]`(dir, id)` back `copilot-bridge sessions`.
//!
//! # Durability
//!
//! The writer task takes every event queued since its last write and writes
//! them with one `write(2)`, so a burst costs one system call, and nothing
//! waits in a user-space buffer once the queue is empty. It calls
//! `fdatasync` on [`EventLog::flush`] and [`EventLog::close`], not per
//! event: a crash of the process loses nothing already written, a crash of
//! the machine may lose the events since the last flush. Lines are only ever
//! appended; the one exception is [`EventLog::resume`] cutting the torn tail
//! a crash left, so the next line starts on a line of its own.
//!
//! A write error stops the writer: later events are dropped (the file keeps
//! a readable prefix) and the next `flush`/`close` returns the error.
//!
//! # Reading damaged files
//!
//! A line longer than [`MAX_LINE_BYTES`] or that is not a JSON event is a
//! [`LogError::Corrupt`] naming the file and line; [`replay`] reports it and
//! goes on with the next line. A torn last line (a crash mid-write) is
//! skipped with a warning. No file content makes replay panic, hang (a FIFO
//! at the session path is refused, not opened for a blocking read) or
//! allocate more than one line's bound.
//!
//! # Secrets
//!
//! Event data is run through [`bridge_policy::redact_value`] before it
//! reaches the disk. Live subscribers see the event as appended: anything
//! that prints them must redact.

mod borrowed;
mod files;
mod lines;
mod list;
mod replay;
mod resume;
pub mod steps;
pub mod types;
mod writer;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use list::{SessionStatus, SessionSummary, list, remove};
pub use replay::{Replay, replay};
pub use resume::{ConversationItem, INTERRUPTED_TOOL_RESULT, Replayed, SkippedLine, ToolRequest};
pub use writer::{EventLog, EventRef};

/// Longest line a session file may hold. A longer event is written with its
/// `data` cut down (see [`EventLog::append`]); a longer line read back is a
/// [`LogError::Corrupt`], so a damaged file never costs more memory than
/// this.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Longest session id.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedEvent {
    /// 1, 2, 3, … within the file, without gaps.
    pub seq: u64,
    /// Globally unique.
    pub id: String,
    /// The event this one follows from (a tool result's call, a turn's
    /// prompt), for causality.
    pub parent_id: Option<String>,
    /// RFC 3339 UTC with milliseconds.
    pub timestamp: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: Value,
}

/// Why the log could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line} is not a session event: {reason}")]
    Corrupt {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error("session {0} has no log")]
    NotFound(String),
    #[error("the log writer of {0} has stopped")]
    Closed(String),
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: &'static str },
    #[error("session {0} already has a log")]
    Exists(String),
    #[error("session {0} is in use by another process")]
    Busy(String),
    #[error("{path} is not a regular file")]
    NotAFile { path: PathBuf },
}

impl LogError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The file of session `id` under `dir`. Call [`validate_session_id`]
/// first: an id is a file name.
pub fn session_file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// Accepts ids made of ASCII letters, digits, `.`, `_` and `-`, at most
/// [`MAX_SESSION_ID_LEN`] (128) long, not starting with `.` or `-`: such an id is
/// one plain file name (no `/`, no `..`, no hidden file, never read as a
/// command-line flag).
pub fn validate_session_id(id: &str) -> Result<(), LogError> {
    match plain_name_problem(id, MAX_SESSION_ID_LEN) {
        None => Ok(()),
        Some(reason) => Err(LogError::InvalidId {
            id: bridge_policy::redact::preview(id, MAX_SESSION_ID_LEN + 8),
            reason,
        }),
    }
}

/// Why `name` is not one plain file name of at most `max_len` bytes
/// (ASCII letters, digits, `.`, `_`, `-`, not starting with `.` or `-`):
/// session ids and orchestrated task ids name files and directories.
pub(crate) fn plain_name_problem(name: &str, max_len: usize) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > max_len {
        return Some("it is too long");
    }
    if name.starts_with(['.', '-']) {
        return Some("it starts with '.' or '-'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Some("only letters, digits, '.', '_' and '-' are allowed");
    }
    None
}

/// A fresh session id such as `20261121-153012-3fa91c`: sorts by creation
/// time, and is short enough to type.
pub fn new_session_id() -> String {
    let now = bridge_util::time::now_timestamp();
    // "2026-11-21T15:30:12.123Z" → "20261121-153012"
    let digits: String = now.chars().take(19).filter(char::is_ascii_digit).collect();
    let (date, time) = digits.split_at(digits.len().min(8));
    format!("{date}-{time}-{}", bridge_util::ids::random_hex(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_plain_file_names() {
        for good in ["a", "s-3fa91c07-42", "20261121-153012-3fa91c", "A.b_c"] {
            assert!(validate_session_id(good).is_ok(), "{good}");
        }
        for bad in [
            "", ".", "..", "../x", "a/b", ".hidden", "-rf", "a b", "é", "a\0b", "a\\b",
        ] {
            assert!(validate_session_id(bad).is_err(), "{bad:?}");
        }
        assert!(validate_session_id(&"x".repeat(129)).is_err());
        let id = new_session_id();
        assert!(validate_session_id(&id).is_ok(), "{id}");
        assert_eq!(id.len(), "20261121-153012-3fa91c".len(), "{id}");
    }
}
