//! An agent's own tool calls, as its hooks report them: the one decision
//! (decide.rs) for every reading of the agent's name for the tool, the
//! strictest winning; a question settled once, after the hook rules and
//! gates; one audit entry under the agent's name; and what the agent ran
//! and was told, for the session's providers.

use std::time::Instant;

use bridge_policy::Approver;
use bridge_policy::agent_tools::Agent;
use bridge_policy::audit::Redacted;
use bridge_protocol::{Decision, DecisionKind};
use serde_json::{Value, json};

use crate::call::AuditEvent;
use crate::decide::Verdict;
use crate::session::Session;
use crate::tools::ToolOwner;

/// An agent's call decided, its question (if any) not yet put: see
/// [`Session::decide_agent_call`].
#[derive(Debug, Clone)]
pub struct AgentCall {
    pub agent: Agent,
    /// The reading of the agent's name that decided: ours.
    pub name: String,
    /// The reading the audit entry is filed under (the likeliest).
    audit_name: String,
    pub args: Value,
    pub verdict: Verdict,
    started: Instant,
}

impl Session {
    /// Decides whether `agent` may run `tool` (in our naming: an MCP tool
    /// is `server__tool`, owned by its server) with `args`, as the agent's
    /// `hook` asked (a question goes to the session's approver), and
    /// audits the answer under the agent's name. Arguments that are not an
    /// object are checked whole under `input`, where blocked patterns still
    /// see them.
    pub async fn check_agent_tool(
        &self,
        agent: Agent,
        hook: &str,
        tool: &str,
        owner: &ToolOwner,
        args: &Value,
    ) -> Verdict {
        let approver = self.approver().clone();
        self.check_agent_tool_asking(agent, hook, tool, owner, args, approver.as_ref())
            .await
    }

    /// [`Self::check_agent_tool`] with its question (if any) put to
    /// `approver` instead of the session's.
    pub async fn check_agent_tool_asking(
        &self,
        agent: Agent,
        hook: &str,
        tool: &str,
        owner: &ToolOwner,
        args: &Value,
        approver: &dyn Approver,
    ) -> Verdict {
        let call = AgentCall {
            agent,
            name: tool.to_owned(),
            audit_name: tool.to_owned(),
            args: args.clone(),
            started: Instant::now(),
            verdict: self.decide_agent_reading(tool, owner, args).await,
        };
        self.finish_agent_call(hook, call, approver).await.1
    }

    /// Decides a tool call an agent's hook reports by the name the agent
    /// gave the tool (`mcp__github__x`, `github-x`, `Bash`), puts its
    /// question (if any) to the session's approver and audits it: see
    /// [`Self::decide_agent_call`] and [`Self::finish_agent_call`].
    pub async fn check_agent_call(
        &self,
        agent: Agent,
        hook: &str,
        raw_tool: &str,
        args: &Value,
    ) -> (String, Verdict) {
        let call = self.decide_agent_call(agent, raw_tool, args).await;
        let approver = self.approver().clone();
        self.finish_agent_call(hook, call, approver.as_ref()).await
    }

    /// Decides a tool call an agent reports by the name it gave the tool:
    /// every reading of the name in ours ([`crate::agent_names`]) is
    /// decided, the strictest verdict wins. A question is left in the
    /// verdict, asked once whichever readings asked. A name that reads no
    /// way is refused.
    pub async fn decide_agent_call(&self, agent: Agent, raw_tool: &str, args: &Value) -> AgentCall {
        let started = Instant::now();
        let readings = crate::agent_names::readings(agent, raw_tool);
        let call = |name: &str, audit_name: &str, verdict| AgentCall {
            agent,
            name: name.to_owned(),
            audit_name: audit_name.to_owned(),
            args: args.clone(),
            verdict,
            started,
        };
        let Some(first) = readings.first() else {
            let verdict = Verdict::denied(format!(
                "{raw_tool} looks like an MCP tool but names no server and tool; it is refused"
            ));
            return call(raw_tool, raw_tool, verdict);
        };
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
        call(&name, &first.name, verdict)
    }

    /// Puts the call's question (if any) to a person through `approver`
    /// (the session's, or one a door chose), then audits the outcome under
    /// the agent's name. Returns the deciding name and the final verdict.
    pub async fn finish_agent_call(
        &self,
        hook: &str,
        call: AgentCall,
        approver: &dyn Approver,
    ) -> (String, Verdict) {
        let verdict = self.settle(call.verdict, approver).await;
        self.audit_agent_verdict(
            call.agent,
            hook,
            &call.audit_name,
            &call.args,
            &verdict,
            call.started,
        );
        (call.name, verdict)
    }

    /// An agent's own permission prompt (Claude Code's
    /// `--permission-prompt-tool`), relayed to a person through `approver`:
    /// the agent asks because its own rules want a person, so a call our
    /// policy allows is still put to one (once only), unless a person
    /// already granted it for the session or by a rule; a call our policy
    /// denies is denied without asking; a call it asks about is asked with
    /// the grants it offers. Audited under `hook` like the agent's hooks.
    pub async fn relay_permission_prompt(
        &self,
        agent: Agent,
        hook: &str,
        raw_tool: &str,
        args: &Value,
        approver: &dyn Approver,
    ) -> Verdict {
        let mut call = self.decide_agent_call(agent, raw_tool, args).await;
        if call.verdict.allowed() && !call.verdict.granted() {
            let reason = format!(
                "{} asks permission to run {raw_tool} ({})",
                agent.display_name(),
                call.verdict.reason()
            );
            let question = self.question(&call.name, args, &reason, None);
            call.verdict = Verdict {
                decision: Decision {
                    decision: DecisionKind::Ask,
                    reason: Some(reason),
                },
                question: Some(question),
                ..call.verdict
            };
        }
        self.finish_agent_call(hook, call, approver).await.1
    }

    /// The decision of one reading of an agent's tool, its question left
    /// open; arguments that are not an object are checked whole under
    /// `input`.
    async fn decide_agent_reading(&self, tool: &str, owner: &ToolOwner, args: &Value) -> Verdict {
        if args.is_object() {
            self.decide_leaving_question(tool, args, owner).await
        } else {
            let wrapped = json!({ "input": args });
            self.decide_leaving_question(tool, &wrapped, owner).await
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
        if self.has_event_subscribers() {
            self.emit(crate::SessionEvent::ToolDecided {
                tool: tool.to_owned(),
                agent: agent.name().to_owned(),
                args: Redacted::record_of(args).into_value(),
                decision: verdict.decision.clone(),
            });
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
            decision: None,
        });
    }

    /// A prompt the agent's user submitted: `user.message` for the
    /// session's providers.
    pub fn record_agent_prompt(&self, prompt: &str) {
        self.emit(crate::SessionEvent::UserMessage {
            content: prompt.to_owned(),
        });
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
