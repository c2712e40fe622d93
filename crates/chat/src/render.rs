//! Drawing: the full screen (transcript, popup or overlay, composer,
//! status line) and the inline mode's live part. Reads the state, changes
//! nothing but scroll clamping and the redraw flag.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::app::{App, POPUP_ROWS, Popup};
use crate::overlay::AskMode;
use crate::tools::{argument_lines, diff_line, looks_like_diff};
use crate::wrap::{str_width, truncate, wrap_line};

/// Rows the composer shows at most (it scrolls to the cursor beyond).
const COMPOSER_ROWS: usize = 8;
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl App {
    /// Draw the full screen (the alternate screen): the transcript scrolls
    /// inside it, following the end unless scrolled up.
    pub fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let (body, composer, status) = self.split(area);
        self.last_width = body.width;
        self.page = body.height;
        self.draw_transcript(body, frame.buffer_mut());
        self.draw_overlays(body, frame);
        self.draw_composer(composer, frame);
        self.draw_status(status, frame.buffer_mut());
        self.drawn();
    }

    /// Draw the inline mode's live part (the runtime prints committed
    /// lines above it with `take_committed`): the unfinished answer line,
    /// calls running, a popup or overlay, the composer, the status line.
    pub fn render_inline(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let (body, composer, status) = self.split(area);
        let live: Vec<Line<'static>> = self
            .transcript
            .live_lines()
            .iter()
            .flat_map(|l| wrap_line(l, body.width))
            .collect();
        let skip = live.len().saturating_sub(usize::from(body.height));
        let top = body.y + body.height - (live.len() - skip) as u16;
        for (i, line) in live[skip..].iter().enumerate() {
            frame
                .buffer_mut()
                .set_line(body.x, top + i as u16, line, body.width);
        }
        self.draw_overlays(body, frame);
        self.draw_composer(composer, frame);
        self.draw_status(status, frame.buffer_mut());
        self.drawn();
    }

    /// Transcript (or live part), composer, status line, top to bottom.
    fn split(&self, area: Rect) -> (Rect, Rect, Rect) {
        let rows = self
            .composer
            .layout(area.width)
            .rows
            .len()
            .min(COMPOSER_ROWS) as u16;
        let status_h = area.height.min(1);
        let composer_h = (rows + 1).min(area.height - status_h);
        let body_h = area.height - status_h - composer_h;
        let body = Rect::new(area.x, area.y, area.width, body_h);
        let composer = Rect::new(area.x, area.y + body_h, area.width, composer_h);
        let status = Rect::new(area.x, area.y + body_h + composer_h, area.width, status_h);
        (body, composer, status)
    }

    fn draw_transcript(&mut self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let live: Vec<Line<'static>> = self
            .transcript
            .live_lines()
            .iter()
            .flat_map(|l| wrap_line(l, area.width))
            .collect();
        let rows = self.transcript.rows(area.width);
        let total = rows.len() + live.len();
        let height = usize::from(area.height);
        let bottom_top = total.saturating_sub(height);
        let top = self.scroll.map_or(bottom_top, |t| t.min(bottom_top));
        for (i, row) in (top..(top + height).min(total)).enumerate() {
            let line = if row < rows.len() {
                &rows[row]
            } else {
                &live[row - rows.len()]
            };
            buf.set_line(area.x, area.y + i as u16, line, area.width);
        }
        if self.scroll.is_some() && top < bottom_top {
            let more = format!(" ↓ {} more rows (PageDown) ", bottom_top - top);
            let x = area.x + area.width.saturating_sub(more.chars().count() as u16);
            buf.set_string(x, area.y + area.height - 1, more, self.palette.warn());
        }
    }

    /// Whatever is drawn over the transcript: the approval, a picker or an
    /// info panel, else the popup of what is being typed.
    fn draw_overlays(&self, area: Rect, frame: &mut Frame<'_>) {
        let inner_w = area.width.saturating_sub(4);
        let (title, lines, footer) = if let Some(ask) = self.approvals.current(&self.status.session)
        {
            self.ask_lines(ask)
        } else if let Some(info) = &self.info {
            let lines = info_lines(&info.lines, self.palette);
            let body = lines.into_iter().skip(info.scroll).collect();
            let footer = vec![Line::styled(
                "Esc close · ↑/↓ PageUp/PageDown scroll",
                self.palette.dim(),
            )];
            (info.title.clone(), body, footer)
        } else if let Some(picker) = &self.picker {
            let mut body = Vec::new();
            if !picker.filter.is_empty() {
                body.push(Line::styled(
                    format!("filter: {}", picker.filter),
                    self.palette.dim(),
                ));
            }
            let visible = picker.visible();
            if visible.is_empty() {
                let empty = if picker.items.is_empty() {
                    "(nothing yet)"
                } else {
                    "(no match)"
                };
                body.push(Line::styled(empty, self.palette.dim()));
            }
            let first = picker.selected.saturating_sub(POPUP_ROWS - 1);
            for (i, item) in visible.iter().enumerate().skip(first).take(POPUP_ROWS) {
                body.push(self.choice_row(i == picker.selected, &item.label, &item.note, inner_w));
            }
            let footer = vec![Line::styled(
                "↑/↓ choose · Enter pick · type to filter · Esc close",
                self.palette.dim(),
            )];
            (picker.title.clone(), body, footer)
        } else if let Some(popup) = self.popup() {
            let selected = self.popup_selected.min(popup.len().saturating_sub(1));
            let first = selected.saturating_sub(POPUP_ROWS - 1);
            let body = match &popup {
                Popup::Commands(rows) => rows
                    .iter()
                    .enumerate()
                    .skip(first)
                    .take(POPUP_ROWS)
                    .map(|(i, (_, name, what))| {
                        self.choice_row(i == selected, &format!("{name:<10}"), what, inner_w)
                    })
                    .collect(),
                Popup::Paths(rows) => rows
                    .iter()
                    .enumerate()
                    .skip(first)
                    .take(POPUP_ROWS)
                    .map(|(i, path)| {
                        self.choice_row(i == selected, &format!("@{path}"), "", inner_w)
                    })
                    .collect(),
            };
            (String::new(), body, Vec::new())
        } else {
            return;
        };
        self.draw_box(area, &title, lines, footer, frame.buffer_mut());
    }

    /// A bordered box at the bottom of `area`, as tall as its lines (the
    /// body cut first so the footer, the keys to press, always shows).
    fn draw_box(
        &self,
        area: Rect,
        title: &str,
        body: Vec<Line<'static>>,
        footer: Vec<Line<'static>>,
        buf: &mut Buffer,
    ) {
        if area.height < 3 || area.width < 6 {
            return;
        }
        // One blank column each side inside the border.
        let inner_w = area.width - 4;
        let wrap = |lines: Vec<Line<'static>>| -> Vec<Line<'static>> {
            lines.iter().flat_map(|l| wrap_line(l, inner_w)).collect()
        };
        let mut body = wrap(body);
        let footer = wrap(footer);
        let room = usize::from(area.height - 2);
        body.truncate(room.saturating_sub(footer.len()));
        let mut lines = body;
        lines.extend(footer);
        lines.truncate(room);
        let height = lines.len() as u16 + 2;
        let rect = Rect::new(area.x, area.y + area.height - height, area.width, height);
        Clear.render(rect, buf);
        let mut block = Block::default()
            .borders(Borders::ALL)
            .border_style(self.palette.dim());
        if !title.is_empty() {
            block = block.title(Span::styled(format!(" {title} "), self.palette.bold()));
        }
        let inner = block.inner(rect);
        block.render(rect, buf);
        for (i, line) in lines.iter().enumerate() {
            buf.set_line(inner.x + 1, inner.y + i as u16, line, inner_w);
        }
    }

    fn choice_row(&self, selected: bool, label: &str, note: &str, width: u16) -> Line<'static> {
        let mark = if selected { "› " } else { "  " };
        let text = if note.is_empty() {
            format!("{mark}{label}")
        } else {
            format!("{mark}{label}  {note}")
        };
        let text = truncate(&text, usize::from(width));
        if selected {
            Line::styled(text, self.palette.selected())
        } else {
            Line::from(text)
        }
    }

    fn ask_lines(
        &self,
        ask: &crate::overlay::Ask,
    ) -> (String, Vec<Line<'static>>, Vec<Line<'static>>) {
        let p = self.palette;
        let mut body = vec![Line::from(vec![
            Span::styled(format!("⚙ {}", ask.tool), p.tool()),
            Span::styled(
                if ask.session.is_empty() || ask.session == self.status.session {
                    String::new()
                } else {
                    format!("  session {}", ask.session)
                },
                p.dim(),
            ),
        ])];
        body.extend(argument_lines(&ask.arguments, p));
        if !ask.reason.is_empty() {
            body.push(Line::from(vec![
                Span::styled("why: ", p.dim()),
                Span::raw(ask.reason.clone()),
            ]));
        }
        let footer = match &self.approvals.mode {
            AskMode::Choose => vec![Line::from(vec![
                Span::styled(ask.prompt(), p.warn()),
                Span::styled("  Esc later", p.dim()),
            ])],
            AskMode::ConfirmRule => {
                let mut lines: Vec<Line<'static>> = ask
                    .rules
                    .iter()
                    .map(|r| Line::from(format!("  rule: {r}")))
                    .collect();
                let quoted: Vec<String> = ask.rules.iter().map(|r| format!("\"{r}\"")).collect();
                let noun = if ask.rules.len() == 1 {
                    "rule"
                } else {
                    "rules"
                };
                lines.push(Line::styled(
                    format!("Keep {noun} {}? [y]es [n]o", quoted.join(", ")),
                    p.warn(),
                ));
                lines
            }
            AskMode::Reason(reason) => vec![Line::from(vec![
                Span::styled("Deny, reason (Enter sends, may be empty): ", p.warn()),
                Span::raw(format!("{reason}▏")),
            ])],
        };
        let pending = self.approvals.count(&self.status.session);
        let title = if pending > 1 {
            format!("Approval needed (1 of {pending})")
        } else {
            "Approval needed".to_owned()
        };
        (title, body, footer)
    }

    fn draw_composer(&self, area: Rect, frame: &mut Frame<'_>) {
        if area.height == 0 {
            return;
        }
        let p = self.palette;
        let buf = frame.buffer_mut();
        buf.set_string(area.x, area.y, "─".repeat(usize::from(area.width)), p.dim());
        let rows_area = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
        if rows_area.height == 0 {
            return;
        }
        let layout = self.composer.layout(area.width);
        if self.composer.is_empty() {
            buf.set_string(rows_area.x, rows_area.y, "› ", p.user());
            let hint = truncate(
                "Ask anything · / commands · @ files",
                usize::from(area.width.saturating_sub(2)),
            );
            buf.set_string(rows_area.x + 2, rows_area.y, hint, p.dim());
        } else {
            let first = layout
                .cursor_row
                .saturating_sub(usize::from(rows_area.height) - 1);
            for (i, row) in layout
                .rows
                .iter()
                .enumerate()
                .skip(first)
                .take(usize::from(rows_area.height))
            {
                let y = rows_area.y + (i - first) as u16;
                let mark = if i == 0 { "› " } else { "  " };
                buf.set_string(rows_area.x, y, mark, p.user());
                buf.set_string(rows_area.x + 2, y, row, ratatui::style::Style::default());
            }
        }
        let modal = self.approvals.current(&self.status.session).is_some()
            || self.picker.is_some()
            || self.info.is_some();
        if !modal {
            let first = layout
                .cursor_row
                .saturating_sub(usize::from(rows_area.height) - 1);
            let y = rows_area.y + (layout.cursor_row - first) as u16;
            let x = rows_area.x + 2 + layout.cursor_col as u16;
            frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), y));
        }
    }

    fn draw_status(&self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let width = usize::from(area.width);
        let s = &self.status;
        let busy = self.busy.then(|| {
            let spin = SPINNER[self.spinner % SPINNER.len()];
            format!("{spin} {}", self.intent.as_deref().unwrap_or("working…"))
        });
        let model = if s.model.is_empty() {
            "no model".to_owned()
        } else {
            s.model.clone()
        };
        let used = (self.tokens != (0, 0)).then(|| {
            format!(
                "in {} / out {}",
                tokens(self.tokens.0),
                tokens(self.tokens.1)
            )
        });
        let asks = self.approvals.count(&s.session);
        let asks = (asks > 0).then(|| format!("{asks} ask{}", if asks == 1 { "" } else { "s" }));
        let hint = match &self.notice {
            Some(notice) => notice.clone(),
            // A narrow row keeps the one key that matters now.
            None if self.busy && width < 60 => "Ctrl-C cancel".to_owned(),
            None if width < 60 => "/help".to_owned(),
            None if self.busy => "Ctrl-C cancel · /help".to_owned(),
            None => "Enter send · /help".to_owned(),
        };
        // What gives way first when the row is short: the session id is
        // cut to its tail (still enough to tell sessions apart), then the
        // runner and backend go; the hint, at the right, stays.
        let short_session = match s.session.char_indices().rev().nth(5) {
            Some((i, _)) if i > 0 => format!("…{}", &s.session[i..]),
            _ => s.session.clone(),
        };
        let attempts = [
            [Some(&s.backend), Some(&s.runner), Some(&s.session)],
            [Some(&s.backend), Some(&s.runner), Some(&short_session)],
            [Some(&s.backend), None, Some(&short_session)],
            [None, None, Some(&short_session)],
        ];
        let mut left = String::new();
        for attempt in attempts {
            let parts: Vec<&str> = busy
                .iter()
                .chain(std::iter::once(&model))
                .chain(attempt.iter().flatten().copied())
                .chain(used.iter())
                .chain(asks.iter())
                .map(String::as_str)
                .filter(|p| !p.is_empty())
                .collect();
            left = format!(" {}", parts.join(" · "));
            if str_width(&left) + str_width(&hint) + 3 <= width {
                break;
            }
        }
        let hint_w = str_width(&hint) + 1;
        let left = truncate(&left, width.saturating_sub(hint_w + 2).max(1));
        let p = self.palette;
        buf.set_style(area, p.status());
        buf.set_string(area.x, area.y, &left, p.status());
        if str_width(&left) + hint_w < width {
            let x = area.x + (width - hint_w) as u16;
            buf.set_string(x, area.y, &hint, p.status());
        }
    }
}

/// Info text; a diff's lines coloured by their sign.
fn info_lines(lines: &[String], palette: crate::style::Palette) -> Vec<Line<'static>> {
    let diff = looks_like_diff(
        &lines
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
    );
    lines
        .iter()
        .map(|l| {
            if diff {
                diff_line(l, palette)
            } else {
                Line::from(l.clone())
            }
        })
        .collect()
}

/// 1234 → "1.2k".
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}
