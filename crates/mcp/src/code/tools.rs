//! The seven tools of the code server: their listings, their arguments, and
//! how an engine outcome becomes an MCP result.

use std::sync::Arc;

use bridge_engine::orchestrate::{OrchestratedResult, TaskStatus};
use bridge_engine::runner::{RunReport, RunStatus};
use bridge_engine::{CallOutcome, ToolFailure};
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::depth;

pub const READ_FILE: &str = "copilot_read_file";
pub const CREATE_FILE: &str = "copilot_create_file";
pub const LIST_FILES: &str = "copilot_list_files";
pub const CODE_TASK: &str = "copilot_code_task";
pub const CODE: &str = "copilot_code";
pub const CODE_VERBOSE: &str = "copilot_code_verbose";
pub const ORCHESTRATE: &str = "copilot_orchestrate";

/// Names of the tools, in listing order.
pub const NAMES: [&str; 7] = [
    READ_FILE,
    CREATE_FILE,
    LIST_FILES,
    CODE_TASK,
    CODE,
    CODE_VERBOSE,
    ORCHESTRATE,
];

/// Bytes of a call's arguments (as compact JSON) beyond which the call is
/// refused before anything runs: 1 MiB holds any source file an agent
/// writes in one go, and bounds the memory one request can pin.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// `copilot_read_file` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadFileArgs {
    pub path: String,
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
}

/// `copilot_create_file` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateFileArgs {
    pub path: String,
    pub content: String,
    #[serde(default)]
    pub overwrite: bool,
}

/// `copilot_list_files` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    pub directory: Option<String>,
    pub glob: Option<String>,
}

/// `copilot_code_task` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CodeTaskArgs {
    pub prompt: String,
    pub working_dir: Option<String>,
    /// Seconds.
    pub timeout: Option<u64>,
}

/// `copilot_code` and `copilot_code_verbose` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CodeArgs {
    pub task: String,
    pub working_dir: Option<String>,
    pub model: Option<String>,
    /// Seconds.
    pub timeout: Option<u64>,
}

/// `copilot_orchestrate` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OrchestrateArgs {
    pub task: String,
    pub max_concurrency: Option<u64>,
    /// Seconds.
    pub timeout: Option<u64>,
    pub working_dir: Option<String>,
}

/// The tool listings (each with `_depth`).
pub fn listing() -> Arc<[Tool]> {
    let tools = [
        tool(
            READ_FILE,
            "Read a file of the workspace (UTF-8 text; large files are cut, saying so). Goes through copilot-bridge's policy: paths outside the workspace or denied by .agent-policy.yaml are refused.",
            json!({
                "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
                "startLine": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)."},
                "endLine": {"type": "integer", "minimum": 1, "description": "Last line to return, inclusive (default: the last line)."}
            }),
            &["path"],
        ),
        tool(
            CREATE_FILE,
            "Create a file in the workspace with the given content (parent directories are created; written atomically). Refuses to replace an existing file unless overwrite is true.",
            json!({
                "path": {"type": "string", "minLength": 1, "description": "Workspace-relative path of the new file."},
                "content": {"type": "string", "description": "The whole content of the file."},
                "overwrite": {"type": "boolean", "default": false, "description": "Replace the file if it exists."}
            }),
            &["path", "content"],
        ),
        tool(
            LIST_FILES,
            "List the files of the workspace or of one directory in it, recursively, sorted (.gitignore respected, hidden files skipped).",
            json!({
                "directory": {"type": "string", "description": "Directory relative to the workspace root (default: the whole workspace)."},
                "glob": {"type": "string", "description": "Only files matching this glob, e.g. \"*.rs\" or \"src/**/*.ts\"."}
            }),
            &[],
        ),
        tool(
            CODE_TASK,
            "Delegate a whole coding task to copilot-bridge's agent (it reads, edits and runs tools in the workspace) and get its final answer as Markdown. One task runs at a time; later calls wait in line and report their place as progress.",
            json!({
                "prompt": {"type": "string", "minLength": 1, "description": "What to do, with the context the agent needs."},
                "workingDir": {"type": "string", "description": "Directory to work in (default: the server's workspace)."},
                "timeout": {"type": "integer", "minimum": 1, "description": "Seconds the task may take (default: no limit besides the turn limit)."}
            }),
            &["prompt"],
        ),
        tool(
            CODE,
            "Delegate a coding task to copilot-bridge's agent and get the result as Markdown: its final answer, the tool calls it made and statistics. Tasks run one at a time in this workspace.",
            code_properties(),
            &["task"],
        ),
        tool(
            CODE_VERBOSE,
            "Like copilot_code, with a numbered log of every step (model turns, each tool call and its outcome) before the result; each tool call is also sent as a progress notification while the task runs.",
            code_properties(),
            &["task"],
        ),
        tool(
            ORCHESTRATE,
            "Split a larger coding task into sub-tasks with dependencies, run them in parallel waves (writers in separate git worktrees, merged back in plan order) and get a Markdown report per sub-task. Progress notifications report each sub-task's start and end.",
            json!({
                "task": {"type": "string", "minLength": 1, "description": "The whole task, with the context the planner needs."},
                "maxConcurrency": {"type": "integer", "minimum": 1, "maximum": bridge_engine::orchestrate::MAX_CONCURRENCY, "default": bridge_engine::orchestrate::DEFAULT_MAX_CONCURRENCY, "description": "Sub-tasks that run at once."},
                "timeout": {"type": "integer", "minimum": 1, "description": "Seconds the whole plan may take (default: no limit)."},
                "workingDir": {"type": "string", "description": "Directory to work in (default: the server's workspace)."}
            }),
            &["task"],
        ),
    ];
    Arc::from(tools)
}

fn code_properties() -> Value {
    json!({
        "task": {"type": "string", "minLength": 1, "description": "What to do, with the context the agent needs."},
        "workingDir": {"type": "string", "description": "Directory to work in (default: the server's workspace)."},
        "model": {"type": "string", "description": "Model to use (default: the configured one)."},
        "timeout": {"type": "integer", "minimum": 1, "description": "Seconds the task may take (default: no limit besides the turn limit)."}
    })
}

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    Tool::new(name, description, depth::tool_schema(properties, required))
        .with_annotations(annotations(name))
}

/// What a client may assume about a tool before calling it (MCP tool
/// annotations): hosts such as OpenClaw ask for approval less for tools
/// that only read. Only the workspace is touched, so none is open-world.
fn annotations(name: &str) -> ToolAnnotations {
    let (title, reads_only, may_destroy) = match name {
        READ_FILE => ("Read a workspace file", true, false),
        LIST_FILES => ("List workspace files", true, false),
        // It refuses to replace a file unless told to overwrite.
        CREATE_FILE => ("Create a workspace file", false, true),
        CODE_TASK | CODE => ("Delegate a coding task", false, true),
        CODE_VERBOSE => ("Delegate a coding task (step log)", false, true),
        ORCHESTRATE => ("Orchestrate a multi-step coding task", false, true),
        _ => (name, false, true),
    };
    ToolAnnotations::with_title(title)
        .read_only(reads_only)
        .destructive(may_destroy)
        .idempotent(reads_only)
        .open_world(false)
}

/// Refuses arguments over [`MAX_ARGUMENT_BYTES`].
pub fn check_size(tool: &str, args: &Map<String, Value>) -> Result<(), ErrorData> {
    let bytes = bridge_util::json::encoded_len(args);
    if bytes > MAX_ARGUMENT_BYTES {
        return Err(ErrorData::invalid_params(
            format!(
                "{tool}: the arguments are {bytes} bytes; the limit is {MAX_ARGUMENT_BYTES} bytes (1 MiB). Split the content into smaller files or calls."
            ),
            Some(json!({"bytes": bytes, "limit": MAX_ARGUMENT_BYTES})),
        ));
    }
    Ok(())
}

/// Parses a tool's arguments; a mismatch is an invalid-params error naming
/// the tool and the field.
pub fn parse<T: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(args))
        .map_err(|err| invalid_params(format!("{tool}: invalid arguments: {err}")))
}

pub fn invalid_params(message: String) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

/// The engine arguments of each file tool.
pub fn read_file_call(args: ReadFileArgs) -> Value {
    let mut call = json!({"path": args.path});
    if let Some(line) = args.start_line {
        call["startLine"] = json!(line);
    }
    if let Some(line) = args.end_line {
        call["endLine"] = json!(line);
    }
    call
}

pub fn create_file_call(args: CreateFileArgs) -> Value {
    json!({"path": args.path, "content": args.content, "overwrite": args.overwrite})
}

pub fn list_files_call(args: ListFilesArgs) -> Value {
    let mut call = json!({});
    if let Some(directory) = args.directory {
        call["path"] = json!(directory);
    }
    if let Some(glob) = args.glob {
        call["glob"] = json!(glob);
    }
    call
}

/// An engine outcome as an MCP result: the text an agent reads first, the
/// whole engine result as `structuredContent`. A failure is an error
/// result with the reason, except arguments the tool itself found invalid
/// (an invalid-params error, like the ones caught here).
pub fn file_result(tool: &str, outcome: CallOutcome) -> Result<CallToolResult, ErrorData> {
    let CallOutcome {
        result, context, ..
    } = outcome;
    let value = match result {
        Ok(value) => value,
        Err(failure) if failure.kind == bridge_protocol::FailureKind::InvalidArguments => {
            return Err(invalid_params(format!("{tool}: {}", failure.message)));
        }
        Err(failure) => return Ok(failure_result(&failure, context)),
    };
    let text = match tool {
        READ_FILE => read_text(&value),
        CREATE_FILE => created_text(&value),
        _ => listing_text(&value),
    };
    let mut content = vec![ContentBlock::text(text)];
    content.extend(context.into_iter().map(ContentBlock::text));
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(value);
    Ok(result)
}

fn failure_result(failure: &ToolFailure, context: Vec<String>) -> CallToolResult {
    let mut content = vec![ContentBlock::text(format!(
        "{}: {}",
        failure.code, failure.message
    ))];
    content.extend(context.into_iter().map(ContentBlock::text));
    let mut result = CallToolResult::error(content);
    result.structured_content = Some(json!({"error": failure}));
    result
}

fn read_text(value: &Value) -> String {
    let mut text = value["content"].as_str().unwrap_or_default().to_owned();
    if value["truncated"].as_bool() == Some(true) {
        text.push_str(&format!(
            "\n[cut: lines {}-{} of {}; ask for startLine/endLine to read on]",
            value["startLine"], value["endLine"], value["totalLines"]
        ));
    }
    text
}

fn created_text(value: &Value) -> String {
    let verb = if value["created"].as_bool() == Some(false) {
        "replaced"
    } else {
        "created"
    };
    format!(
        "{verb} {} ({} bytes)",
        value["path"].as_str().unwrap_or_default(),
        value["bytes"]
    )
}

fn listing_text(value: &Value) -> String {
    let files: Vec<&str> = value["files"]
        .as_array()
        .map(|files| files.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = if files.is_empty() {
        "(no files)".to_owned()
    } else {
        files.join("\n")
    };
    if value["truncated"].as_bool() == Some(true) {
        text.push_str("\n[more files not shown: narrow the directory or the glob]");
    }
    text
}

/// A finished task as an MCP result: the agent's final Markdown; a run
/// that did not complete is an error result saying why.
pub fn task_result(report: &RunReport) -> CallToolResult {
    // The model may repeat a secret it read; nothing leaves unredacted.
    let answer = bridge_policy::redact(report.final_text.trim()).into_owned();
    let answer = answer.as_str();
    let summary = json!({
        "status": report.status,
        "sessionId": report.session_id,
        "turns": report.turns,
        "durationMs": report.duration_ms,
        "toolCalls": report.tool_calls.iter().map(|call| json!({"name": call.name, "ok": call.ok})).collect::<Vec<_>>(),
        "error": report.error.as_deref().map(|e| bridge_policy::redact(e).into_owned()),
    });
    let mut result = if report.status == RunStatus::Completed {
        let text = if answer.is_empty() {
            "_(no answer)_"
        } else {
            answer
        };
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        let status = serde_json::to_value(report.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut text = format!(
            "the task did not complete ({status}): {}",
            bridge_policy::redact(report.error.as_deref().unwrap_or("no reason given"))
        );
        if !answer.is_empty() {
            text.push_str("\n\n");
            text.push_str(answer);
        }
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(summary);
    result
}

/// A finished task for `copilot_code`: the run report as Markdown (answer,
/// tool calls, statistics); for `copilot_code_verbose` with its numbered
/// steps first. A run that did not complete is an error result.
pub fn code_result(report: &RunReport, steps: Option<&[String]>) -> CallToolResult {
    let mut text = String::new();
    if let Some(steps) = steps {
        text.push_str("## Steps\n\n");
        for step in steps {
            text.push_str(step);
            text.push('\n');
        }
        text.push_str("\n## Result\n\n");
    }
    text.push_str(&report.markdown());
    let mut result = if report.status == RunStatus::Completed {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = task_result(report).structured_content;
    result
}

/// An orchestration's report: Markdown for the agent, the whole result as
/// `structuredContent`; an error result when no sub-task completed.
pub fn orchestrated_result(result: &OrchestratedResult) -> CallToolResult {
    let text = bridge_policy::redact(&result.markdown()).into_owned();
    let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
    bridge_policy::redact_value(&mut value);
    let nothing_done = result.count(TaskStatus::Completed) == 0;
    let mut answer = if nothing_done {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    answer.structured_content = Some(value);
    answer
}

/// A task that could not start (no backend, bad working directory).
pub fn task_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "the task could not start: {}",
        bridge_policy::redact(message)
    ))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_reading_tools_claim_to_be_read_only() {
        let listing = listing();
        let hints: Vec<(&str, Option<bool>, Option<bool>)> = listing
            .iter()
            .map(|tool| {
                let notes = tool.annotations.clone().unwrap_or_default();
                (
                    tool.name.as_ref(),
                    notes.read_only_hint,
                    notes.destructive_hint,
                )
            })
            .collect();
        for (name, read_only, destructive) in hints {
            let reads = name == READ_FILE || name == LIST_FILES;
            assert_eq!(read_only, Some(reads), "{name}");
            assert_eq!(destructive, Some(!reads), "{name}");
        }
    }
}
