//! The values the screen hands to the runtime ([`Action`]) and the ones the
//! runtime hands to the screen (status, model and session lists).

/// What the runtime must do after a key: the screen itself does no I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this prompt as a turn (`session.prompt`). The transcript shows
    /// it when the daemon's `user.message` event comes back, not before, so
    /// a prompt the daemon refused never looks sent.
    Submit(String),
    /// Stop the running turn (`session.abort`).
    Abort,
    /// Leave the chat.
    Quit,
    /// Answer an ask (`approvals.answer`). A deny is always `Scope::Once`.
    Answer {
        id: String,
        decision: Decision,
        scope: Scope,
        reason: Option<String>,
    },
    /// Use this model (an id of [`ModelChoice`]) from the next turn on.
    SwitchModel(String),
    /// Use this runner from the next turn on.
    SwitchRunner(Runner),
    /// Continue this conversation (a [`SessionChoice`] id).
    Resume(String),
    /// Start a new conversation.
    NewSession,
    /// Fetch the models across backends and hand them to `App::set_models`;
    /// the picker is already open and fills when they come.
    ListModels,
    /// Fetch the conversations and hand them to `App::set_sessions`.
    ListSessions,
    /// Show the policy: the runtime calls `App::show_info`.
    ShowPolicy,
    /// Show the workspace's changes: the runtime calls `App::show_info`
    /// with the diff's lines.
    ShowDiff,
    /// Show the hub's status: the runtime calls `App::show_info`.
    ShowStatus,
}

/// An answer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    /// The wire name (`approvals.answer`'s `decision`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

/// How far an allow reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Once,
    Session,
    Rule,
}

impl Scope {
    /// The wire name (`approvals.answer`'s `scope`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Session => "session",
            Scope::Rule => "rule",
        }
    }
}

/// The runner of the chat's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Native,
    Copilot,
}

impl Runner {
    /// The name the CLI and `/rpc` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Native => "native",
            Runner::Copilot => "copilot",
        }
    }

    /// The runner of a name, `None` for anything else.
    pub fn parse(name: &str) -> Option<Runner> {
        match name {
            "native" => Some(Runner::Native),
            "copilot" => Some(Runner::Copilot),
            _ => None,
        }
    }
}

/// What the status line shows about the conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusInfo {
    pub model: String,
    pub backend: String,
    pub session: String,
    pub runner: String,
}

/// A model the `/model` picker offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice {
    /// What `Action::SwitchModel` carries (a model name or `BACKEND/MODEL`).
    pub id: String,
    pub backend: String,
    /// A few words shown after it (e.g. "default", "unhealthy").
    pub note: String,
}

/// A conversation the `/sessions` and `/resume` pickers offer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChoice {
    /// What `Action::Resume` carries.
    pub id: String,
    /// A few words shown after it (e.g. its first prompt, when it was used).
    pub note: String,
}
