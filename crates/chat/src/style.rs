//! The one palette: every style the screen uses comes from here, so "no
//! colour" (NO_COLOR, a pipe) is one switch and the text alone must carry
//! the meaning (signs, "✓ allowed", "✗ denied").

use ratatui::style::{Color, Modifier, Style};

/// Styles by role; all plain when colour is off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Palette {
    color: bool,
}

impl Palette {
    pub(crate) fn new(color: bool) -> Self {
        Self { color }
    }

    pub(crate) fn color(self) -> bool {
        self.color
    }

    fn pick(self, style: Style) -> Style {
        if self.color { style } else { Style::default() }
    }

    pub(crate) fn user(self) -> Style {
        self.pick(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD))
    }
    pub(crate) fn dim(self) -> Style {
        self.pick(Style::new().fg(Color::DarkGray))
    }
    pub(crate) fn bold(self) -> Style {
        self.pick(Style::new().add_modifier(Modifier::BOLD))
    }
    pub(crate) fn italic(self) -> Style {
        self.pick(Style::new().add_modifier(Modifier::ITALIC))
    }
    pub(crate) fn heading(self) -> Style {
        self.pick(Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD))
    }
    pub(crate) fn code(self) -> Style {
        self.pick(Style::new().fg(Color::Yellow))
    }
    pub(crate) fn link(self) -> Style {
        self.pick(
            Style::new()
                .fg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
        )
    }
    pub(crate) fn tool(self) -> Style {
        self.pick(Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD))
    }
    pub(crate) fn ok(self) -> Style {
        self.pick(Style::new().fg(Color::Green))
    }
    pub(crate) fn error(self) -> Style {
        self.pick(Style::new().fg(Color::Red))
    }
    pub(crate) fn warn(self) -> Style {
        self.pick(Style::new().fg(Color::Yellow))
    }
    pub(crate) fn added(self) -> Style {
        self.ok()
    }
    pub(crate) fn removed(self) -> Style {
        self.error()
    }
    pub(crate) fn hunk(self) -> Style {
        self.pick(Style::new().fg(Color::Cyan))
    }
    pub(crate) fn keyword(self) -> Style {
        self.pick(Style::new().fg(Color::Magenta))
    }
    pub(crate) fn string(self) -> Style {
        self.pick(Style::new().fg(Color::Green))
    }
    pub(crate) fn number(self) -> Style {
        self.pick(Style::new().fg(Color::Yellow))
    }
    pub(crate) fn comment(self) -> Style {
        self.pick(
            Style::new()
                .fg(Color::DarkGray)
                .add_modifier(Modifier::ITALIC),
        )
    }
    pub(crate) fn selected(self) -> Style {
        // Without colour the picker marks the row with "›" instead.
        self.pick(Style::new().bg(Color::Blue).fg(Color::White))
    }
    pub(crate) fn status(self) -> Style {
        self.pick(Style::new().bg(Color::DarkGray).fg(Color::White))
    }
}
