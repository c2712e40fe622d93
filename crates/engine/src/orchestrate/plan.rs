//! `TaskPlan`: sub-tasks and their dependencies, validated, in waves.
//!
//! A plan is valid when every id is a plain name used once, every
//! dependency names a task of the plan, no task depends on itself and the
//! dependencies have no cycle (Kahn's algorithm: what it cannot order is a
//! cycle, which the error names). Waves are Kahn's levels: a task runs in
//! the first wave after all of its dependencies; within a wave, tasks keep
//! the plan's order.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// Most sub-tasks a plan may have.
pub const MAX_TASKS: usize = 10_000;
/// Longest task id (ids name worktrees and files).
pub const MAX_ID_LEN: usize = 64;
/// Longest sub-task description, in bytes: it goes into a prompt, a log
/// and every watcher's events.
pub const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;

/// A task split into sub-tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskPlan {
    pub tasks: Vec<SubTask>,
    /// Task id → the ids it depends on.
    #[serde(default)]
    pub dependencies: BTreeMap<String, Vec<String>>,
}

/// One sub-task of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubTask {
    pub id: String,
    pub description: String,
    #[serde(default)]
    pub estimated_complexity: Complexity,
    /// Who does it (default: the orchestration's runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<SubTaskRunner>,
    /// Files it expects to touch (a hint shown to the runner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// It only reads: it shares the workspace, in a read-only session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// How big a sub-task looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Complexity {
    S,
    #[default]
    M,
    L,
}

/// What runs a sub-task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubTaskRunner {
    /// Our agentic loop over the chat backend.
    Native,
    /// The Copilot CLI over the SDK protocol (`runner::copilot`).
    Copilot,
    /// `claude -p`, launched nested (`runner::nested`).
    Claude,
    /// `copilot -p`, launched nested.
    CopilotCli,
}

impl SubTaskRunner {
    pub const ALL: [SubTaskRunner; 4] =
        [Self::Native, Self::Copilot, Self::Claude, Self::CopilotCli];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Copilot => "copilot",
            Self::Claude => "claude",
            Self::CopilotCli => "copilot-cli",
        }
    }
}

impl std::fmt::Display for SubTaskRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SubTaskRunner {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|runner| runner.as_str() == text.trim())
            .ok_or_else(|| {
                format!("unknown runner {text:?}: expected native, copilot, claude or copilot-cli")
            })
    }
}

/// Why a plan is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has no tasks")]
    Empty,
    #[error("the plan has {0} tasks; at most {MAX_TASKS} are allowed")]
    TooMany(usize),
    #[error("task id {id:?} is invalid: {reason} (at most 64 letters, digits, '.', '_', '-')")]
    InvalidId { id: String, reason: &'static str },
    #[error("task {0:?} has an empty description")]
    EmptyDescription(String),
    #[error(
        "task {id:?} has a description of {bytes} bytes; at most {MAX_DESCRIPTION_BYTES} are allowed (put long material in a file and name it)"
    )]
    DescriptionTooLong { id: String, bytes: usize },
    #[error("task id {0:?} is used twice")]
    Duplicate(String),
    #[error("the dependencies name an unknown task {0:?}")]
    UnknownTask(String),
    #[error("task {task:?} depends on an unknown task {dependency:?}")]
    UnknownDependency { task: String, dependency: String },
    #[error("task {0:?} depends on itself")]
    SelfDependency(String),
    #[error("the dependencies have a cycle: {}", .0.join(" → "))]
    Cycle(Vec<String>),
}

impl TaskPlan {
    /// The plan of one task: the whole task as its only sub-task.
    pub fn single(task: &str) -> Self {
        Self {
            tasks: vec![SubTask {
                id: "t1".to_owned(),
                description: task.to_owned(),
                estimated_complexity: Complexity::M,
                runner: None,
                files: Vec::new(),
                read_only: false,
            }],
            dependencies: BTreeMap::new(),
        }
    }

    /// The position of task `id` in [`tasks`](Self::tasks).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.tasks.iter().position(|task| task.id == id)
    }

    /// Checks the plan and orders it in waves: indexes into
    /// [`tasks`](Self::tasks), each wave in plan order.
    pub fn waves(&self) -> Result<Vec<Vec<usize>>, PlanError> {
        let graph = Graph::of(self)?;
        graph.levels()
    }

    /// For every task, the indexes of the tasks that depend on it.
    pub fn dependents(&self) -> Result<Vec<Vec<usize>>, PlanError> {
        Ok(Graph::of(self)?.dependents)
    }

    /// The indexes of the tasks `index` depends on, in plan order.
    pub fn dependencies_of(&self, index: usize) -> Vec<usize> {
        let Some(task) = self.tasks.get(index) else {
            return Vec::new();
        };
        let mut found: Vec<usize> = self
            .dependencies
            .get(&task.id)
            .into_iter()
            .flatten()
            .filter_map(|id| self.position(id))
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Replaces `{{name}}` in every description with `variables[name]`; a
    /// placeholder without a value is an error naming it.
    pub fn substitute(&mut self, variables: &BTreeMap<String, String>) -> Result<(), String> {
        for task in &mut self.tasks {
            task.description = substitute(&task.description, variables).map_err(|name| {
                format!(
                    "task {:?} uses {{{{{name}}}}}, which no --set gives",
                    task.id
                )
            })?;
        }
        Ok(())
    }
}

fn substitute(text: &str, variables: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = after[..end].trim();
        match variables.get(name) {
            Some(value) => out.push_str(value),
            None => return Err(name.to_owned()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn check_id(id: &str) -> Result<(), PlanError> {
    match crate::log::plain_name_problem(id, MAX_ID_LEN) {
        None => Ok(()),
        Some(reason) => Err(PlanError::InvalidId {
            id: bridge_protocol::excerpt(id).to_string(),
            reason,
        }),
    }
}

/// The plan as index lists, checked.
struct Graph {
    /// `depends_on[i]`: what task `i` waits for (deduplicated).
    depends_on: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    ids: Vec<String>,
}

impl Graph {
    fn of(plan: &TaskPlan) -> Result<Self, PlanError> {
        let count = plan.tasks.len();
        if count == 0 {
            return Err(PlanError::Empty);
        }
        if count > MAX_TASKS {
            return Err(PlanError::TooMany(count));
        }
        let mut index = HashMap::with_capacity(count);
        for (position, task) in plan.tasks.iter().enumerate() {
            check_id(&task.id)?;
            if task.description.trim().is_empty() {
                return Err(PlanError::EmptyDescription(task.id.clone()));
            }
            if task.description.len() > MAX_DESCRIPTION_BYTES {
                return Err(PlanError::DescriptionTooLong {
                    id: task.id.clone(),
                    bytes: task.description.len(),
                });
            }
            if index.insert(task.id.as_str(), position).is_some() {
                return Err(PlanError::Duplicate(task.id.clone()));
            }
        }
        let mut depends_on = vec![Vec::new(); count];
        let mut dependents = vec![Vec::new(); count];
        for (task, needs) in &plan.dependencies {
            let Some(&at) = index.get(task.as_str()) else {
                return Err(PlanError::UnknownTask(task.clone()));
            };
            for need in needs {
                let Some(&from) = index.get(need.as_str()) else {
                    return Err(PlanError::UnknownDependency {
                        task: task.clone(),
                        dependency: need.clone(),
                    });
                };
                if from == at {
                    return Err(PlanError::SelfDependency(task.clone()));
                }
                if !depends_on[at].contains(&from) {
                    depends_on[at].push(from);
                    dependents[from].push(at);
                }
            }
        }
        Ok(Self {
            depends_on,
            dependents,
            ids: plan.tasks.iter().map(|task| task.id.clone()).collect(),
        })
    }

    /// Kahn's algorithm by levels.
    fn levels(&self) -> Result<Vec<Vec<usize>>, PlanError> {
        let mut waiting: Vec<usize> = self.depends_on.iter().map(Vec::len).collect();
        let mut wave: Vec<usize> = (0..waiting.len()).filter(|&i| waiting[i] == 0).collect();
        let mut waves = Vec::new();
        let mut placed = 0;
        while !wave.is_empty() {
            placed += wave.len();
            let mut next = Vec::new();
            for &done in &wave {
                for &after in &self.dependents[done] {
                    waiting[after] -= 1;
                    if waiting[after] == 0 {
                        next.push(after);
                    }
                }
            }
            next.sort_unstable();
            waves.push(std::mem::replace(&mut wave, next));
        }
        if placed < waiting.len() {
            return Err(PlanError::Cycle(self.a_cycle(&waiting)));
        }
        Ok(waves)
    }

    /// One cycle among the tasks Kahn could not place, as ids, the first
    /// repeated at the end.
    fn a_cycle(&self, waiting: &[usize]) -> Vec<String> {
        let Some(start) = (0..waiting.len()).find(|&i| waiting[i] > 0) else {
            return Vec::new();
        };
        // Every unplaced task waits for an unplaced one: following those
        // edges must come back to a task already seen.
        let mut path = vec![start];
        let mut current = start;
        while let Some(&next) = self.depends_on[current].iter().find(|&&d| waiting[d] > 0) {
            if let Some(at) = path.iter().position(|&seen| seen == next) {
                let mut cycle: Vec<String> =
                    path[at..].iter().map(|&i| self.ids[i].clone()).collect();
                cycle.push(self.ids[next].clone());
                return cycle;
            }
            path.push(next);
            current = next;
        }
        path.iter().map(|&i| self.ids[i].clone()).collect()
    }
}

/// A plan file's text (JSON, or YAML when it does not start like JSON),
/// in the `TaskPlan` shape.
pub fn parse_plan_file(text: &str) -> Result<TaskPlan, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|err| format!("not a plan (JSON): {err}"))
    } else {
        serde_yaml_ng::from_str(text).map_err(|err| format!("not a plan (YAML): {err}"))
    }
}

#[cfg(test)]
mod tests;
