//! The run report as Markdown (`copilot-bridge run`, `copilot_code`): the
//! final answer, the tool calls and the statistics.

use super::{RunReport, RunStatus};

/// Characters of a call's arguments the table shows.
const ARGUMENTS_SHOWN: usize = 60;

impl RunReport {
    /// The report as Markdown, redacted.
    pub fn markdown(&self) -> String {
        markdown(self)
    }
}

fn markdown(report: &RunReport) -> String {
    let mut out = String::new();
    match report.status {
        RunStatus::Completed => {}
        status => {
            out.push_str(&format!(
                "> **Run {}**: {}\n\n",
                status_word(status),
                report.error.as_deref().unwrap_or("no reason given")
            ));
        }
    }
    let answer = report.final_text.trim();
    if answer.is_empty() {
        out.push_str("_(no answer)_\n");
    } else {
        out.push_str(answer);
        out.push('\n');
    }
    if !report.tool_calls.is_empty() {
        out.push_str(
            "\n## Tool calls\n\n| # | tool | arguments | result | ms |\n|---|---|---|---|---|\n",
        );
        for (index, call) in report.tool_calls.iter().enumerate() {
            let arguments = shorten(&call.arguments.to_string(), ARGUMENTS_SHOWN);
            let mark = if call.ok { "ok" } else { "failed" };
            out.push_str(&format!(
                "| {} | `{}` | `{}` | {mark}: {} | {} |\n",
                index + 1,
                call.name,
                cell(&arguments).replace('`', "'"),
                cell(&call.summary),
                call.duration_ms
            ));
        }
    }
    let usage = &report.usage;
    out.push_str(&format!(
        "\n## Statistics\n\n- status: {}\n- turns: {}\n- tool calls: {} ({} failed)\n- tokens: {} prompt + {} completion in {} requests\n- duration: {}\n- session: {}\n",
        status_word(report.status),
        report.turns,
        report.tool_calls.len(),
        report.tool_calls.iter().filter(|call| !call.ok).count(),
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.requests,
        duration(report.duration_ms),
        report.session_id,
    ));
    bridge_policy::redact(&out).into_owned()
}

impl RunStatus {
    /// How a person says it: "stopped at the turn limit".
    pub fn word(self) -> &'static str {
        status_word(self)
    }
}

fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::MaxTurns => "stopped at the turn limit",
        RunStatus::TimedOut => "timed out",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Failed => "failed",
    }
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// One line of a table cell: pipes escaped, newlines folded.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// `text` for a table cell or a progress line, redacted.
fn shorten(text: &str, max_chars: usize) -> String {
    bridge_policy::redact::preview(text, max_chars)
}
