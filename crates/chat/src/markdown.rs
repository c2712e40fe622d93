//! Markdown, one complete line at a time. An answer is committed line by
//! line as it streams, and a committed line is final (it may already be in
//! the terminal's scrollback), so the renderer never looks ahead: block
//! structure that spans lines is the fence state kept here; everything
//! else (headings, lists, quotes, emphasis, code spans, links) is read from
//! the line itself by pulldown-cmark.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::highlight::highlight_line;
use crate::style::Palette;

/// An open code fence: its marker (``` or ~~~, at least three) and language.
#[derive(Debug, Clone)]
struct Fence {
    marker: String,
    lang: String,
}

/// The state between lines of one Markdown text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Markdown {
    fence: Option<Fence>,
}

impl Markdown {
    /// The rendered form of the next complete line (without its '\n').
    pub(crate) fn line(&mut self, raw: &str, palette: Palette) -> Line<'static> {
        let raw = raw.strip_suffix('\r').unwrap_or(raw).replace('\t', "    ");
        let trimmed = raw.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(&fence.marker) && trimmed[fence.marker.len()..].trim().is_empty()
            {
                self.fence = None;
                return Line::styled(raw.clone(), palette.dim());
            }
            let lang = fence.lang.clone();
            return highlight_line(&raw, &lang, palette);
        }
        if let Some(marker) = fence_marker(trimmed) {
            let lang = trimmed[marker.len()..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_lowercase();
            self.fence = Some(Fence { marker, lang });
            // The fence itself stays visible: without colour it is what
            // tells code from prose.
            return Line::styled(raw.clone(), palette.dim());
        }
        inline_line(&raw, palette)
    }
}

/// "```" or "~~~" (or longer) opening a fence.
fn fence_marker(trimmed: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = trimmed.chars().take_while(|x| *x == c).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(c, n).collect());
        }
    }
    None
}

/// One line of prose.
fn inline_line(raw: &str, palette: Palette) -> Line<'static> {
    if raw.trim().is_empty() {
        return Line::default();
    }
    // pulldown-cmark drops a line's indentation; a nested list item keeps it.
    let indent: String = raw.chars().take_while(|c| *c == ' ').collect();
    let mut spans: Vec<Span<'static>> = Vec::new();
    if !indent.is_empty() {
        spans.push(Span::raw(indent));
    }
    let mut styles: Vec<Style> = vec![Style::default()];
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut link: Option<String> = None;
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(raw, options) {
        let current = styles.last().copied().unwrap_or_default();
        match event {
            Event::Start(tag) => match tag {
                Tag::Heading { level, .. } => {
                    let marks = "#".repeat(level as usize);
                    spans.push(Span::styled(format!("{marks} "), palette.heading()));
                    styles.push(current.patch(palette.heading()));
                }
                Tag::BlockQuote(_) => spans.push(Span::styled("│ ", palette.dim())),
                Tag::List(start) => lists.push(start),
                Tag::Item => {
                    let bullet = match lists.last_mut() {
                        Some(Some(n)) => {
                            let bullet = format!("{n}. ");
                            *n += 1;
                            bullet
                        }
                        _ => "• ".to_owned(),
                    };
                    spans.push(Span::styled(bullet, palette.dim()));
                }
                Tag::Emphasis => styles.push(current.patch(palette.italic())),
                Tag::Strong => styles.push(current.patch(palette.bold())),
                Tag::Strikethrough => styles.push(current.patch(palette.dim())),
                Tag::Link { dest_url, .. } => {
                    link = Some(dest_url.to_string());
                    styles.push(current.patch(palette.link()));
                }
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Heading(_) | TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                    styles.pop();
                }
                TagEnd::Link => {
                    styles.pop();
                    if let Some(url) = link.take() {
                        let shown: String = spans
                            .last()
                            .map(|s| s.content.to_string())
                            .unwrap_or_default();
                        if shown != url {
                            spans.push(Span::styled(format!(" ({url})"), palette.dim()));
                        }
                    }
                }
                TagEnd::List(_) => {
                    lists.pop();
                }
                _ => {}
            },
            Event::Text(text) => spans.push(Span::styled(text.to_string(), current)),
            Event::Code(code) => {
                // Without colour the backticks are what marks code.
                let shown = if palette.color() {
                    code.to_string()
                } else {
                    format!("`{code}`")
                };
                spans.push(Span::styled(shown, palette.code()));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                spans.push(Span::styled(html.trim_end().to_owned(), current));
            }
            Event::SoftBreak | Event::HardBreak => spans.push(Span::raw(" ")),
            Event::Rule => spans.push(Span::styled("─".repeat(24), palette.dim())),
            Event::TaskListMarker(done) => {
                spans.push(Span::raw(if done { "[x] " } else { "[ ] " }));
            }
            _ => {}
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str) -> Vec<String> {
        let mut md = Markdown::default();
        text.lines()
            .map(|l| md.line(l, Palette::new(false)).to_string())
            .collect()
    }

    #[test]
    fn block_markers_read_without_colour() {
        let out = render("# Title\n- one\n  - two\n3. three\n> quoted\nsome **bold** and `code`");
        assert_eq!(
            out,
            [
                "# Title",
                "• one",
                "  • two",
                "3. three",
                "│ quoted",
                "some bold and `code`"
            ]
        );
    }

    #[test]
    fn fences_keep_code_verbatim() {
        let out = render("```rust\n# not a heading\n- not a list\n```\n- a list");
        assert_eq!(
            out,
            [
                "```rust",
                "# not a heading",
                "- not a list",
                "```",
                "• a list"
            ]
        );
    }

    #[test]
    fn links_show_their_target() {
        assert_eq!(
            render("see [docs](https://x.y/z)"),
            ["see docs (https://x.y/z)"]
        );
    }
}
