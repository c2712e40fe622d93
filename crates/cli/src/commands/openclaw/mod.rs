//! `copilot-bridge openclaw register|unregister`: adds copilot-bridge to
//! OpenClaw's configuration (`~/.openclaw/openclaw.json`, JSON5) or takes
//! it out again.
//!
//! OpenClaw has native MCP client support (`mcp.servers.<name>` with
//! `command`/`args`), so registration is one entry, `copilot-bridge`,
//! running `copilot-bridge mcp code`: its tools (`copilot_read_file`,
//! `copilot_create_file`, `copilot_list_files`, `copilot_code_task`) give
//! OpenClaw what the design's plugin tools `copilot_code` and
//! `copilot_code_verbose` do. No OpenClaw plugin is installed (there is no
//! TypeScript plugin to install) and `copilot_orchestrate` is not offered:
//! the orchestrator does not exist yet.
//!
//! Edits are spliced into the text ([`edit`]), the old file is backed up
//! to `<file>.bak-<timestamp>` first, and the new one replaces it
//! atomically. A second `register` finds nothing to change and writes
//! nothing, not even a backup.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use serde_json::{Value, json};

use super::json_edit::{self, back_up, write_atomically};
use crate::args::{OpenclawArgs, OpenclawCommand};
use crate::exit::Failure;

/// The name of our entry under `mcp.servers`.
pub const ENTRY_NAME: &str = "copilot-bridge";
/// Where our entry lives in OpenClaw's configuration.
const ENTRY_PATH: [&str; 3] = ["mcp", "servers", ENTRY_NAME];

pub async fn run(config: &BridgeConfig, command: OpenclawCommand) -> Result<ExitCode, Failure> {
    let (registering, args) = match command {
        OpenclawCommand::Register(args) => (true, args),
        OpenclawCommand::Unregister(args) => (false, args),
    };
    // The flag, else OPENCLAW_CONFIG_PATH, else the state directory's
    // openclaw.json (bridge-config resolves the last two).
    let file = args
        .config_file
        .clone()
        .unwrap_or_else(|| config.openclaw.config_path.clone());
    tokio::task::spawn_blocking(move || change(registering, &file, &args))
        .await
        .map_err(|err| Failure::internal(format!("the OpenClaw registration failed: {err}")))?
}

fn change(registering: bool, file: &Path, args: &OpenclawArgs) -> Result<ExitCode, Failure> {
    let shown = file.display().to_string();
    let text = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(Failure::internal(format!("cannot read {shown}: {err}"))),
    };
    let entry_path = format!("mcp.servers.{ENTRY_NAME}");
    let outcome = if registering {
        let entry = server_entry()?;
        json_edit::set_at(text.as_deref().unwrap_or(""), &ENTRY_PATH, &entry)
    } else if text.is_none() {
        Ok(None)
    } else {
        json_edit::remove_at(text.as_deref().unwrap_or(""), &ENTRY_PATH)
    }
    .map_err(|err| Failure::internal(format!("cannot edit {shown}: {err}")))?;
    let mut out = std::io::stdout().lock();
    let Some(edited) = outcome else {
        let state = if registering {
            "already registered"
        } else {
            "not registered"
        };
        let _ = writeln!(out, "{entry_path} is {state} in {shown}; nothing changed.");
        if registering {
            let _ = writeln!(out, "{}", plugin_tools_note());
        }
        return Ok(ExitCode::SUCCESS);
    };
    let verb = if registering {
        "add or update"
    } else {
        "remove"
    };
    if args.dry_run {
        let _ = writeln!(
            out,
            "Would {verb} {entry_path} in {shown}. The file would read:\n"
        );
        let _ = writeln!(out, "{}", bridge_policy::redact(&edited));
        return Ok(ExitCode::SUCCESS);
    }
    let backup = match &text {
        Some(old) => Some(back_up(file, old)?),
        None => None,
    };
    write_atomically(file, &edited)?;
    let done = if registering { "Registered" } else { "Removed" };
    let _ = writeln!(out, "{done} {entry_path} in {shown}.");
    if let Some(backup) = backup {
        let _ = writeln!(out, "Backup of the previous file: {}", backup.display());
    }
    if registering {
        let _ = writeln!(out, "{}", plugin_tools_note());
    }
    let _ = writeln!(
        out,
        "Restart the OpenClaw gateway (or run `openclaw mcp reload`) to apply."
    );
    Ok(ExitCode::SUCCESS)
}

fn plugin_tools_note() -> &'static str {
    "OpenClaw reaches copilot-bridge through the MCP tools copilot_read_file, copilot_create_file, copilot_list_files and copilot_code_task (what the plugin tools copilot_code and copilot_code_verbose do). copilot_orchestrate is not available yet."
}

/// Our `mcp.servers` entry: this very binary serving the code tools.
fn server_entry() -> Result<Value, Failure> {
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?;
    Ok(json!({
        "command": exe.display().to_string(),
        "args": ["mcp", "code"],
    }))
}
