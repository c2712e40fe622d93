//! The daemon's transcript events (and a task log's own shapes) turned
//! into transcript lines. Unknown types are ignored: the daemon may add
//! some before this screen knows them.

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::tools::{Outcome, ToolView, Verdict, cut, tool_lines};
use crate::transcript::{Started, Transcript};

/// What an event means beyond the transcript, for the app's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing to show (an unknown type, a skipped message).
    None,
    /// The transcript changed.
    Changed,
    /// The turn ended.
    Idle,
    /// What the model is doing, for the status line.
    Intent(String),
    /// Tokens used by a model call.
    Usage {
        model: Option<String>,
        input: u64,
        output: u64,
    },
}

fn str_of<'a>(event: &'a Value, key: &str) -> &'a str {
    event.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Apply one event.
pub(crate) fn apply(transcript: &mut Transcript, event: &Value) -> Effect {
    let palette = transcript.palette();
    match str_of(event, "type") {
        "user.message" => {
            // The hub's own requests to the model are not the user's words.
            if str_of(event, "source") == "model request" {
                return Effect::None;
            }
            transcript.push_user(str_of(event, "content"));
        }
        "assistant.message_delta" => transcript.delta(str_of(event, "delta")),
        "assistant.message" => transcript.answer(str_of(event, "content")),
        "tool.execution_start" => transcript.tool_started(Started {
            id: str_of(event, "toolCallId").to_owned(),
            name: str_of(event, "toolName").to_owned(),
            arguments: event.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        "tool.execution_complete" => {
            let lines = if event.get("toolName").is_some() {
                task_log_tool(transcript, event)
            } else {
                let verdict = event.get("decision").and_then(Verdict::from_json);
                let result = event.get("result");
                let ok = result
                    .map(|r| str_of(r, "type") != "failure")
                    .unwrap_or(true);
                let output = result
                    .and_then(|r| r.get("output"))
                    .map(text_of)
                    .unwrap_or_default();
                let provider = event.get("provider").and_then(Value::as_str);
                tool_lines(
                    &ToolView {
                        name: str_of(event, "tool"),
                        by: provider,
                        arguments: event.get("arguments").unwrap_or(&Value::Null),
                        verdict,
                        outcome: Some(Outcome { ok, output }),
                        duration_ms: event.get("durationMs").and_then(Value::as_u64),
                    },
                    palette,
                )
            };
            transcript.push_block(lines);
        }
        "tool.decided" => {
            let lines = tool_lines(
                &ToolView {
                    name: str_of(event, "tool"),
                    by: event.get("agent").and_then(Value::as_str),
                    arguments: event.get("arguments").unwrap_or(&Value::Null),
                    verdict: event.get("decision").and_then(Verdict::from_json),
                    outcome: None,
                    duration_ms: None,
                },
                palette,
            );
            transcript.push_block(lines);
        }
        "model.error" => {
            let line = error_line("model error", str_of(event, "message"), transcript);
            transcript.push_block(vec![line]);
        }
        "session.error" => {
            let what = match str_of(event, "errorType") {
                "" => "session error".to_owned(),
                kind => format!("session error ({kind})"),
            };
            let line = error_line(&what, str_of(event, "message"), transcript);
            transcript.push_block(vec![line]);
        }
        "session.idle" => {
            transcript.finish_answer();
            return Effect::Idle;
        }
        // A turn of `session.prompt` ended; one that did not complete says
        // how it ended (a stopped turn, a failure) in words.
        "turn.end" => {
            transcript.finish_answer();
            let status = str_of(event, "status");
            if !status.is_empty() && status != "completed" {
                let why = event.get("error").and_then(Value::as_str).unwrap_or(status);
                let what = if status == "cancelled" {
                    "stopped".to_owned()
                } else {
                    format!("turn {status}")
                };
                let line = error_line(&what, why, transcript);
                transcript.push_block(vec![line]);
            }
            return Effect::Idle;
        }
        "log" => {
            let line = Line::styled(
                format!(
                    "· {}: {}",
                    str_of(event, "source"),
                    cut(str_of(event, "text"))
                ),
                palette.dim(),
            );
            transcript.push_line(line);
        }
        "assistant.intent" => return Effect::Intent(str_of(event, "intent").to_owned()),
        "transcript.missed" => {
            let count = event.get("count").and_then(Value::as_u64).unwrap_or(0);
            let line = Line::styled(
                format!("… {count} events missed (the transcript was full)"),
                palette.warn(),
            );
            transcript.push_block(vec![line]);
        }
        "session.usage" => {
            return Effect::Usage {
                model: event
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                input: event
                    .get("promptTokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output: event
                    .get("completionTokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            };
        }
        _ => return Effect::None,
    }
    Effect::Changed
}

/// `tool.execution_complete` as a task log writes it: the arguments were
/// in its `tool.execution_start`.
fn task_log_tool(transcript: &mut Transcript, event: &Value) -> Vec<Line<'static>> {
    let started = transcript.tool_finished(str_of(event, "toolCallId"));
    let ok = event
        .get("success")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let output = if ok {
        event
            .get("result")
            .and_then(|r| r.get("content"))
            .map(text_of)
            .unwrap_or_default()
    } else {
        event
            .get("error")
            .and_then(|e| e.get("message"))
            .map(text_of)
            .unwrap_or_default()
    };
    let arguments = event
        .get("arguments")
        .or(started.as_ref().map(|s| &s.arguments))
        .unwrap_or(&Value::Null);
    tool_lines(
        &ToolView {
            name: str_of(event, "toolName"),
            by: None,
            arguments,
            verdict: None,
            outcome: Some(Outcome { ok, output }),
            duration_ms: None,
        },
        transcript.palette(),
    )
}

/// A result's text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn error_line(what: &str, message: &str, transcript: &Transcript) -> Line<'static> {
    let palette = transcript.palette();
    Line::from(vec![
        Span::styled(format!("✗ {what}: "), palette.error()),
        Span::styled(cut(message), palette.error()),
    ])
}
