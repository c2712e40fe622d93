//! The one decision every tool call gets, whatever door it came through and
//! whoever runs the tool: our workspace tools, a provider's or MCP server's
//! tools, or an agent's own tools (the Copilot CLI's `bash`, answered in its
//! `preToolUse` hook).
//!
//! In order, each step able to end it with a deny:
//! 1. the permission rules (and, for tools that act on this workspace,
//!    containment of every path-like argument);
//! 2. what the call declared it will do ([`Access`]: paths read and
//!    written, commands run) through the guard: shell analysis, read-only
//!    mode, the workspace's write globs;
//! 3. the audit log must be writable, since no tool runs unaudited (checked
//!    before a person is asked, so nobody approves a call that cannot run);
//! 4. an "ask" is answered by a grant of the session or a rule of its
//!    workspace when one covers every key of the call, else goes to the
//!    session's approver (nobody there: deny) — or, for agents' hooks,
//!    waits in the verdict until the hook rules and gates had their say
//!    ([`Session::settle`]);
//! 5. the provider hook rules and gates, in registration order.
//!
//! An agent's hook calls go through `agent_calls.rs`.

use bridge_policy::audit::Redacted;
use bridge_policy::{Access, Approval, Approver, Ask, GrantKey, Scope};
use bridge_protocol::{Decision, DecisionKind};
use serde_json::Value;

use crate::call::ToolFailure;
use crate::hooks;
use crate::session::Session;
use crate::tools::ToolOwner;

/// What the decision says about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Allow (its reason says when a person approved) or deny.
    pub decision: Decision,
    /// Why the call may not run, as its caller gets it: `policy_denied`, or
    /// the tool's own error when its arguments could not be checked.
    /// `None` when it may run.
    pub refusal: Option<ToolFailure>,
    /// Text that `context` rules and gates asked to add for the agent.
    pub context: Vec<String>,
    /// When a person was asked: the answer as the audit log records it
    /// (see `bridge_policy::Approval::record`).
    pub approval: Option<Value>,
    /// The question for a person, when the decision is "ask" and asking
    /// was left to the caller ([`Session::settle`] puts it).
    pub question: Option<Ask>,
}

/// When a person is asked, if the policy asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asking {
    /// Now, through the session's approver, before the hook rules and
    /// gates.
    Now,
    /// Later: the verdict carries the question (after the hook rules and
    /// gates had their say, so nobody is asked about a call they deny).
    Later,
}

impl Verdict {
    pub(crate) fn denied(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            decision: Decision::deny(reason.clone()),
            refusal: Some(ToolFailure::denied(reason)),
            context: Vec::new(),
            approval: None,
            question: None,
        }
    }

    /// Allowed for `reason`, without a decision here: for a call that is
    /// decided where it runs (crate::runner::served_tools).
    pub(crate) fn allowed_for(reason: impl Into<String>) -> Self {
        Self {
            decision: Decision {
                reason: Some(reason.into()),
                ..Decision::allow()
            },
            refusal: None,
            context: Vec::new(),
            approval: None,
            question: None,
        }
    }

    /// The arguments could not be checked: the caller gets `failure`.
    fn refused(failure: ToolFailure) -> Self {
        Self {
            decision: Decision::deny(failure.message.clone()),
            refusal: Some(failure),
            context: Vec::new(),
            approval: None,
            question: None,
        }
    }

    /// The call may run now: not refused, and no question left open.
    pub fn allowed(&self) -> bool {
        self.refusal.is_none() && !self.asks()
    }

    /// What the caller is told: allow, ask (the caller asks its user) or
    /// deny.
    pub fn outcome(&self) -> DecisionKind {
        if self.asks() {
            DecisionKind::Ask
        } else if self.allowed() {
            DecisionKind::Allow
        } else {
            DecisionKind::Deny
        }
    }

    /// The policy asks a person, and the caller puts the question (see
    /// [`bridge_policy::Approver::leaves_asking_to_caller`]).
    pub fn asks(&self) -> bool {
        self.refusal.is_none() && self.decision.decision == DecisionKind::Ask
    }

    /// The reason a person reads.
    pub fn reason(&self) -> &str {
        self.decision.reason_or_default()
    }

    /// Allowed by what a person granted earlier (for the session, or by a
    /// rule of the workspace), not by the policy alone.
    pub fn granted(&self) -> bool {
        self.allowed()
            && self.reason().strip_prefix("approved ").is_some_and(|rest| {
                rest.starts_with(GRANTED_FOR_SESSION) || rest.starts_with(GRANTED_BY_RULE)
            })
    }
}

/// How a grant is named in the reason of the call it allows
/// ("approved for this session: …", "approved by rule run cargo test: …").
const GRANTED_FOR_SESSION: &str = "for this session";
const GRANTED_BY_RULE: &str = "by rule ";

impl Session {
    /// Decides whether `name`, run by `owner`, may run with `args` (see the
    /// module documentation for the steps). `args` must be a JSON object.
    pub async fn decide(&self, name: &str, args: &Value, owner: &ToolOwner) -> Verdict {
        let accesses = self.accesses_of(name, args, owner);
        self.decide_asking(name, args, owner, accesses, Asking::Now)
            .await
    }

    /// [`decide`](Self::decide) leaving any question in the verdict.
    pub(crate) async fn decide_leaving_question(
        &self,
        name: &str,
        args: &Value,
        owner: &ToolOwner,
    ) -> Verdict {
        let accesses = self.accesses_of(name, args, owner);
        self.decide_asking(name, args, owner, accesses, Asking::Later)
            .await
    }

    /// What a call declares it will do, by whoever runs it.
    fn accesses_of(
        &self,
        name: &str,
        args: &Value,
        owner: &ToolOwner,
    ) -> Result<Vec<Access>, ToolFailure> {
        match owner {
            ToolOwner::Workspace => match self.tool(name) {
                Some(entry) => entry.handler.accesses(args),
                None => Err(ToolFailure::new(
                    "unknown_tool",
                    format!("unknown tool {name:?} in session {}", self.id()),
                )),
            },
            ToolOwner::Agent(agent) => agent.accesses(name, args).map_err(ToolFailure::denied),
            ToolOwner::Provider(_) | ToolOwner::Mcp(_) | ToolOwner::Service(_) => Ok(Vec::new()),
        }
    }

    /// Puts a verdict's open question (see [`Verdict::question`]) to a
    /// person through `approver` and returns the verdict that follows: the
    /// call allowed (and what the answer grants kept) or denied with what
    /// became of the question. A verdict without one is returned as it is,
    /// and so is one whose approver leaves asking to the caller.
    pub async fn settle(&self, verdict: Verdict, approver: &dyn Approver) -> Verdict {
        let Some(question) = verdict.question.clone().filter(|_| verdict.asks()) else {
            return verdict;
        };
        if approver.leaves_asking_to_caller() {
            return verdict;
        }
        let reason = verdict.reason().to_owned();
        let answer = self.put_question(question, approver).await;
        let approval = Some(answer.record());
        if !answer.is_allowed() {
            return Verdict {
                context: verdict.context,
                approval,
                ..Verdict::denied(answer.refusal(&reason))
            };
        }
        Verdict {
            decision: approved(&answer, &reason),
            refusal: None,
            context: verdict.context,
            approval,
            question: None,
        }
    }

    /// [`decide`](Self::decide) with the call's accesses already known.
    pub(crate) async fn decide_with(
        &self,
        name: &str,
        args: &Value,
        owner: &ToolOwner,
        accesses: Result<Vec<Access>, ToolFailure>,
    ) -> Verdict {
        self.decide_asking(name, args, owner, accesses, Asking::Now)
            .await
    }

    async fn decide_asking(
        &self,
        name: &str,
        args: &Value,
        owner: &ToolOwner,
        accesses: Result<Vec<Access>, ToolFailure>,
        asking: Asking,
    ) -> Verdict {
        let guard = self.guard();
        let rules = match owner {
            // Our tools declare every path they touch as an access, which
            // the guard resolves below; resolving the arguments here too
            // would look each path up twice.
            ToolOwner::Workspace => guard.check_permission(name, args),
            // An agent's tools act on this workspace too, but declare only
            // their writes and commands: contain every path argument.
            ToolOwner::Agent(_) => guard.check_call(name, args),
            // Their arguments are not paths of this workspace.
            ToolOwner::Provider(_) | ToolOwner::Mcp(_) | ToolOwner::Service(_) => {
                guard.check_permission(name, args)
            }
        };
        if rules.is_deny() {
            return Verdict::denied(self.with_config_problem(rules.reason_or_default()));
        }
        let rules_ask = rules.decision == DecisionKind::Ask;
        let accesses = match accesses {
            Ok(accesses) => accesses,
            Err(failure) => return Verdict::refused(failure),
        };
        let mut decision = rules.stricter(guard.check_accesses(&accesses));
        // A refusal the workspace's policy file might have lifted says that
        // its last edit is not in force, and why.
        if decision.decision != DecisionKind::Allow
            && let Some(problem) = self.live_guard().problem()
        {
            decision.reason = Some(format!(
                "{} (note: {problem})",
                decision.reason_or_default()
            ));
        }
        // Likewise config.toml's `[permissions]`, which the daemon follows.
        if decision.decision != DecisionKind::Allow {
            decision.reason = Some(self.with_config_problem(decision.reason_or_default()));
        }
        if decision.is_deny() {
            return Verdict::denied(decision.reason_or_default().to_owned());
        }
        if let Some(audit) = self.audit()
            && let Err(err) = audit.ensure_writable()
        {
            return Verdict::denied(format!(
                "the audit log cannot be written ({err}); no tool runs unaudited"
            ));
        }
        let mut approval = None;
        let mut question = None;
        let decision = match decision.decision {
            DecisionKind::Ask => {
                let keys = guard.grant_keys(name, rules_ask, &accesses);
                let reason = decision.reason_or_default().to_owned();
                match self.granted(keys.as_deref()) {
                    Some(grant) => Decision {
                        decision: DecisionKind::Allow,
                        reason: Some(format!("approved {grant}: {reason}")),
                    },
                    // The question waits for the hook rules and gates below.
                    None if asking == Asking::Later
                        || self.approver().leaves_asking_to_caller() =>
                    {
                        question = Some(self.question(name, args, &reason, keys));
                        decision
                    }
                    None => {
                        let ask = self.question(name, args, &reason, keys);
                        let answer = self.put_question(ask, self.approver().as_ref()).await;
                        approval = Some(answer.record());
                        if !answer.is_allowed() {
                            return Verdict {
                                approval,
                                ..Verdict::denied(answer.refusal(&reason))
                            };
                        }
                        approved(&answer, &reason)
                    }
                }
            }
            _ => decision,
        };
        let rules = self.rules_snapshot();
        let hooks = hooks::evaluate(
            &rules,
            self.id_arc(),
            name,
            owner,
            args,
            self.settings().gate_timeout,
        )
        .await;
        if let Some(reason) = hooks.denied {
            return Verdict {
                context: hooks.context,
                approval,
                ..Verdict::denied(reason)
            };
        }
        Verdict {
            decision,
            refusal: None,
            context: hooks.context,
            approval,
            question,
        }
    }

    /// `reason`, with why config.toml's last edit is not in force when it
    /// is not: the rules that refused may be the ones the edit changed.
    fn with_config_problem(&self, reason: &str) -> String {
        match self.live_guard().config_problem() {
            Some(problem) => format!("{reason} (note: {problem})"),
            None => reason.to_owned(),
        }
    }

    /// What grants the call, if every one of its `keys` is granted for the
    /// session or by a rule of its workspace: said as "for this session"
    /// or "by rule run cargo test".
    fn granted(&self, keys: Option<&[GrantKey]>) -> Option<String> {
        let keys = keys.filter(|keys| !keys.is_empty())?;
        let mut by_rule = Vec::new();
        for key in keys {
            if self.grants().has(key) {
                continue;
            }
            if self
                .approval_rules()
                .is_some_and(|rules| rules.grants(self.cwd(), key))
            {
                by_rule.push(key.rule_text());
                continue;
            }
            return None;
        }
        Some(if by_rule.is_empty() {
            GRANTED_FOR_SESSION.to_owned()
        } else {
            format!("{GRANTED_BY_RULE}{}", by_rule.join(", "))
        })
    }

    /// The question a person gets about a call: redacted and bounded, so
    /// every surface shows the same text.
    pub(crate) fn question(
        &self,
        name: &str,
        args: &Value,
        reason: &str,
        keys: Option<Vec<GrantKey>>,
    ) -> Ask {
        Ask {
            session: self.id().to_owned(),
            shared: self.shared(),
            workspace: self.cwd().to_path_buf(),
            tool: name.to_owned(),
            arguments: Redacted::record_of(args).into_value(),
            reason: bridge_policy::redact(reason).into_owned(),
            keys,
            rules_kept: self.approval_rules().is_some(),
        }
    }

    /// Puts `ask` to a person through `approver` and keeps what a session
    /// or rule answer grants.
    async fn put_question(&self, ask: Ask, approver: &dyn Approver) -> Approval {
        let keys = ask.keys.clone();
        let answer = approver.approve(ask).await;
        if let (Approval::Allowed { scope, surface, .. }, Some(keys)) = (&answer, &keys) {
            match scope {
                Scope::Once => {}
                Scope::Session => self.grants().grant(keys),
                Scope::Rule { expires_at } => match self.approval_rules() {
                    Some(rules) => {
                        if let Err(err) = rules.add(self.cwd(), keys, *expires_at, *surface) {
                            tracing::error!(error = %err, "an approval rule could not be kept; granted for this session");
                            self.grants().grant(keys);
                        }
                    }
                    None => self.grants().grant(keys),
                },
            }
        }
        answer
    }
}

/// The decision of an allowed answer, its reason saying who allowed it.
fn approved(answer: &Approval, reason: &str) -> Decision {
    Decision {
        decision: DecisionKind::Allow,
        reason: Some(format!(
            "approved by {}: {reason}",
            answer
                .surface()
                .map_or("a person", bridge_policy::Surface::as_str)
        )),
    }
}
