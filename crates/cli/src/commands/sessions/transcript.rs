//! `sessions show`: a session log as a readable transcript (or as JSON),
//! streamed from the file, printing what it can and listing what it could
//! not read.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;

use bridge_engine::log::{LogError, LoggedEvent, replay, types};
use bridge_engine::orchestrate::events as plan_events;
use serde_json::{Value, json};

use crate::exit::{self, Failure};

/// Longest argument summary or tool result preview, in characters.
const PREVIEW_CHARS: usize = 120;

pub(super) struct Shown {
    pub skipped: usize,
}

/// Prints session `id`'s log at `path` to stdout. Blocking I/O.
pub(super) fn show(path: &Path, id: &str, as_json: bool) -> Result<Shown, Failure> {
    let events = replay(path).map_err(super::log_failure)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let written = if as_json {
        show_json(events, id, &mut out)
    } else {
        let mut transcript = Transcript::default();
        let result = transcript.render(events, &mut out);
        result.map(|()| transcript.skipped.len())
    };
    let skipped = written
        .and_then(|skipped| out.flush().map(|()| skipped).map_err(ShowError::Io))
        .map_err(|err| match err {
            ShowError::Io(err) => Failure::internal(format!("cannot write to stdout: {err}")),
            ShowError::Log(err) => Failure::new(exit::FAILED, err.to_string()),
        })?;
    Ok(Shown { skipped })
}

enum ShowError {
    Io(std::io::Error),
    /// A read error that ended the replay (not a corrupt line).
    Log(LogError),
}

impl From<std::io::Error> for ShowError {
    fn from(err: std::io::Error) -> Self {
        Self::Io(err)
    }
}

fn show_json(
    mut events: bridge_engine::log::Replay,
    id: &str,
    out: &mut impl Write,
) -> Result<usize, ShowError> {
    let mut lines = Vec::new();
    let mut skipped = Vec::new();
    for item in events.by_ref() {
        match item {
            Ok(event) => lines.push(event),
            Err(LogError::Corrupt { line, reason, .. }) => {
                skipped.push(json!({"line": line, "reason": reason}));
            }
            Err(other) => return Err(ShowError::Log(other)),
        }
    }
    let count = skipped.len();
    let mut value = json!({
        "id": id,
        "events": lines,
        "skipped": skipped,
        "tornTail": events.torn_tail(),
    });
    bridge_policy::redact_value(&mut value);
    serde_json::to_writer_pretty(&mut *out, &value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(count)
}

/// A tool call asked for and not yet answered.
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct Transcript {
    open_calls: Vec<OpenCall>,
    prompt_tokens: u64,
    completion_tokens: u64,
    requests: u64,
    skipped: Vec<(u64, String)>,
}

impl Transcript {
    fn render(
        &mut self,
        mut events: bridge_engine::log::Replay,
        out: &mut impl Write,
    ) -> Result<(), ShowError> {
        let mut text = String::new();
        for item in events.by_ref() {
            match item {
                Ok(event) => self.event(&event, &mut text),
                Err(LogError::Corrupt { line, reason, .. }) => {
                    let _ = writeln!(text, "> [line {line} skipped: {reason}]\n");
                    self.skipped.push((line, reason));
                }
                Err(other) => {
                    out.write_all(redact(&text).as_bytes())?;
                    return Err(ShowError::Log(other));
                }
            }
            if text.len() > 32 * 1024 {
                out.write_all(redact(&text).as_bytes())?;
                text.clear();
            }
        }
        self.settle_open_calls(&mut text);
        self.footer(events.torn_tail(), &mut text);
        out.write_all(redact(&text).as_bytes())?;
        Ok(())
    }

    fn event(&mut self, event: &LoggedEvent, text: &mut String) {
        let data = &event.data;
        let time = event.timestamp.get(11..19).unwrap_or(&event.timestamp);
        match event.kind.as_str() {
            types::SESSION_START => {
                let _ = writeln!(text, "# Session {}\n", field(data, "sessionId"));
                let mut facts = vec![format!("started {}", event.timestamp)];
                for key in ["runner", "backend", "model", "cwd"] {
                    if let Some(value) = data.get(key).and_then(Value::as_str) {
                        facts.push(format!("{key} {value}"));
                    }
                }
                let _ = writeln!(text, "{}\n", facts.join(" · "));
            }
            types::SESSION_RESUME => {
                self.settle_open_calls(text);
                let _ = writeln!(text, "--- resumed {} ---\n", event.timestamp);
            }
            types::USER_MESSAGE => {
                self.settle_open_calls(text);
                let _ = writeln!(
                    text,
                    "## Prompt · {time}\n\n{}\n",
                    field(data, "content").trim_end()
                );
            }
            types::ASSISTANT_MESSAGE => {
                self.settle_open_calls(text);
                let content = field(data, "content");
                if !content.trim().is_empty() {
                    let _ = writeln!(text, "## Assistant · {time}\n\n{}\n", content.trim_end());
                }
                let requests = data.get("toolRequests").and_then(Value::as_array);
                for request in requests.into_iter().flatten() {
                    self.open_calls.push(OpenCall {
                        id: field(request, "toolCallId"),
                        name: field(request, "name"),
                        arguments: preview(&compact(request.get("arguments"))),
                    });
                }
            }
            types::TOOL_EXECUTION_COMPLETE => self.tool_complete(data, text),
            types::SESSION_ERROR => {
                let _ = writeln!(
                    text,
                    "**Error** ({}) · {time}: {}\n",
                    field(data, "errorType"),
                    field(data, "message")
                );
            }
            types::SESSION_IDLE => {
                self.settle_open_calls(text);
                let _ = writeln!(
                    text,
                    "_Run {} · {} turns, {} tool calls · {time}_\n",
                    field(data, "status"),
                    compact(data.get("turns")),
                    compact(data.get("toolCalls"))
                );
            }
            types::SESSION_USAGE => {
                let count = |key| data.get(key).and_then(Value::as_u64).unwrap_or(0);
                self.prompt_tokens += count("promptTokens");
                self.completion_tokens += count("completionTokens");
                self.requests += 1;
            }
            types::SESSION_INFO => {
                let _ = writeln!(text, "_Note: {}_\n", field(data, "message"));
            }
            types::SESSION_MODEL_CHANGE => {
                let _ = writeln!(text, "_Model: {}_\n", field(data, "newModel"));
            }
            // An orchestration's log (crates/engine/src/orchestrate/mod.rs).
            plan_events::PLAN => {
                let tasks = data
                    .pointer("/plan/tasks")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let waves = data
                    .get("waves")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let _ = writeln!(
                    text,
                    "# Orchestration · {}\n\n{}\n\n{tasks} sub-task(s) in {waves} wave(s), plan {}\n",
                    event.timestamp,
                    field(data, "task").trim_end(),
                    data.pointer("/source/kind")
                        .and_then(Value::as_str)
                        .unwrap_or("-"),
                );
            }
            plan_events::TASK_START => {
                let _ = writeln!(
                    text,
                    "- {time} {} started (wave {}, {}){}",
                    field(data, "taskId"),
                    compact(data.get("wave")),
                    field(data, "runner"),
                    data.get("log")
                        .and_then(Value::as_str)
                        .map(|log| format!("; `sessions show {log}`"))
                        .unwrap_or_default(),
                );
            }
            plan_events::TASK_COMPLETE => {
                let error = field(data, "error");
                let said = if error.is_empty() {
                    field(data, "output")
                } else {
                    error
                };
                let _ = writeln!(
                    text,
                    "- {time} {} {} in {} ms: {}",
                    field(data, "taskId"),
                    field(data, "status"),
                    compact(data.get("durationMs")),
                    preview(said.trim()),
                );
            }
            plan_events::TASK_SKIPPED => {
                let _ = writeln!(
                    text,
                    "- {} skipped: {}",
                    field(data, "taskId"),
                    field(data, "reason")
                );
            }
            plan_events::PLAN_COMPLETE => {
                let _ = writeln!(
                    text,
                    "\n## {} · {} · {} ms\n",
                    field(data, "status"),
                    field(data, "summary"),
                    compact(data.get("durationMs")),
                );
            }
            types::HOOK_END => {
                let mut detail = data.clone();
                if let Value::Object(map) = &mut detail {
                    map.remove("hook");
                }
                let _ = writeln!(
                    text,
                    "- hook {}: {}",
                    field(data, "hook"),
                    preview(&compact(Some(&detail)))
                );
            }
            _ => {}
        }
    }

    fn tool_complete(&mut self, data: &Value, text: &mut String) {
        let id = field(data, "toolCallId");
        let (name, arguments) = match self.open_calls.iter().position(|call| call.id == id) {
            Some(index) => {
                let call = self.open_calls.remove(index);
                (call.name, call.arguments)
            }
            None => (field(data, "toolName"), String::new()),
        };
        let duration = data
            .get("durationMs")
            .and_then(Value::as_u64)
            .map(|ms| format!(" ({ms} ms)"))
            .unwrap_or_default();
        if data.get("success").and_then(Value::as_bool) == Some(true) {
            let result = preview(&compact(data.pointer("/result/content")));
            let _ = writeln!(text, "- ✓ {name} {arguments}{duration} → {result}");
        } else {
            let code = data
                .pointer("/error/code")
                .and_then(Value::as_str)
                .map(|code| format!(" [{code}]"))
                .unwrap_or_default();
            let message = preview(&compact(data.pointer("/error/message")));
            let _ = writeln!(text, "- ✗ {name} {arguments}{duration}: {message}{code}");
        }
    }

    fn settle_open_calls(&mut self, text: &mut String) {
        for call in self.open_calls.drain(..) {
            let _ = writeln!(
                text,
                "- … {} {}: no result (interrupted)",
                call.name, call.arguments
            );
        }
        if !text.ends_with("\n\n")
            && text.ends_with('\n')
            && text.lines().last().is_some_and(|l| l.starts_with("- "))
        {
            text.push('\n');
        }
    }

    fn footer(&self, torn_tail: Option<u64>, text: &mut String) {
        if self.requests > 0 {
            let _ = writeln!(
                text,
                "Usage: {} model requests, {} prompt + {} completion tokens",
                self.requests, self.prompt_tokens, self.completion_tokens
            );
        }
        if !self.skipped.is_empty() {
            let lines: Vec<String> = self
                .skipped
                .iter()
                .map(|(line, _)| line.to_string())
                .collect();
            let _ = writeln!(
                text,
                "Skipped {} unreadable line(s) of the log: {}",
                self.skipped.len(),
                lines.join(", ")
            );
        }
        if let Some(line) = torn_tail {
            let _ = writeln!(
                text,
                "The last line ({line}) was cut short (the session stopped mid-write) and was skipped."
            );
        }
    }
}

fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    bridge_policy::redact(text)
}

fn field(data: &Value, key: &str) -> String {
    match data.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A string as is, anything else as compact JSON, on one line.
fn compact(value: Option<&Value>) -> String {
    let text = match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn preview(text: &str) -> String {
    bridge_policy::redact::preview(text, PREVIEW_CHARS)
}
