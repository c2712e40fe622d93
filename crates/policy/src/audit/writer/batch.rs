//! The writer thread's side of an audit log: the lines of a batch, the
//! day's file they go to (kept open, its path checked once per batch), and
//! each entry rendered as it goes to disk (see crates/policy/src/audit/writer.rs
//! for the queue that feeds it).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

use super::super::file::{create_dir, file_identity, identity_of, open_append};
use super::super::{AuditEntry, entry_instant, file_for};
use super::{Failure, Item, Shared};
use crate::PolicyError;
use crate::redact::{redact, redact_value};

/// The writer's side: lines not yet written and the file they go to.
pub(super) struct Lines {
    dir: PathBuf,
    open: Option<OpenFile>,
    /// Batches taken so far: the path of the open file is checked once per
    /// batch, not once per entry.
    batch: u64,
    /// Items finished, i.e. the sequence number of the last one.
    done: u64,
    /// Lines of `pending_date` not written yet, and the sequence number of
    /// the last of them.
    pending: Vec<u8>,
    pending_date: Option<NaiveDate>,
    pending_count: usize,
    pending_through: u64,
}

/// The day's file, kept open between batches.
struct OpenFile {
    date: NaiveDate,
    path: PathBuf,
    file: File,
    /// Device and inode it was opened at: if the path now names another
    /// file (rotated, deleted by hand), the handle is stale and reopened,
    /// so no entry goes to an unlinked file.
    identity: (u64, u64),
    /// The batch in which the path last named this file.
    checked_in: u64,
}

impl Lines {
    pub(super) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            open: None,
            batch: 0,
            done: 0,
            pending: Vec::new(),
            pending_date: None,
            pending_count: 0,
            pending_through: 0,
        }
    }

    /// Writes (and drains) `items`, in order; returns the sequence number
    /// of the last entry lost to a failed write, with the failure.
    pub(super) fn write_batch(
        &mut self,
        shared: &Shared,
        items: &mut Vec<Item>,
    ) -> Option<(u64, Failure)> {
        self.batch += 1;
        let mut lost = None;
        for item in items.drain(..) {
            self.done += 1;
            match item {
                Item::Entry {
                    entry,
                    called_at,
                    redacted,
                } => {
                    let (date, record) = render(entry, called_at, redacted);
                    if self.pending_date.is_some_and(|pending| pending != date) {
                        self.write_pending(shared, &mut lost);
                    }
                    self.pending_date = Some(date);
                    let start = self.pending.len();
                    match serde_json::to_writer(&mut self.pending, &record) {
                        Ok(()) => {
                            self.pending.push(b'\n');
                            self.pending_count += 1;
                            self.pending_through = self.done;
                        }
                        Err(err) => {
                            self.pending.truncate(start);
                            let failure = Failure {
                                path: file_for(&self.dir, date).display().to_string(),
                                reason: format!("cannot serialize the entry: {err}"),
                            };
                            tracing::error!(error = %failure.reason, "audit entry lost");
                            lost = Some((self.done, failure));
                        }
                    }
                }
                Item::Probe { date, reply } => {
                    self.write_pending(shared, &mut lost);
                    let result = self.open_for(date).map(|_| ());
                    shared.note(date, result.is_ok());
                    // The caller may have given up waiting; nothing to do.
                    let _ = reply.send(result);
                }
            }
        }
        self.write_pending(shared, &mut lost);
        lost
    }

    fn write_pending(&mut self, shared: &Shared, lost: &mut Option<(u64, Failure)>) {
        let Some(date) = self.pending_date.take() else {
            return;
        };
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let result = self.write_lines(date, &pending);
        shared.note(date, result.is_ok());
        if let Err(err) = result {
            tracing::error!(
                entries = self.pending_count,
                error = %err,
                "audit log write failed; these entries are lost"
            );
            let failure = Failure {
                path: file_for(&self.dir, date).display().to_string(),
                reason: err.to_string(),
            };
            *lost = Some((self.pending_through, failure));
        }
        self.pending = pending;
        self.pending.clear();
        self.pending_count = 0;
    }

    /// Appends `bytes` (whole lines) to the file of `date` with one write.
    /// A failed write is retried once on a fresh handle.
    fn write_lines(&mut self, date: NaiveDate, bytes: &[u8]) -> Result<(), PolicyError> {
        if let Ok(file) = self.open_for(date)
            && file.write_all(bytes).is_ok()
        {
            return Ok(());
        }
        self.open = None;
        let file = self.open_for(date)?;
        // One buffer, one write_all: see the module comment of audit.rs.
        file.write_all(bytes).map_err(|source| PolicyError::Io {
            path: file_for(&self.dir, date).display().to_string(),
            source,
        })
    }

    /// The open file of `date`, (re)opened when the day changed or its path
    /// no longer names it (checked once per batch).
    fn open_for(&mut self, date: NaiveDate) -> Result<&mut File, PolicyError> {
        let batch = self.batch;
        let current = match self.open.as_mut() {
            Some(open) if open.date == date && open.checked_in == batch => true,
            Some(open) if open.date == date => {
                let same = file_identity(&open.path).ok() == Some(open.identity);
                open.checked_in = batch;
                same
            }
            _ => false,
        };
        if !current {
            self.open = None;
            self.open = Some(self.open_new(date)?);
        }
        match self.open.as_mut() {
            Some(open) => Ok(&mut open.file),
            None => Err(PolicyError::Io {
                path: file_for(&self.dir, date).display().to_string(),
                source: std::io::Error::other("the audit file is not open"),
            }),
        }
    }

    fn open_new(&self, date: NaiveDate) -> Result<OpenFile, PolicyError> {
        let path = file_for(&self.dir, date);
        create_dir(&self.dir)?;
        let io_error = |source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = open_append(&path).map_err(io_error)?;
        let identity = identity_of(&file.metadata().map_err(io_error)?);
        Ok(OpenFile {
            date,
            path,
            file,
            identity,
            checked_in: self.batch,
        })
    }
}

/// The entry as it goes to disk, and the UTC day it is filed under: every
/// field that can carry a caller's text redacted (input and output unless
/// they are `redacted` records already), stamped with `called_at` when its
/// timestamp does not parse.
fn render(
    mut record: AuditEntry,
    called_at: DateTime<Utc>,
    redacted: bool,
) -> (NaiveDate, AuditEntry) {
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
    if !redacted {
        redact_value(&mut record.input);
        redact_value(&mut record.output);
        if let Some(approval) = &mut record.approval {
            redact_value(approval.as_mut());
        }
    }
    let instant = match entry_instant(&record.timestamp) {
        Some(instant) => instant,
        None => {
            record.timestamp = called_at.to_rfc3339_opts(SecondsFormat::Millis, true);
            called_at
        }
    };
    (instant.date_naive(), record)
}
