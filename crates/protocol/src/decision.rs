//! The verdict a policy gives a tool call, in the shape hook commands and the
//! audit log print.

use serde::{Deserialize, Serialize};

/// What happens to a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    Allow,
    Deny,
    Ask,
}

impl DecisionKind {
    /// The wire name: `allow`, `deny` or `ask`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }
}

/// A verdict with the reason a user will read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub decision: DecisionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Decision {
    pub fn allow() -> Self {
        Self {
            decision: DecisionKind::Allow,
            reason: None,
        }
    }

    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            decision: DecisionKind::Deny,
            reason: Some(reason.into()),
        }
    }

    pub fn ask(reason: impl Into<String>) -> Self {
        Self {
            decision: DecisionKind::Ask,
            reason: Some(reason.into()),
        }
    }

    pub fn is_allow(&self) -> bool {
        self.decision == DecisionKind::Allow
    }

    pub fn is_deny(&self) -> bool {
        self.decision == DecisionKind::Deny
    }

    /// The stricter of two verdicts: deny wins over ask, ask over allow; two
    /// asks keep both reasons, so the person asked sees everything.
    pub fn stricter(self, other: Self) -> Self {
        match (self.decision, other.decision) {
            (DecisionKind::Deny, _) => self,
            (_, DecisionKind::Deny) => other,
            (DecisionKind::Ask, DecisionKind::Ask) => Self::ask(format!(
                "{}; {}",
                self.reason_or_default(),
                other.reason_or_default()
            )),
            (DecisionKind::Ask, _) => self,
            _ => other,
        }
    }

    /// The reason, or a generic text naming the decision.
    pub fn reason_or_default(&self) -> &str {
        self.reason.as_deref().unwrap_or(match self.decision {
            DecisionKind::Allow => "allowed",
            DecisionKind::Deny => "denied by policy",
            DecisionKind::Ask => "needs approval",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stricter_verdict_wins_and_asks_keep_both_reasons() {
        let allow = Decision::allow;
        assert!(allow().stricter(Decision::deny("d")).is_deny());
        assert!(Decision::deny("d").stricter(Decision::ask("a")).is_deny());
        assert_eq!(
            Decision::ask("a").stricter(allow()),
            Decision::ask("a"),
            "an ask is not lifted by an allow"
        );
        assert_eq!(
            Decision::ask("a")
                .stricter(Decision::ask("b"))
                .reason
                .as_deref(),
            Some("a; b")
        );
        assert!(allow().stricter(allow()).is_allow());
    }

    #[test]
    fn wire_names_match_serde() {
        for kind in [DecisionKind::Allow, DecisionKind::Deny, DecisionKind::Ask] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.as_str().to_owned())
            );
        }
    }
}
