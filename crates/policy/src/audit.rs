//! Audit log: one JSON line per tool call in `<dir>/audit-YYYY-MM-DD.jsonl`
//! (UTC date), secrets redacted before they reach the disk.
//!
//! Several threads and several bridge processes may append to the same file.
//! Each line is written by one `write` on a file opened with `O_APPEND`, which
//! the kernel applies atomically at the end of a regular file, so lines never
//! interleave and no lock file is needed.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::PolicyError;
use crate::redact::{redact, redact_and_cut, redact_value};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub timestamp: String,
    pub session_id: String,
    pub hook: String,
    pub tool: String,
    pub input: Value,
    pub output: Value,
    pub decision: String,
    pub elapsed_ms: u64,
}

/// The current time in the format audit entries use (RFC 3339, UTC, ms).
pub fn now_timestamp() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Longest string kept whole in an audit entry.
pub const AUDIT_MAX_STRING_BYTES: usize = 4096;
/// Most array items kept in an audit entry.
pub const AUDIT_MAX_ARRAY_ITEMS: usize = 100;

/// A copy of `value` small enough for the audit log: long strings are cut
/// (on a character boundary) and long arrays shortened, each with a note of
/// what was left out. The log records what happened, not every byte a tool
/// read; keeping entries small keeps the log cheap in the hot path.
///
/// A string that is cut is redacted first ([`redact_and_cut`]): a secret cut
/// in half no longer matches its rule. Strings kept whole are not redacted
/// here; [`AuditLog::append`] redacts the whole entry.
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

/// The day's file, kept open between calls (the daemon audits every tool
/// call; opening the file each time cost more than the write).
#[derive(Debug)]
struct OpenFile {
    path: PathBuf,
    file: File,
    /// Device and inode it was opened at: if the path now names another
    /// file (rotated, deleted by hand), the handle is stale and reopened,
    /// so no entry goes to an unlinked file.
    identity: (u64, u64),
}

#[derive(Debug, Clone)]
pub struct AuditLog {
    dir: PathBuf,
    open: std::sync::Arc<std::sync::Mutex<Option<OpenFile>>>,
}

impl AuditLog {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            open: std::sync::Arc::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the entries of the UTC day `date`.
    pub fn file_for(&self, date: NaiveDate) -> PathBuf {
        self.dir
            .join(format!("audit-{}.jsonl", date.format("%Y-%m-%d")))
    }

    /// Redacts and appends `entry` as one line. An entry without a parsable
    /// timestamp is stamped now (and filed under today).
    ///
    /// Every field that can carry a caller's text is redacted here, so that
    /// no caller can forget one: the tool name, session id, hook and
    /// decision as well as the input and output (which hold the decision's
    /// reasons and errors).
    pub fn append(&self, entry: &AuditEntry) -> Result<(), PolicyError> {
        let mut record = entry.clone();
        for text in [
            &mut record.session_id,
            &mut record.hook,
            &mut record.tool,
            &mut record.decision,
        ] {
            if let std::borrow::Cow::Owned(redacted) = redact(text) {
                *text = redacted;
            }
        }
        redact_value(&mut record.input);
        redact_value(&mut record.output);
        let instant = match DateTime::parse_from_rfc3339(&record.timestamp) {
            Ok(parsed) => parsed.with_timezone(&Utc),
            Err(_) => {
                let now = Utc::now();
                record.timestamp = now.to_rfc3339_opts(SecondsFormat::Millis, true);
                now
            }
        };
        let path = self.file_for(instant.date_naive());

        let mut line = serde_json::to_vec(&record).map_err(|err| PolicyError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(err),
        })?;
        line.push(b'\n');

        self.with_file(&path, |file| file.write_all(&line))
    }

    /// Checks that today's file can be appended to, creating it if needed.
    /// Doors call this before a tool runs, so a call that could not be
    /// audited does not run at all (fail closed).
    pub fn ensure_writable(&self) -> Result<(), PolicyError> {
        let path = self.file_for(Utc::now().date_naive());
        self.with_file(&path, |_| Ok(()))
    }

    /// Runs `write` on the open file for `path`, opening (or reopening, when
    /// the path no longer names the open file) as needed. A failed write is
    /// retried once on a fresh handle.
    fn with_file(
        &self,
        path: &Path,
        write: impl Fn(&mut File) -> std::io::Result<()>,
    ) -> Result<(), PolicyError> {
        let io_error = |source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut open = crate::sync::lock(&self.open);
        let current = open
            .as_mut()
            .filter(|o| o.path == path && file_identity(path).ok() == Some(o.identity));
        if let Some(current) = current
            && write(&mut current.file).is_ok()
        {
            return Ok(());
        }
        *open = None;
        self.create_dir()?;
        let mut file = open_append(path).map_err(io_error)?;
        let identity = identity_of(&file.metadata().map_err(io_error)?);
        // One buffer, one write_all: see the module comment.
        write(&mut file).map_err(io_error)?;
        *open = Some(OpenFile {
            path: path.to_path_buf(),
            file,
            identity,
        });
        Ok(())
    }

    fn create_dir(&self) -> Result<(), PolicyError> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&self.dir).map_err(|source| PolicyError::Io {
            path: self.dir.display().to_string(),
            source,
        })
    }
}

fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    fs::metadata(path).map(|m| identity_of(&m))
}

#[cfg(unix)]
fn identity_of(metadata: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

#[cfg(not(unix))]
fn identity_of(metadata: &fs::Metadata) -> (u64, u64) {
    (metadata.len(), 0)
}

/// Opens for appending, creating the file private to its owner. A file that
/// exists with wider permissions (created by hand, copied) is narrowed.
fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        let permissions = file.metadata()?.permissions();
        if permissions.mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        options.open(path)
    }
}
