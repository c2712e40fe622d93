//! What an orchestration reports: per sub-task its status, output, tool
//! calls and timings (`TaskResult`), and the whole (`OrchestratedResult`),
//! as JSON and as Markdown.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::plan::{SubTask, SubTaskRunner, TaskPlan};
use crate::runner::{RunReport, RunStatus, ToolCallRecord, UsageTotals};

/// How a sub-task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Completed,
    Failed,
    /// It finished, but its changes could not be merged back.
    Conflict,
    Cancelled,
    /// It never ran: a dependency did not complete, or the plan stopped.
    Skipped,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Conflict => "conflict",
            Self::Cancelled => "cancelled",
            Self::Skipped => "skipped",
        }
    }
}

/// Where a sub-task worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workdir {
    /// The workspace itself.
    Workspace,
    /// A git worktree of a snapshot of the workspace.
    Worktree,
    /// A copy of the workspace (not a git repository).
    Copy,
}

/// A file two sub-tasks changed in ways that do not merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    /// Workspace-relative path.
    pub file: String,
    /// The conflicting hunks, with `<<<<<<< workspace` / `=======` /
    /// `>>>>>>> TASK` markers (empty for a binary file or a deletion).
    pub hunks: Vec<String>,
}

/// One sub-task's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    pub id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<SubTaskRunner>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<usize>,
    /// The runner's final answer.
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
    #[serde(default)]
    pub usage: UsageTotals,
    #[serde(default)]
    pub duration_ms: u64,
    /// Why it failed, was skipped or cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files its changes touched, merged back into the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
    /// Resumed plans: it had completed before and did not run again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
}

impl TaskResult {
    /// A sub-task that could not run, for `reason`.
    pub(super) fn failed(task: &SubTask, reason: String) -> Self {
        let mut result = Self::skipped(&task.id, reason);
        result.status = TaskStatus::Failed;
        result
    }

    /// What a sub-task's run came to.
    pub(super) fn from_report(task: &SubTask, kind: SubTaskRunner, report: RunReport) -> Self {
        let status = match report.status {
            RunStatus::Completed => TaskStatus::Completed,
            RunStatus::Cancelled => TaskStatus::Cancelled,
            RunStatus::Failed | RunStatus::MaxTurns | RunStatus::TimedOut => TaskStatus::Failed,
        };
        let error = match report.status {
            RunStatus::Completed => None,
            RunStatus::MaxTurns => Some(format!("it ran out of turns after {}", report.turns)),
            RunStatus::TimedOut => Some("it timed out".to_owned()),
            _ => report
                .error
                .clone()
                .or_else(|| Some("no reason given".to_owned())),
        };
        Self {
            id: task.id.clone(),
            status,
            runner: Some(kind),
            wave: None,
            output: report.final_text,
            tool_calls: report.tool_calls,
            usage: report.usage,
            duration_ms: report.duration_ms,
            error,
            changed_files: Vec::new(),
            conflicts: Vec::new(),
            reused: false,
        }
    }

    pub fn skipped(id: &str, reason: String) -> Self {
        Self {
            id: id.to_owned(),
            status: TaskStatus::Skipped,
            runner: None,
            wave: None,
            output: String::new(),
            tool_calls: Vec::new(),
            usage: UsageTotals::default(),
            duration_ms: 0,
            error: Some(reason),
            changed_files: Vec::new(),
            conflicts: Vec::new(),
            reused: false,
        }
    }
}

/// How the whole plan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Every sub-task completed.
    Completed,
    /// Some did not.
    Partial,
    /// None completed.
    Failed,
    Cancelled,
    TimedOut,
}

/// Where the plan came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PlanSource {
    /// The model's plan (after `repairs` repair requests).
    Model { repairs: u32 },
    /// A plan file the user wrote.
    File { path: String },
    /// The model's plan was unusable; the whole task runs as one.
    Fallback { reason: String },
    /// Given by the caller (`/rpc`, a resumed log).
    Given,
}

/// An orchestration's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrchestratedResult {
    /// The orchestration's id (its log is `sessions/ID.jsonl`).
    pub id: String,
    pub task: String,
    pub status: PlanStatus,
    pub plan: TaskPlan,
    pub source: PlanSource,
    /// Task ids per wave.
    pub waves: Vec<Vec<String>>,
    /// In plan order.
    pub tasks: Vec<TaskResult>,
    pub summary: String,
    pub duration_ms: u64,
}

impl OrchestratedResult {
    pub fn count(&self, status: TaskStatus) -> usize {
        self.tasks.iter().filter(|t| t.status == status).count()
    }

    /// "3 of 4 sub-tasks completed, 1 skipped (t4: …)".
    pub fn summarize(tasks: &[TaskResult]) -> String {
        let completed = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        let mut summary = format!(
            "{completed} of {} sub-task{} completed",
            tasks.len(),
            if tasks.len() == 1 { "" } else { "s" }
        );
        for status in [
            TaskStatus::Failed,
            TaskStatus::Conflict,
            TaskStatus::Cancelled,
            TaskStatus::Skipped,
        ] {
            let ids: Vec<&str> = tasks
                .iter()
                .filter(|t| t.status == status)
                .map(|t| t.id.as_str())
                .collect();
            if !ids.is_empty() {
                let shown: Vec<&str> = ids.iter().take(10).copied().collect();
                let more = if ids.len() > 10 { ", …" } else { "" };
                let _ = write!(
                    summary,
                    ", {} {} ({}{more})",
                    ids.len(),
                    status.as_str(),
                    shown.join(", ")
                );
            }
        }
        summary
    }

    /// The report as Markdown: the summary, then each sub-task's status,
    /// time, tool calls and output.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## Orchestrated: {}\n", status_word(self.status));
        let _ = writeln!(out, "{}.\n", self.summary);
        if let PlanSource::Fallback { reason } = &self.source {
            let _ = writeln!(
                out,
                "The model's plan was unusable ({reason}); the task ran as one sub-task.\n"
            );
        }
        let _ = writeln!(out, "| task | status | wave | time | tool calls |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for result in &self.tasks {
            let wave = result.wave.map_or("–".to_owned(), |w| (w + 1).to_string());
            let _ = writeln!(
                out,
                "| {} | {} | {wave} | {} | {} |",
                result.id,
                result.status.as_str(),
                seconds(result.duration_ms),
                result.tool_calls.len()
            );
        }
        for (task, result) in self.plan.tasks.iter().zip(&self.tasks) {
            let _ = writeln!(
                out,
                "\n### {}: {}\n",
                result.id,
                first_line(&task.description)
            );
            if let Some(error) = &result.error {
                let _ = writeln!(out, "**{}**: {error}\n", result.status.as_str());
            }
            for conflict in &result.conflicts {
                let _ = writeln!(out, "Conflict in `{}`:\n", conflict.file);
                for hunk in &conflict.hunks {
                    let _ = writeln!(out, "```\n{}\n```\n", hunk.trim_end());
                }
            }
            if !result.changed_files.is_empty() {
                let _ = writeln!(out, "Changed: {}\n", result.changed_files.join(", "));
            }
            if !result.output.trim().is_empty() {
                let _ = writeln!(out, "{}", result.output.trim_end());
            }
        }
        let _ = writeln!(out, "\n_{} in {}_", self.id, seconds(self.duration_ms));
        out
    }
}

pub fn status_word(status: PlanStatus) -> &'static str {
    match status {
        PlanStatus::Completed => "completed",
        PlanStatus::Partial => "partly completed",
        PlanStatus::Failed => "failed",
        PlanStatus::Cancelled => "cancelled",
        PlanStatus::TimedOut => "timed out",
    }
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(100) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

pub(crate) fn seconds(ms: u64) -> String {
    format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
}
