//! Streaming replay: one line at a time, each line bounded by
//! [`MAX_LINE_BYTES`], so a session of any size replays in constant memory
//! and a damaged file costs at most one line's bound.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::{Path, PathBuf};

use super::files::open_session_file;
use super::{LogError, LoggedEvent, MAX_LINE_BYTES};

const READ_BUFFER_BYTES: usize = 256 * 1024;

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
    reader: BufReader<File>,
    line: Vec<u8>,
    line_number: u64,
    /// Bytes consumed so far.
    offset: u64,
    /// End of the last line that held an event, or of a corrupt line in
    /// the middle (kept: later lines are fine).
    good_end: u64,
    unterminated_last_event: bool,
    torn_tail: Option<u64>,
    done: bool,
}

struct RawLine {
    too_long: bool,
    terminated: bool,
}

impl Replay {
    pub(crate) fn from_file(file: File, path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, file),
            line: Vec::new(),
            line_number: 0,
            offset: 0,
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

    /// Reads the next line into `self.line` (without its newline), keeping
    /// at most [`MAX_LINE_BYTES`]: the rest of a longer line is consumed
    /// and dropped.
    fn read_line(&mut self) -> std::io::Result<Option<RawLine>> {
        self.line.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                return Ok(any.then_some(RawLine {
                    too_long,
                    terminated: false,
                }));
            }
            any = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(available.len());
            if !too_long && self.line.len() + take <= MAX_LINE_BYTES {
                self.line.extend_from_slice(&available[..take]);
            } else {
                too_long = true;
                self.line = Vec::new();
            }
            let consumed = take + usize::from(newline.is_some());
            self.reader.consume(consumed);
            self.offset += consumed as u64;
            if newline.is_some() {
                return Ok(Some(RawLine {
                    too_long,
                    terminated: true,
                }));
            }
        }
    }

    fn at_end(&mut self) -> std::io::Result<bool> {
        loop {
            match self.reader.fill_buf() {
                Ok(available) => return Ok(available.is_empty()),
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
        }
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

    fn next_item(&mut self) -> Option<Result<LoggedEvent, LogError>> {
        loop {
            let raw = match self.read_line() {
                Ok(Some(raw)) => raw,
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
            let last = match raw.terminated {
                false => true,
                true => match self.at_end() {
                    Ok(at_end) => at_end,
                    Err(err) => {
                        self.done = true;
                        return Some(Err(LogError::io(&self.path, err)));
                    }
                },
            };
            if raw.too_long {
                if last {
                    self.skip_torn_tail("longer than the line limit");
                    return None;
                }
                self.good_end = self.offset;
                return Some(Err(self.corrupt(format!(
                    "longer than {} MiB",
                    MAX_LINE_BYTES / (1024 * 1024)
                ))));
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                if raw.terminated {
                    self.good_end = self.offset;
                    continue;
                }
                // Trailing blanks without a newline: nothing to replay, and
                // the next append must not join them.
                self.skip_torn_tail("blank");
                return None;
            }
            match serde_json::from_slice::<LoggedEvent>(&self.line) {
                Ok(event) => {
                    self.good_end = self.offset;
                    self.unterminated_last_event = !raw.terminated;
                    return Some(Ok(event));
                }
                Err(_) if last => {
                    self.skip_torn_tail("not a complete event");
                    return None;
                }
                Err(err) => {
                    self.good_end = self.offset;
                    return Some(Err(self.corrupt(describe_parse_error(&err))));
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
        if self.done {
            return None;
        }
        self.next_item()
    }
}
