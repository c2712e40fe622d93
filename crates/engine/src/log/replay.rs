//! Streaming replay: one line at a time, each line bounded by
//! [`MAX_LINE_BYTES`], so a session of any size replays in constant memory
//! and a damaged file costs at most one line's bound.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::files::open_session_file;
use super::lines::{Line, Lines};
use super::{LogError, LoggedEvent, MAX_LINE_BYTES};

/// Opens `path` for a streamed replay (blocking I/O: from async code, run it
/// in `spawn_blocking`). Fails if the file is missing or not a regular file.
///
/// The iterator yields every event in file order. A line that is not an
/// event (or is longer than [`MAX_LINE_BYTES`]) yields a
/// [`LogError::Corrupt`] naming it, and the replay goes on with the next
/// line; a read error ends it. A last line that is torn (no newline and
/// not a valid event, or not a valid event at the end of the file) is
/// skipped with a warning: see [`Replay::torn_tail`].
pub fn replay(path: &Path) -> Result<Replay, LogError> {
    let id = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = open_session_file(path, &id, false)?;
    Ok(Replay::from_file(file, path))
}

/// The iterator of [`replay`].
pub struct Replay {
    path: PathBuf,
    lines: Lines,
    line_number: u64,
    /// End of the last line that held an event, or of a corrupt line in
    /// the middle (kept: later lines are fine).
    good_end: u64,
    unterminated_last_event: bool,
    torn_tail: Option<u64>,
    done: bool,
}

impl Replay {
    pub(crate) fn from_file(file: File, path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            lines: Lines::new(file),
            line_number: 0,
            good_end: 0,
            unterminated_last_event: false,
            torn_tail: None,
            done: false,
        }
    }

    /// The line number of the torn last line that was skipped, once the
    /// replay has reached it.
    pub fn torn_tail(&self) -> Option<u64> {
        self.torn_tail
    }

    /// Bytes of the file that hold whole lines: where the next line must
    /// start (a torn tail is past it).
    pub(crate) fn valid_len(&self) -> u64 {
        self.good_end
    }

    /// The last event was complete but its newline never made it to disk.
    pub(crate) fn needs_newline(&self) -> bool {
        self.unterminated_last_event
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn corrupt(&self, reason: impl Into<String>) -> LogError {
        LogError::Corrupt {
            path: self.path.clone(),
            line: self.line_number,
            reason: reason.into(),
        }
    }

    fn skip_torn_tail(&mut self, reason: &str) {
        tracing::warn!(
            path = %self.path.display(),
            line = self.line_number,
            reason,
            "skipping the torn last line of a session log (the writer stopped mid-line)"
        );
        self.torn_tail = Some(self.line_number);
        self.done = true;
    }

    /// Whether the line just read is the file's last; a read error ends
    /// the replay.
    fn is_last(&mut self, terminated: bool) -> Result<bool, LogError> {
        if !terminated {
            return Ok(true);
        }
        self.lines.at_end().map_err(|err| {
            self.done = true;
            LogError::io(&self.path, err)
        })
    }

    /// The next line that holds an event, turned into `T` by `parse`
    /// (which sees the line without its newline): the one loop behind
    /// [`Replay`]'s items and [`EventLog::resume`](super::EventLog::resume)'s
    /// fold, so both judge damage alike. A line `parse` refuses is corrupt,
    /// or the torn tail if it is the last.
    pub(crate) fn next_with<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> Result<T, serde_json::Error>,
    ) -> Option<Result<T, LogError>> {
        if self.done {
            return None;
        }
        loop {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(err) => {
                    self.done = true;
                    return Some(Err(LogError::io(&self.path, err)));
                }
            };
            self.line_number += 1;
            let (range, terminated) = match line {
                Line::TooLong { terminated } => {
                    return match self.is_last(terminated) {
                        Ok(true) => {
                            self.skip_torn_tail("longer than the line limit");
                            None
                        }
                        Ok(false) => {
                            self.good_end = self.lines.offset();
                            Some(Err(self.corrupt(format!(
                                "longer than {} MiB",
                                MAX_LINE_BYTES / (1024 * 1024)
                            ))))
                        }
                        Err(err) => Some(Err(err)),
                    };
                }
                Line::Text { range, terminated } => (range, terminated),
            };
            let bytes = self.lines.bytes(range);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                if terminated {
                    self.good_end = self.lines.offset();
                    continue;
                }
                // Trailing blanks without a newline: nothing to replay, and
                // the next append must not join them.
                self.skip_torn_tail("blank");
                return None;
            }
            match parse(bytes) {
                Ok(item) => {
                    self.good_end = self.lines.offset();
                    self.unterminated_last_event = !terminated;
                    return Some(Ok(item));
                }
                Err(err) => {
                    // The line's bytes are not needed past this point:
                    // looking ahead may reuse them.
                    let reason = describe_parse_error(&err);
                    match self.is_last(terminated) {
                        Ok(true) => {
                            self.skip_torn_tail("not a complete event");
                            return None;
                        }
                        Ok(false) => {
                            self.good_end = self.lines.offset();
                            return Some(Err(self.corrupt(reason)));
                        }
                        Err(err) => return Some(Err(err)),
                    }
                }
            }
        }
    }
}

/// serde_json's message without the line/column of the one-line document.
fn describe_parse_error(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

impl Iterator for Replay {
    type Item = Result<LoggedEvent, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_with(|line| serde_json::from_slice::<LoggedEvent>(line))
    }
}
