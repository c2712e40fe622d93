//! The conversation as the program owns it: logical lines, final once
//! committed, wrapped only at render time (and cached per width, extended
//! append-only), plus the answer being streamed, whose unfinished tail is
//! never committed: it is the live line.

use ratatui::text::{Line, Span};

use crate::markdown::Markdown;
use crate::style::Palette;
use crate::wrap::wrap_line;

/// The answer being streamed.
#[derive(Debug, Default)]
struct Streaming {
    md: Markdown,
    /// Text after the last '\n': shown live, not yet committed.
    pending: String,
    /// Everything committed so far (whole lines), to find what the final
    /// `assistant.message` adds to it.
    committed: String,
    committed_lines: usize,
}

/// Wrapped rows of the committed lines at one width.
#[derive(Debug, Default)]
struct WrapCache {
    width: u16,
    rows: Vec<Line<'static>>,
    /// The first row of each wrapped logical line.
    first_row: Vec<usize>,
}

/// A call a task log reported started: its arguments come only here.
#[derive(Debug)]
pub(crate) struct Started {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// The committed transcript and the answer in flight.
#[derive(Debug)]
pub(crate) struct Transcript {
    palette: Palette,
    lines: Vec<Line<'static>>,
    /// Logical lines already handed out by `take_committed`.
    taken: usize,
    /// The first logical line the full screen shows (`/clear`).
    view_start: usize,
    streaming: Option<Streaming>,
    cache: WrapCache,
    /// Logical lines wrapped for the cache, ever: a test sees that a frame
    /// does not re-wrap what it wrapped before.
    pub(crate) wrap_count: usize,
    /// Calls started and not finished (task logs report both ends).
    running: Vec<Started>,
}

impl Transcript {
    pub(crate) fn new(palette: Palette) -> Self {
        Self {
            palette,
            lines: Vec::new(),
            taken: 0,
            view_start: 0,
            streaming: None,
            cache: WrapCache::default(),
            wrap_count: 0,
            running: Vec::new(),
        }
    }

    pub(crate) fn palette(&self) -> Palette {
        self.palette
    }

    /// A block of its own (a prompt, a tool call, an error): the answer in
    /// flight ends first, and a blank line sets the block apart.
    pub(crate) fn push_block(&mut self, block: Vec<Line<'static>>) {
        self.finish_answer();
        self.gap();
        self.lines.extend(block);
    }

    /// A line that follows the previous one without a gap (log lines).
    pub(crate) fn push_line(&mut self, line: Line<'static>) {
        self.finish_answer();
        self.lines.push(line);
    }

    fn gap(&mut self) {
        if self.lines.last().is_some_and(|l| l.width() > 0) {
            self.lines.push(Line::default());
        }
    }

    /// A prompt of the user's.
    pub(crate) fn push_user(&mut self, content: &str) {
        let style = self.palette.user();
        let block = content
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let mark = if i == 0 { "› " } else { "  " };
                Line::from(vec![
                    Span::styled(mark, style),
                    Span::styled(l.replace('\t', "    "), style),
                ])
            })
            .collect();
        self.push_block(block);
    }

    /// A streamed piece of the answer: only lines it completes are
    /// committed; the rest waits in the pending tail.
    pub(crate) fn delta(&mut self, text: &str) {
        let palette = self.palette;
        let stream = self.start_answer();
        stream.pending.push_str(text);
        let mut done = Vec::new();
        while let Some(end) = stream.pending.find('\n') {
            let line: String = stream.pending.drain(..=end).collect();
            stream.committed.push_str(&line);
            stream.committed_lines += 1;
            done.push(stream.md.line(line.trim_end_matches('\n'), palette));
        }
        self.lines.extend(done);
    }

    /// The whole answer: it replaces the pending tail; lines the deltas
    /// already committed stay (they may be in the scrollback already).
    pub(crate) fn answer(&mut self, content: &str) {
        let palette = self.palette;
        let stream = self.start_answer();
        let rest = match content.strip_prefix(stream.committed.as_str()) {
            Some(rest) => rest.to_owned(),
            // The deltas said something else (or were missed): keep what
            // was shown and add what comes after as many lines.
            None => content
                .split_inclusive('\n')
                .skip(stream.committed_lines)
                .collect(),
        };
        let mut done = Vec::new();
        for line in rest.lines() {
            done.push(stream.md.line(line, palette));
        }
        self.streaming = None;
        self.lines.extend(done);
    }

    fn start_answer(&mut self) -> &mut Streaming {
        if self.streaming.is_none() {
            self.gap();
        }
        self.streaming.get_or_insert_with(Streaming::default)
    }

    /// The answer ended without its whole text (idle, an error, a tool
    /// call): its tail is final now.
    pub(crate) fn finish_answer(&mut self) {
        if let Some(mut stream) = self.streaming.take()
            && !stream.pending.is_empty()
        {
            let line = stream.md.line(&stream.pending, self.palette);
            self.lines.push(line);
        }
    }

    pub(crate) fn tool_started(&mut self, started: Started) {
        self.finish_answer();
        self.running.push(started);
    }

    /// Forget a started call, handing back what its start said.
    pub(crate) fn tool_finished(&mut self, id: &str) -> Option<Started> {
        let at = self.running.iter().position(|s| s.id == id)?;
        Some(self.running.remove(at))
    }

    /// The live part below the committed lines: the unfinished line of the
    /// answer, and the calls still running.
    pub(crate) fn live_lines(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let Some(stream) = &self.streaming
            && !stream.pending.is_empty()
        {
            // A clone: the line is drawn as it will look, without moving
            // the fence state past a line that is not complete.
            out.push(stream.md.clone().line(&stream.pending, self.palette));
        }
        for started in &self.running {
            let line = format!("⋯ {} running", started.name);
            out.push(Line::styled(line, self.palette.dim()));
        }
        out
    }

    /// `/clear`: the full screen shows nothing before this point; the
    /// history (and `transcript_lines`) keeps it.
    pub(crate) fn clear_view(&mut self) {
        self.finish_answer();
        self.view_start = self.lines.len();
    }

    /// The rows of the visible transcript at `width`: wrapped once per
    /// width, then only what was committed since.
    pub(crate) fn rows(&mut self, width: u16) -> &[Line<'static>] {
        if self.cache.width != width {
            self.cache = WrapCache {
                width,
                ..WrapCache::default()
            };
        }
        for line in &self.lines[self.cache.first_row.len()..] {
            self.cache.first_row.push(self.cache.rows.len());
            self.cache.rows.extend(wrap_line(line, width));
            self.wrap_count += 1;
        }
        let start = self
            .cache
            .first_row
            .get(self.view_start)
            .copied()
            .unwrap_or(self.cache.rows.len());
        &self.cache.rows[start..]
    }

    /// The lines committed since the last call, wrapped at `width`: each
    /// logical line is handed out once, whatever the widths asked.
    pub(crate) fn take_committed(&mut self, width: u16) -> Vec<Line<'static>> {
        let new = &self.lines[self.taken..];
        self.taken = self.lines.len();
        new.iter().flat_map(|l| wrap_line(l, width)).collect()
    }

    /// The whole conversation at `width`, `/clear` notwithstanding.
    pub(crate) fn all_lines(&self, width: u16) -> Vec<Line<'static>> {
        self.lines
            .iter()
            .flat_map(|l| wrap_line(l, width))
            .collect()
    }
}

#[cfg(test)]
mod tests;
