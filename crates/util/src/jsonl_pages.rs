//! Newest-first pages of JSON Lines logs the hub keeps (the audit log, the
//! facade's `requests.jsonl`), read backwards from the disk in blocks, so
//! that a log of any size costs a block, a line and a page of memory.
//!
//! A [`Pager`] holds the log's files, newest first. [`Pager::page`] returns
//! up to `limit` entries a caller's predicate keeps, newest first, and the
//! [`Cursor`] of the next (older) page, or none once the oldest line was
//! read. A cursor is text a browser may hold (`FILE:OFFSET:ID`: the file's
//! name, the byte offset of the line before which the next page begins, and
//! the file's identity); [`Pager::cursor`] reads it back and accepts only a
//! file of the pager's set, by name, so it can never name a path.
//!
//! What is not an entry is skipped: a last line without its newline (still
//! being written), a line that is not JSON (written by hand, cut by a
//! crash), a line longer than [`Limits::max_line`] (read past, never held).
//! Files are opened only through [`owner_only`](crate::owner_only): never
//! through a symlink, only a regular file of this user.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::owner_only;

/// How much one page may read and hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes read from the disk at a time.
    pub block: usize,
    /// The longest line read as an entry; a longer one is skipped.
    pub max_line: usize,
    /// The most bytes of entries one page holds: a page stops after the
    /// entry that reaches it (so it always has at least one).
    pub max_page_bytes: usize,
    /// The most bytes one page reads: past it, the page stops at the next
    /// line with what it found and a cursor to go on from (fewer than
    /// `limit` entries, and a `next`). `None`: until the page is full or
    /// the files end.
    pub max_scan: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            block: 64 * 1024,
            max_line: 1024 * 1024,
            max_page_bytes: 4 * 1024 * 1024,
            max_scan: Some(16 * 1024 * 1024),
        }
    }
}

/// A place in a pager's files: the next page holds the lines that end at
/// or before `offset` of the file `path`, then the older files'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Which of the pager's files (its index, newest first).
    index: usize,
    path: PathBuf,
    offset: u64,
    /// The file's inode: a file renamed by a rotation is found again.
    id: u64,
}

impl Cursor {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// `FILE:OFFSET:ID`, what [`Pager::cursor`] reads back.
impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .path
            .file_name()
            .map_or_else(|| "?".into(), |name| name.to_string_lossy());
        write!(f, "{name}:{}:{}", self.offset, self.id)
    }
}

/// Entries newest first, and where the next page begins.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub entries: Vec<Value>,
    /// `None` once the oldest line was read.
    pub next: Option<Cursor>,
    /// Where this page began: the cursor it was given, or the end of the
    /// last whole line of the newest file (where a reader following the log
    /// forward goes on). `None` when no file exists.
    pub start: Option<Cursor>,
}

/// Why a page could not be read.
#[derive(Debug)]
pub enum PageError {
    /// The cursor is not one this pager gave, or no longer points into its
    /// files (the message says which).
    Cursor(String),
    /// A file of the log could not be read.
    Io { path: PathBuf, source: io::Error },
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cursor(problem) => write!(f, "bad cursor: {problem}"),
            Self::Io { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())?;
                if owner_only::is_planted(source) {
                    write!(f, " (a symbolic link or special file is in its place)")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Cursor(_) => None,
            Self::Io { source, .. } => Some(source),
        }
    }
}

/// The files of one log, newest first, read a page at a time.
#[derive(Debug, Clone)]
pub struct Pager {
    files: Vec<PathBuf>,
    limits: Limits,
}

impl Pager {
    /// `files` newest first; a file that does not exist is passed over.
    pub fn new(files: Vec<PathBuf>) -> Self {
        Self {
            files,
            limits: Limits::default(),
        }
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads back a cursor's text ([`Cursor`]'s `Display`). The file is
    /// named only by a name of the set: anything else (another name, a
    /// path) is refused before any file is opened. The offset is checked
    /// against the file by [`Pager::page`].
    pub fn cursor(&self, text: &str) -> Result<Cursor, PageError> {
        let shown = quoted(text);
        let malformed = || PageError::Cursor(format!("{shown} is not a cursor this log gave"));
        let (name, rest) = text.split_once(':').ok_or_else(malformed)?;
        let index = self
            .files
            .iter()
            .position(|path| path.file_name().is_some_and(|own| own == name))
            .ok_or_else(|| PageError::Cursor(format!("{shown} names no file of this log")))?;
        let (offset, id) = rest.split_once(':').ok_or_else(malformed)?;
        let number = |digits: &str| {
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.parse::<u64>().ok())
                .flatten()
        };
        let (Some(offset), Some(id)) = (number(offset), number(id)) else {
            return Err(malformed());
        };
        Ok(Cursor {
            index,
            path: self.files[index].clone(),
            offset,
            id,
        })
    }

    /// Up to `limit` entries that `keep` (given the entry and its line)
    /// keeps, newest first, from `cursor` (or the newest line) back.
    pub fn page(
        &self,
        cursor: Option<&Cursor>,
        limit: usize,
        mut keep: impl FnMut(&Value, &str) -> bool,
    ) -> Result<Page, PageError> {
        let mut page = Page {
            start: cursor.cloned(),
            ..Page::default()
        };
        let (first, mut resumed) = match cursor {
            Some(cursor) => {
                let (index, file, id) = self.resume(cursor)?;
                (index, Some((file, id, cursor.offset)))
            }
            None => (0, None),
        };
        let mut held = 0usize;
        let mut scanned = 0u64;
        let mut seen_any = false;
        for index in first..self.files.len() {
            let path = &self.files[index];
            let (file, id, end) = match resumed.take() {
                Some(found) => found,
                None => match open(path)? {
                    Some((file, meta)) => (file, meta.ino(), meta.len()),
                    None => continue,
                },
            };
            let at = |offset| Cursor {
                index,
                path: path.clone(),
                offset,
                id,
            };
            // A full page ends here, once it knows where it began.
            if page.start.is_some()
                && (page.entries.len() >= limit || held >= self.limits.max_page_bytes)
            {
                page.next = Some(at(end));
                return Ok(page);
            }
            let mut lines = Backwards::new(&file, end, &self.limits);
            while let Some(line) = lines.next_line().map_err(|source| PageError::Io {
                path: path.clone(),
                source,
            })? {
                if page.start.is_none() {
                    page.start = Some(at(line.end));
                }
                let over_budget = self
                    .limits
                    .max_scan
                    .is_some_and(|most| scanned + lines.read >= most);
                if page.entries.len() >= limit
                    || held >= self.limits.max_page_bytes
                    || (over_budget && seen_any)
                {
                    page.next = Some(at(line.end));
                    return Ok(page);
                }
                seen_any = true;
                let Some(text) = line
                    .bytes
                    .as_deref()
                    .and_then(|b| std::str::from_utf8(b).ok())
                else {
                    continue;
                };
                let Ok(entry) = serde_json::from_str::<Value>(text) else {
                    continue;
                };
                if keep(&entry, text) {
                    held += text.len();
                    page.entries.push(entry);
                }
            }
            scanned += lines.read;
            if page.start.is_none() {
                // The newest file holds no whole line (yet).
                page.start = Some(at(0));
            }
        }
        Ok(page)
    }

    /// The file a cursor points into, opened, with its identity: the file
    /// of its name, or (after a rotation renamed it) the file of the set
    /// with its identity.
    fn resume(&self, cursor: &Cursor) -> Result<(usize, File, u64), PageError> {
        // Its own file first, then the others (a rotation renames).
        let order = std::iter::once(cursor.index)
            .chain((0..self.files.len()).filter(|index| *index != cursor.index));
        for index in order {
            let Some(path) = self.files.get(index) else {
                continue;
            };
            let Some((file, meta)) = open(path)? else {
                continue;
            };
            if meta.ino() != cursor.id {
                continue;
            }
            if cursor.offset > meta.len() {
                return Err(PageError::Cursor(format!(
                    "offset {} is past the end of {} ({} bytes)",
                    cursor.offset,
                    file_name(path),
                    meta.len()
                )));
            }
            if cursor.offset > 0 {
                let mut before = [0u8; 1];
                file.read_exact_at(&mut before, cursor.offset - 1)
                    .map_err(|source| PageError::Io {
                        path: path.clone(),
                        source,
                    })?;
                if before[0] != b'\n' {
                    return Err(PageError::Cursor(format!(
                        "offset {} of {} is not the start of a line",
                        cursor.offset,
                        file_name(path)
                    )));
                }
            }
            return Ok((index, file, meta.ino()));
        }
        Err(PageError::Cursor(format!(
            "the file {} it points into is gone (rotated away or removed); start again from the newest entries",
            file_name(&cursor.path)
        )))
    }
}

/// A cursor's text as an error quotes it: at most 80 characters, escaped.
fn quoted(text: &str) -> String {
    let mut shown: String = text.chars().take(80).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Opens a file of the log: `None` when it does not exist.
fn open(path: &Path) -> Result<Option<(File, std::fs::Metadata)>, PageError> {
    let failed = |source| PageError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match owner_only::open_options().read(true).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(failed(err)),
    };
    let meta = owner_only::check_own_file(&file).map_err(failed)?;
    Ok(Some((file, meta)))
}

/// One whole line: where it ends (after its newline) and its bytes without
/// the newline (`None`: longer than the limit).
struct Line {
    end: u64,
    bytes: Option<Vec<u8>>,
}

/// The whole lines of `[0, end)` of a file, last first.
struct Backwards<'f> {
    file: &'f File,
    block_size: usize,
    max_line: usize,
    /// The block read last; `block[..cut]` is not looked at yet.
    block: Vec<u8>,
    cut: usize,
    /// The offset of `block[0]`: `[0, pos)` is not read yet.
    pos: u64,
    /// The end of the line being gathered (after its newline); `None`
    /// before the first newline (what follows it is a torn line).
    line_end: Option<u64>,
    /// What was gathered of the line, from its end backwards.
    gathered: Vec<u8>,
    /// The line is longer than `max_line`: its bytes are not kept.
    oversized: bool,
    /// Bytes read from the disk.
    read: u64,
}

impl<'f> Backwards<'f> {
    fn new(file: &'f File, end: u64, limits: &Limits) -> Self {
        Self {
            file,
            block_size: limits.block.max(1),
            max_line: limits.max_line,
            block: Vec::new(),
            cut: 0,
            pos: end,
            line_end: None,
            gathered: Vec::new(),
            oversized: false,
            read: 0,
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            if let Some(newline) = self.block[..self.cut].iter().rposition(|b| *b == b'\n') {
                let start = self.pos + newline as u64 + 1;
                let piece = newline + 1..self.cut;
                self.cut = newline;
                let Some(end) = self.line_end.replace(start) else {
                    // What followed the last newline: a torn line.
                    continue;
                };
                self.gather(piece);
                return Ok(Some(self.finish(end)));
            }
            self.gather(0..self.cut);
            self.cut = 0;
            if self.pos == 0 {
                return Ok(match self.line_end.take() {
                    // The file's first line.
                    Some(end) if end > 0 => Some(self.finish(end)),
                    _ => None,
                });
            }
            let from = self.pos.saturating_sub(self.block_size as u64);
            let size = usize::try_from(self.pos - from).unwrap_or(self.block_size);
            self.block.resize(size, 0);
            self.file.read_exact_at(&mut self.block, from)?;
            self.read += size as u64;
            self.pos = from;
            self.cut = size;
        }
    }

    /// Adds `block[range]`, which precedes what was gathered, to the line.
    fn gather(&mut self, range: std::ops::Range<usize>) {
        if self.line_end.is_none() || self.oversized || range.is_empty() {
            return;
        }
        if self.gathered.len() + range.len() > self.max_line {
            self.oversized = true;
            self.gathered = Vec::new();
            return;
        }
        let mut joined = Vec::with_capacity(range.len() + self.gathered.len());
        joined.extend_from_slice(&self.block[range]);
        joined.extend_from_slice(&self.gathered);
        self.gathered = joined;
    }

    fn finish(&mut self, end: u64) -> Line {
        let bytes = std::mem::take(&mut self.gathered);
        let oversized = std::mem::replace(&mut self.oversized, false);
        Line {
            end,
            bytes: (!oversized).then_some(bytes),
        }
    }
}

#[cfg(test)]
mod tests;
