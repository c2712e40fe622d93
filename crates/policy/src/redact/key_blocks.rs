//! The private key blocks of a file, found line by line, so that a part of
//! a file shown without its key's header — a line range, a search hit and
//! its context — is redacted whole when it lies inside a key: a body line
//! judged alone by its shape (`super::body_lines`) misses the last, short
//! line and keys of other widths.
//!
//! A block runs from a header line (`-----BEGIN … PRIVATE KEY-----`, also
//! OpenSSH's, PGP's `PRIVATE KEY BLOCK`, an encrypted one) to its footer
//! (`-----END `), or to the end of the file when there is none; a PuTTY key
//! file's private lines from `Private-Lines:` to `Private-MAC:`. Only the
//! first [`LINE_VIEW`] bytes of a line are looked at, so no line costs more
//! than that.

use std::ops::RangeInclusive;

/// Bytes of a line's start a [`KeyBlocks`] looks at (a header may follow a
/// comment marker or an indent).
pub const LINE_VIEW: usize = 128;

/// The key blocks of one file, fed its lines in order.
#[derive(Debug, Default)]
pub struct KeyBlocks {
    /// The first line of the block being read, and whether it is PuTTY's.
    open: Option<(u64, bool)>,
    blocks: Vec<RangeInclusive<u64>>,
}

impl KeyBlocks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Line `number` (1-based, in order) starts with `start` (at most
    /// [`LINE_VIEW`] bytes of it; more are ignored).
    pub fn line(&mut self, number: u64, start: &[u8]) {
        let start = &start[..start.len().min(LINE_VIEW)];
        match self.open {
            None => {
                if is_pem_header(start) {
                    self.open = Some((number, false));
                } else if start.starts_with(b"Private-Lines:") {
                    self.open = Some((number, true));
                }
            }
            Some((first, putty)) => {
                let closes = if putty {
                    start.starts_with(b"Private-MAC:")
                } else {
                    contains(start, b"-----END ")
                };
                if closes {
                    self.blocks.push(first..=number);
                    self.open = None;
                }
            }
        }
    }

    /// The blocks, a block still open running to `last_line`.
    pub fn finish(mut self, last_line: u64) -> Vec<RangeInclusive<u64>> {
        if let Some((first, _)) = self.open.take() {
            self.blocks.push(first..=last_line.max(first));
        }
        self.blocks
    }

    /// The key blocks of what `reader` holds, read in chunks (no line is
    /// held whole, so a file of one endless line costs no memory).
    pub fn of_reader(mut reader: impl std::io::Read) -> std::io::Result<Vec<RangeInclusive<u64>>> {
        let mut blocks = Self::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut view = Vec::with_capacity(LINE_VIEW);
        let (mut line, mut inside_line) = (1u64, false);
        loop {
            let read = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => read,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            for piece in chunk[..read].split_inclusive(|&byte| byte == b'\n') {
                if !inside_line {
                    view.clear();
                }
                let room = LINE_VIEW - view.len();
                view.extend_from_slice(&piece[..piece.len().min(room)]);
                if piece.ends_with(b"\n") {
                    blocks.line(line, &view);
                    line += 1;
                    inside_line = false;
                } else {
                    inside_line = true;
                }
            }
        }
        if inside_line {
            blocks.line(line, &view);
        } else {
            line -= 1;
        }
        Ok(blocks.finish(line))
    }

    /// The key blocks of a whole text.
    pub fn of_text(text: &str) -> Vec<RangeInclusive<u64>> {
        let mut blocks = Self::new();
        let mut last = 0;
        for (index, line) in text.lines().enumerate() {
            last = index as u64 + 1;
            blocks.line(last, line.as_bytes());
        }
        blocks.finish(last)
    }
}

/// Whether line `number` lies in one of `blocks`.
pub fn in_key_block(blocks: &[RangeInclusive<u64>], number: u64) -> bool {
    blocks.iter().any(|block| block.contains(&number))
}

fn is_pem_header(start: &[u8]) -> bool {
    let Some(at) = find(start, b"-----BEGIN ") else {
        return false;
    };
    contains(&start[at..], b"PRIVATE KEY")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}
