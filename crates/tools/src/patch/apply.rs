//! Applies the hunks of one file in memory, verifying every hunk's preimage
//! (its context and removed lines) against the file.
//!
//! Line endings: a trailing `\r` is part of the line ending, never of the
//! line, on both sides. Kept lines keep their own ending; added lines take the
//! file's (the ending of its first line, or else the diff's), so a CRLF file
//! stays CRLF whether the diff was written with CRLF or LF.

use serde::Serialize;

use super::model::{Hunk, HunkLine};

/// Why one hunk (or a whole file) cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HunkConflict {
    /// 1-based index of the hunk within its file; `None` when the file as a
    /// whole conflicts (missing, already existing, binary...).
    pub hunk: Option<usize>,
    /// The old-file line the hunk states it starts at.
    pub line: Option<usize>,
    /// The lines the hunk expects (context and removed lines).
    pub expected: Vec<String>,
    /// The lines the file has at that place.
    pub actual: Vec<String>,
    pub reason: String,
}

impl HunkConflict {
    pub fn whole_file(reason: impl Into<String>) -> Self {
        Self {
            hunk: None,
            line: None,
            expected: Vec::new(),
            actual: Vec::new(),
            reason: reason.into(),
        }
    }
}

/// A file's new content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub content: String,
    /// `(hunk number, offset in lines)` of hunks applied away from their
    /// stated line (only with `verify: false`).
    pub offsets: Vec<(usize, isize)>,
}

#[derive(Clone, Copy)]
struct SourceLine<'a> {
    text: &'a str,
    eol: &'a str,
}

/// Applies `hunks` to `original`. With `verify`, each hunk must match exactly
/// at its stated line; without, a hunk that does not is looked for in the
/// rest of the file and applied where it matches, if it matches exactly once.
/// Every conflicting hunk is reported, not just the first.
pub fn apply_hunks(
    original: &str,
    hunks: &[Hunk],
    verify: bool,
) -> Result<Applied, Vec<HunkConflict>> {
    let source = split_lines(original);
    let file_eol = source
        .iter()
        .find(|line| !line.eol.is_empty())
        .map_or_else(|| diff_eol(hunks), |line| line.eol);

    let mut out: Vec<SourceLine<'_>> = Vec::with_capacity(source.len() + 16);
    let mut conflicts = Vec::new();
    let mut offsets = Vec::new();
    let mut cursor = 0usize;
    let mut drift = 0isize;
    // Whether the last line lacks a newline, when a hunk reached the end.
    let mut end_without_newline: Option<bool> = None;

    for (index, hunk) in hunks.iter().enumerate() {
        let expected: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|line| match line {
                HunkLine::Context(text) | HunkLine::Remove(text) => Some(strip_cr(text)),
                HunkLine::Add(_) => None,
            })
            .collect();
        let stated = hunk.old_index();
        let want = stated.saturating_add_signed(drift).max(cursor);
        let position = match locate(&source, &expected, want, cursor, verify) {
            Ok(position) => position,
            Err(reason) => {
                conflicts.push(conflict(index + 1, hunk, &expected, &source, want, reason));
                continue;
            }
        };
        out.extend_from_slice(&source[cursor..position]);
        let mut at = position;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push(source[at]);
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => out.push(SourceLine {
                    text: strip_cr(text),
                    eol: file_eol,
                }),
            }
        }
        cursor = at;
        let offset = signed_offset(position, stated);
        if offset != 0 {
            offsets.push((index + 1, offset));
        }
        drift = offset;
        if cursor == source.len() {
            end_without_newline = Some(hunk.new_missing_newline);
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    out.extend_from_slice(&source[cursor..]);
    Ok(Applied {
        content: assemble(&out, file_eol, end_without_newline),
        offsets,
    })
}

fn assemble(lines: &[SourceLine<'_>], file_eol: &str, end_without_newline: Option<bool>) -> String {
    let capacity = lines.iter().map(|line| line.text.len() + 2).sum();
    let mut content = String::with_capacity(capacity);
    let last = lines.len().saturating_sub(1);
    for (index, line) in lines.iter().enumerate() {
        content.push_str(line.text);
        let eol = match (index == last, end_without_newline) {
            (true, Some(true)) => "",
            (true, None) => line.eol,
            // A line that lost its "last line" status needs an ending.
            _ if line.eol.is_empty() => file_eol,
            _ => line.eol,
        };
        content.push_str(eol);
    }
    content
}

/// Where the hunk applies, or why it does not.
fn locate(
    source: &[SourceLine<'_>],
    expected: &[&str],
    want: usize,
    cursor: usize,
    verify: bool,
) -> Result<usize, String> {
    let matches_at = |at: usize| {
        at.checked_add(expected.len())
            .filter(|&end| end <= source.len())
            .is_some_and(|end| {
                source[at..end]
                    .iter()
                    .zip(expected)
                    .all(|(line, wanted)| line.text == *wanted)
            })
    };
    if expected.is_empty() {
        // A pure insertion has nothing to verify but its position.
        return if want <= source.len() {
            Ok(want)
        } else {
            Err(format!(
                "the hunk inserts after line {want} but the file has only {} lines",
                source.len()
            ))
        };
    }
    if matches_at(want) {
        return Ok(want);
    }
    let last_start = source.len().checked_sub(expected.len());
    let found: Vec<usize> = match last_start {
        Some(last_start) if cursor <= last_start => {
            (cursor..=last_start).filter(|&at| matches_at(at)).collect()
        }
        _ => Vec::new(),
    };
    let lines = |found: &[usize]| {
        found
            .iter()
            .take(10)
            .map(|at| (at + 1).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (verify, found.as_slice()) {
        (false, [only]) => Ok(*only),
        (_, []) => Err(if want >= source.len() {
            format!(
                "the hunk starts at line {} but the file has only {} lines",
                want.saturating_add(1),
                source.len()
            )
        } else {
            "the file does not contain the hunk's context and removed lines (it changed, or the diff is wrong)".to_owned()
        }),
        (true, [only]) => Err(format!(
            "the lines do not match at line {}; they are at line {} (offset {:+}): regenerate the diff against the current file, or pass verify: false to apply at that offset",
            want.saturating_add(1),
            only + 1,
            signed_offset(*only, want)
        )),
        (_, several) => Err(format!(
            "the lines do not match at line {}; they occur at lines {}: add context so the hunk matches one place",
            want.saturating_add(1),
            lines(several)
        )),
    }
}

fn conflict(
    number: usize,
    hunk: &Hunk,
    expected: &[&str],
    source: &[SourceLine<'_>],
    want: usize,
    reason: String,
) -> HunkConflict {
    let start = want.min(source.len());
    let end = want.saturating_add(expected.len()).min(source.len());
    HunkConflict {
        hunk: Some(number),
        line: Some(hunk.old_start),
        expected: expected.iter().map(|line| (*line).to_owned()).collect(),
        actual: source[start..end]
            .iter()
            .map(|line| line.text.to_owned())
            .collect(),
        reason,
    }
}

/// `to - from` in lines; both are indexes into a file, far below `isize::MAX`
/// unless a hostile hunk header claims otherwise (then it saturates).
fn signed_offset(to: usize, from: usize) -> isize {
    let signed = |value: usize| isize::try_from(value).unwrap_or(isize::MAX);
    signed(to) - signed(from)
}

fn strip_cr(text: &str) -> &str {
    text.strip_suffix('\r').unwrap_or(text)
}

/// The line ending the diff itself uses, for files with no line ending yet.
fn diff_eol(hunks: &[Hunk]) -> &'static str {
    let first = hunks.iter().flat_map(|hunk| &hunk.lines).next();
    match first {
        Some(HunkLine::Context(text) | HunkLine::Remove(text) | HunkLine::Add(text))
            if text.ends_with('\r') =>
        {
            "\r\n"
        }
        _ => "\n",
    }
}

fn split_lines(text: &str) -> Vec<SourceLine<'_>> {
    let mut lines = Vec::with_capacity(text.len() / 32 + 1);
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(newline) => {
                let crlf = newline > 0 && rest.as_bytes()[newline - 1] == b'\r';
                let text_end = if crlf { newline - 1 } else { newline };
                lines.push(SourceLine {
                    text: &rest[..text_end],
                    eol: &rest[text_end..=newline],
                });
                rest = &rest[newline + 1..];
            }
            None => {
                lines.push(SourceLine {
                    text: rest,
                    eol: "",
                });
                break;
            }
        }
    }
    lines
}
