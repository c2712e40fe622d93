//! `shell` and `run_task`: command lines run by `sh -c` in the workspace.
//!
//! `shell` runs what the model wrote, so it declares the command line as an
//! [`Access::Run`]: the decision puts it through the shell analysis before
//! the tool runs (dangerous commands are denied; a command the analysis
//! wants a person to approve goes to the session's approver, and is denied
//! where nobody can answer; workspace owners allow such commands with
//! `shell.allow` in `.agent-policy.yaml`).
//!
//! `run_task` runs commands the user configured (`[tools.tasks]`), so it
//! declares only its working directory, but otherwise runs the same way:
//! scrubbed environment, own process group, timeout, capped output.

mod env;
mod process;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_policy::Access;
use bridge_protocol::ToolEffect;
use serde::Deserialize;
use serde_json::{Value, json};

pub use env::git_hardening_env;
pub use process::ProcessOutcome;
pub(crate) use process::run_process;

use crate::read::support::parse_args;
use crate::{Tool, ToolContext, ToolError};

/// Upper bound of a caller-chosen `timeoutSecs`.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Shell), Arc::new(RunTask)]
}

/// Runs `sh -c command_line` in `cwd` with the settings' output cap.
async fn run_command_line(
    ctx: &ToolContext,
    command_line: &str,
    cwd: &std::path::Path,
    timeout_secs: u64,
) -> Result<ProcessOutcome, ToolError> {
    run_process(
        "sh".as_ref(),
        &["-c", command_line],
        cwd,
        Duration::from_secs(timeout_secs),
        ctx.settings.shell_output_cap_bytes,
    )
    .await
    .map_err(|err| ToolError::io("cannot start sh", err))
}

/// A workspace directory to run in: the root, or a relative directory
/// inside it.
async fn working_dir(
    ctx: &ToolContext,
    tool: &str,
    cwd: Option<&str>,
) -> Result<PathBuf, ToolError> {
    let Some(cwd) = cwd else {
        return Ok(ctx.guard.root().path().to_path_buf());
    };
    let dir = ctx.resolve_read(cwd)?;
    match tokio::fs::metadata(&dir).await {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(ToolError::InvalidArguments(format!(
            "{tool}: cwd {cwd:?} is not a directory"
        ))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(ToolError::NotFound(
            format!("{tool}: working directory {cwd:?}"),
        )),
        Err(err) => Err(ToolError::io(format!("cannot stat {cwd}"), err)),
    }
}

fn outcome_json(outcome: &ProcessOutcome) -> Result<Value, ToolError> {
    serde_json::to_value(outcome)
        .map_err(|err| ToolError::Failed(format!("cannot serialize the process outcome: {err}")))
}

struct Shell;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShellArgs {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

#[async_trait]
impl Tool for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn description(&self) -> &'static str {
        "Run a shell command line (sh -c) in the workspace, without stdin and without secret environment variables. Dangerous commands are refused; commands that need approval run once a person allows them (or when .agent-policy.yaml shell.allow names them). Returns exit code, stdout and stderr (capped), and whether it timed out."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command line, run by sh -c."},
                "cwd": {"type": "string", "description": "Working directory relative to the workspace root (default: the root)."},
                "timeoutSecs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS, "description": "Kill the command (and its children) after this many seconds."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolError> {
        let args = ShellArgs::deserialize(args)
            .map_err(|err| ToolError::InvalidArguments(format!("{}: {err}", self.name())))?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "shell: command must not be empty".to_owned(),
            ));
        }
        Ok(vec![Access::Run {
            command: args.command,
            cwd: args.cwd,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: ShellArgs = parse_args(self.name(), args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "shell: command must not be empty".to_owned(),
            ));
        }
        let timeout_secs = match args.timeout_secs {
            None => ctx.settings.shell_timeout_secs,
            Some(secs @ 1..=MAX_TIMEOUT_SECS) => secs,
            Some(secs) => {
                return Err(ToolError::InvalidArguments(format!(
                    "shell: timeoutSecs must be between 1 and {MAX_TIMEOUT_SECS}, got {secs}"
                )));
            }
        };
        // The decision checked the command in this directory (its
        // declared access) before the call got here.
        let cwd = working_dir(ctx, self.name(), args.cwd.as_deref()).await?;
        let outcome = run_command_line(ctx, &args.command, &cwd, timeout_secs).await?;
        outcome_json(&outcome)
    }
}

struct RunTask;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunTaskArgs {
    name: String,
}

#[async_trait]
impl Tool for RunTask {
    fn name(&self) -> &'static str {
        "run_task"
    }

    fn description(&self) -> &'static str {
        "Run a named task configured by the user ([tools.tasks] in config.toml), such as a build or test command. Returns exit code, stdout and stderr (capped), and whether it timed out."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The name of a configured task."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    /// The command is the user's own; the model picks only which.
    fn accesses(&self, _args: &Value) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args: RunTaskArgs = parse_args(self.name(), args)?;
        let tasks = &ctx.settings.tasks;
        if tasks.is_empty() {
            return Err(ToolError::NotConfigured(
                "no tasks are configured; add one to config.toml, e.g. [tools.tasks.test] command = \"cargo test\"".to_owned(),
            ));
        }
        let Some(task) = tasks.get(&args.name) else {
            let names: Vec<&str> = tasks.keys().map(String::as_str).collect();
            return Err(ToolError::InvalidArguments(format!(
                "run_task: unknown task {:?}; configured tasks: {}",
                args.name,
                names.join(", ")
            )));
        };
        let cwd = working_dir(ctx, self.name(), task.cwd.as_deref()).await?;
        let timeout_secs = task.timeout_secs.unwrap_or(ctx.settings.shell_timeout_secs);
        let outcome = run_command_line(ctx, &task.command, &cwd, timeout_secs).await?;
        let mut result = outcome_json(&outcome)?;
        result["task"] = json!(args.name);
        Ok(result)
    }
}
