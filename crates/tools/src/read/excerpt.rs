//! One streaming pass over a file that hashes every byte, counts the lines
//! and keeps only the bytes of the requested line range.
//!
//! The file is read in fixed-size chunks and never a line at a time: a range
//! read of a file whose skipped lines are gigabytes long (a log without
//! newlines, a sparse file) must not hold those lines in memory. At most the
//! content cap plus [`CUT_CONTEXT_BYTES`] and one byte is ever kept.

use std::io::{ErrorKind, Read};

use bridge_policy::redact::{
    CUT_CONTEXT_BYTES, KeyBlocks, LINE_VIEW, REDACTED, in_key_block, redact_and_cut,
};
use sha2::{Digest, Sha256};

const CHUNK_BYTES: usize = 64 * 1024;

/// The selected lines of a file with facts about the whole file.
pub(crate) struct Excerpt {
    /// The text, lossily decoded.
    pub content: String,
    /// Whether bytes that are not UTF-8 were replaced.
    pub lossy: bool,
    pub first_line: u64,
    pub last_included: u64,
    pub total_lines: u64,
    pub truncated: bool,
    pub sha256: String,
}

/// Collects lines `first_line..=last_line` (1-based) of `reader`, at most
/// `cap` bytes of them: whole lines only, except that a first selected line
/// alone over the cap is cut on a character boundary, since a prefix beats
/// returning nothing. That cut is made after redaction
/// ([`redact_and_cut`]), on the line read [`CUT_CONTEXT_BYTES`] past the
/// cap, so that a secret straddling the cap is not half shown.
pub(crate) fn collect_lines(
    mut reader: impl Read,
    first_line: u64,
    last_line: u64,
    cap: usize,
) -> std::io::Result<Excerpt> {
    let mut collector = Collector::new(first_line, last_line, cap);
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; CHUNK_BYTES];
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        hasher.update(&chunk[..read]);
        collector.feed(&chunk[..read]);
    }
    Ok(collector.finish(hex::encode(hasher.finalize())))
}

struct Collector {
    first_line: u64,
    last_line: u64,
    cap: usize,
    content: Vec<u8>,
    /// Lines whose newline has been seen.
    completed_lines: u64,
    /// Whether bytes of a line not yet ended have been seen.
    inside_line: bool,
    /// Where the current line begins in `content`, to drop it when it turns
    /// out not to fit.
    line_start: usize,
    last_included: u64,
    truncated: bool,
    /// Set when the first selected line alone is over the cap: the content
    /// runs past the cap, to be cut there once redacted.
    cut_at: Option<usize>,
    /// The private key blocks of the whole file, so that selected lines
    /// inside one are withheld even without the key's header.
    keys: KeyBlocks,
    /// The start of the current line, for `keys`.
    line_view: Vec<u8>,
}

impl Collector {
    fn new(first_line: u64, last_line: u64, cap: usize) -> Self {
        Self {
            first_line,
            last_line,
            cap,
            content: Vec::new(),
            completed_lines: 0,
            inside_line: false,
            line_start: 0,
            last_included: first_line.saturating_sub(1),
            truncated: false,
            cut_at: None,
            keys: KeyBlocks::new(),
            line_view: Vec::with_capacity(LINE_VIEW),
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (segment, ends_line) = match bytes.iter().position(|&byte| byte == b'\n') {
                Some(newline) => (&bytes[..=newline], true),
                None => (bytes, false),
            };
            bytes = &bytes[segment.len()..];
            let line = self.completed_lines + 1;
            if !self.inside_line {
                self.line_view.clear();
            }
            let room = LINE_VIEW - self.line_view.len();
            self.line_view
                .extend_from_slice(&segment[..segment.len().min(room)]);
            if !self.truncated && (self.first_line..=self.last_line).contains(&line) {
                self.keep(segment, line, ends_line);
            }
            if ends_line {
                self.keys.line(line, &self.line_view);
                self.completed_lines += 1;
            }
            self.inside_line = !ends_line;
        }
    }

    /// Adds a piece of selected line `line` to the content, or ends the
    /// excerpt when the line does not fit.
    fn keep(&mut self, segment: &[u8], line: u64, ends_line: bool) {
        if !self.inside_line {
            self.line_start = self.content.len();
        }
        if self.cut_at.is_none() && self.content.len() + segment.len() <= self.cap {
            self.content.extend_from_slice(segment);
            if ends_line {
                self.last_included = line;
            }
            return;
        }
        if self.line_start == 0 {
            // Read on past the cap (over later chunks too) so that the
            // redactor sees a secret straddling it whole; one byte more
            // finds the character boundary.
            let room = self.lookahead_end().saturating_add(1) - self.content.len();
            self.content
                .extend_from_slice(&segment[..segment.len().min(room)]);
            self.cut_at = Some(self.cap);
            self.last_included = line;
            if ends_line || self.content.len() > self.lookahead_end() {
                self.truncated = true;
            }
        } else {
            self.content.truncate(self.line_start);
            self.truncated = true;
        }
    }

    fn lookahead_end(&self) -> usize {
        self.cap.saturating_add(CUT_CONTEXT_BYTES)
    }

    fn finish(mut self, sha256: String) -> Excerpt {
        // A last line without a newline still counts, and was kept whole
        // unless the excerpt was truncated.
        let mut total_lines = self.completed_lines;
        if self.cut_at.is_some() {
            self.truncated = true;
        }
        if self.inside_line {
            total_lines += 1;
            if !self.truncated && (self.first_line..=self.last_line).contains(&total_lines) {
                self.last_included = total_lines;
            }
        }
        if self.inside_line {
            self.keys.line(total_lines, &self.line_view);
        }
        // A block whose header is shown is redacted whole with the rest of
        // the text; one that began above the range is not seen as a key.
        let mut blocks = self.keys.finish(total_lines);
        blocks.retain(|block| *block.start() < self.first_line);
        let mut bytes = self.content;
        if !blocks.is_empty() {
            bytes = withhold_key_lines(&bytes, self.first_line, &blocks);
        }
        if self.cut_at.is_some() {
            bytes.truncate(utf8_prefix_len(
                &bytes,
                self.cap.saturating_add(CUT_CONTEXT_BYTES),
            ));
        }
        let (text, lossy) = match String::from_utf8(bytes) {
            Ok(text) => (text, false),
            Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
        };
        let content = match self.cut_at {
            Some(cap) => redact_and_cut(&text, cap).text.into_owned(),
            None => text,
        };
        Excerpt {
            content,
            lossy,
            first_line: self.first_line,
            last_included: self.last_included.min(total_lines),
            total_lines,
            truncated: self.truncated,
            sha256,
        }
    }
}

/// `content` (lines from `first_line` on) with every line inside a key
/// block replaced by the redaction mark, its line break kept.
fn withhold_key_lines(
    content: &[u8],
    first_line: u64,
    blocks: &[std::ops::RangeInclusive<u64>],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len());
    for (offset, line) in content.split_inclusive(|&byte| byte == b'\n').enumerate() {
        if in_key_block(blocks, first_line + offset as u64) {
            out.extend_from_slice(REDACTED.as_bytes());
            let ending = if line.ends_with(b"\r\n") {
                2
            } else {
                usize::from(line.ends_with(b"\n"))
            };
            out.extend_from_slice(&line[line.len() - ending..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The longest prefix of `bytes` within `max` bytes that does not split a
/// UTF-8 character (invalid bytes are left to the lossy decoding).
pub(crate) fn utf8_prefix_len(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    match std::str::from_utf8(&bytes[..max]) {
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        _ => max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in chunks of every size from 1 byte up, so line and
    /// character boundaries fall everywhere relative to chunk boundaries.
    fn collect_in_chunks(
        text: &[u8],
        first: u64,
        last: u64,
        cap: usize,
    ) -> Vec<(String, u64, u64, bool)> {
        (1..=text.len().max(1))
            .map(|chunk_len| {
                let mut collector = Collector::new(first, last, cap);
                for chunk in text.chunks(chunk_len) {
                    collector.feed(chunk);
                }
                let excerpt = collector.finish(String::new());
                (
                    excerpt.content,
                    excerpt.last_included,
                    excerpt.total_lines,
                    excerpt.truncated,
                )
            })
            .collect()
    }

    fn assert_every_chunking(
        text: &str,
        first: u64,
        last: u64,
        cap: usize,
        expected: (&str, u64, u64, bool),
    ) {
        for (index, got) in collect_in_chunks(text.as_bytes(), first, last, cap)
            .into_iter()
            .enumerate()
        {
            let expected = (expected.0.to_owned(), expected.1, expected.2, expected.3);
            assert_eq!(got, expected, "chunks of {} bytes", index + 1);
        }
    }

    #[test]
    fn ranges_caps_and_final_lines_do_not_depend_on_chunk_boundaries() {
        let text = "one\ntwo\nthree\nfour";
        assert_every_chunking(text, 1, u64::MAX, 100, (text, 4, 4, false));
        assert_every_chunking(text, 2, 3, 100, ("two\nthree\n", 3, 4, false));
        assert_every_chunking(text, 4, 9, 100, ("four", 4, 4, false));
        // "two\n" fits in 6 bytes, "three\n" would not: whole lines only.
        assert_every_chunking(text, 2, u64::MAX, 6, ("two\n", 2, 4, true));
        // A first selected line alone over the cap is cut, on a char boundary.
        assert_every_chunking("ab\néééé\nc\n", 2, 3, 5, ("éé", 2, 3, true));
        assert_every_chunking("", 1, u64::MAX, 10, ("", 0, 0, false));
    }
}
