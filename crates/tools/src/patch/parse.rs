//! A strict unified-diff parser.
//!
//! Hand-written rather than taken from a crate: `diffy` 0.5 parses multi-file
//! and git diffs well, but (following GNU patch) it silently skips lines that
//! follow a hunk whose header counts are too small, and it reports errors by
//! byte offset only. An agent's malformed patch must fail loudly, with the
//! line number, instead of being applied in part.
//!
//! Accepted: several files; `--- a/x` / `+++ b/x` headers with or without
//! `a/` `b/` prefixes, tab-separated timestamps and C-quoted names; git
//! headers (`diff --git`, `new file mode`, `deleted file mode`, `index`, mode
//! changes); `/dev/null` for creation and deletion; `@@ -l,s +l,s @@` with
//! omitted counts; `\ No newline at end of file`; CRLF diffs. Refused with
//! the offending line: binary patches, renames and copies, hunks whose body
//! does not match the header counts, stray hunk lines, overlapping hunks.

use std::collections::HashSet;

use super::model::{FileChange, FilePatch, Hunk, HunkLine};
use super::names::{git_header_path, strip_ab_prefixes, unquote_c_string};

/// A malformed diff, with the 1-based line where the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DiffParseError {
    pub line: usize,
    pub message: String,
}

/// Parses a unified diff of one or more files.
pub fn parse_unified_diff(text: &str) -> Result<Vec<FilePatch>, DiffParseError> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let mut parser = Parser { lines, pos: 0 };
    let files = parser.files()?;
    if files.is_empty() {
        return Err(DiffParseError {
            line: 1,
            message: "no file headers found: a unified diff needs '--- a/path' and '+++ b/path' lines before its '@@' hunks".to_owned(),
        });
    }
    Ok(files)
}

fn trim_cr(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

fn is_binary_marker(line: &str) -> bool {
    line.starts_with("Binary files ") || line.starts_with("GIT binary patch")
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

/// What the git extended headers said about a file.
#[derive(Default)]
struct GitHeader {
    /// Line of the `diff --git` header.
    start: Option<usize>,
    path: Option<String>,
    new_file: bool,
    deleted_file: bool,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.pos).map(|line| trim_cr(line))
    }

    /// 1-based number of the current line.
    fn line_no(&self) -> usize {
        self.pos + 1
    }

    fn error(&self, line: usize, message: impl Into<String>) -> DiffParseError {
        DiffParseError {
            line,
            message: message.into(),
        }
    }

    fn files(&mut self) -> Result<Vec<FilePatch>, DiffParseError> {
        let mut files: Vec<FilePatch> = Vec::new();
        let mut seen = HashSet::new();
        while let Some(line) = self.peek() {
            let file = if line.starts_with("diff --git ") {
                self.git_section()?
            } else if line.starts_with("--- ") {
                Some(self.file_section(GitHeader::default())?)
            } else if line.starts_with("+++ ") {
                return Err(self.error(
                    self.line_no(),
                    "'+++' header without a '---' header before it",
                ));
            } else if line.starts_with("@@") {
                return Err(self.error(
                    self.line_no(),
                    "hunk header before any file header: start each file with '--- a/path' and '+++ b/path'",
                ));
            } else if is_binary_marker(line) {
                return Err(self.error(self.line_no(), "binary patches are not supported"));
            } else {
                // Commit messages, `Index:` lines and other prose around diffs.
                self.pos += 1;
                None
            };
            if let Some(file) = file {
                // The names of a `diff --git` header without content headers.
                for name in [&file.old_path, &file.new_path] {
                    refuse_invisible(name.as_deref(), file.line)?;
                }
                if !seen.insert(file.path().to_owned()) {
                    return Err(self.error(
                        file.line,
                        format!(
                            "{} appears twice in the diff; put all its hunks under one header",
                            file.path()
                        ),
                    ));
                }
                files.push(file);
            }
        }
        Ok(files)
    }

    /// A `diff --git` block. `None` for a mode-only change (nothing to write).
    fn git_section(&mut self) -> Result<Option<FilePatch>, DiffParseError> {
        let start = self.line_no();
        let header = self.peek().unwrap_or_default();
        let mut git = GitHeader {
            start: Some(start),
            // Once: a name may itself start with those words.
            path: git_header_path(header.strip_prefix("diff --git ").unwrap_or(header)),
            ..GitHeader::default()
        };
        self.pos += 1;
        while let Some(line) = self.peek() {
            if line.starts_with("--- ") || line.starts_with("diff --git ") {
                break;
            }
            if line.starts_with("@@") {
                return Err(self.error(
                    self.line_no(),
                    "hunk without '---' / '+++' file headers after 'diff --git'",
                ));
            }
            if line.starts_with("new file mode ") {
                git.new_file = true;
            } else if line.starts_with("deleted file mode ") {
                git.deleted_file = true;
            } else if ["rename from ", "rename to ", "copy from ", "copy to "]
                .iter()
                .any(|prefix| line.starts_with(prefix))
            {
                return Err(self.error(
                    self.line_no(),
                    "renames and copies are not supported: express them as a deletion and a creation",
                ));
            } else if is_binary_marker(line) {
                return Err(self.error(self.line_no(), "binary patches are not supported"));
            } else if !(line.starts_with("index ")
                || line.starts_with("old mode ")
                || line.starts_with("new mode ")
                || line.starts_with("similarity index ")
                || line.starts_with("dissimilarity index "))
            {
                break;
            }
            self.pos += 1;
        }
        if self.peek().is_some_and(|line| line.starts_with("--- ")) {
            return self.file_section(git).map(Some);
        }
        // No content headers: an empty file created or deleted, or a mode change.
        let Some(path) = git.path else {
            return Err(self.error(
                start,
                "cannot read the file names of this 'diff --git' header",
            ));
        };
        let file = if git.new_file {
            Some(FilePatch {
                old_path: None,
                new_path: Some(path),
                hunks: Vec::new(),
                line: start,
            })
        } else if git.deleted_file {
            Some(FilePatch {
                old_path: Some(path),
                new_path: None,
                hunks: Vec::new(),
                line: start,
            })
        } else {
            None
        };
        Ok(file)
    }

    /// `--- old` / `+++ new` and the hunks after them.
    fn file_section(&mut self, git: GitHeader) -> Result<FilePatch, DiffParseError> {
        let start = git.start.unwrap_or(self.line_no());
        let old_line = self.line_no();
        let old = self.header_path("--- ")?;
        self.pos += 1;
        if !self.peek().is_some_and(|line| line.starts_with("+++ ")) {
            return Err(self.error(
                self.line_no(),
                "expected a '+++ b/path' line after the '---' header",
            ));
        }
        let new_line = self.line_no();
        let new = self.header_path("+++ ")?;
        self.pos += 1;
        let (old_path, new_path) = strip_ab_prefixes(old, new);
        // Before comparing the names: a name that only differs by an
        // invisible character is that character's problem, on its line.
        refuse_invisible(old_path.as_deref(), old_line)?;
        refuse_invisible(new_path.as_deref(), new_line)?;
        if old_path.is_none() && new_path.is_none() {
            return Err(self.error(old_line, "both file names are /dev/null"));
        }
        if let (Some(old), Some(new)) = (&old_path, &new_path)
            && old != new
        {
            return Err(self.error(
                old_line,
                format!("renames are not supported ({old} → {new}): express them as a deletion and a creation"),
            ));
        }
        if git.new_file && old_path.is_some() {
            return Err(self.error(
                old_line,
                "'new file mode' but the '---' name is not /dev/null",
            ));
        }
        if git.deleted_file && new_path.is_some() {
            return Err(self.error(
                old_line,
                "'deleted file mode' but the '+++' name is not /dev/null",
            ));
        }

        let mut hunks = Vec::new();
        while self.peek().is_some_and(|line| line.starts_with("@@")) {
            hunks.push(self.hunk()?);
        }
        self.reject_stray_hunk_line(&hunks)?;
        let file = FilePatch {
            old_path,
            new_path,
            hunks,
            line: start,
        };
        self.check_hunks(&file)?;
        Ok(file)
    }

    fn header_path(&self, prefix: &str) -> Result<Option<String>, DiffParseError> {
        let line = self.peek().unwrap_or_default();
        let raw = &line[prefix.len()..];
        let path = if raw.starts_with('"') {
            unquote_c_string(raw).ok_or_else(|| {
                self.error(
                    self.line_no(),
                    format!("malformed quoted file name {raw:?}"),
                )
            })?
        } else {
            // GNU diff puts a tab and a timestamp after the name. Trailing
            // whitespace goes, but never an invisible character (NEL, a line
            // separator): the name keeps it and is refused for it.
            raw.split('\t')
                .next()
                .unwrap_or_default()
                .trim_end_matches(|c: char| c.is_whitespace() && !is_invisible(c))
                .to_owned()
        };
        if path.is_empty() {
            return Err(self.error(
                self.line_no(),
                format!("missing file name after {prefix:?}"),
            ));
        }
        Ok((path != "/dev/null").then_some(path))
    }

    /// After a hunk's counted lines, a further body line means the header
    /// counts are wrong: refuse rather than silently drop it.
    fn reject_stray_hunk_line(&self, hunks: &[Hunk]) -> Result<(), DiffParseError> {
        let (Some(line), Some(last)) = (self.peek(), hunks.last()) else {
            return Ok(());
        };
        let next_is_header = line.starts_with("--- ")
            && self
                .lines
                .get(self.pos + 1)
                .is_some_and(|next| next.starts_with("+++ "));
        // `-- ` is the signature separator of `git format-patch` mails.
        let stray = line.starts_with('+')
            || line.starts_with(' ')
            || line.starts_with('\\')
            || (line.starts_with('-') && !next_is_header && line != "-- " && line != "--");
        if stray {
            return Err(self.error(
                self.line_no(),
                format!(
                    "hunk body is longer than its header at line {} says (-{},{} +{},{}); fix the counts",
                    last.line, last.old_start, last.old_len, last.new_start, last.new_len
                ),
            ));
        }
        Ok(())
    }

    fn hunk(&mut self) -> Result<Hunk, DiffParseError> {
        let header_line = self.line_no();
        let header = self.peek().unwrap_or_default();
        let ((old_start, old_len), (new_start, new_len)) = parse_hunk_header(header)
            .ok_or_else(|| {
                self.error(
                    header_line,
                    format!(
                        "malformed hunk header {header:?}: expected '@@ -start,count +start,count @@'"
                    ),
                )
            })?;
        if old_start == 0 && old_len != 0 || new_start == 0 && new_len != 0 {
            return Err(self.error(
                header_line,
                format!("malformed hunk header {header:?}: line 0 with a non-zero count"),
            ));
        }
        self.pos += 1;
        let mut hunk = Hunk {
            old_start,
            old_len,
            new_start,
            new_len,
            lines: Vec::new(),
            old_missing_newline: false,
            new_missing_newline: false,
            line: header_line,
        };
        let (mut old_seen, mut new_seen) = (0usize, 0usize);
        let mut after_marker = false;
        loop {
            let complete = old_seen == old_len && new_seen == new_len;
            let Some(raw) = self.lines.get(self.pos).copied() else {
                if complete {
                    break;
                }
                return Err(self.short_hunk(&hunk, old_seen, new_seen, self.line_no()));
            };
            if raw.starts_with('\\') {
                self.no_newline_marker(&mut hunk)?;
                after_marker = true;
                self.pos += 1;
                continue;
            }
            if complete {
                break;
            }
            let line = match raw.as_bytes().first() {
                Some(b' ') => HunkLine::Context(raw[1..].to_owned()),
                Some(b'-') => HunkLine::Remove(raw[1..].to_owned()),
                Some(b'+') => HunkLine::Add(raw[1..].to_owned()),
                // Editors and models strip the lone space of an empty context line.
                _ if trim_cr(raw).is_empty() => HunkLine::Context(raw.to_owned()),
                Some(b'@') => {
                    return Err(self.short_hunk(&hunk, old_seen, new_seen, self.line_no()));
                }
                _ => {
                    return Err(self.error(
                        self.line_no(),
                        format!(
                            "unexpected line in hunk body {:?}: body lines start with ' ', '-', '+' or '\\'",
                            trim_cr(raw)
                        ),
                    ));
                }
            };
            let (old_side, new_side) = match line {
                HunkLine::Context(_) => (true, true),
                HunkLine::Remove(_) => (true, false),
                HunkLine::Add(_) => (false, true),
            };
            if after_marker
                && (old_side && hunk.old_missing_newline || new_side && hunk.new_missing_newline)
            {
                return Err(self.error(
                    self.line_no(),
                    "line after '\\ No newline at end of file' on the same side of the hunk",
                ));
            }
            old_seen += usize::from(old_side);
            new_seen += usize::from(new_side);
            if old_seen > old_len || new_seen > new_len {
                return Err(self.error(
                    self.line_no(),
                    format!(
                        "hunk body is longer than its header at line {header_line} says (-{old_start},{old_len} +{new_start},{new_len}); fix the counts"
                    ),
                ));
            }
            hunk.lines.push(line);
            self.pos += 1;
        }
        Ok(hunk)
    }

    fn short_hunk(
        &self,
        hunk: &Hunk,
        old_seen: usize,
        new_seen: usize,
        at: usize,
    ) -> DiffParseError {
        self.error(
            at,
            format!(
                "hunk at line {} ends early: its header says {} old and {} new lines, the body has {old_seen} and {new_seen}",
                hunk.line, hunk.old_len, hunk.new_len
            ),
        )
    }

    fn no_newline_marker(&self, hunk: &mut Hunk) -> Result<(), DiffParseError> {
        match hunk.lines.last() {
            Some(HunkLine::Context(_)) => {
                hunk.old_missing_newline = true;
                hunk.new_missing_newline = true;
            }
            Some(HunkLine::Remove(_)) => hunk.old_missing_newline = true,
            Some(HunkLine::Add(_)) => hunk.new_missing_newline = true,
            None => {
                return Err(self.error(
                    self.line_no(),
                    "'\\ No newline at end of file' before any line of the hunk",
                ));
            }
        }
        Ok(())
    }

    /// Hunks in order and not overlapping; creations and deletions shaped as
    /// such.
    fn check_hunks(&self, file: &FilePatch) -> Result<(), DiffParseError> {
        let mut previous_end = 0usize;
        for (index, hunk) in file.hunks.iter().enumerate() {
            if index > 0 && hunk.old_index() < previous_end {
                return Err(self.error(
                    hunk.line,
                    "hunks are out of order or overlap: each must start after the previous one ends",
                ));
            }
            previous_end = hunk.old_index() + hunk.old_len;
            match file.change() {
                FileChange::Create if hunk.old_len != 0 || file.hunks.len() > 1 => {
                    return Err(self.error(
                        hunk.line,
                        format!(
                            "{} is created (--- /dev/null): expect one hunk '@@ -0,0 +1,N @@'",
                            file.path()
                        ),
                    ));
                }
                FileChange::Delete if hunk.new_len != 0 => {
                    return Err(self.error(
                        hunk.line,
                        format!(
                            "{} is deleted (+++ /dev/null): its hunks cannot add lines",
                            file.path()
                        ),
                    ));
                }
                _ => {}
            }
        }
        if file.hunks.is_empty() && file.change() == FileChange::Modify {
            return Err(self.error(file.line, format!("no hunks for {}", file.path())));
        }
        Ok(())
    }
}

/// `@@ -a[,b] +c[,d] @@ anything` → ((a, b), (c, d)); omitted counts are 1.
fn parse_hunk_header(line: &str) -> Option<((usize, usize), (usize, usize))> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix('+')?;
    let (new, rest) = rest.split_once(' ')?;
    if !rest.starts_with("@@") {
        return None;
    }
    Some((parse_range(old)?, parse_range(new)?))
}

fn parse_range(text: &str) -> Option<(usize, usize)> {
    let number = |digits: &str| {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<usize>().ok()
    };
    let (start, len) = match text.split_once(',') {
        Some((start, len)) => (number(start)?, number(len)?),
        None => (number(text)?, 1),
    };
    start.checked_add(len)?;
    Some((start, len))
}

/// Refuses a file name holding a control or invisible character, naming
/// the diff's `line` that holds it.
fn refuse_invisible(name: Option<&str>, line: usize) -> Result<(), DiffParseError> {
    let Some(name) = name else {
        return Ok(());
    };
    match name.chars().find(|c| is_invisible(*c)) {
        Some(bad) => Err(DiffParseError {
            line,
            message: format!(
                "the file name \"{}\" holds the invisible character U+{:04X}; name files by their visible names only",
                name.escape_debug(),
                u32::from(bad)
            ),
        }),
        None => Ok(()),
    }
}

/// Characters a file name must not hold: controls and the invisible format
/// characters (byte order mark, zero-width and direction marks, NEL). Tools
/// that read the same diff elsewhere (the VS Code extension applies the
/// diff the policy checked here) trim and compare names by their own rules;
/// a name that holds none of these reads the same everywhere, so the path
/// checked is the path written.
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{85}' | '\u{FEFF}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        )
}
