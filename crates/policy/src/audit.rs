//! Audit log: one JSON line per tool call in `<dir>/audit-YYYY-MM-DD.jsonl`
//! (UTC date), secrets redacted before they reach the disk.
//!
//! Entries are written by one writer thread per log (`audit/writer.rs`):
//! [`AuditLog::append`] hands the entry over through a bounded queue and
//! returns; the writer redacts, stamps and serializes, and writes everything
//! queued since its last write with one `write`. The caller never waits for
//! the disk, only for room in the queue when the writer is
//! [`AUDIT_QUEUE_CAPACITY`] entries behind, so no entry is ever dropped.
//!
//! Several threads and several bridge processes may append to the same file.
//! Each batch of lines is written by one `write` on a file opened with
//! `O_APPEND`, which the kernel applies atomically at the end of a regular
//! file, so lines never interleave and no lock file is needed.
//!
//! What a crash can lose: a process killed outright (SIGKILL, power loss of
//! the page cache aside) loses the entries it had appended but the writer
//! had not yet written, at most [`AUDIT_QUEUE_CAPACITY`] of them, since an
//! entry counts against the queue until its `write` returned. A kill that
//! lands inside that `write` can also leave its last line cut short (Linux
//! stops a write of several pages at a page boundary for a fatal signal).
//! A clean exit loses nothing: [`AuditLog::flush`] (and dropping the last
//! handle of a log) returns once everything appended before it is written,
//! and [`flush_all`] does that for every log of the process before an exit
//! that skips destructors.

mod file;
mod record;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::PolicyError;
use crate::redact::redact_and_cut;
pub use record::{Redacted, redact_result};
use writer::{Item, Writer};

/// One line of the audit log. `Tree` is what `input` and `output` are:
/// any JSON ([`AuditLog::append`] redacts it), or [`Redacted`] records
/// ([`AuditLog::append_redacted`] takes them as they are).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry<Tree = Value> {
    /// RFC 3339. Empty (or anything that does not parse) means "the time of
    /// the append call": the log stamps it then, and formats it off the
    /// caller's thread.
    pub timestamp: String,
    pub session_id: String,
    pub hook: String,
    pub tool: String,
    pub input: Tree,
    pub output: Tree,
    pub decision: String,
    pub elapsed_ms: u64,
    /// When a person was asked: the answer, its scope, the surface that
    /// answered and the wait (`bridge_policy::Approval::record`).
    /// Boxed: rare, and an entry stays small in the writer's queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<Tree>>,
}

impl AuditEntry<Redacted> {
    /// The same entry with its records as plain JSON.
    fn into_values(self) -> AuditEntry {
        AuditEntry {
            timestamp: self.timestamp,
            session_id: self.session_id,
            hook: self.hook,
            tool: self.tool,
            input: self.input.into_value(),
            output: self.output.into_value(),
            decision: self.decision,
            elapsed_ms: self.elapsed_ms,
            approval: self.approval.map(|record| Box::new(record.into_value())),
        }
    }
}

/// Longest string kept whole in an audit entry.
pub const AUDIT_MAX_STRING_BYTES: usize = 4096;
/// Most array items kept in an audit entry.
pub const AUDIT_MAX_ARRAY_ITEMS: usize = 100;

/// Most entries of one log appended but not yet written. Appenders wait
/// while the writer is this far behind; it is also the most entries a
/// process killed outright can lose (see the module documentation).
pub const AUDIT_QUEUE_CAPACITY: usize = 256;

/// A copy of `value` small enough for the audit log: long strings are cut
/// (on a character boundary) and long arrays shortened, each with a note of
/// what was left out. The log records what happened, not every byte a tool
/// read; keeping entries small keeps the log cheap in the hot path.
///
/// A string that is cut is redacted first ([`redact_and_cut`]): a secret cut
/// in half no longer matches its rule. Strings kept whole are not redacted
/// here: [`Redacted::record_of`] redacts before summarizing, and
/// [`AuditLog::append`] redacts the whole entry.
pub fn summarize_for_audit(value: &Value) -> Value {
    match value {
        Value::String(text) if text.len() > AUDIT_MAX_STRING_BYTES => {
            Value::String(redact_and_cut(text, AUDIT_MAX_STRING_BYTES).noted())
        }
        Value::Array(items) => {
            let mut kept: Vec<Value> = items
                .iter()
                .take(AUDIT_MAX_ARRAY_ITEMS)
                .map(summarize_for_audit)
                .collect();
            if items.len() > AUDIT_MAX_ARRAY_ITEMS {
                kept.push(Value::String(format!(
                    "…[{} more items]",
                    items.len() - AUDIT_MAX_ARRAY_ITEMS
                )));
            }
            Value::Array(kept)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| (key.clone(), summarize_for_audit(inner)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The audit log of one directory. Clones share one writer thread, started
/// on first use and stopped (after writing everything queued) when the last
/// clone is dropped.
#[derive(Debug, Clone)]
pub struct AuditLog {
    writer: Arc<Writer>,
}

impl AuditLog {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            writer: Arc::new(Writer::new(dir.into())),
        }
    }

    pub fn dir(&self) -> &Path {
        self.writer.dir()
    }

    /// The file holding the entries of the UTC day `date`.
    pub fn file_for(&self, date: NaiveDate) -> PathBuf {
        file_for(self.dir(), date)
    }

    /// Redacts and appends `entry` as one line. An entry without a parsable
    /// timestamp is stamped with the time of this call (and filed under
    /// that day).
    ///
    /// Every field that can carry a caller's text is redacted, so that no
    /// caller can forget one: the tool name, session id, hook and decision
    /// as well as the input and output (which hold the decision's reasons
    /// and errors).
    ///
    /// Returns once the entry is queued, before it is on disk (see
    /// [`AuditLog::flush`]). An error means the entry was not taken: the
    /// log is not writable (the first append of a log, and every append
    /// after a failed write, opens the file before queueing, so that the
    /// caller hears of it).
    pub fn append(&self, entry: &AuditEntry) -> Result<(), PolicyError> {
        self.append_owned(entry.clone())
    }

    /// [`AuditLog::append`] of an entry the caller no longer needs (no copy).
    pub fn append_owned(&self, entry: AuditEntry) -> Result<(), PolicyError> {
        self.submit(entry, false)
    }

    /// [`AuditLog::append_owned`] of an entry whose input and output are
    /// already redacted records: the log redacts only its short fields
    /// (tool, session id, hook, decision), not the records a second time.
    pub fn append_redacted(&self, entry: AuditEntry<Redacted>) -> Result<(), PolicyError> {
        self.submit(entry.into_values(), true)
    }

    fn submit(&self, entry: AuditEntry, redacted: bool) -> Result<(), PolicyError> {
        let called_at = Utc::now();
        if !self.writer.is_healthy() {
            let date = entry_instant(&entry.timestamp).unwrap_or(called_at);
            self.writer.probe(date.date_naive())?;
        }
        self.writer.submit(Item::Entry {
            entry,
            called_at,
            redacted,
        })
    }

    /// Checks that today's file can be appended to, creating it if needed.
    /// Doors call this before a tool runs, so a call that could not be
    /// audited does not run at all (fail closed).
    ///
    /// Cheap when the log is healthy: the writer keeps a flag of whether its
    /// last open or write succeeded and for which day, and this reads it.
    /// Otherwise (first use, a new day, a failed write) the writer opens
    /// today's file now and this waits for the answer. A file deleted or
    /// replaced while the log is healthy is recreated by the next write.
    pub fn ensure_writable(&self) -> Result<(), PolicyError> {
        let today = Utc::now().date_naive();
        if self.writer.is_healthy_on(today.num_days_from_ce()) {
            return Ok(());
        }
        self.writer.probe(today)
    }

    /// Returns once every entry appended before this call is written (not
    /// fsynced: the log never was). An error names the last write that
    /// failed since the previous flush; those entries are lost.
    pub fn flush(&self) -> Result<(), PolicyError> {
        self.writer.flush()
    }
}

/// Flushes every audit log of this process ([`AuditLog::flush`]). For exits
/// that skip destructors (`std::process::exit`) and shutdown paths that may
/// still hold a log; returns the first error after flushing them all.
pub fn flush_all() -> Result<(), PolicyError> {
    writer::flush_all()
}

fn file_for(dir: &Path, date: NaiveDate) -> PathBuf {
    dir.join(file_name(date))
}

fn file_name(date: NaiveDate) -> String {
    format!("audit-{}.jsonl", date.format("%Y-%m-%d"))
}

/// One day's file of an audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    /// The UTC day whose entries it holds.
    pub day: NaiveDate,
    pub path: PathBuf,
}

impl LogFile {
    /// Whether entries stamped in `[since, until)` (Unix milliseconds,
    /// either end open) can be in this file: it holds one UTC day's.
    pub fn may_hold(&self, since: Option<i64>, until: Option<i64>) -> bool {
        let begins = self.day.and_time(chrono::NaiveTime::MIN).and_utc();
        let begins = begins.timestamp_millis();
        let ends = begins + 24 * 60 * 60 * 1000;
        since.is_none_or(|since| since < ends) && until.is_none_or(|until| until > begins)
    }
}

/// The files of the audit log in `dir` (`audit-YYYY-MM-DD.jsonl`, what
/// [`AuditLog`] writes), oldest first; none when `dir` does not exist.
/// What `copilot-bridge audit` and the daemon's `activity.audit` read.
pub fn log_files(dir: &Path) -> std::io::Result<Vec<LogFile>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut files = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let Some(day) = name.to_str().and_then(day_of) else {
            continue;
        };
        files.push(LogFile {
            day,
            path: dir.join(name),
        });
    }
    files.sort_by_key(|file| file.day);
    Ok(files)
}

/// The day of a file name [`AuditLog`] writes, spelt as it spells it.
fn day_of(name: &str) -> Option<NaiveDate> {
    let date = name.strip_prefix("audit-")?.strip_suffix(".jsonl")?;
    NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .ok()
        .filter(|day| file_name(*day) == name)
}

/// The instant an entry's timestamp names, if it parses.
fn entry_instant(timestamp: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(timestamp)
        .ok()
        .map(|parsed| parsed.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_log_files_are_the_days_files_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "audit-2026-01-02.jsonl",
            "audit-2025-12-31.jsonl",
            "audit-2026-1-3.jsonl",
            "audit-2026-01-04.jsonl.1",
            "audit-notes.jsonl",
            "other.jsonl",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let files = log_files(dir.path()).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|file| file.path.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["audit-2025-12-31.jsonl", "audit-2026-01-02.jsonl"]);
        assert_eq!(files[1].day, NaiveDate::from_ymd_opt(2026, 1, 2).unwrap());
        assert!(log_files(&dir.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn a_days_file_may_hold_the_entries_of_its_utc_day_only() {
        let file = LogFile {
            day: NaiveDate::from_ymd_opt(2026, 1, 2).unwrap(),
            path: PathBuf::from("audit-2026-01-02.jsonl"),
        };
        let at = |text| bridge_util::time::unix_millis(text);
        assert!(file.may_hold(None, None));
        assert!(file.may_hold(at("2026-01-02T23:59:59Z"), None));
        assert!(!file.may_hold(at("2026-01-03T00:00:00Z"), None));
        assert!(file.may_hold(None, at("2026-01-02T00:00:00.001Z")));
        assert!(!file.may_hold(None, at("2026-01-02T00:00:00Z")));
        // An offset is the same instant in UTC.
        assert!(!file.may_hold(at("2026-01-03T00:30:00+00:30"), None));
    }
}
