//! `copilot-bridge tool NAME --args JSON [--cwd DIR | --session ID]` and `copilot-bridge tools`.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use bridge_config::BridgeConfig;
use bridge_engine::{CallOrigin, ToolFailure};
use bridge_protocol::FailureKind;
use bridge_tools::ToolRegistry;
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
    let dir = match args.cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|err| Failure::usage(format!("cannot read the current directory: {err}")))?,
    };
    // A session of its own, so the call takes the one path every door
    // takes: the decision, the tool, redaction, the audit log.
    let asking = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let approver = crate::approver::for_this_terminal(asking);
    let session = super::run::create_session(config, &dir, "cli", "copilot-bridge tool", approver)?;
    tracing::debug!(tool = %args.name, arguments = %tool_args, "running tool");
    let outcome = session
        .call_tool(&args.name, tool_args, CallOrigin::Cli)
        .await;
    match outcome.result {
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

fn tool_failure(failure: &ToolFailure) -> Failure {
    let code = match failure.kind {
        FailureKind::Denied => exit::DENIED,
        FailureKind::UnknownTool | FailureKind::InvalidArguments => exit::USAGE,
        _ => exit::FAILED,
    };
    let hint = match failure.kind {
        FailureKind::UnknownTool => " (see `copilot-bridge tools`)",
        _ => "",
    };
    Failure::new(code, format!("{failure}{hint}")).with_json(json!({ "error": failure }))
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
