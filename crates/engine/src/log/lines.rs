//! Lines of a session file, read in blocks: a line is handed out as a
//! slice of the block it sits in, so a whole line is copied at most once
//! (when it straddles two blocks), and memory stays within one line's
//! bound plus a block however long the file or a damaged line is.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::ops::Range;

use super::MAX_LINE_BYTES;

/// Bytes read per `read(2)`; the buffer only grows past it for a line
/// longer than a block.
const BLOCK_BYTES: usize = 256 * 1024;

/// The largest the buffer gets: one line at its bound, the byte that
/// shows it is longer, and a block.
const MAX_BUFFER_BYTES: usize = MAX_LINE_BYTES + 1 + BLOCK_BYTES;

/// One line as [`Lines::next_line`] found it.
pub(super) enum Line {
    /// The line's bytes (without the newline) are `Lines::bytes(range)`.
    Text {
        range: Range<usize>,
        terminated: bool,
    },
    /// Longer than [`MAX_LINE_BYTES`]: consumed and dropped.
    TooLong { terminated: bool },
}

pub(super) struct Lines {
    file: File,
    /// `buffer[start..end]` is read and not yet handed out.
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes from `start` already known to hold no newline.
    scanned: usize,
    /// Bytes of the file handed out (or dropped) so far.
    consumed: u64,
}

impl Lines {
    pub(super) fn new(file: File) -> Self {
        Self {
            file,
            buffer: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            consumed: 0,
        }
    }

    /// Bytes of the file up to the end of the last line handed out.
    pub(super) fn offset(&self) -> u64 {
        self.consumed
    }

    /// The bytes of the line `range` names; valid until the next call
    /// that reads.
    pub(super) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.buffer[range]
    }

    /// The next line, or `None` at the end of the file. A line longer
    /// than [`MAX_LINE_BYTES`] is read to its end and dropped.
    pub(super) fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut too_long = false;
        loop {
            let from = self.start + self.scanned;
            if let Some(found) = memchr::memchr(b'\n', &self.buffer[from..self.end]) {
                let newline = from + found;
                let range = self.start..newline;
                self.consumed += (newline + 1 - self.start) as u64;
                self.start = newline + 1;
                self.scanned = 0;
                return Ok(Some(if too_long || range.len() > MAX_LINE_BYTES {
                    Line::TooLong { terminated: true }
                } else {
                    Line::Text {
                        range,
                        terminated: true,
                    }
                }));
            }
            self.scanned = self.end - self.start;
            if too_long || self.scanned > MAX_LINE_BYTES {
                // Only its end is still of interest.
                too_long = true;
                self.consumed += self.scanned as u64;
                self.start = self.end;
                self.scanned = 0;
            }
            if self.fill()? == 0 {
                if too_long {
                    return Ok(Some(Line::TooLong { terminated: false }));
                }
                if self.start == self.end {
                    return Ok(None);
                }
                let range = self.start..self.end;
                self.consumed += range.len() as u64;
                self.start = self.end;
                self.scanned = 0;
                return Ok(Some(Line::Text {
                    range,
                    terminated: false,
                }));
            }
        }
    }

    /// Whether the file ends here. Reads ahead, so the bytes of the line
    /// handed out last are gone after it.
    pub(super) fn at_end(&mut self) -> std::io::Result<bool> {
        Ok(self.start == self.end && self.fill()? == 0)
    }

    /// Reads the next block after what is not handed out yet (moved to the
    /// front first); returns the bytes read, 0 at the end of the file.
    fn fill(&mut self) -> std::io::Result<usize> {
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buffer.len() - self.end < BLOCK_BYTES {
            let wanted = (self.end + BLOCK_BYTES).min(MAX_BUFFER_BYTES);
            self.buffer.resize(wanted.max(self.buffer.len()), 0);
        }
        loop {
            match self.file.read(&mut self.buffer[self.end..]) {
                Ok(read) => {
                    self.end += read;
                    return Ok(read);
                }
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, Write};

    use super::*;

    fn lines_of(bytes: &[u8]) -> Lines {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.rewind().unwrap();
        Lines::new(file)
    }

    /// Every line: its text (`None` if too long) and whether it ended in a
    /// newline, plus the offset after it.
    fn all(bytes: &[u8]) -> Vec<(Option<Vec<u8>>, bool, u64)> {
        let mut lines = lines_of(bytes);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            let entry = match line {
                Line::Text { range, terminated } => (Some(lines.bytes(range).to_vec()), terminated),
                Line::TooLong { terminated } => (None, terminated),
            };
            out.push((entry.0, entry.1, lines.offset()));
        }
        out
    }

    #[test]
    fn lines_across_blocks_come_whole_with_their_offsets() {
        let line = vec![b'x'; BLOCK_BYTES / 3 + 7];
        let mut file = Vec::new();
        for _ in 0..10 {
            file.extend_from_slice(&line);
            file.push(b'\n');
        }
        file.extend_from_slice(b"tail");
        let read = all(&file);
        assert_eq!(read.len(), 11);
        for (index, (text, terminated, offset)) in read.iter().take(10).enumerate() {
            assert_eq!(text.as_deref(), Some(line.as_slice()));
            assert!(terminated);
            assert_eq!(*offset, (index as u64 + 1) * (line.len() as u64 + 1));
        }
        assert_eq!(read[10], (Some(b"tail".to_vec()), false, file.len() as u64));
    }

    #[test]
    fn a_line_at_the_bound_is_kept_and_one_past_it_is_dropped() {
        let mut file = vec![b'a'; MAX_LINE_BYTES];
        file.push(b'\n');
        file.extend(std::iter::repeat_n(b'b', MAX_LINE_BYTES + 1));
        file.extend_from_slice(b"\nok\n");
        file.extend(std::iter::repeat_n(b'c', MAX_LINE_BYTES + 5));
        let read = all(&file);
        assert_eq!(read.len(), 4);
        assert_eq!(read[0].0.as_ref().map(Vec::len), Some(MAX_LINE_BYTES));
        assert_eq!((read[1].0.is_none(), read[1].1), (true, true));
        assert_eq!(read[2].0.as_deref(), Some(&b"ok"[..]));
        assert_eq!((read[3].0.is_none(), read[3].1), (true, false));
        assert_eq!(read[3].2, file.len() as u64);
    }

    #[test]
    fn the_end_is_seen_after_the_last_newline() {
        let mut lines = lines_of(b"one\ntwo\n");
        assert!(matches!(
            lines.next_line().unwrap(),
            Some(Line::Text { .. })
        ));
        assert!(!lines.at_end().unwrap());
        assert!(matches!(
            lines.next_line().unwrap(),
            Some(Line::Text { .. })
        ));
        assert!(lines.at_end().unwrap());
        assert!(lines.next_line().unwrap().is_none());
    }
}
