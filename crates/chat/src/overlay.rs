//! What is drawn over the transcript: the approval of a pending ask (with
//! its rule confirmation and deny reason), pickers, and an info panel.
//! State and keys only; `render` draws them.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use serde_json::Value;

use crate::types::{Action, Decision, Scope};

/// An ask as the approval queue's JSON has it (already redacted by the
/// daemon).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ask {
    pub id: String,
    pub tool: String,
    pub arguments: Value,
    pub reason: String,
    pub session: String,
    pub choices: Vec<String>,
    pub rules: Vec<String>,
}

impl Ask {
    /// `None` without an id: nothing could answer it.
    pub(crate) fn from_json(value: &Value) -> Option<Ask> {
        let id = match value.get("id")? {
            Value::String(id) => id.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let list = |key: &str| -> Option<Vec<String>> {
            Some(
                value
                    .get(key)?
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            )
        };
        Some(Ask {
            id,
            tool: text("tool"),
            arguments: value.get("arguments").cloned().unwrap_or(Value::Null),
            reason: text("reason"),
            session: text("session"),
            // An ask that does not say which scopes it takes offers the
            // three the queue knows.
            choices: list("choices")
                .unwrap_or_else(|| ["once", "session", "rule"].map(str::to_owned).to_vec()),
            rules: list("rules").unwrap_or_default(),
        })
    }

    pub(crate) fn offers(&self, scope: &str) -> bool {
        self.choices.iter().any(|c| c == scope) && (scope != "rule" || !self.rules.is_empty())
    }

    /// `Allow? [y] once [s] session [r] rule [n] deny`, with only the
    /// scopes this ask offers.
    pub(crate) fn prompt(&self) -> String {
        let mut line = "Allow? [y] once".to_owned();
        if self.offers("session") {
            line.push_str(" [s] session");
        }
        if self.offers("rule") {
            line.push_str(" [r] rule");
        }
        line.push_str(" [n] deny");
        line
    }
}

/// Where the answer of the shown ask is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AskMode {
    Choose,
    /// `r` was pressed: the rules are shown with `Keep rule … ? [y]es [n]o`.
    ConfirmRule,
    /// `n` was pressed: the reason being typed.
    Reason(String),
}

/// The asks the runtime handed over, in arrival order.
#[derive(Debug)]
pub(crate) struct Approvals {
    asks: Vec<Ask>,
    /// Asks put aside with Esc: still pending, answerable from /approvals.
    aside: Vec<String>,
    /// An ask chosen in /approvals (of any session).
    focused: Option<String>,
    pub mode: AskMode,
}

impl Approvals {
    pub(crate) fn new() -> Self {
        Self {
            asks: Vec::new(),
            aside: Vec::new(),
            focused: None,
            mode: AskMode::Choose,
        }
    }

    pub(crate) fn add(&mut self, ask: Ask) {
        match self.asks.iter_mut().find(|a| a.id == ask.id) {
            Some(known) => *known = ask,
            None => self.asks.push(ask),
        }
    }

    /// An ask answered (here or elsewhere) or expired: gone from the
    /// queue, its overlay closed. True when it was known.
    pub(crate) fn resolve(&mut self, id: &str, session: &str) -> bool {
        let shown = self.current(session).map(|a| a.id.clone());
        let before = self.asks.len();
        self.asks.retain(|a| a.id != id);
        self.aside.retain(|a| a != id);
        if self.focused.as_deref() == Some(id) {
            self.focused = None;
        }
        if shown.as_deref() == Some(id) {
            self.mode = AskMode::Choose;
        }
        self.asks.len() != before
    }

    pub(crate) fn all(&self) -> &[Ask] {
        &self.asks
    }

    /// Pending asks of this session (the status line's count).
    pub(crate) fn count(&self, session: &str) -> usize {
        self.asks.iter().filter(|a| of_session(a, session)).count()
    }

    /// The ask the overlay shows: one picked in /approvals, else the
    /// oldest of this session not put aside.
    pub(crate) fn current(&self, session: &str) -> Option<&Ask> {
        if let Some(id) = &self.focused
            && let Some(ask) = self.asks.iter().find(|a| &a.id == id)
        {
            return Some(ask);
        }
        self.asks
            .iter()
            .find(|a| of_session(a, session) && !self.aside.contains(&a.id))
    }

    pub(crate) fn focus(&mut self, id: &str) {
        self.focused = Some(id.to_owned());
        self.aside.retain(|a| a != id);
        self.mode = AskMode::Choose;
    }

    /// A key while the overlay shows: it is modal, so every key is taken.
    pub(crate) fn key(&mut self, key: KeyEvent, session: &str) -> Option<Action> {
        let ask = self.current(session)?.clone();
        let answer = |decision, scope, reason| Action::Answer {
            id: ask.id.clone(),
            decision,
            scope,
            reason,
        };
        let action = match (&mut self.mode, key.code) {
            (AskMode::Choose, KeyCode::Char('y' | 'Y')) => {
                Some(answer(Decision::Allow, Scope::Once, None))
            }
            (AskMode::Choose, KeyCode::Char('s' | 'S')) if ask.offers("session") => {
                Some(answer(Decision::Allow, Scope::Session, None))
            }
            (AskMode::Choose, KeyCode::Char('r' | 'R')) if ask.offers("rule") => {
                self.mode = AskMode::ConfirmRule;
                None
            }
            (AskMode::Choose, KeyCode::Char('n' | 'N')) => {
                self.mode = AskMode::Reason(String::new());
                None
            }
            (AskMode::Choose, KeyCode::Esc) => {
                self.aside.push(ask.id.clone());
                self.focused = None;
                None
            }
            (AskMode::ConfirmRule, KeyCode::Char('y' | 'Y') | KeyCode::Enter) => {
                Some(answer(Decision::Allow, Scope::Rule, None))
            }
            (AskMode::ConfirmRule, KeyCode::Char('n' | 'N') | KeyCode::Esc) => {
                self.mode = AskMode::Choose;
                None
            }
            (AskMode::Reason(reason), KeyCode::Enter) => {
                let reason = reason.trim().to_owned();
                let reason = (!reason.is_empty()).then_some(reason);
                Some(answer(Decision::Deny, Scope::Once, reason))
            }
            (AskMode::Reason(reason), KeyCode::Char(c)) => {
                reason.push(c);
                None
            }
            (AskMode::Reason(reason), KeyCode::Backspace) => {
                reason.pop();
                None
            }
            (AskMode::Reason(_), KeyCode::Esc) => {
                self.mode = AskMode::Choose;
                None
            }
            _ => None,
        };
        if action.is_some() {
            // Answered here: the queue will confirm, but the next ask
            // should not wait for that round trip.
            self.resolve(&ask.id, session);
        }
        action
    }

    /// A paste while the deny reason is typed goes into it, on one line.
    pub(crate) fn paste(&mut self, text: &str) -> bool {
        match &mut self.mode {
            AskMode::Reason(reason) => {
                reason.push_str(&text.replace(['\r', '\n'], " "));
                true
            }
            _ => false,
        }
    }
}

fn of_session(ask: &Ask, session: &str) -> bool {
    // Before the runtime said which session is ours, every ask is ours.
    session.is_empty() || ask.session.is_empty() || ask.session == session
}

/// What a picker picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PickKind {
    Model,
    Runner,
    Session,
    Ask,
}

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub value: String,
    pub label: String,
    pub note: String,
}

/// A list to choose from, filtered by what is typed.
#[derive(Debug)]
pub(crate) struct Picker {
    pub kind: PickKind,
    pub title: String,
    pub items: Vec<Item>,
    pub selected: usize,
    pub filter: String,
}

/// What a key did to a picker.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Picked {
    Open,
    Closed,
    Chosen(String),
}

impl Picker {
    pub(crate) fn new(kind: PickKind, title: &str, items: Vec<Item>) -> Self {
        Self {
            kind,
            title: title.to_owned(),
            items,
            selected: 0,
            filter: String::new(),
        }
    }

    pub(crate) fn visible(&self) -> Vec<&Item> {
        let filter = self.filter.to_lowercase();
        self.items
            .iter()
            .filter(|i| {
                i.label.to_lowercase().contains(&filter) || i.note.to_lowercase().contains(&filter)
            })
            .collect()
    }

    pub(crate) fn set_items(&mut self, items: Vec<Item>) {
        self.items = items;
        self.selected = self.selected.min(self.visible().len().saturating_sub(1));
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Picked {
        let count = self.visible().len();
        match key.code {
            KeyCode::Esc => return Picked::Closed,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            KeyCode::Enter | KeyCode::Tab => {
                return match self.visible().get(self.selected) {
                    Some(item) => Picked::Chosen(item.value.clone()),
                    None => Picked::Open,
                };
            }
            KeyCode::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        Picked::Open
    }
}

/// Text the runtime supplied (/policy, /diff, /status) or /help.
#[derive(Debug)]
pub(crate) struct Info {
    pub title: String,
    pub lines: Vec<String>,
    pub scroll: usize,
}

impl Info {
    /// False when the key closed it.
    pub(crate) fn key(&mut self, key: KeyEvent) -> bool {
        let last = self.lines.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => return false,
            KeyCode::Up => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Down => self.scroll = (self.scroll + 1).min(last),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown => self.scroll = (self.scroll + 10).min(last),
            KeyCode::Home => self.scroll = 0,
            KeyCode::End => self.scroll = last,
            _ => {}
        }
        true
    }
}
