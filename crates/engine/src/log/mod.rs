//! The session event log: append-only JSONL, one file per session
//! (`<home>/sessions/<id>.jsonl`), one writer task per file, streamed replay
//! that skips a torn last line.
//!
//! Each line is one [`LoggedEvent`]: `{seq, id, parentId, timestamp, type,
//! data}`. Ephemeral events (streaming deltas, progress) go to live
//! subscribers only and are never written.

pub mod types;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
}

/// The file of session `id` under `dir`.
pub fn session_file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}
