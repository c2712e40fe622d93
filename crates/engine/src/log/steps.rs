//! One line per step of a run, from its log's events: what `run --verbose`
//! prints numbered and `copilot_code_verbose` streams as progress. Lines
//! are not redacted here: whoever shows them redacts.

use serde_json::Value;

use super::{LoggedEvent, types};

/// Characters of a message or result a step shows.
pub const STEP_TEXT_CHARS: usize = 200;

/// The step `event` is, if it is one.
pub fn describe(event: &LoggedEvent) -> Option<String> {
    let data = &event.data;
    match event.kind.as_str() {
        types::ASSISTANT_TURN_START => {
            let turn = data.get("turn").and_then(Value::as_u64).unwrap_or(0);
            Some(format!("turn {turn}: asking the model"))
        }
        types::ASSISTANT_MESSAGE => {
            let content = text(data, "content");
            let calls: Vec<&str> = data
                .get("toolRequests")
                .and_then(Value::as_array)
                .map(|requests| {
                    requests
                        .iter()
                        .filter_map(|r| r.get("name").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let mut line = String::from("model");
            if !content.trim().is_empty() {
                line.push_str(&format!(": {}", shorten(content.trim())));
            }
            if !calls.is_empty() {
                line.push_str(&format!(" → calls {}", calls.join(", ")));
            }
            Some(line)
        }
        types::TOOL_EXECUTION_START => {
            let arguments = data
                .get("arguments")
                .map(Value::to_string)
                .unwrap_or_default();
            Some(format!(
                "tool {} {}",
                text(data, "toolName"),
                shorten(&arguments)
            ))
        }
        types::TOOL_EXECUTION_COMPLETE => {
            let name = text(data, "toolName");
            let ms = data.get("durationMs").and_then(Value::as_u64).unwrap_or(0);
            Some(
                if data.get("success").and_then(Value::as_bool) == Some(true) {
                    format!("✓ {name} ({ms} ms)")
                } else {
                    let message = data
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("failed");
                    format!("✗ {name} ({ms} ms): {}", shorten(message))
                },
            )
        }
        types::HOOK_END => {
            let mut detail = data.clone();
            if let Some(map) = detail.as_object_mut() {
                map.remove("hook");
            }
            Some(format!(
                "hook {}: {}",
                text(data, "hook"),
                shorten(&detail.to_string())
            ))
        }
        types::SESSION_ERROR => Some(format!("error: {}", shorten(text(data, "message")))),
        types::SESSION_USAGE => {
            let count = |key| data.get(key).and_then(Value::as_u64).unwrap_or(0);
            Some(format!(
                "usage: {} prompt + {} completion tokens",
                count("promptTokens"),
                count("completionTokens")
            ))
        }
        _ => None,
    }
}

/// Where a running task's steps go.
pub type StepSink = tokio::sync::mpsc::UnboundedSender<Step>;

/// One numbered step, as [`forward`] sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// "3. ✓ read_file (2 ms)", redacted.
    pub line: String,
    /// The step ends a tool call (`copilot_code_verbose` sends a progress
    /// notification for each).
    pub tool_call: bool,
}

fn text<'a>(data: &'a Value, key: &str) -> &'a str {
    data.get(key).and_then(Value::as_str).unwrap_or("")
}

fn shorten(text: &str) -> String {
    bridge_policy::redact::preview(text, STEP_TEXT_CHARS)
}

/// Sends a numbered line per step of `log` to `sink` until every handle of
/// the log is dropped (close it and drop yours before awaiting this).
pub fn forward(log: &super::EventLog, sink: StepSink) -> tokio::task::JoinHandle<()> {
    use tokio::sync::broadcast::error::RecvError;
    let mut events = log.subscribe();
    tokio::spawn(async move {
        let mut number = 0u32;
        loop {
            match events.recv().await {
                Ok(event) => {
                    if let Some(line) = describe(&event) {
                        number += 1;
                        let line = bridge_policy::redact(&line).into_owned();
                        let step = Step {
                            line: format!("{number}. {line}"),
                            tool_call: event.kind == types::TOOL_EXECUTION_COMPLETE,
                        };
                        if sink.send(step).is_err() {
                            break;
                        }
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    number += 1;
                    let _ = sink.send(Step {
                        line: format!("{number}. ({missed} steps not shown: the log moved on)"),
                        tool_call: false,
                    });
                }
                Err(RecvError::Closed) => break,
            }
        }
    })
}
