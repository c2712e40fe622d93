//! Asking the backend for a plan: a prompt, the `TaskPlan` JSON schema (as
//! OpenAI's structured output `response_format` where the backend speaks
//! that wire), validation, one repair request quoting what was wrong, and
//! else the single-task fallback with its reason.

use std::collections::BTreeMap;
use std::sync::Arc;

use bridge_llm::{ChatBackend, ChatRequest, Message, Role};
use serde_json::{Value, json};

use super::plan::{MAX_TASKS, TaskPlan};
use super::result::PlanSource;
use crate::runner::UsageTotals;

/// How to ask for plans.
#[derive(Clone)]
pub struct Planner {
    pub backend: Arc<dyn ChatBackend>,
    pub model: Option<String>,
    /// The backend takes OpenAI's `response_format` (`json_schema`).
    pub structured_output: bool,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("backend", &self.backend.name())
            .field("model", &self.model)
            .field("structured_output", &self.structured_output)
            .finish()
    }
}

/// A plan and where it came from.
#[derive(Debug, Clone)]
pub struct Planned {
    pub plan: TaskPlan,
    pub source: PlanSource,
    pub usage: UsageTotals,
}

/// Sub-tasks the model is asked to stay under.
const ASKED_MAX_TASKS: usize = 12;

const SYSTEM: &str = "You plan software tasks for a team of coding agents that work in parallel on one repository. Split the task into a few independent sub-tasks (at most 12; one is fine for a small task). Each sub-task must be doable alone by an agent that sees the repository and the results of the sub-tasks it depends on. Give each an id (t1, t2, …), a self-contained description, an estimatedComplexity (S, M or L), and, when you can tell, the files it will touch and readOnly: true for a sub-task that only reads. List in dependencies, for each sub-task that needs others done first, the ids it needs; sub-tasks without dependencies run at the same time. Answer with the JSON object only.";

/// The JSON schema of a `TaskPlan` (structured output needs every
/// property listed as required and no others allowed).
pub fn plan_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["tasks", "dependencies"],
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TASKS,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "description", "estimatedComplexity", "files", "readOnly"],
                    "properties": {
                        "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
                        "description": {"type": "string"},
                        "estimatedComplexity": {"type": "string", "enum": ["S", "M", "L"]},
                        "files": {"type": "array", "items": {"type": "string"}},
                        "readOnly": {"type": "boolean"}
                    }
                }
            },
            "dependencies": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}}
            }
        }
    })
}

impl Planner {
    /// Plans `task`: the model's plan, repaired once if needed, else the
    /// whole task as one sub-task (the reason kept in the source).
    pub async fn plan(&self, task: &str) -> Planned {
        let mut usage = UsageTotals::default();
        let mut messages = vec![
            Message::text(Role::System, SYSTEM),
            Message::text(
                Role::User,
                format!(
                    "Task:\n{task}\n\nAnswer with a JSON object {{\"tasks\": [...], \"dependencies\": {{...}}}} of at most {ASKED_MAX_TASKS} sub-tasks."
                ),
            ),
        ];
        let mut last_problem = String::new();
        for repairs in 0..2u32 {
            let answer = match self.ask(&messages, &mut usage).await {
                Ok(answer) => answer,
                Err(err) => {
                    return fallback(task, format!("the planning request failed: {err}"), usage);
                }
            };
            match parse_answer(&answer) {
                Ok(plan) => {
                    return Planned {
                        plan,
                        source: PlanSource::Model { repairs },
                        usage,
                    };
                }
                Err(problem) => {
                    last_problem = problem;
                    messages.push(Message::text(Role::Assistant, answer));
                    messages.push(Message::text(
                        Role::User,
                        format!("That plan cannot be used: {last_problem}. Answer again with the corrected JSON object only."),
                    ));
                }
            }
        }
        fallback(
            task,
            format!("the model's plan was not usable after one repair: {last_problem}"),
            usage,
        )
    }

    async fn ask(&self, messages: &[Message], usage: &mut UsageTotals) -> Result<String, String> {
        if self.structured_output {
            match self.ask_once(messages, usage, true).await {
                Ok(answer) => return Ok(answer),
                // A server of OpenAI's wire that does not take
                // `response_format` (or not this schema) still plans.
                Err(err) => tracing::info!(error = %err, "planning without structured output"),
            }
        }
        self.ask_once(messages, usage, false).await
    }

    async fn ask_once(
        &self,
        messages: &[Message],
        usage: &mut UsageTotals,
        structured: bool,
    ) -> Result<String, String> {
        let mut extra = BTreeMap::new();
        if structured {
            extra.insert(
                "response_format".to_owned(),
                json!({"type": "json_schema", "json_schema": {"name": "TaskPlan", "strict": true, "schema": plan_schema()}}),
            );
        }
        let request = ChatRequest {
            model: self.model.clone(),
            messages: messages.to_vec(),
            temperature: Some(0.0),
            extra,
            ..ChatRequest::default()
        };
        let response = self
            .backend
            .complete(&request)
            .await
            .map_err(|err| err.to_string())?;
        usage.requests += 1;
        if let Some(used) = response.usage {
            usage.prompt_tokens += used.prompt_tokens;
            usage.completion_tokens += used.completion_tokens;
        }
        Ok(response.text)
    }
}

fn fallback(task: &str, reason: String, usage: UsageTotals) -> Planned {
    tracing::warn!(%reason, "planning fell back to a single-task plan");
    Planned {
        plan: TaskPlan::single(task),
        source: PlanSource::Fallback { reason },
        usage,
    }
}

/// The plan in a model's answer (a code fence or words around the object
/// are tolerated), validated.
pub fn parse_answer(answer: &str) -> Result<TaskPlan, String> {
    let start = answer.find('{');
    let end = answer.rfind('}');
    let (Some(start), Some(end)) = (start, end) else {
        return Err(format!(
            "the answer holds no JSON object: {}",
            bridge_policy::redact::shorten(answer.trim(), 200)
        ));
    };
    if end < start {
        return Err("the answer holds no JSON object".to_owned());
    }
    let plan: TaskPlan = serde_json::from_str(&answer[start..=end])
        .map_err(|err| format!("the JSON is not a TaskPlan: {err}"))?;
    plan.waves().map_err(|err| err.to_string())?;
    Ok(plan)
}
