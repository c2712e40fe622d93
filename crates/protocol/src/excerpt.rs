//! Quoting a client's input in an error message without echoing all of it,
//! and the one mark every cut text in the project ends with.
//!
//! An error that repeats what it refuses turns every oversized or bogus
//! message into an answer at least as large (a 1 MB `type` once came back
//! twice, as the message and as `replyTo`). Every quote of client input in
//! an error goes through [`excerpt`].

use std::fmt;

/// Characters of client input an error message quotes at most.
pub const EXCERPT_CHARS: usize = 200;

/// Bytes of an error message at most, whatever it quotes: the backstop for
/// a quote that did not go through [`excerpt`].
pub const ERROR_MESSAGE_MAX_BYTES: usize = 1024;

/// The mark a cut text ends with. Where a reader needs to know how much is
/// missing (an error, an audit value, a tool's output) it is followed by the
/// size: see [`CutNote`]. Text that is cut in a redacting crate goes
/// through `bridge_policy::redact::cut`, which uses both.
pub const CUT_MARK: &str = "…";

/// `…[N more bytes]`: the cut mark and the bytes it left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutNote {
    pub omitted_bytes: usize,
}

impl fmt::Display for CutNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{CUT_MARK}[{} more bytes]", self.omitted_bytes)
    }
}

/// At most [`EXCERPT_CHARS`] characters of `text`, cut at a character
/// boundary. `Display` writes the text, `Debug` writes it quoted; either
/// ends with the [`CutNote`] when it was cut.
pub fn excerpt(text: &str) -> Excerpt<'_> {
    let cut = text.char_indices().nth(EXCERPT_CHARS).map(|(at, _)| at);
    Excerpt {
        head: cut.map_or(text, |at| &text[..at]),
        full_len: text.len(),
    }
}

/// See [`excerpt`].
#[derive(Clone, Copy)]
pub struct Excerpt<'a> {
    head: &'a str,
    full_len: usize,
}

impl Excerpt<'_> {
    fn cut(&self) -> bool {
        self.head.len() < self.full_len
    }

    fn write_tail(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.cut() {
            let omitted_bytes = self.full_len - self.head.len();
            write!(f, "{}", CutNote { omitted_bytes })?;
        }
        Ok(())
    }
}

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.head)?;
        self.write_tail(f)
    }
}

impl fmt::Debug for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.head, f)?;
        self.write_tail(f)
    }
}

/// `text` if it is at most `max_bytes` long, else cut at a character
/// boundary with [`CUT_MARK`] appended (the result may exceed `max_bytes`
/// by the mark's three bytes). For fields of a fixed size, where a note
/// of the size would not fit.
pub fn bounded(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(CUT_MARK);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(excerpt("tool.x").to_string(), "tool.x");
        assert_eq!(format!("{:?}", excerpt("a\"b")), r#""a\"b""#);
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary_and_says_how_much_was_left_out() {
        let text = "é".repeat(1_000_000);
        let shown = excerpt(&text).to_string();
        assert!(shown.starts_with(&"é".repeat(EXCERPT_CHARS)));
        let omitted = 2_000_000 - 2 * EXCERPT_CHARS;
        assert!(
            shown.ends_with(&format!("…[{omitted} more bytes]")),
            "{shown}"
        );
        assert_eq!(shown.chars().filter(|c| *c == 'é').count(), EXCERPT_CHARS);
        let quoted = format!("{:?}", excerpt(&text));
        assert!(quoted.len() < 3 * EXCERPT_CHARS, "{}", quoted.len());
    }

    #[test]
    fn exactly_the_limit_is_not_cut() {
        let text = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&text).to_string(), text);
    }

    #[test]
    fn bounded_cuts_on_a_character_boundary() {
        assert_eq!(bounded("abc".to_owned(), 3), "abc");
        assert_eq!(bounded("abcd".to_owned(), 3), "abc…");
        // 'é' is two bytes: a cut inside it moves back before it.
        assert_eq!(bounded("aéb".to_owned(), 2), "a…");
    }
}
