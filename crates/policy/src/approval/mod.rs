//! Who answers a policy "ask", and how. The decision path asks an
//! [`Approver`] once the rules and the checks of a call's accesses said
//! "ask" and no grant covers the call; the approver comes back with an
//! [`Approval`]: allowed (once, for the session, or by a kept rule),
//! denied by a person, timed out, or nobody to ask. A door with nobody to
//! answer uses [`DenyAll`], so "ask" fails closed.
//!
//! What a grant matches is in [`grants`]: the same keys the shell analysis
//! and the permission rules decide on, never a display string.

pub mod grants;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use grants::{GrantKey, Rule, RuleStore, SessionGrants};

/// Where a person answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    /// `copilot-bridge approvals` or the terminal prompt of `tool`/`run`.
    Cli,
    /// `/rpc` `approvals.answer` by any other client.
    Rpc,
    Web,
    Chat,
    Vscode,
    /// An agent's own prompt (the agent asked its user).
    Agent,
}

impl Surface {
    pub const ALL: [Self; 6] = [
        Self::Cli,
        Self::Rpc,
        Self::Web,
        Self::Chat,
        Self::Vscode,
        Self::Agent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::Rpc => "rpc",
            Self::Web => "web",
            Self::Chat => "chat",
            Self::Vscode => "vscode",
            Self::Agent => "agent",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|surface| surface.as_str() == name)
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far an "allow" reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "lowercase")]
pub enum Scope {
    /// This call only.
    Once,
    /// Calls with the same keys in the same session, until it ends.
    Session,
    /// Calls with the same keys in the same workspace, kept in the state
    /// directory until `expires_at` (Unix seconds) or revoked.
    Rule {
        #[serde(rename = "expiresAt", skip_serializing_if = "Option::is_none")]
        expires_at: Option<u64>,
    },
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Rule { .. } => "rule",
        }
    }
}

/// One question for a person: may this call run?
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ask {
    /// The session that raised it.
    pub session: String,
    /// The session is shared by several clients (the daemon's default
    /// session): a session grant reaches all of them.
    pub shared: bool,
    pub workspace: PathBuf,
    pub tool: String,
    /// Redacted and bounded (see [`crate::audit::Redacted::record_of`]):
    /// every surface shows the same text.
    pub arguments: Value,
    /// Why the policy asks, redacted.
    pub reason: String,
    /// What a session or rule grant would be given for; `None` when the
    /// call can only be allowed once (a command the analysis cannot key).
    pub keys: Option<Vec<GrantKey>>,
    /// Rules can be kept (the host has a rule store).
    #[serde(skip)]
    pub rules_kept: bool,
}

impl Ask {
    /// The scopes a person may answer with.
    pub fn choices(&self) -> Vec<&'static str> {
        match &self.keys {
            Some(keys) if !keys.is_empty() && self.rules_kept => vec!["once", "session", "rule"],
            Some(keys) if !keys.is_empty() => vec!["once", "session"],
            _ => vec!["once"],
        }
    }

    /// The rules a rule grant would keep, as they are listed and revoked.
    pub fn rule_texts(&self) -> Vec<String> {
        self.keys
            .iter()
            .flatten()
            .map(GrantKey::rule_text)
            .collect()
    }

    /// Whether `scope` is one of [`Self::choices`].
    pub fn allows(&self, scope: Scope) -> bool {
        self.choices().contains(&scope.name())
    }
}

/// How an ask ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Approval {
    Allowed {
        scope: Scope,
        surface: Surface,
        waited: Duration,
    },
    Denied {
        surface: Surface,
        /// The person's words, if any.
        reason: Option<String>,
        waited: Duration,
    },
    /// Nobody answered within the approval timeout.
    TimedOut { waited: Duration },
    /// Nobody can be asked here (no queue, a timeout of 0, no terminal).
    Unanswerable,
    /// The queue holds as many questions of this session as it takes.
    QueueFull { pending: usize },
    /// The caller went away (hung up, cancelled, its session ended).
    Withdrawn { waited: Duration },
}

impl Approval {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed { .. })
    }

    /// The outcome's name in the audit log and in events.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Allowed { .. } => "allow",
            Self::Denied { .. } => "deny",
            Self::TimedOut { .. } => "approval_timeout",
            Self::Unanswerable => "unanswerable",
            Self::QueueFull { .. } => "queue_full",
            Self::Withdrawn { .. } => "withdrawn",
        }
    }

    pub fn surface(&self) -> Option<Surface> {
        match self {
            Self::Allowed { surface, .. } | Self::Denied { surface, .. } => Some(*surface),
            _ => None,
        }
    }

    pub fn waited(&self) -> Duration {
        match self {
            Self::Allowed { waited, .. }
            | Self::Denied { waited, .. }
            | Self::TimedOut { waited }
            | Self::Withdrawn { waited } => *waited,
            Self::Unanswerable | Self::QueueFull { .. } => Duration::ZERO,
        }
    }

    /// Why the call does not run, as its caller reads it; `policy_reason`
    /// is why the policy asked. Nobody to ask keeps the words callers have
    /// always had.
    pub fn refusal(&self, policy_reason: &str) -> String {
        match self {
            Self::Allowed { .. } => String::new(),
            Self::Unanswerable => format!("approval required and not given: {policy_reason}"),
            Self::QueueFull { pending } => format!(
                "approval required and not given: {pending} questions of this session already wait for an answer ({policy_reason})"
            ),
            Self::TimedOut { waited } => format!(
                "approval_timeout: no answer within {} s ({policy_reason})",
                waited.as_secs_f64().round()
            ),
            Self::Denied {
                surface, reason, ..
            } => match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                Some(reason) => format!("denied by {surface}: {reason}"),
                None => format!("denied by {surface} ({policy_reason})"),
            },
            Self::Withdrawn { .. } => {
                format!("approval withdrawn: the caller went away ({policy_reason})")
            }
        }
    }

    /// The audit log's record of the answer (the ask itself is the entry's
    /// input).
    pub fn record(&self) -> Value {
        let mut record = serde_json::json!({
            "answer": self.outcome(),
            "waitedMs": u64::try_from(self.waited().as_millis()).unwrap_or(u64::MAX),
        });
        if let Some(surface) = self.surface() {
            record["surface"] = Value::from(surface.as_str());
        }
        match self {
            Self::Allowed { scope, .. } => {
                record["scope"] = Value::from(scope.name());
                if let Scope::Rule {
                    expires_at: Some(at),
                } = scope
                {
                    record["expiresAt"] = Value::from(*at);
                }
            }
            Self::Denied {
                reason: Some(reason),
                ..
            } => record["reason"] = Value::from(crate::redact(reason).into_owned()),
            _ => {}
        }
        record
    }
}

/// An approver's answer, when it comes.
pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;

/// Answers a policy "ask": may this call run?
pub trait Approver: Send + Sync {
    /// Puts `ask` to a person and waits for the answer. Dropping the future
    /// withdraws the question.
    fn approve(&self, ask: Ask) -> ApprovalFuture<'_>;

    /// Whether the question goes back to the caller instead, who puts it
    /// to its own user (an agent's hook: the agent asks, with its own
    /// prompt). The decision then ends in "ask", not in an answer.
    fn leaves_asking_to_caller(&self) -> bool {
        false
    }
}

/// The approver of an agent's hook: the agent asks its user.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentAsks;

impl Approver for AgentAsks {
    fn approve(&self, _ask: Ask) -> ApprovalFuture<'_> {
        Box::pin(std::future::ready(Approval::Unanswerable))
    }

    fn leaves_asking_to_caller(&self) -> bool {
        true
    }
}

/// The approver of doors with nobody to ask: every "ask" is a deny.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve(&self, _ask: Ask) -> ApprovalFuture<'_> {
        Box::pin(std::future::ready(Approval::Unanswerable))
    }
}
