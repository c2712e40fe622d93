//! `copilot-bridge tool NAME --args JSON [--cwd DIR | --session ID]` and `copilot-bridge tools`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bridge_config::BridgeConfig;
use bridge_policy::{AuditLog, Guard, PermissionPolicy, WorkspacePolicy, WorkspaceRoot};
use bridge_tools::{ToolContext, ToolError, ToolRegistry, ToolRunner};
use serde_json::{Value, json};

use crate::args::{ToolArgs, ToolsArgs};
use crate::exit::{self, Failure};

/// Arguments read from stdin are capped: a diff of this size is already absurd.
const MAX_STDIN_ARGS_BYTES: u64 = 64 * 1024 * 1024;

pub async fn run(config: &BridgeConfig, args: ToolArgs) -> Result<ExitCode, Failure> {
    let tool_args = parse_arguments(&args.args)?;
    if let Some(session) = &args.session {
        return super::remote::tool(config, session, &args.name, tool_args, args.compact).await;
    }
    let runner = build_runner(config, args.cwd)?;
    tracing::debug!(tool = %args.name, arguments = %tool_args, "running tool");
    let outcome = runner.call(&args.name, tool_args).await;
    match outcome {
        Ok(value) => {
            print_json(&value, args.compact)?;
            // A patch that did not apply is a result, not an error, but the
            // shell should still see it failed.
            if value.get("ok") == Some(&Value::Bool(false)) {
                Ok(ExitCode::from(exit::FAILED))
            } else {
                Ok(ExitCode::SUCCESS)
            }
        }
        Err(err) => Err(tool_failure(&err)),
    }
}

pub fn list(args: ToolsArgs) -> Result<ExitCode, Failure> {
    let specs = ToolRegistry::builtin().specs();
    if args.json {
        print_json(&serde_json::to_value(specs).unwrap_or_default(), false)?;
    } else {
        let mut out = String::new();
        for spec in specs {
            out.push_str(&format!(
                "{:18} {:8} {}\n",
                spec.name,
                spec.effect.as_str(),
                spec.description
            ));
        }
        write_stdout(&out)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn parse_arguments(text: &str) -> Result<Value, Failure> {
    let text = if text == "-" {
        let mut buffer = String::new();
        std::io::stdin()
            .take(MAX_STDIN_ARGS_BYTES + 1)
            .read_to_string(&mut buffer)
            .map_err(|err| Failure::usage(format!("cannot read --args from stdin: {err}")))?;
        if buffer.len() as u64 > MAX_STDIN_ARGS_BYTES {
            return Err(Failure::usage(format!(
                "--args from stdin is larger than {MAX_STDIN_ARGS_BYTES} bytes"
            )));
        }
        buffer
    } else {
        text.to_owned()
    };
    let value: Value = serde_json::from_str(&text).map_err(|err| {
        let message = format!("--args is not valid JSON: {err}");
        Failure::usage(&message)
            .with_json(json!({"error": {"code": "invalid_arguments", "message": message}}))
    })?;
    Ok(value)
}

fn build_runner(config: &BridgeConfig, cwd: Option<PathBuf>) -> Result<ToolRunner, Failure> {
    let dir = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|err| Failure::usage(format!("cannot read the current directory: {err}")))?,
    };
    let root = WorkspaceRoot::new(&dir).map_err(|err| Failure::usage(err.to_string()))?;
    let permission = PermissionPolicy::compile(&config.permissions)
        .map_err(|err| Failure::new(exit::CONFIG, format!("configuration error: {err}")))?;
    let workspace = WorkspacePolicy::load(root.path())
        .map_err(|err| Failure::new(exit::CONFIG, format!("workspace policy error: {err}")))?;
    let guard = Guard::new(root, permission, workspace, config.read_only);
    let ctx = ToolContext::new(Arc::new(guard), Arc::new(config.tools.clone()));
    let runner = ToolRunner::new(ToolRegistry::builtin(), ctx)
        .with_audit(AuditLog::new(&config.audit_log_dir), "cli");
    let asking = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let runner = runner.with_approver(crate::approver::for_this_terminal(asking));
    Ok(runner)
}

fn tool_failure(err: &ToolError) -> Failure {
    let code = match err {
        ToolError::Denied(_) => exit::DENIED,
        ToolError::UnknownTool(_) | ToolError::InvalidArguments(_) => exit::USAGE,
        _ => exit::FAILED,
    };
    let hint = match err {
        ToolError::UnknownTool(_) => " (see `copilot-bridge tools`)",
        _ => "",
    };
    Failure::new(code, format!("{err}{hint}")).with_json(json!({"error": err.to_json()}))
}

pub(crate) fn print_json(value: &Value, compact: bool) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let written = if compact {
        serde_json::to_writer(&mut out, value)
    } else {
        serde_json::to_writer_pretty(&mut out, value)
    };
    written
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|err| Failure::internal(format!("cannot write to stdout: {err}")))
}

pub(crate) fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Failure::internal(format!("cannot write to stdout: {err}")))
}
