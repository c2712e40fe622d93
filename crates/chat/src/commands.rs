//! What a slash command or a picker's choice does to the screen, and the
//! actions it asks of the runtime.

use crate::app::App;
use crate::overlay::{Ask, Item, PickKind, Picker};
use crate::slash::{self, Command};
use crate::types::{Action, ModelChoice, Runner, SessionChoice};

impl App {
    /// Run a command (its argument may be empty).
    pub(crate) fn command(&mut self, command: Command, arg: &str) -> Vec<Action> {
        match command {
            Command::Model if !arg.is_empty() => vec![Action::SwitchModel(arg.to_owned())],
            Command::Model => {
                let items = model_items(&self.models);
                self.picker = Some(Picker::new(PickKind::Model, "Model", items));
                vec![Action::ListModels]
            }
            Command::Runner => match Runner::parse(arg) {
                Some(runner) => vec![Action::SwitchRunner(runner)],
                None => {
                    let items = [Runner::Native, Runner::Copilot]
                        .iter()
                        .map(|r| Item {
                            value: r.as_str().to_owned(),
                            label: r.as_str().to_owned(),
                            note: if self.status.runner == r.as_str() {
                                "current".into()
                            } else {
                                String::new()
                            },
                        })
                        .collect();
                    self.picker = Some(Picker::new(PickKind::Runner, "Runner", items));
                    Vec::new()
                }
            },
            Command::Sessions | Command::Resume if !arg.is_empty() => {
                vec![Action::Resume(arg.to_owned())]
            }
            Command::Sessions | Command::Resume => {
                let items = session_items(&self.sessions);
                self.picker = Some(Picker::new(PickKind::Session, "Conversations", items));
                vec![Action::ListSessions]
            }
            Command::New => vec![Action::NewSession],
            Command::Approvals => {
                let items = ask_items(self.approvals.all());
                self.picker = Some(Picker::new(PickKind::Ask, "Pending asks", items));
                Vec::new()
            }
            Command::Policy => vec![Action::ShowPolicy],
            Command::Diff => vec![Action::ShowDiff],
            Command::Status => vec![Action::ShowStatus],
            Command::Clear => {
                self.transcript.clear_view();
                self.scroll = None;
                Vec::new()
            }
            Command::Help => {
                self.show_info("Help", slash::help_lines());
                Vec::new()
            }
            Command::Quit => vec![Action::Quit],
        }
    }

    pub(crate) fn chosen(&mut self, kind: PickKind, value: String) -> Vec<Action> {
        match kind {
            PickKind::Model => vec![Action::SwitchModel(value)],
            PickKind::Runner => Runner::parse(&value)
                .map(Action::SwitchRunner)
                .into_iter()
                .collect(),
            PickKind::Session => vec![Action::Resume(value)],
            PickKind::Ask => {
                self.approvals.focus(&value);
                Vec::new()
            }
        }
    }
}

pub(crate) fn model_items(models: &[ModelChoice]) -> Vec<Item> {
    models
        .iter()
        .map(|m| Item {
            value: m.id.clone(),
            label: m.id.clone(),
            note: [m.backend.as_str(), m.note.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" · "),
        })
        .collect()
}

pub(crate) fn session_items(sessions: &[SessionChoice]) -> Vec<Item> {
    sessions
        .iter()
        .map(|s| Item {
            value: s.id.clone(),
            label: s.id.clone(),
            note: s.note.clone(),
        })
        .collect()
}

pub(crate) fn ask_items(asks: &[Ask]) -> Vec<Item> {
    asks.iter()
        .map(|a| Item {
            value: a.id.clone(),
            label: a.tool.clone(),
            note: format!("{} · {}", a.reason, a.session),
        })
        .collect()
}
