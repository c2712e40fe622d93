//! Listing and removing sessions: what `copilot-bridge sessions list` and
//! `sessions rm` need, read from the head and tail of each file only.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::files::{has_writer, open_session_file};
use super::replay::Replay;
use super::{LogError, LoggedEvent, session_file, types, validate_session_id};

/// Longest first prompt a summary keeps, in characters.
pub const PROMPT_PREVIEW_CHARS: usize = 80;

/// Events read from the start of a file looking for the first prompt.
const HEAD_EVENTS: usize = 64;

/// Tail windows read, smallest first, looking for the last whole event:
/// most lines are short, but a big tool result can be megabytes.
const TAIL_WINDOWS: [u64; 3] = [64 * 1024, 1024 * 1024, 9 * 1024 * 1024];

/// How a session stands, judged from the end of its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A process has the log open for writing now.
    Active,
    /// The last run ended (its last event closes a turn or a run).
    Idle,
    /// The log ends mid-turn, before the run's first event (right after
    /// `session.start` or `session.resume`) or with a torn line (the process
    /// stopped while working), or the last run was cancelled.
    Interrupted,
    /// The last event is a `session.error`, or the last run failed or
    /// timed out.
    Failed,
    /// No event could be read.
    Unreadable,
}

/// One line of `sessions list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// Timestamp of `session.start`.
    pub created: Option<String>,
    /// Timestamp of the last event.
    pub updated: Option<String>,
    /// Durable events (the last `seq`).
    pub events: u64,
    /// The first user prompt, cut to [`PROMPT_PREVIEW_CHARS`].
    pub first_prompt: Option<String>,
    pub status: SessionStatus,
    /// How the last run ended (`completed`, `failed`, `max_turns`, …) when
    /// the log ends with its `session.idle`.
    pub last_run: Option<String>,
    pub bytes: u64,
}

/// The sessions in `dir`, most recently updated first. A missing directory
/// has none; a file that cannot be read is listed as
/// [`SessionStatus::Unreadable`] rather than failing the list. Files whose
/// name is not a valid session id, and anything not a regular file, are
/// ignored. Blocking I/O.
pub fn list(dir: &Path) -> Result<Vec<SessionSummary>, LogError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(LogError::io(dir, err)),
    };
    let mut sessions = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| LogError::io(dir, err))?;
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|name| name.strip_suffix(".jsonl")) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !is_file || validate_session_id(id).is_err() {
            continue;
        }
        sessions.push(summarize(&entry.path(), id));
    }
    sessions.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
    Ok(sessions)
}

/// Removes session `id`'s log. Refuses an invalid id, a session without a
/// log, a path that is not a regular file, and a session a process is
/// writing ([`LogError::Busy`]). Blocking I/O.
pub fn remove(dir: &Path, id: &str) -> Result<(), LogError> {
    validate_session_id(id)?;
    let path = session_file(dir, id);
    let file = open_session_file(&path, id, false)?;
    if has_writer(&file) {
        return Err(LogError::Busy(id.to_owned()));
    }
    drop(file);
    std::fs::remove_file(&path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => LogError::NotFound(id.to_owned()),
        _ => LogError::io(&path, err),
    })
}

fn summarize(path: &Path, id: &str) -> SessionSummary {
    let mut summary = SessionSummary {
        id: id.to_owned(),
        created: None,
        updated: None,
        events: 0,
        first_prompt: None,
        status: SessionStatus::Unreadable,
        last_run: None,
        bytes: 0,
    };
    let Ok(file) = open_session_file(path, id, false) else {
        return summary;
    };
    let active = has_writer(&file);
    summary.bytes = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    if let Ok(reader) = file.try_clone() {
        read_head(reader, path, &mut summary);
    }
    let tail = read_tail(&file, summary.bytes);
    if let Some(last) = &tail.last {
        summary.updated = Some(last.timestamp.clone());
        summary.events = last.seq;
        if last.kind == types::SESSION_IDLE {
            summary.last_run = last
                .data
                .get("status")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    summary.status = if active {
        SessionStatus::Active
    } else if let Some(last) = &tail.last {
        status_after(last, tail.torn)
    } else if summary.created.is_some() {
        SessionStatus::Interrupted
    } else {
        SessionStatus::Unreadable
    };
    summary
}

/// `session.start`'s timestamp and the first prompt, from the first few
/// events.
fn read_head(reader: File, path: &Path, summary: &mut SessionSummary) {
    for event in Replay::from_file(reader, path)
        .take(HEAD_EVENTS)
        .filter_map(Result::ok)
    {
        match event.kind.as_str() {
            types::SESSION_START if summary.created.is_none() => {
                summary.created = Some(event.timestamp);
            }
            types::USER_MESSAGE => {
                let prompt = event.data.get("content").and_then(Value::as_str);
                summary.first_prompt = prompt.map(preview);
                return;
            }
            _ => {}
        }
    }
}

/// The first line of `text`, at most [`PROMPT_PREVIEW_CHARS`] characters.
fn preview(text: &str) -> String {
    use bridge_protocol::excerpt::CUT_MARK;
    let text = text.trim();
    let line = text.lines().next().unwrap_or("");
    let mut shown = bridge_policy::redact::preview(line, PROMPT_PREVIEW_CHARS);
    if line.len() < text.len() && !shown.ends_with(CUT_MARK) {
        shown.push_str(CUT_MARK);
    }
    shown
}

struct Tail {
    last: Option<LoggedEvent>,
    /// The file ends with a line that is not an event.
    torn: bool,
}

/// The last whole event, reading the end of the file only.
fn read_tail(file: &File, len: u64) -> Tail {
    let mut tail = Tail {
        last: None,
        torn: false,
    };
    let mut reader = file;
    for window in TAIL_WINDOWS {
        let start = len.saturating_sub(window);
        let mut bytes = Vec::new();
        let read = reader
            .seek(SeekFrom::Start(start))
            .and_then(|_| reader.take(window).read_to_end(&mut bytes));
        if read.is_err() {
            return tail;
        }
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if start > 0 && !lines.is_empty() {
            // Starts mid-line.
            lines.remove(0);
        }
        let mut first_from_end = true;
        for line in lines.iter().rev() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<LoggedEvent>(line) {
                Ok(event) => {
                    tail.last = Some(event);
                    return tail;
                }
                Err(_) if first_from_end => tail.torn = true,
                Err(_) => {}
            }
            first_from_end = false;
        }
        if start == 0 {
            return tail;
        }
        tail.torn = false;
    }
    tail
}

fn status_after(last: &LoggedEvent, torn: bool) -> SessionStatus {
    match last.kind.as_str() {
        types::SESSION_ERROR => SessionStatus::Failed,
        _ if torn => SessionStatus::Interrupted,
        types::SESSION_IDLE => match last.data.get("status").and_then(Value::as_str) {
            Some("failed" | "timed_out") => SessionStatus::Failed,
            Some("cancelled") => SessionStatus::Interrupted,
            _ => SessionStatus::Idle,
        },
        // Every run ends with an event of its own (`session.idle`,
        // `session.error`, or the Copilot runner's usage): a log that stops
        // at its (re)start was killed before its run began.
        types::SESSION_START
        | types::SESSION_RESUME
        | types::USER_MESSAGE
        | types::ASSISTANT_TURN_START
        | types::TOOL_EXECUTION_START
        | types::TOOL_EXECUTION_PARTIAL_RESULT
        | types::HOOK_START => SessionStatus::Interrupted,
        types::ASSISTANT_MESSAGE
            if last
                .data
                .get("toolRequests")
                .and_then(Value::as_array)
                .is_some_and(|requests| !requests.is_empty()) =>
        {
            SessionStatus::Interrupted
        }
        _ => SessionStatus::Idle,
    }
}
