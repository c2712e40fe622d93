//! A coding agent's CLI as a runner: `claude -p TASK --output-format json`
//! or `copilot -p TASK --output-format json` in the session's directory,
//! its command line normalized by the rules of nested launches
//! ([`super::nested`]), its answer read strictly from stdout (Claude Code:
//! one result object; the Copilot CLI: JSON lines, the last assistant
//! message, its tool calls and the closing `result`). The host stages our
//! hooks and MCP servers (`staged`) and gives the agent its own settings
//! (`env`); nothing else of the host's environment passes.
//!
//! Cancelling the run or its deadline ends the agent's process group.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bridge_launch::{ChildEnv, Launch, Stderr};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::nested::{self, NestedError};
use super::{
    RunContext, RunReport, RunRequest, RunStatus, Runner, RunnerKind, ToolCallRecord, UsageTotals,
};
use crate::session::Session;

/// Most bytes of an agent's stdout read (Copilot's JSON lines of a long
/// run); more is an error rather than unbounded memory.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// How long an agent gets to exit after SIGTERM.
const TERMINATE_GRACE: Duration = Duration::from_secs(5);

/// Which agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentCli {
    /// Claude Code (`claude`).
    Claude,
    /// The GitHub Copilot CLI (`copilot`).
    Copilot,
}

/// Runs tasks with an agent's CLI.
#[derive(Debug, Clone)]
pub struct AgentCliRunner {
    agent: AgentCli,
    binary: PathBuf,
    staged: Vec<String>,
    env: Vec<(OsString, OsString)>,
}

impl AgentCliRunner {
    pub fn new(agent: AgentCli, binary: impl Into<PathBuf>) -> Self {
        Self {
            agent,
            binary: binary.into(),
            staged: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Arguments every run gets (our staged hooks and MCP servers).
    pub fn with_args(mut self, staged: Vec<String>) -> Self {
        self.staged = staged;
        self
    }

    /// The agent's own settings (its endpoint, credentials, home), on top
    /// of the minimal base environment.
    pub fn with_env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self
    }

    /// The command line of one run.
    pub fn command_line(
        &self,
        task: &str,
        model: Option<&str>,
    ) -> Result<Vec<String>, NestedError> {
        let mut args = self.staged.clone();
        if let Some(model) = model {
            args.extend(["--model".to_owned(), model.to_owned()]);
        }
        args.extend(["-p".to_owned(), task.to_owned()]);
        let mut line = match self.agent {
            // Claude Code's own permission flags differ; our hooks answer
            // for every tool.
            AgentCli::Claude => args,
            AgentCli::Copilot => nested::normalize_args(&args)?,
        };
        line.extend(["--output-format".to_owned(), "json".to_owned()]);
        Ok(line)
    }

    async fn launch(
        &self,
        session: &Session,
        request: &RunRequest,
        context: &RunContext,
    ) -> Result<(Value, Vec<Value>), String> {
        let args = self
            .command_line(&request.task, request.model.as_deref())
            .map_err(|err| err.to_string())?;
        let mut child = Launch::new(&self.binary)
            .args(&args)
            .cwd(session.cwd())
            .env(ChildEnv::minimal().set_all(self.env.iter().cloned()))
            .stderr(Stderr::Tail {
                lines: 20,
                line_chars: 400,
            })
            .spawn()
            .map_err(|err| err.to_string())?;
        let mut stdout = child
            .take_stdout()
            .ok_or_else(|| "the agent's stdout is not piped".to_owned())?;
        let read = async {
            let mut bytes = Vec::new();
            let mut limited = (&mut stdout).take(MAX_OUTPUT_BYTES as u64 + 1);
            limited.read_to_end(&mut bytes).await.map(|_| bytes)
        };
        let deadline = async {
            match request.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let output = tokio::select! {
            read = read => read.map_err(|err| format!("cannot read the agent's output: {err}"))?,
            () = context.cancel_token().cancelled() => {
                child.terminate(TERMINATE_GRACE).await;
                return Err(CANCELLED.to_owned());
            }
            () = deadline => {
                child.terminate(TERMINATE_GRACE).await;
                return Err(TIMED_OUT.to_owned());
            }
        };
        if output.len() > MAX_OUTPUT_BYTES {
            child.terminate(TERMINATE_GRACE).await;
            return Err(format!(
                "the agent printed more than {MAX_OUTPUT_BYTES} bytes"
            ));
        }
        let status = child
            .wait()
            .await
            .map_err(|err| format!("cannot wait for the agent: {err}"))?;
        let stderr = child.stderr_tail().unwrap_or_default();
        match self.agent {
            AgentCli::Claude => nested::read_output(status, &output, stderr.as_bytes())
                .map(|value| (value, Vec::new()))
                .map_err(|err| err.to_string()),
            AgentCli::Copilot => read_lines(status, &output, &stderr),
        }
    }
}

const CANCELLED: &str = "the run was cancelled";
const TIMED_OUT: &str = "the run timed out";

/// The Copilot CLI's JSON lines: every line must be JSON; the last one is
/// the `result`.
fn read_lines(
    status: std::process::ExitStatus,
    output: &[u8],
    stderr: &str,
) -> Result<(Value, Vec<Value>), String> {
    let text = String::from_utf8_lossy(output);
    let mut events = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).map_err(|err| {
            NestedError::Unparseable {
                reason: err.to_string(),
                stdout: line.to_owned(),
            }
            .to_string()
        })?;
        events.push(event);
    }
    let result = events.iter().rev().find(|e| e["type"] == "result").cloned();
    match result {
        Some(result) if status.success() => Ok((result, events)),
        _ => nested::read_output(status, b"", stderr.as_bytes())
            .map(|_| (Value::Null, events))
            .map_err(|err| match err {
                NestedError::Unparseable { .. } => {
                    "the agent's output has no result line".to_owned()
                }
                other => other.to_string(),
            }),
    }
}

#[async_trait]
impl Runner for AgentCliRunner {
    fn kind(&self) -> RunnerKind {
        RunnerKind::Nested
    }

    async fn run(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        context: RunContext,
    ) -> RunReport {
        let started = Instant::now();
        let mut report = RunReport::failed_early(session.id(), "");
        report.error = None;
        match self.launch(&session, &request, &context).await {
            Ok((result, events)) => match self.agent {
                AgentCli::Claude => claude_report(&mut report, &result),
                AgentCli::Copilot => copilot_report(&mut report, &result, &events),
            },
            Err(reason) => {
                report.status = match reason.as_str() {
                    CANCELLED => RunStatus::Cancelled,
                    TIMED_OUT => RunStatus::TimedOut,
                    _ => RunStatus::Failed,
                };
                report.error = Some(reason);
            }
        }
        report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        report
    }
}

/// Claude Code's `{"type": "result", "is_error", "result", "num_turns",
/// "usage": {input_tokens, output_tokens}}`.
fn claude_report(report: &mut RunReport, result: &Value) {
    let count = |key: &str| result["usage"][key].as_u64().unwrap_or(0);
    report.final_text = result["result"].as_str().unwrap_or_default().to_owned();
    report.turns = u32::try_from(result["num_turns"].as_u64().unwrap_or(0)).unwrap_or(u32::MAX);
    report.usage = UsageTotals {
        prompt_tokens: count("input_tokens"),
        completion_tokens: count("output_tokens"),
        requests: u64::from(report.turns),
    };
    if result["is_error"].as_bool() == Some(false) {
        report.status = RunStatus::Completed;
    } else {
        report.status = RunStatus::Failed;
        report.error = Some(format!(
            "Claude Code ended with {}",
            result["subtype"].as_str().unwrap_or("an error")
        ));
    }
}

/// The Copilot CLI's events: the last assistant message is the answer,
/// `tool.execution_complete` the tool calls, `assistant.turn_start` the
/// turns, the `result` line the exit code.
fn copilot_report(report: &mut RunReport, result: &Value, events: &[Value]) {
    let mut names = std::collections::HashMap::new();
    for event in events {
        let data = &event["data"];
        match event["type"].as_str().unwrap_or_default() {
            "assistant.turn_start" => report.turns += 1,
            "assistant.message" => {
                if let Some(text) = data["content"].as_str().filter(|t| !t.trim().is_empty()) {
                    report.final_text = text.to_owned();
                }
                for call in data["toolRequests"].as_array().into_iter().flatten() {
                    if let (Some(id), Some(name)) =
                        (call["toolCallId"].as_str(), call["name"].as_str())
                    {
                        names.insert(id.to_owned(), (name.to_owned(), call["arguments"].clone()));
                    }
                }
            }
            "tool.execution_complete" => {
                let id = data["toolCallId"].as_str().unwrap_or_default();
                let (name, arguments) = names.get(id).cloned().unwrap_or_default();
                let summary = data["result"]["content"]
                    .as_str()
                    .or_else(|| data["error"]["message"].as_str())
                    .unwrap_or_default();
                report.tool_calls.push(ToolCallRecord {
                    name,
                    arguments,
                    ok: data["success"].as_bool() == Some(true),
                    summary: bridge_policy::redact::preview(summary, 200),
                    duration_ms: 0,
                });
            }
            _ => {}
        }
    }
    report.usage.requests = u64::from(report.turns);
    if result["exitCode"].as_i64() == Some(0) {
        report.status = RunStatus::Completed;
    } else {
        report.status = RunStatus::Failed;
        report.error = Some(format!(
            "the Copilot CLI ended with exit code {}",
            result["exitCode"]
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_follow_the_nested_launch_rules() {
        let claude = AgentCliRunner::new(AgentCli::Claude, "claude")
            .with_args(vec!["--settings".into(), "/s.json".into()]);
        assert_eq!(
            claude.command_line("Fix it", Some("opus")).unwrap(),
            [
                "--settings",
                "/s.json",
                "--model",
                "opus",
                "-p",
                "Fix it",
                "--output-format",
                "json"
            ]
        );
        let copilot = AgentCliRunner::new(AgentCli::Copilot, "copilot")
            .with_args(vec!["--plugin-dir".into(), "/p".into()]);
        assert_eq!(
            copilot.command_line("Fix it", None).unwrap(),
            [
                "--allow-all-tools",
                "--allow-all-paths",
                "--plugin-dir",
                "/p",
                "-p",
                "Fix it",
                "--output-format",
                "json"
            ]
        );
    }

    #[test]
    fn copilot_events_make_a_report() {
        let events: Vec<Value> = [
            r#"{"type":"assistant.turn_start","data":{"turnId":"0"}}"#,
            r#"{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"view","arguments":{"path":"a"}}]}}"#,
            r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"text of a"}}}"#,
            r#"{"type":"assistant.turn_start","data":{"turnId":"1"}}"#,
            r#"{"type":"assistant.message","data":{"content":"a says text","toolRequests":[]}}"#,
            r#"{"type":"result","exitCode":0}"#,
        ]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
        let mut report = RunReport::failed_early("s", "");
        copilot_report(&mut report, events.last().unwrap(), &events);
        assert_eq!(report.status, RunStatus::Completed);
        assert_eq!(report.final_text, "a says text");
        assert_eq!(report.turns, 2);
        assert_eq!(report.tool_calls.len(), 1);
        assert_eq!(report.tool_calls[0].name, "view");
        assert!(report.tool_calls[0].ok);
    }
}
