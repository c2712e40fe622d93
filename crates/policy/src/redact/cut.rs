//! Cutting text to a size without showing part of a secret: the text is
//! redacted first and cut after, and a secret the cut goes through is
//! replaced whole. A rule cannot recognise half a token, so cutting first
//! would leave the half it keeps in plain sight.
//!
//! Every place that cuts tool output, error text, audit values or a
//! one-line preview to a size cuts through here, and every cut ends with
//! the one mark, `…` ([`bridge_protocol::excerpt::CUT_MARK`]), followed by
//! `[N more bytes]` where the reader needs to know how much is missing.

use std::borrow::Cow;
use std::ops::Range;

use bridge_protocol::excerpt::{CUT_MARK, CutNote};

use super::{REDACTED, secret_spans};

/// How much text a cut site keeps past its cut (and, for an excerpt, before
/// it) so that the redactor sees a secret straddling the cut whole: more
/// than the longest token, key header or `key=value` a rule needs to see.
/// A secret longer than this that straddles the cut may still be missed.
pub const CUT_CONTEXT_BYTES: usize = 4096;

/// Text cut to a size by [`redact_and_cut`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The redacted text up to the cut.
    pub text: Cow<'a, str>,
    /// Bytes of the original text after the cut (0 when nothing was cut).
    pub omitted_bytes: usize,
}

impl Cut<'_> {
    /// The text, ending with `…[N more bytes]` when something was cut.
    pub fn noted(self) -> String {
        if self.omitted_bytes == 0 {
            return self.text.into_owned();
        }
        let mut text = self.text.into_owned();
        let note = CutNote {
            omitted_bytes: self.omitted_bytes,
        };
        text.push_str(&note.to_string());
        text
    }
}

/// `text` redacted and cut to at most `max_chars` characters, ending with
/// `…[N more bytes]` when cut: for an error or a log line that quotes
/// text of any size.
pub fn shorten(text: &str, max_chars: usize) -> String {
    redact_and_cut(text, char_offset(text, max_chars)).noted()
}

/// `text` redacted and cut to at most `max_chars` characters, ending with
/// `…` when cut: for a list, a table cell or a summary line, where a size
/// would be noise.
pub fn preview(text: &str, max_chars: usize) -> String {
    let cut = redact_and_cut(text, char_offset(text, max_chars));
    let mut shown = cut.text.into_owned();
    if cut.omitted_bytes > 0 {
        shown.push_str(CUT_MARK);
    }
    shown
}

/// A peer's own words as they may be shown (a provider's name or reason, a
/// line of a child's output): control characters dropped (they could
/// rewrite the terminal that shows the log; tabs stay), then redacted and
/// cut to `max_chars` characters like [`preview`].
pub fn printable(text: &str, max_chars: usize) -> String {
    let visible: Cow<'_, str> = if text.chars().any(|c| c.is_control() && c != '\t') {
        Cow::Owned(
            text.chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    };
    preview(&visible, max_chars)
}

/// The byte offset of the character `max_chars` of `text` (its length when
/// it is shorter).
pub fn char_offset(text: &str, max_chars: usize) -> usize {
    text.char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(at, _)| at)
}

/// `text` redacted and cut to its first `max_bytes` bytes (on a character
/// boundary). A secret the cut goes through is replaced whole, so the
/// result may end in [`REDACTED`] and be up to its length longer.
///
/// Only the first `max_bytes + CUT_CONTEXT_BYTES` bytes are read: callers
/// that hold only part of a larger text (a capped pipe, a file read up to a
/// limit) keep [`CUT_CONTEXT_BYTES`] past their cap and cut here.
pub fn redact_and_cut(text: &str, max_bytes: usize) -> Cut<'_> {
    if text.len() <= max_bytes {
        return Cut {
            text: super::redact(text),
            omitted_bytes: 0,
        };
    }
    let cut = floor_char_boundary(text, max_bytes);
    let window = floor_char_boundary(text, max_bytes.saturating_add(CUT_CONTEXT_BYTES));
    Cut {
        text: redact_excerpt(&text[..window], 0..cut),
        omitted_bytes: text.len() - cut,
    }
}

/// The part `range` of `text` (byte offsets, moved inwards to character
/// boundaries), redacted as part of the whole `text`: a secret that starts
/// before the range or ends after it is shown as one [`REDACTED`] at the
/// range's edge. Borrowed when no secret touches the range.
///
/// For a cut on both sides (a snippet around a search hit), give
/// [`CUT_CONTEXT_BYTES`] of text on each side of the range.
pub fn redact_excerpt(text: &str, range: Range<usize>) -> Cow<'_, str> {
    let end = floor_char_boundary(text, range.end);
    let mut start = range.start.min(end);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let Some(spans) = secret_spans(text) else {
        return Cow::Owned(REDACTED.to_owned());
    };
    let mut output: Option<String> = None;
    // Text before `copied` is in the output or under a marker.
    let mut copied = start;
    for (span_start, span_end) in spans {
        if span_end <= copied {
            continue;
        }
        if span_start >= end {
            break;
        }
        let output = output.get_or_insert_with(|| String::with_capacity(end - start));
        if span_start < copied && !output.is_empty() {
            // Overlaps the marker just written.
            copied = span_end;
            continue;
        }
        output.push_str(&text[copied..span_start.max(copied)]);
        output.push_str(REDACTED);
        copied = span_end;
    }
    match output {
        None => Cow::Borrowed(&text[start..end]),
        Some(mut output) => {
            if copied < end {
                output.push_str(&text[copied..end]);
            }
            Cow::Owned(output)
        }
    }
}

/// The largest character boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
