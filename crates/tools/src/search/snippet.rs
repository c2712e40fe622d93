//! Turning a matched line into a bounded, readable snippet: at most
//! `max_chars` characters, cut on character boundaries, with "…" where text
//! was left out, and positioned so the match itself is visible.
//!
//! A line that is cut is redacted first, with [`CUT_CONTEXT_BYTES`] of text
//! on each side of the snippet ([`redact_excerpt`]): a secret the cut goes
//! through shows as one `[REDACTED]`, never as the half a rule no longer
//! recognises. Lines shown whole are redacted with the rest of the result.

use std::borrow::Cow;

use bridge_policy::redact::{CUT_CONTEXT_BYTES, redact_excerpt};

use bridge_protocol::excerpt::CUT_MARK as ELLIPSIS;

/// The line without its `\n` or `\r\n`.
pub(crate) fn strip_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A context line: its first `max_chars` characters.
pub(crate) fn context_line(line: &[u8], max_chars: usize) -> String {
    let text = lossy_prefix(strip_terminator(line), max_chars);
    let (head, cut) = take_chars(&text, max_chars);
    if !cut {
        return head.to_owned();
    }
    let head = redact_excerpt(&text, 0..head.len());
    let mut out = String::with_capacity(head.len() + 3);
    out.push_str(&head);
    out.push_str(ELLIPSIS);
    out
}

/// A matched line (terminator already stripped) and the byte offset where
/// the match starts: the 1-based character column of the match and a snippet
/// that shows it.
pub(crate) fn matched_line(line: &[u8], match_start: usize, max_chars: usize) -> (usize, String) {
    let match_start = match_start.min(line.len());
    let before = String::from_utf8_lossy(&line[..match_start]);
    let before_chars = before.chars().count();
    let column = before_chars + 1;
    let after = lossy_prefix(&line[match_start..], max_chars);

    // Keep a quarter of the budget for text before the match when the match
    // would otherwise fall outside the snippet.
    let lead = max_chars / 4;
    let (cut_front, head_start, tail_budget) = if before_chars + lead < max_chars {
        (false, 0, max_chars - before_chars)
    } else {
        let skip = before_chars - lead;
        let head_start = before
            .char_indices()
            .nth(skip)
            .map_or(before.len(), |(at, _)| at);
        (true, head_start, max_chars - lead)
    };
    let (tail, cut_back) = take_chars(&after, tail_budget);
    if !cut_front && !cut_back {
        return (column, join(false, &before, tail, false));
    }
    // The snippet with the text around it, for the redactor to judge a
    // secret the cut goes through.
    let mut window_start = head_start.saturating_sub(CUT_CONTEXT_BYTES);
    while !before.is_char_boundary(window_start) {
        window_start -= 1;
    }
    let mut window = String::with_capacity(before.len() - window_start + after.len());
    window.push_str(&before[window_start..]);
    window.push_str(&after);
    let shown_start = head_start - window_start;
    let shown_end = before.len() - window_start + tail.len();
    let shown = redact_excerpt(&window, shown_start..shown_end);
    (column, join(cut_front, &shown, "", cut_back))
}

fn join(cut_front: bool, head: &str, tail: &str, cut_back: bool) -> String {
    let mut out = String::with_capacity(head.len() + tail.len() + 6);
    if cut_front {
        out.push_str(ELLIPSIS);
    }
    out.push_str(head);
    out.push_str(tail);
    if cut_back {
        out.push_str(ELLIPSIS);
    }
    out
}

/// Decodes only as much of `bytes` as can hold `max_chars + 1` characters
/// and [`CUT_CONTEXT_BYTES`] more, so a megabyte-long minified line costs no
/// more than a short one. The extra character lets [`take_chars`] notice
/// that the text went on; the extra bytes let the redactor see a secret
/// the cut goes through.
fn lossy_prefix(bytes: &[u8], max_chars: usize) -> Cow<'_, str> {
    let budget = max_chars
        .saturating_add(1)
        .saturating_mul(4)
        .saturating_add(CUT_CONTEXT_BYTES);
    String::from_utf8_lossy(&bytes[..bytes.len().min(budget)])
}

/// The first `n` characters of `text`, and whether anything was left out.
fn take_chars(text: &str, n: usize) -> (&str, bool) {
    match text.char_indices().nth(n) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_line_is_whole() {
        assert_eq!(
            matched_line(b"let x = foo();", 8, 80),
            (9, "let x = foo();".to_owned())
        );
    }

    #[test]
    fn long_line_cut_after_match() {
        let line = format!("foo{}", "x".repeat(100));
        let (column, snippet) = matched_line(line.as_bytes(), 0, 10);
        assert_eq!(column, 1);
        assert_eq!(snippet, "fooxxxxxxx…");
    }

    #[test]
    fn match_far_right_is_kept_visible() {
        let line = format!("{}needle{}", "a".repeat(50), "b".repeat(50));
        let (column, snippet) = matched_line(line.as_bytes(), 50, 20);
        assert_eq!(column, 51);
        assert_eq!(snippet, format!("…aaaaaneedle{}…", "b".repeat(9)));
        assert_eq!(snippet.chars().count(), 22);
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let line = "é".repeat(30);
        let (_, snippet) = matched_line(line.as_bytes(), 0, 5);
        assert_eq!(snippet, "ééééé…");
        assert_eq!(context_line("ü".repeat(9).as_bytes(), 3), "üüü…");
    }

    #[test]
    fn column_counts_characters_not_bytes() {
        let line = "ÄÖÜ foo";
        assert_eq!(
            matched_line(line.as_bytes(), line.find("foo").unwrap_or(0), 80).0,
            5
        );
    }
}
