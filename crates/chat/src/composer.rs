//! The composer: multi-line text with a cursor, the history of prompts,
//! and the `@path` token under the cursor for completion.

use crate::wrap::char_width;

/// Prompts kept for ↑/↓.
const HISTORY: usize = 500;

#[derive(Debug, Default)]
pub(crate) struct Composer {
    text: String,
    /// A byte offset into `text`, always on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// Where ↑/↓ is in the history; `None`: editing the draft.
    walk: Option<usize>,
    /// The text being written when the walk began, given back at its end.
    draft: String,
}

/// The composer laid out at a width: rows of text and the cursor's place.
#[derive(Debug)]
pub(crate) struct Layout {
    pub rows: Vec<String>,
    pub cursor_row: usize,
    pub cursor_col: usize,
}

impl Composer {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.walk = None;
    }

    pub(crate) fn insert(&mut self, text: &str) {
        // A pasted "\r\n" or lone "\r" is a line break; a tab becomes
        // spaces so widths stay what the screen shows.
        let clean = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\t', "    ");
        let clean: String = clean
            .chars()
            .filter(|c| *c == '\n' || !c.is_control())
            .collect();
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// The prompt to send: the text, kept in the history, the composer
    /// emptied.
    pub(crate) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.walk = None;
        self.draft.clear();
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > HISTORY {
                self.history.remove(0);
            }
        }
        text
    }

    fn prev_boundary(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }

    pub(crate) fn backspace(&mut self) {
        let start = self.prev_boundary();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    pub(crate) fn delete(&mut self) {
        let end = self.next_boundary();
        self.text.replace_range(self.cursor..end, "");
    }

    pub(crate) fn left(&mut self) {
        self.cursor = self.prev_boundary();
    }

    pub(crate) fn right(&mut self) {
        self.cursor = self.next_boundary();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Ctrl-U: the line up to the cursor.
    pub(crate) fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-K: the line from the cursor.
    pub(crate) fn kill_to_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    /// Ctrl-W: the word before the cursor.
    pub(crate) fn kill_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// ↑: a line up, or on the first line the previous prompt. False when
    /// there is nowhere to go.
    pub(crate) fn up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return self.history_prev();
        }
        let column = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = offset_at_column(&self.text, prev_start, column);
        true
    }

    /// ↓: a line down, or on the last line the next prompt (or the draft).
    pub(crate) fn down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.text.len() {
            return self.history_next();
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        self.cursor = offset_at_column(&self.text, end + 1, column);
        true
    }

    fn history_prev(&mut self) -> bool {
        let at = match self.walk {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.walk = Some(at);
        let text = self.history[at].clone();
        self.set_text(&text);
        true
    }

    fn history_next(&mut self) -> bool {
        let Some(at) = self.walk else {
            return false;
        };
        if at + 1 < self.history.len() {
            self.walk = Some(at + 1);
            let text = self.history[at + 1].clone();
            self.set_text(&text);
        } else {
            self.walk = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
        true
    }

    /// The `@path` being typed: the token before the cursor when it
    /// starts with '@' (without it).
    pub(crate) fn at_token(&self) -> Option<&str> {
        let before = &self.text[..self.cursor];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        before[start..].strip_prefix('@')
    }

    /// Put `@path ` in place of the token being typed.
    pub(crate) fn complete_at(&mut self, path: &str) {
        let before = &self.text[..self.cursor];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let with = format!("@{path} ");
        self.text.replace_range(start..self.cursor, &with);
        self.cursor = start + with.len();
    }

    /// Rows at `width` columns (after a two-column prompt mark), cut hard
    /// at the width so the cursor maps simply.
    pub(crate) fn layout(&self, width: u16) -> Layout {
        let width = usize::from(width.saturating_sub(2).max(1));
        let mut rows = Vec::new();
        let (mut cursor_row, mut cursor_col) = (0, 0);
        let mut offset = 0;
        for line in self.text.split('\n') {
            let mut row = String::new();
            let mut used = 0;
            for (i, c) in line.char_indices() {
                let w = char_width(c);
                if used + w > width {
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                if offset + i == self.cursor {
                    (cursor_row, cursor_col) = (rows.len(), used);
                }
                row.push(c);
                used += w;
            }
            if offset + line.len() == self.cursor {
                if used >= width {
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                (cursor_row, cursor_col) = (rows.len(), used);
            }
            rows.push(row);
            offset += line.len() + 1;
        }
        Layout {
            rows,
            cursor_row,
            cursor_col,
        }
    }
}

/// The byte offset of `column` chars into the line starting at `start`
/// (its end when shorter).
fn offset_at_column(text: &str, start: usize, column: usize) -> usize {
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    text[start..line_end]
        .char_indices()
        .nth(column)
        .map_or(line_end, |(i, _)| start + i)
}

/// Workspace paths matching an `@` query: those starting with it first,
/// then those containing it, each group in the order given.
pub(crate) fn matching_paths<'a>(paths: &'a [String], query: &str, max: usize) -> Vec<&'a str> {
    let lower = query.to_lowercase();
    let starts = paths
        .iter()
        .filter(|p| p.to_lowercase().starts_with(&lower));
    let contains = paths.iter().filter(|p| {
        let p = p.to_lowercase();
        !p.starts_with(&lower) && p.contains(&lower)
    });
    starts
        .chain(contains)
        .take(max)
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_across_lines() {
        let mut c = Composer::default();
        c.insert("hello\nworld");
        assert!(c.up());
        c.end();
        c.insert("!");
        assert_eq!(c.text(), "hello!\nworld");
        c.kill_word();
        assert_eq!(c.text(), "\nworld");
        c.insert("a b");
        c.kill_to_start();
        assert_eq!(c.text(), "\nworld");
    }

    #[test]
    fn layout_puts_the_cursor_where_it_is() {
        let mut c = Composer::default();
        c.insert("abcdef\ngh");
        let layout = c.layout(6); // four columns of text
        assert_eq!(layout.rows, ["abcd", "ef", "gh"]);
        assert_eq!((layout.cursor_row, layout.cursor_col), (2, 2));
        c.set_text("abcd");
        let layout = c.layout(6);
        assert_eq!(layout.rows, ["abcd", ""]);
        assert_eq!((layout.cursor_row, layout.cursor_col), (1, 0));
    }

    #[test]
    fn at_tokens_complete() {
        let mut c = Composer::default();
        c.insert("look at @src/ma");
        assert_eq!(c.at_token(), Some("src/ma"));
        c.complete_at("src/main.rs");
        assert_eq!(c.text(), "look at @src/main.rs ");
        assert_eq!(c.at_token(), None);
        let paths = vec![
            "README.md".to_owned(),
            "src/main.rs".to_owned(),
            "docs/main.md".to_owned(),
        ];
        assert_eq!(
            matching_paths(&paths, "ma", 5),
            ["src/main.rs", "docs/main.md"]
        );
        assert_eq!(matching_paths(&paths, "src", 5), ["src/main.rs"]);
    }
}
