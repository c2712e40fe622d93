//! [`App`]: the chat screen's whole state and the one place input comes
//! in (keys, pastes, the daemon's events, the runtime's answers) and
//! [`Action`]s go out. Drawing is in `render`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::text::Line;
use serde_json::Value;

use crate::commands::{ask_items, model_items, session_items};
use crate::composer::{Composer, matching_paths};
use crate::events::{Effect, apply};
use crate::overlay::{Approvals, Ask, Info, PickKind, Picked, Picker};
use crate::slash::{self, Command};
use crate::style::Palette;
use crate::transcript::Transcript;
use crate::types::{Action, ModelChoice, SessionChoice, StatusInfo};

/// Rows a popup lists at most.
pub(crate) const POPUP_ROWS: usize = 8;

/// The popup above the composer, from what is being typed.
#[derive(Debug)]
pub(crate) enum Popup<'a> {
    Commands(Vec<(Command, &'static str, &'static str)>),
    Paths(Vec<&'a str>),
}

impl Popup<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Popup::Commands(rows) => rows.len(),
            Popup::Paths(rows) => rows.len(),
        }
    }
}

/// The chat screen: state, input handling and drawing, without I/O.
#[derive(Debug)]
pub struct App {
    pub(crate) palette: Palette,
    pub(crate) transcript: Transcript,
    pub(crate) composer: Composer,
    pub(crate) approvals: Approvals,
    pub(crate) picker: Option<Picker>,
    pub(crate) info: Option<Info>,
    pub(crate) status: StatusInfo,
    pub(crate) busy: bool,
    pub(crate) spinner: usize,
    pub(crate) intent: Option<String>,
    pub(crate) tokens: (u64, u64),
    pub(crate) models: Vec<ModelChoice>,
    pub(crate) sessions: Vec<SessionChoice>,
    paths: Vec<String>,
    pub(crate) popup_selected: usize,
    /// Esc closed the popup; it stays closed until the text changes.
    pub(crate) popup_dismissed: bool,
    /// The transcript's top row while scrolled up; `None`: follow the end.
    pub(crate) scroll: Option<usize>,
    /// Rows the transcript had in the last frame (a page for PageUp).
    pub(crate) page: u16,
    /// The width of the last frame (or resize): where PageUp counts rows.
    pub(crate) last_width: u16,
    /// A one-line message in place of the hint until the next key.
    pub(crate) notice: Option<String>,
    dirty: bool,
}

impl App {
    /// A screen; `color: false` (NO_COLOR, not a terminal) drops every
    /// style, and the text alone still says everything.
    pub fn new(color: bool) -> Self {
        let palette = Palette::new(color);
        Self {
            palette,
            transcript: Transcript::new(palette),
            composer: Composer::default(),
            approvals: Approvals::new(),
            picker: None,
            info: None,
            status: StatusInfo::default(),
            busy: false,
            spinner: 0,
            intent: None,
            tokens: (0, 0),
            models: Vec::new(),
            sessions: Vec::new(),
            paths: Vec::new(),
            popup_selected: 0,
            popup_dismissed: false,
            scroll: None,
            page: 20,
            last_width: 80,
            notice: None,
            dirty: true,
        }
    }

    /// Whether anything changed since the last frame was drawn: when
    /// false, the runtime need not draw (idle costs nothing).
    pub fn needs_redraw(&self) -> bool {
        self.dirty
    }

    pub(crate) fn drawn(&mut self) {
        self.dirty = false;
    }

    /// What the status line says about the conversation.
    pub fn set_status(&mut self, status: StatusInfo) {
        if self.status != status {
            self.status = status;
            self.dirty = true;
        }
    }

    /// A turn is running (or not): the status line shows it.
    pub fn set_busy(&mut self, busy: bool) {
        if self.busy != busy {
            self.busy = busy;
            if !busy {
                self.intent = None;
            }
            self.dirty = true;
        }
    }

    /// Animation step of the busy marker; nothing happens when idle.
    pub fn tick(&mut self) {
        if self.busy {
            self.spinner = self.spinner.wrapping_add(1);
            self.dirty = true;
        }
    }

    /// The terminal's new size: wrapped rows are recomputed at the next
    /// frame, and the view follows the end again.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.scroll = None;
        self.last_width = width;
        self.page = height;
        self.dirty = true;
    }

    /// The models `/model` offers.
    pub fn set_models(&mut self, models: Vec<ModelChoice>) {
        self.models = models;
        if let Some(picker) = self.picker.as_mut().filter(|p| p.kind == PickKind::Model) {
            picker.set_items(model_items(&self.models));
        }
        self.dirty = true;
    }

    /// The conversations `/sessions` and `/resume` offer.
    pub fn set_sessions(&mut self, sessions: Vec<SessionChoice>) {
        self.sessions = sessions;
        if let Some(picker) = self.picker.as_mut().filter(|p| p.kind == PickKind::Session) {
            picker.set_items(session_items(&self.sessions));
        }
        self.dirty = true;
    }

    /// The workspace paths `@` completes from.
    pub fn set_paths(&mut self, paths: Vec<String>) {
        self.paths = paths;
        self.dirty = true;
    }

    /// Show text in a panel (the answer to `ShowPolicy`, `ShowDiff`,
    /// `ShowStatus`). A diff's lines are coloured by their sign.
    pub fn show_info(&mut self, title: &str, lines: Vec<String>) {
        self.info = Some(Info {
            title: title.to_owned(),
            lines,
            scroll: 0,
        });
        self.dirty = true;
    }

    /// One of the daemon's transcript events (`session.events`).
    pub fn apply_event(&mut self, event: &Value) {
        match apply(&mut self.transcript, event) {
            Effect::None => return,
            Effect::Changed => {}
            Effect::Idle => {
                self.busy = false;
                self.intent = None;
            }
            Effect::Intent(intent) => self.intent = Some(intent).filter(|i| !i.is_empty()),
            Effect::Usage {
                model,
                input,
                output,
            } => {
                self.tokens.0 += input;
                self.tokens.1 += output;
                if let Some(model) = model
                    && self.status.model.is_empty()
                {
                    self.status.model = model;
                }
            }
        }
        self.dirty = true;
    }

    /// A pending ask of the hub (the approval queue's JSON). Asks of this
    /// session (the status's `session`) open the approval overlay, in
    /// turn; every ask is listed by `/approvals`. False when it has no id.
    pub fn ask(&mut self, ask: &Value) -> bool {
        let Some(ask) = Ask::from_json(ask) else {
            return false;
        };
        self.approvals.add(ask);
        self.dirty = true;
        true
    }

    /// An ask answered elsewhere (or expired): its overlay closes.
    pub fn ask_resolved(&mut self, id: &str) {
        if self.approvals.resolve(id, &self.status.session) {
            if let Some(picker) = self.picker.as_mut().filter(|p| p.kind == PickKind::Ask) {
                picker.set_items(ask_items(self.approvals.all()));
            }
            self.dirty = true;
        }
    }

    /// The committed transcript lines not handed out before, wrapped at
    /// `width`, for the inline mode to print once above its live part
    /// (`Terminal::insert_before`).
    pub fn take_committed(&mut self, width: u16) -> Vec<Line<'static>> {
        self.transcript.take_committed(width)
    }

    /// The whole conversation at `width` (an unfinished answer's tail
    /// included), for the scrollback on exit.
    pub fn transcript_lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = self.transcript.all_lines(width);
        for live in self.transcript.live_lines() {
            lines.extend(crate::wrap::wrap_line(&live, width));
        }
        lines
    }

    /// A bracketed paste: inserted as it is, line breaks included. It
    /// never sends.
    pub fn handle_paste(&mut self, text: String) {
        self.dirty = true;
        if self.approvals.current(&self.status.session).is_some() {
            self.approvals.paste(&text);
            return;
        }
        if let Some(picker) = &mut self.picker {
            picker.filter.push_str(text.lines().next().unwrap_or(""));
            return;
        }
        if self.info.is_some() {
            return;
        }
        self.composer.insert(&text);
        self.text_changed();
    }

    fn text_changed(&mut self) {
        self.popup_dismissed = false;
        self.popup_selected = 0;
    }

    /// The popup the composer's text calls for.
    pub(crate) fn popup(&self) -> Option<Popup<'_>> {
        if self.popup_dismissed {
            return None;
        }
        let text = self.composer.text();
        if slash::typing_command(text) {
            let rows = slash::filter(text);
            return (!rows.is_empty()).then_some(Popup::Commands(rows));
        }
        let token = self.composer.at_token()?;
        let rows = matching_paths(&self.paths, token, POPUP_ROWS);
        // Nothing to offer once the token is a whole path already.
        if rows.is_empty() || rows == [token] {
            return None;
        }
        Some(Popup::Paths(rows))
    }

    /// A key press. What the runtime must do comes back; most keys need
    /// nothing.
    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.dirty = true;
        self.notice = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if self.approvals.current(&self.status.session).is_some() {
            return self
                .approvals
                .key(key, &self.status.session)
                .into_iter()
                .collect();
        }
        if let Some(info) = &mut self.info {
            if !info.key(key) {
                self.info = None;
            }
            return Vec::new();
        }
        if let Some(picker) = &mut self.picker {
            return match picker.key(key) {
                Picked::Open => Vec::new(),
                Picked::Closed => {
                    self.picker = None;
                    Vec::new()
                }
                Picked::Chosen(value) => {
                    let kind = picker.kind;
                    self.picker = None;
                    self.chosen(kind, value)
                }
            };
        }
        if ctrl && key.code == KeyCode::Char('d') {
            if self.composer.is_empty() {
                return vec![Action::Quit];
            }
            self.composer.delete();
            self.text_changed();
            return Vec::new();
        }
        match key.code {
            KeyCode::PageUp => {
                return self.scroll_by(-i64::from(self.page.saturating_sub(2).max(1)));
            }
            KeyCode::PageDown => {
                return self.scroll_by(i64::from(self.page.saturating_sub(2).max(1)));
            }
            _ => {}
        }
        if let Some(actions) = self.popup_key(key) {
            return actions;
        }
        self.composer_key(key)
    }

    fn ctrl_c(&mut self) -> Vec<Action> {
        if self.busy {
            return vec![Action::Abort];
        }
        if self.picker.take().is_some() || self.info.take().is_some() {
            return Vec::new();
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.text_changed();
            self.notice = Some("Ctrl-C again to quit".to_owned());
            return Vec::new();
        }
        vec![Action::Quit]
    }

    fn scroll_by(&mut self, delta: i64) -> Vec<Action> {
        // The render knows the row count; here the top row moves, and a
        // top at or past the end means follow again (render clamps).
        let top = self.scroll.map_or(i64::MAX, |t| t as i64);
        let rows = self.transcript_rows_hint() as i64;
        let bottom_top = (rows - i64::from(self.page)).max(0);
        let new_top = top.min(bottom_top) + delta;
        self.scroll = if new_top >= bottom_top {
            None
        } else {
            Some(new_top.max(0) as usize)
        };
        Vec::new()
    }

    /// Rows of the transcript at the last frame's width.
    fn transcript_rows_hint(&mut self) -> usize {
        let width = self.last_width;
        self.transcript.rows(width).len()
    }

    /// Keys the popup takes: ↑/↓ select, Tab completes, Enter completes
    /// (a path) or runs (a command), Esc closes.
    fn popup_key(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        let popup = self.popup()?;
        let count = popup.len();
        let selected = self.popup_selected.min(count.saturating_sub(1));
        match (key.code, popup) {
            (KeyCode::Up, _) => self.popup_selected = selected.saturating_sub(1),
            (KeyCode::Down, _) => self.popup_selected = (selected + 1).min(count - 1),
            (KeyCode::Esc, _) => self.popup_dismissed = true,
            (KeyCode::Tab | KeyCode::Enter, Popup::Paths(rows)) => {
                let path = rows[selected].to_owned();
                self.composer.complete_at(&path);
                self.text_changed();
            }
            (KeyCode::Tab, Popup::Commands(rows)) => {
                let name = rows[selected].1;
                self.composer.set_text(name);
                self.text_changed();
            }
            (KeyCode::Enter, Popup::Commands(rows)) => {
                let typed = self.composer.text();
                let command = rows
                    .iter()
                    .find(|r| r.1 == typed)
                    .unwrap_or(&rows[selected])
                    .0;
                self.composer.take();
                self.text_changed();
                return Some(self.command(command, ""));
            }
            _ => return None,
        }
        Some(Vec::new())
    }

    fn composer_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let newline_mods = KeyModifiers::SHIFT | KeyModifiers::ALT;
        match key.code {
            KeyCode::Enter if key.modifiers.intersects(newline_mods) => self.composer.insert("\n"),
            KeyCode::Char('j') if ctrl => self.composer.insert("\n"),
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('a') if ctrl => self.composer.home(),
            KeyCode::Char('e') if ctrl => self.composer.end(),
            KeyCode::Char('u') if ctrl => self.composer.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.composer.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.composer.kill_word(),
            KeyCode::Char(_) if ctrl || key.modifiers.contains(KeyModifiers::ALT) => {
                return Vec::new();
            }
            KeyCode::Char(c) => self.composer.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.home(),
            KeyCode::End => self.composer.end(),
            KeyCode::Up => {
                self.composer.up();
            }
            KeyCode::Down => {
                self.composer.down();
            }
            KeyCode::Esc => {
                // Esc while scrolled up: back to the end of the transcript.
                self.scroll = None;
                return Vec::new();
            }
            _ => return Vec::new(),
        }
        self.text_changed();
        Vec::new()
    }

    fn submit(&mut self) -> Vec<Action> {
        let text = self.composer.text();
        if text.trim().is_empty() {
            return Vec::new();
        }
        if let Some((command, arg)) = slash::parse(text) {
            let arg = arg.to_owned();
            self.composer.take();
            self.text_changed();
            return self.command(command, &arg);
        }
        if slash::typing_command(text) {
            self.notice = Some(format!("unknown command {text} (/help lists them)"));
            return Vec::new();
        }
        let prompt = self.composer.take();
        self.text_changed();
        self.scroll = None;
        vec![Action::Submit(prompt)]
    }
}

#[cfg(test)]
mod tests;
