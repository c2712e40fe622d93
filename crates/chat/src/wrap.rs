//! Wrapping a styled logical line to a width, at render time: the
//! transcript keeps logical lines so a resize re-wraps them.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// The rows `line` takes at `width` columns: words kept whole where they
/// fit, a word longer than a row cut. Always at least one row (an empty
/// line is a blank row).
pub(crate) fn wrap_line(line: &Line<'_>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    // (char, style) cells, the unit of breaking.
    let cells: Vec<(char, ratatui::style::Style)> = line
        .spans
        .iter()
        .flat_map(|span| span.content.chars().map(move |c| (c, span.style)))
        .filter(|(c, _)| *c != '\n' && *c != '\r')
        .collect();
    let mut rows = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let mut used = 0;
        let mut end = start;
        // The last place a row may end after a space: keeps words whole.
        let mut last_break = None;
        while end < cells.len() {
            let w = char_width(cells[end].0);
            if used + w > width && end > start {
                break;
            }
            used += w;
            if cells[end].0 == ' ' {
                last_break = Some(end + 1);
            }
            end += 1;
        }
        if end < cells.len()
            && let Some(at) = last_break
            && at > start
        {
            end = at;
        }
        rows.push(to_line(&cells[start..end], line));
        start = end;
    }
    if rows.is_empty() {
        rows.push(Line::default().style(line.style));
    }
    rows
}

/// Display width of one char, a tab counted as one column (the transcript
/// turns tabs into spaces before this).
pub(crate) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Display width of a string.
pub(crate) fn str_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn to_line(cells: &[(char, ratatui::style::Style)], parent: &Line<'_>) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, s) in cells {
        if style != Some(*s) {
            if let Some(prev) = style
                && !text.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(*s);
        }
        text.push(*c);
    }
    if let Some(prev) = style
        && !text.is_empty()
    {
        spans.push(Span::styled(text, prev));
    }
    Line::from(spans).style(parent.style)
}

/// A line cut to `width` columns with "…" when it is longer: for one-row
/// things (the status line, picker rows, the live line's tail).
pub(crate) fn truncate(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: &[Line<'static>]) -> Vec<String> {
        rows.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_stay_whole_and_long_words_are_cut() {
        let rows = wrap_line(&Line::from("the quick brown fox"), 10);
        assert_eq!(text(&rows), ["the quick ", "brown fox"]);
        let rows = wrap_line(&Line::from("abcdefghijkl"), 5);
        assert_eq!(text(&rows), ["abcde", "fghij", "kl"]);
    }

    #[test]
    fn wide_chars_count_twice_and_empty_is_one_row() {
        let rows = wrap_line(&Line::from("日本語です"), 4);
        assert_eq!(text(&rows), ["日本", "語で", "す"]);
        assert_eq!(wrap_line(&Line::default(), 10).len(), 1);
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hi", 6), "hi");
    }
}
