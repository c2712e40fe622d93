//! The spans the hub records, built after the fact from what the caller
//! measured, so nothing is held open across a call and nothing at all is
//! built when telemetry is off (callers ask [`crate::active`] first).
//!
//! - `chat {model}` (client): a model call — every facade request and
//!   every model call of the hub's own loop;
//! - `execute_tool {tool}` (internal): a tool call through any door, with
//!   the policy's decision and reason, and the wait for a person as a
//!   child span when there was one.
//!
//! The metrics of the same events are recorded with them.

use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};

use crate::Telemetry;
use crate::semconv as sc;

/// One tool call, as the engine saw it.
#[derive(Debug, Clone)]
pub struct ToolCallRecord<'a> {
    pub tool: &'a str,
    pub call_id: &'a str,
    /// How the call came in (`rpc`, `mcp`, `engine`, `hook`, `cli`, …).
    pub door: &'static str,
    pub session: &'a str,
    /// `allow`, `deny` or `ask`.
    pub decision: &'static str,
    pub reason: Option<&'a str>,
    pub started: SystemTime,
    pub duration: Duration,
    /// The failure's code when the call did not succeed.
    pub error: Option<&'a str>,
    /// The wait for a person, when one was asked.
    pub approval: Option<ApprovalRecord<'a>>,
    /// Redacted and cut by the caller; attached only with capture on.
    pub arguments: Option<String>,
    pub result: Option<String>,
}

/// A person's answer a call waited for.
#[derive(Debug, Clone)]
pub struct ApprovalRecord<'a> {
    pub started: SystemTime,
    pub waited: Duration,
    /// `allow`, `deny`, `timeout`, …
    pub outcome: &'a str,
}

/// One model call.
#[derive(Debug, Clone, Default)]
pub struct ChatRecord<'a> {
    /// The backend, as `gen_ai.provider.name` (`openai`, `anthropic`, …).
    pub provider: &'a str,
    pub request_model: Option<&'a str>,
    pub response_model: Option<&'a str>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub finish_reasons: Vec<String>,
    /// The agent that sent it (`claude-code`, `codex`, …), when known.
    pub client_agent: Option<&'a str>,
    /// The routing rule that chose the backend.
    pub route_rule: Option<&'a str>,
    pub conversation: Option<&'a str>,
    pub started: Option<SystemTime>,
    pub duration: Duration,
    pub first_chunk: Option<Duration>,
    pub error: Option<&'a str>,
    /// Redacted and cut by the caller; attached only with capture on.
    pub input: Option<String>,
    pub output: Option<String>,
}

impl Telemetry {
    /// Records `call` as an `execute_tool` span under `parent` (the
    /// caller's current context when `None`), and its metrics.
    pub fn tool_call(&self, call: &ToolCallRecord<'_>, parent: Option<&Context>) {
        // One copy of the name, shared by the metric and the span.
        let tool = StringValue::from(std::sync::Arc::<str>::from(call.tool));
        self.instruments.tool_calls.add(
            1,
            &[
                KeyValue::new(sc::GEN_AI_TOOL_NAME, tool.clone()),
                KeyValue::new(sc::DOOR, call.door),
                KeyValue::new(sc::DECISION, call.decision),
            ],
        );
        let parent = &parent_or_current(parent);
        let mut attributes = vec![
            KeyValue::new(sc::GEN_AI_OPERATION_NAME, sc::OP_EXECUTE_TOOL),
            KeyValue::new(sc::GEN_AI_TOOL_NAME, tool.clone()),
            KeyValue::new(sc::GEN_AI_TOOL_CALL_ID, call.call_id.to_owned()),
            KeyValue::new(sc::GEN_AI_TOOL_TYPE, "function"),
            KeyValue::new(sc::DOOR, call.door),
            KeyValue::new(sc::SESSION_ID, call.session.to_owned()),
            KeyValue::new(sc::DECISION, call.decision),
        ];
        if let Some(reason) = call.reason {
            attributes.push(KeyValue::new(sc::DECISION_REASON, reason.to_owned()));
        }
        if let Some(error) = call.error {
            attributes.push(KeyValue::new(sc::ERROR_TYPE, error.to_owned()));
        }
        if self.captures_content() {
            if let Some(arguments) = &call.arguments {
                attributes.push(KeyValue::new(
                    sc::GEN_AI_TOOL_CALL_ARGUMENTS,
                    arguments.clone(),
                ));
            }
            if let Some(result) = &call.result {
                attributes.push(KeyValue::new(sc::GEN_AI_TOOL_CALL_RESULT, result.clone()));
            }
        }
        let tracer = self.tracer();
        let mut span = tracer
            .span_builder(format!("{} {}", sc::OP_EXECUTE_TOOL, call.tool))
            .with_kind(SpanKind::Internal)
            .with_start_time(call.started)
            .with_attributes(attributes)
            .start_with_context(tracer, parent);
        if let Some(error) = call.error {
            span.set_status(Status::error(error.to_owned()));
        }
        if let Some(approval) = &call.approval {
            self.instruments.approval_wait.record(
                approval.waited.as_secs_f64(),
                &[KeyValue::new(
                    sc::APPROVAL_OUTCOME,
                    approval.outcome.to_owned(),
                )],
            );
            let under = parent.with_remote_span_context(span.span_context().clone());
            let mut wait = tracer
                .span_builder("approval wait")
                .with_kind(SpanKind::Internal)
                .with_start_time(approval.started)
                .with_attributes([
                    KeyValue::new(sc::GEN_AI_TOOL_NAME, tool.clone()),
                    KeyValue::new(sc::APPROVAL_OUTCOME, approval.outcome.to_owned()),
                ])
                .start_with_context(tracer, &under);
            wait.end_with_timestamp(approval.started + approval.waited);
        }
        span.end_with_timestamp(call.started + call.duration);
    }

    /// Records `chat` as a `chat {model}` span under `parent` (the current
    /// context when `None`), and its metrics.
    pub fn chat(&self, chat: &ChatRecord<'_>, parent: Option<&Context>) {
        let model = chat
            .request_model
            .or(chat.response_model)
            .unwrap_or("unknown");
        let common = [
            KeyValue::new(sc::GEN_AI_OPERATION_NAME, sc::OP_CHAT),
            KeyValue::new(sc::GEN_AI_PROVIDER_NAME, chat.provider.to_owned()),
            KeyValue::new(sc::GEN_AI_REQUEST_MODEL, model.to_owned()),
        ];
        let instruments = &self.instruments;
        instruments
            .operation_duration
            .record(chat.duration.as_secs_f64(), &common);
        if let Some(first) = chat.first_chunk {
            instruments
                .time_to_first_chunk
                .record(first.as_secs_f64(), &common);
        }
        for (kind, tokens) in [("input", chat.input_tokens), ("output", chat.output_tokens)] {
            if let Some(tokens) = tokens {
                let mut attributes = common.to_vec();
                attributes.push(KeyValue::new(sc::GEN_AI_TOKEN_TYPE, kind));
                instruments.token_usage.record(tokens, &attributes);
            }
        }
        let mut attributes = common.to_vec();
        let optional = [
            (sc::GEN_AI_RESPONSE_MODEL, chat.response_model),
            (sc::CLIENT_AGENT, chat.client_agent),
            (sc::ROUTE_RULE, chat.route_rule),
            (sc::GEN_AI_CONVERSATION_ID, chat.conversation),
            (sc::ERROR_TYPE, chat.error),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                attributes.push(KeyValue::new(key, value.to_owned()));
            }
        }
        for (key, tokens) in [
            (sc::GEN_AI_USAGE_INPUT_TOKENS, chat.input_tokens),
            (sc::GEN_AI_USAGE_OUTPUT_TOKENS, chat.output_tokens),
        ] {
            if let Some(tokens) = tokens {
                attributes.push(KeyValue::new(
                    key,
                    i64::try_from(tokens).unwrap_or(i64::MAX),
                ));
            }
        }
        if !chat.finish_reasons.is_empty() {
            let reasons: Vec<StringValue> = chat
                .finish_reasons
                .iter()
                .map(|reason| StringValue::from(reason.clone()))
                .collect();
            attributes.push(KeyValue::new(
                sc::GEN_AI_RESPONSE_FINISH_REASONS,
                Value::Array(Array::String(reasons)),
            ));
        }
        if self.captures_content() {
            if let Some(input) = &chat.input {
                attributes.push(KeyValue::new(sc::GEN_AI_INPUT_MESSAGES, input.clone()));
            }
            if let Some(output) = &chat.output {
                attributes.push(KeyValue::new(sc::GEN_AI_OUTPUT_MESSAGES, output.clone()));
            }
        }
        let started = chat
            .started
            .unwrap_or_else(|| SystemTime::now() - chat.duration);
        let parent = &parent_or_current(parent);
        let tracer = self.tracer();
        let mut span = tracer
            .span_builder(format!("{} {model}", sc::OP_CHAT))
            .with_kind(SpanKind::Client)
            .with_start_time(started)
            .with_attributes(attributes)
            .start_with_context(tracer, parent);
        if let Some(error) = chat.error {
            span.set_status(Status::error(error.to_owned()));
        }
        span.end_with_timestamp(started + chat.duration);
    }

    /// Counts one facade request by its route and status.
    pub fn facade_request(&self, route: &str, status: u16) {
        self.instruments.facade_requests.add(
            1,
            &[
                KeyValue::new("http.route", route.to_owned()),
                KeyValue::new("http.response.status_code", i64::from(status)),
            ],
        );
    }
}

/// A span open for the length of something — a run of an agent
/// (`invoke_agent {agent}`), an MCP request the hub serves — so the model
/// calls and tool calls made meanwhile record under it; ended with its
/// outcome.
#[derive(Debug, Clone)]
pub struct OpenSpan {
    context: Context,
}

impl Telemetry {
    /// Starts an `invoke_agent` span under `parent` (the current context
    /// when `None`).
    pub fn start_agent(&self, agent: &str, session: &str, parent: Option<&Context>) -> OpenSpan {
        let parent = &parent_or_current(parent);
        let tracer = self.tracer();
        let span = tracer
            .span_builder(format!("{} {agent}", sc::OP_INVOKE_AGENT))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(sc::GEN_AI_OPERATION_NAME, sc::OP_INVOKE_AGENT),
                KeyValue::new(sc::GEN_AI_AGENT_NAME, agent.to_owned()),
                KeyValue::new(sc::SESSION_ID, session.to_owned()),
            ])
            .start_with_context(tracer, parent);
        OpenSpan {
            context: parent.with_span(span),
        }
    }
}

impl Telemetry {
    /// Starts an MCP server span, `{method} {target}` (e.g. `tools/call
    /// read_file`), under `parent` (the client's `_meta.traceparent`, else
    /// the current context).
    pub fn start_mcp_request(
        &self,
        method: &str,
        target: &str,
        mcp_session: Option<&str>,
        parent: Option<&Context>,
    ) -> OpenSpan {
        let parent = &parent_or_current(parent);
        let mut attributes = vec![
            KeyValue::new(sc::MCP_METHOD_NAME, method.to_owned()),
            KeyValue::new(sc::GEN_AI_TOOL_NAME, target.to_owned()),
        ];
        if let Some(id) = mcp_session {
            attributes.push(KeyValue::new(sc::MCP_SESSION_ID, id.to_owned()));
        }
        let tracer = self.tracer();
        let span = tracer
            .span_builder(format!("{method} {target}"))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(tracer, parent);
        OpenSpan {
            context: parent.with_span(span),
        }
    }
}

impl OpenSpan {
    /// The context the run's own calls record under.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Ends the span: `status` as the run ended, `error` when it failed.
    pub fn end(self, status: &str, error: Option<&str>) {
        let span = self.context.span();
        span.set_attribute(KeyValue::new(
            "copilot_bridge.run.status",
            status.to_owned(),
        ));
        if let Some(error) = error {
            span.set_attribute(KeyValue::new(sc::ERROR_TYPE, status.to_owned()));
            span.set_status(Status::error(error.to_owned()));
        }
        span.end();
    }
}

/// `parent`, or the caller's current context when there is none.
fn parent_or_current(parent: Option<&Context>) -> Context {
    parent.cloned().unwrap_or_else(Context::current)
}
