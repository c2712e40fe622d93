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
//! 4. an "ask" goes to the session's approver (nobody there: deny);
//! 5. the provider hook rules and gates, in registration order.

use std::time::Instant;

use bridge_policy::agent_tools::Agent;
use bridge_policy::audit::Redacted;
use bridge_policy::{Access, Approval, Ask, GrantKey, Scope};
use bridge_protocol::{Decision, DecisionKind};
use serde_json::{Value, json};

use crate::call::{AuditEvent, ToolFailure};
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
}

impl Verdict {
    pub(crate) fn denied(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            decision: Decision::deny(reason.clone()),
            refusal: Some(ToolFailure::denied(reason)),
            context: Vec::new(),
            approval: None,
        }
    }

    /// The arguments could not be checked: the caller gets `failure`.
    fn refused(failure: ToolFailure) -> Self {
        Self {
            decision: Decision::deny(failure.message.clone()),
            refusal: Some(failure),
            context: Vec::new(),
            approval: None,
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
}

impl Session {
    /// Decides whether `name`, run by `owner`, may run with `args` (see the
    /// module documentation for the steps). `args` must be a JSON object.
    pub async fn decide(&self, name: &str, args: &Value, owner: &ToolOwner) -> Verdict {
        let accesses = match owner {
            ToolOwner::Workspace => match self.tool(name) {
                Some(entry) => entry.handler.accesses(args),
                None => Err(ToolFailure::new(
                    "unknown_tool",
                    format!("unknown tool {name:?} in session {}", self.id()),
                )),
            },
            ToolOwner::Agent(agent) => agent.accesses(name, args).map_err(ToolFailure::denied),
            ToolOwner::Provider(_) | ToolOwner::Mcp(_) | ToolOwner::Service(_) => Ok(Vec::new()),
        };
        self.decide_with(name, args, owner, accesses).await
    }

    /// Decides whether `agent` may run `tool` (in our naming: an MCP tool
    /// is `server__tool`, owned by its server) with `args`, as the agent's
    /// `hook` asked, and audits the answer under the agent's name. Arguments
    /// that are not an object are checked whole under `input`, where
    /// blocked patterns still see them.
    pub async fn check_agent_tool(
        &self,
        agent: Agent,
        hook: &str,
        tool: &str,
        owner: &ToolOwner,
        args: &Value,
    ) -> Verdict {
        let started = Instant::now();
        let verdict = self.decide_agent_reading(tool, owner, args).await;
        self.audit_agent_verdict(agent, hook, tool, args, &verdict, started);
        verdict
    }

    /// The decision of one reading of an agent's tool; arguments that are
    /// not an object are checked whole under `input`.
    async fn decide_agent_reading(&self, tool: &str, owner: &ToolOwner, args: &Value) -> Verdict {
        if args.is_object() {
            self.decide(tool, args, owner).await
        } else {
            let wrapped = json!({ "input": args });
            self.decide(tool, &wrapped, owner).await
        }
    }

    fn audit_agent_verdict(
        &self,
        agent: Agent,
        hook: &str,
        tool: &str,
        args: &Value,
        verdict: &Verdict,
        started: Instant,
    ) {
        if !verdict.allowed() {
            self.log(
                agent.name(),
                &format!("denied {tool}: {}", verdict.reason()),
            );
        }
        if self.audit().is_some() {
            self.audit_entry(
                AuditEvent {
                    event: hook,
                    door: agent.name(),
                    tool,
                    decision: &verdict.decision,
                    elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                },
                Redacted::record_of(args),
                Redacted::new(json!({"reason": verdict.reason()})),
                verdict.approval.clone().map(Redacted::new),
            );
        }
    }

    /// Decides a tool call an agent's hook reports by the name the agent
    /// gave the tool (`mcp__github__x`, `github-x`, `Bash`): every reading
    /// of the name in ours ([`crate::agent_names`]) is decided, the
    /// strictest verdict wins, and it is audited under the likeliest
    /// reading. A name that reads no way is refused.
    pub async fn check_agent_call(
        &self,
        agent: Agent,
        hook: &str,
        raw_tool: &str,
        args: &Value,
    ) -> (String, Verdict) {
        let started = Instant::now();
        let readings = crate::agent_names::readings(agent, raw_tool);
        let Some(first) = readings.first() else {
            let verdict = Verdict::denied(format!(
                "{raw_tool} looks like an MCP tool but names no server and tool; it is refused"
            ));
            self.audit_agent_verdict(agent, hook, raw_tool, args, &verdict, started);
            return (raw_tool.to_owned(), verdict);
        };
        if readings.len() == 1 {
            let verdict = self
                .check_agent_tool(agent, hook, &first.name, &first.owner, args)
                .await;
            return (first.name.clone(), verdict);
        }
        let mut strictest: Option<(String, Verdict)> = None;
        for reading in &readings {
            let verdict = self
                .decide_agent_reading(&reading.name, &reading.owner, args)
                .await;
            let stricter = strictest
                .as_ref()
                .is_none_or(|(_, kept)| strictness(&verdict) > strictness(kept));
            if stricter {
                strictest = Some((reading.name.clone(), verdict));
            }
        }
        let (name, verdict) = strictest.unwrap_or_else(|| {
            (
                first.name.clone(),
                Verdict::denied("no reading of the tool's name"),
            )
        });
        self.audit_agent_verdict(agent, hook, &first.name, args, &verdict, started);
        (name, verdict)
    }

    /// Records that `agent` ran `tool` (its post-tool-use hook): an audit
    /// entry, since the log holds every call an agent made under our
    /// policy, and `tool.execution_complete` for the session's providers.
    pub fn record_agent_tool_ran(
        &self,
        agent: Agent,
        hook: &str,
        tool: &str,
        args: &Value,
        output: Option<&Value>,
    ) {
        let recorded_args = Redacted::record_of(args);
        if self.audit().is_some() {
            self.audit_entry(
                AuditEvent {
                    event: hook,
                    door: agent.name(),
                    tool,
                    decision: &Decision::allow(),
                    elapsed_ms: 0,
                },
                recorded_args.clone(),
                Redacted::new(json!({"reason": "ran"})),
                None,
            );
        }
        let mut result = json!({"type": "success"});
        if let Some(output) = output {
            result["output"] = Redacted::record_of(output).into_value();
        }
        self.emit(crate::SessionEvent::ToolExecutionComplete {
            tool: tool.to_owned(),
            provider: None,
            args: recorded_args.into_value(),
            result,
            duration_ms: 0,
        });
    }

    /// A prompt the agent's user submitted: `user.message` for the
    /// session's providers.
    pub fn record_agent_prompt(&self, prompt: &str) {
        self.emit(crate::SessionEvent::UserMessage {
            content: prompt.to_owned(),
        });
    }

    /// [`decide`](Self::decide) with the call's accesses already known.
    pub(crate) async fn decide_with(
        &self,
        name: &str,
        args: &Value,
        owner: &ToolOwner,
        accesses: Result<Vec<Access>, ToolFailure>,
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
            return Verdict::denied(rules.reason_or_default().to_owned());
        }
        let rules_ask = rules.decision == DecisionKind::Ask;
        let accesses = match accesses {
            Ok(accesses) => accesses,
            Err(failure) => return Verdict::refused(failure),
        };
        let decision = rules.stricter(guard.check_accesses(&accesses));
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
        let decision = match decision.decision {
            DecisionKind::Ask => {
                let keys = guard.grant_keys(name, rules_ask, &accesses);
                match self.granted(keys.as_deref()) {
                    Some(grant) => Decision {
                        decision: DecisionKind::Allow,
                        reason: Some(format!(
                            "approved {grant}: {}",
                            decision.reason_or_default()
                        )),
                    },
                    // The caller's user is asked, after the hook rules and
                    // gates below had their say.
                    None if self.approver().leaves_asking_to_caller() => decision,
                    None => {
                        let reason = decision.reason_or_default().to_owned();
                        let answer = self.ask_person(name, args, &reason, keys).await;
                        approval = Some(answer.record());
                        if !answer.is_allowed() {
                            return Verdict {
                                approval,
                                ..Verdict::denied(answer.refusal(&reason))
                            };
                        }
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
            "for this session".to_owned()
        } else {
            format!("by rule {}", by_rule.join(", "))
        })
    }

    /// Puts the call to a person through the session's approver and keeps
    /// what a session or rule answer grants.
    async fn ask_person(
        &self,
        name: &str,
        args: &Value,
        reason: &str,
        keys: Option<Vec<GrantKey>>,
    ) -> Approval {
        let ask = Ask {
            session: self.id().to_owned(),
            shared: self.shared(),
            workspace: self.cwd().to_path_buf(),
            tool: name.to_owned(),
            arguments: Redacted::record_of(args).into_value(),
            reason: bridge_policy::redact(reason).into_owned(),
            keys: keys.clone(),
            rules_kept: self.approval_rules().is_some(),
        };
        let answer = self.approver().approve(ask).await;
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

/// How strict a verdict is: a refusal over a question over a pass.
fn strictness(verdict: &Verdict) -> u8 {
    match verdict.outcome() {
        DecisionKind::Deny => 2,
        DecisionKind::Ask => 1,
        DecisionKind::Allow => 0,
    }
}
