//! The tool bus: the `mcp.*` methods of the VS Code facade design
//! (`mcp.fs.read`, `mcp.search.code`, `mcp.edit.applyPatch`, …), each a
//! thin mapping of its params onto a workspace tool of a session, called
//! through `Session::call_tool` so the policy, approval, redaction and the
//! audit log see every call. No method touches the workspace itself.

use std::sync::Arc;

use bridge_engine::{CallOrigin, Session, ToolFailure};
use bridge_protocol::jsonrpc::{ErrorObject, INVALID_PARAMS};
use serde_json::{Map, Value, json};

use super::methods::{call_failure, no_session};
use super::{MethodTable, Params, RpcResult};
use crate::app::{DEFAULT_ALIAS, ServerContext};

/// The param every `mcp.*` method takes besides its own: which session's
/// workspace (and policy) the call runs in.
const SESSION_PARAM: &str = "session";

#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    Count,
    Flag,
}

/// One param of a method and the tool argument it becomes.
#[derive(Debug)]
struct Field {
    param: &'static str,
    arg: &'static str,
    kind: Kind,
    required: bool,
}

const fn text(param: &'static str, arg: &'static str, required: bool) -> Field {
    Field {
        param,
        arg,
        kind: Kind::Text,
        required,
    }
}

const fn count(name: &'static str) -> Field {
    Field {
        param: name,
        arg: name,
        kind: Kind::Count,
        required: false,
    }
}

const fn flag(name: &'static str) -> Field {
    Field {
        param: name,
        arg: name,
        kind: Kind::Flag,
        required: false,
    }
}

/// A method that is one tool call and returns the tool's result as is.
#[derive(Debug)]
struct Mapping {
    method: &'static str,
    tool: &'static str,
    fields: &'static [Field],
}

const SIMPLE: &[Mapping] = &[
    Mapping {
        method: "mcp.fs.read",
        tool: "read_file",
        fields: &[
            text("path", "path", true),
            count("startLine"),
            count("endLine"),
        ],
    },
    Mapping {
        method: "mcp.fs.list",
        tool: "list_files",
        fields: &[
            text("glob", "glob", false),
            count("limit"),
            text("path", "path", false),
            flag("includeHidden"),
        ],
    },
    Mapping {
        method: "mcp.search.code",
        tool: "search_code",
        fields: &[
            text("query", "query", true),
            text("glob", "glob", false),
            count("maxResults"),
            text("path", "path", false),
            flag("regex"),
            count("contextLines"),
            flag("caseSensitive"),
            flag("includeHidden"),
        ],
    },
    Mapping {
        method: "mcp.symbols.list",
        tool: "symbols",
        fields: &[text("path", "path", true)],
    },
    Mapping {
        method: "mcp.format.apply",
        tool: "format",
        fields: &[text("path", "path", true)],
    },
    Mapping {
        method: "mcp.imports.organize",
        tool: "organize_imports",
        fields: &[text("path", "path", true)],
    },
    Mapping {
        method: "mcp.task.run",
        tool: "run_task",
        fields: &[text("name", "name", true)],
    },
    Mapping {
        method: "mcp.shell.run",
        tool: "shell",
        fields: &[
            text("cmd", "command", true),
            text("cwd", "cwd", false),
            count("timeoutSecs"),
        ],
    },
];

const APPLY_PATCH: &str = "mcp.edit.applyPatch";
const APPLY_PATCH_FIELDS: &[Field] = &[text("unifiedDiff", "unifiedDiff", true), flag("verify")];
/// Tool bus options of `mcp.edit.applyPatch` that are not `apply_patch`
/// arguments: what to run on the patched files afterwards.
const FORMAT_AFTER: &str = "format";
const ORGANIZE_AFTER: &str = "organizeImports";

/// Adds the `mcp.*` methods to `table`.
pub fn register(table: &mut MethodTable) {
    for mapping in SIMPLE {
        table.insert(mapping.method, move |ctx, params| {
            call_mapped(ctx, params, mapping)
        });
    }
    table.insert(APPLY_PATCH, apply_patch);
}

async fn call_mapped(ctx: ServerContext, params: Params, mapping: &'static Mapping) -> RpcResult {
    let args = tool_args(&params, mapping.fields, &[])?;
    let session = session_of(&ctx, &params)?;
    call(&session, mapping.tool, args).await
}

/// `apply_patch`, then (when asked, and only if it applied) the import
/// organizer and the formatter on every file it created or modified. The
/// patch is on disk by then, so a follow-up that fails is reported per
/// file in the result, not as an error of the whole call.
async fn apply_patch(ctx: ServerContext, params: Params) -> RpcResult {
    let args = tool_args(&params, APPLY_PATCH_FIELDS, &[FORMAT_AFTER, ORGANIZE_AFTER])?;
    let format_after = params.optional_bool(FORMAT_AFTER)?.unwrap_or(false);
    let organize_after = params.optional_bool(ORGANIZE_AFTER)?.unwrap_or(false);
    let session = session_of(&ctx, &params)?;
    let mut result = call(&session, "apply_patch", args).await?;
    if result.get("ok") != Some(&Value::Bool(true)) || !(format_after || organize_after) {
        return Ok(result);
    }
    let touched = touched_files(&result);
    // Organizing first: the formatter then settles whatever layout the
    // organizer left.
    if organize_after {
        result["importsOrganized"] = follow_up(&session, "organize_imports", &touched).await;
    }
    if format_after {
        result["formatted"] = follow_up(&session, "format", &touched).await;
    }
    Ok(result)
}

/// Paths `apply_patch` created or modified (deleted ones have nothing left
/// to format).
fn touched_files(result: &Value) -> Vec<String> {
    result
        .get("files")
        .and_then(Value::as_array)
        .map(|files| {
            files
                .iter()
                .filter(|file| file.get("status").and_then(Value::as_str) != Some("deleted"))
                .filter_map(|file| file.get("path").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// One call of `tool` per file, each through the policy on its own:
/// `[{path, ok: true, changed, command} | {path, ok: false, error: {code, message}}]`.
async fn follow_up(session: &Session, tool: &str, paths: &[String]) -> Value {
    let mut reports = Vec::with_capacity(paths.len());
    for path in paths {
        let outcome = session
            .call_tool(tool, json!({"path": path}), CallOrigin::Rpc)
            .await;
        reports.push(match outcome.result {
            Ok(value) => json!({
                "path": path,
                "ok": true,
                "changed": value.get("changed").cloned().unwrap_or(Value::Null),
                "command": value.get("command").cloned().unwrap_or(Value::Null),
            }),
            Err(failure) => json!({
                "path": path,
                "ok": false,
                "error": {"code": failure.code, "message": failure.message},
            }),
        });
    }
    Value::Array(reports)
}

/// The session named by `session` (default: the daemon's default session).
fn session_of(ctx: &ServerContext, params: &Params) -> Result<Arc<Session>, ErrorObject> {
    let id = params.optional_str(SESSION_PARAM)?.unwrap_or(DEFAULT_ALIAS);
    ctx.session(id).ok_or_else(|| no_session(ctx, id))
}

/// The tool's arguments from the method's params, checked by type and
/// name: an unknown param is refused rather than ignored, so a typo such
/// as `maxResult` does not silently fall back to the default.
fn tool_args(params: &Params, fields: &[Field], extra: &[&str]) -> Result<Value, ErrorObject> {
    let known: Vec<&str> = fields
        .iter()
        .map(|field| field.param)
        .chain(extra.iter().copied())
        .chain(std::iter::once(SESSION_PARAM))
        .collect();
    params.only(&known)?;
    let mut args = Map::new();
    for field in fields {
        let value = match field.kind {
            Kind::Text if field.required => Some(json!(params.required_str(field.param)?)),
            Kind::Text => params.optional_str(field.param)?.map(|text| json!(text)),
            Kind::Count => params.optional_u64(field.param)?.map(|n| json!(n)),
            Kind::Flag => params.optional_bool(field.param)?.map(|flag| json!(flag)),
        };
        if let Some(value) = value {
            args.insert(field.arg.to_owned(), value);
        }
    }
    Ok(Value::Object(args))
}

/// The tool's result (with `context` when rules or gates added some), or
/// its failure as a JSON-RPC error: the mapping of `session.tools.call`,
/// except that arguments the tool refuses (a malformed diff, a bad regex,
/// an unknown task) are `-32602` like every other bad param.
async fn call(session: &Session, tool: &str, args: Value) -> RpcResult {
    let outcome = session.call_tool(tool, args, CallOrigin::Rpc).await;
    match outcome.result {
        Ok(mut result) => {
            if !outcome.context.is_empty()
                && let Some(object) = result.as_object_mut()
            {
                object.insert("context".to_owned(), json!(outcome.context));
            }
            Ok(result)
        }
        Err(failure) => Err(bus_error(&failure, &outcome.call_id, &outcome.context)),
    }
}

fn bus_error(failure: &ToolFailure, call_id: &str, context: &[String]) -> ErrorObject {
    let mut error = call_failure(failure, call_id, context);
    if failure.kind == bridge_protocol::FailureKind::InvalidArguments {
        error.code = INVALID_PARAMS;
    }
    error
}
