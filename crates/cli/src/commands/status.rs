//! `copilot-bridge status`: the running daemon as a user needs to see it —
//! its endpoints, which chat backends answer, providers, sessions, and
//! whether the default session may write. One `bridge.status` call.

use std::process::ExitCode;

use bridge_config::BridgeConfig;
use serde_json::Value;

use super::remote::{call_failure, connect};
use super::tool::{print_json, write_stdout};
use crate::args::StatusArgs;
use crate::exit::Failure;

pub async fn run(config: &BridgeConfig, args: StatusArgs) -> Result<ExitCode, Failure> {
    let client = connect(config).await?;
    let status = client
        .call("bridge.status", serde_json::json!({}))
        .await
        .map_err(|err| call_failure("bridge.status", &err))?;
    if args.json {
        print_json(&status, false)?;
    } else {
        let notice = super::daemon::upgrade_notice(config, &client).await;
        write_stdout(&format!("{notice}{}", table(&status)))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("-")
}

fn table(status: &Value) -> String {
    let mut out = format!(
        "copilot-bridge {} (pid {}), listening on {}\n",
        text(&status["version"]),
        status["pid"],
        text(&status["bindAddress"]),
    );
    out.push_str(&format!(
        "state directory: {} (its gateway.json holds the token and port)\n",
        text(&status["stateDir"])
    ));
    out.push_str(&config_lines(&status["config"]));
    let endpoints = &status["endpoints"];
    out.push_str("\nENDPOINTS\n");
    for (label, value) in [
        ("openai", &endpoints["openai"]),
        ("anthropic", &endpoints["anthropic"]),
        ("rpc (http)", &endpoints["rpc"]["http"]),
        ("rpc (ws)", &endpoints["rpc"]["websocket"]),
        ("providers", &endpoints["provider"]),
        ("mcp code", &endpoints["mcp"]["code"]),
        ("mcp memory", &endpoints["mcp"]["memory"]),
        ("mcp session", &endpoints["mcp"]["session"]),
        ("health", &endpoints["health"]),
    ] {
        out.push_str(&format!("  {label:12} {}\n", text(value)));
    }
    let backends = status["backends"].as_array().cloned().unwrap_or_default();
    out.push_str("\nBACKENDS\n");
    if backends.is_empty() {
        out.push_str("  none configured (see docs/backends/)\n");
    } else {
        let width = backends
            .iter()
            .map(|b| text(&b["name"]).len() + 2)
            .max()
            .unwrap_or(4)
            .max(4);
        out.push_str(&format!(
            "  {:width$} {:10} {:12} {:14} {:20} {}\n",
            "NAME", "KIND", "STATUS", "STYLE", "MODEL", "URL"
        ));
        for backend in &backends {
            let marked = if backend["default"] == true {
                format!("{}*", text(&backend["name"]))
            } else {
                text(&backend["name"]).to_owned()
            };
            out.push_str(&format!(
                "  {:width$} {:10} {:12} {:14} {:20} {}\n",
                marked,
                text(&backend["kind"]),
                text(&backend["availability"]),
                text(&backend["style"]),
                text(&backend["defaultModel"]),
                text(&backend["baseUrl"]),
            ));
        }
        out.push_str("  (* default backend)\n");
    }
    let routes = status["modelRoutes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !routes.is_empty() {
        out.push_str("\nMODEL ROUTES ([models], first match wins)\n");
        for route in &routes {
            out.push_str(&format!(
                "  {:36} → {}\n",
                text(&route["rule"]),
                text(&route["target"])
            ));
        }
    }
    let providers = &status["providers"];
    let names: Vec<&str> = providers["names"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    out.push_str(&format!(
        "\nproviders: {}{}\n",
        providers["count"],
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    ));
    out.push_str(&format!(
        "sessions: {} (default: {})\n",
        status["sessions"]["count"],
        text(&status["sessions"]["default"]),
    ));
    let policy = &status["policy"];
    let mode = match policy["readOnly"].as_bool() {
        Some(true) => "read-only",
        Some(false) => "writable",
        None => "unknown (the default session has ended)",
    };
    out.push_str(&format!(
        "policy: {mode}; workspace policy: {}{}\n",
        policy["workspacePolicy"].as_str().unwrap_or("none"),
        policy["workspacePolicyLoadedAt"]
            .as_str()
            .map(|at| format!(" (loaded {at})"))
            .unwrap_or_default(),
    ));
    if let Some(problem) = policy["workspacePolicyProblem"].as_str() {
        out.push_str(&format!("  WORKSPACE POLICY NOT IN FORCE: {problem}\n"));
    }
    out.push_str(&request_log_line(&status["requestLog"]));
    out.push_str(&openclaw_line(&status["openclaw"]));
    if let Some(summary) = status["openclawMemory"]["summary"].as_str() {
        out.push_str(&format!("openclaw memory: {summary}\n"));
    }
    out.push_str(&vscode_line(&status["vscode"]));
    bridge_policy::redact(&out).into_owned()
}

/// config.toml as the daemon follows it (docs/configuration.md, "Changes
/// while the daemon runs"): where, when it was loaded, why an edit is not
/// in force and what waits for a restart.
fn config_lines(config: &Value) -> String {
    if config.is_null() {
        return String::new();
    }
    let loaded = match config["read"].as_bool() {
        Some(false) => "none there; defaults in force".to_owned(),
        _ => format!("loaded {}", text(&config["loadedAt"])),
    };
    let mut out = format!("config file: {} ({loaded})\n", text(&config["file"]));
    if let Some(problem) = config["problem"].as_str() {
        out.push_str(&format!("  CONFIG EDIT NOT IN FORCE: {problem}\n"));
    }
    let waiting: Vec<&str> = config["restartNeeded"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !waiting.is_empty() {
        out.push_str(&format!("  restart needed for: {}\n", waiting.join(", ")));
    }
    out
}

/// `request_log` (docs/facade.md, "The request log"), one line when it is on
/// or was refused.
fn request_log_line(log: &Value) -> String {
    match (log["enabled"].as_bool(), log["error"].as_str()) {
        (Some(true), None) => format!("request log: {}\n", text(&log["path"])),
        (Some(true), Some(error)) => format!("request log: failing: {error}\n"),
        (_, Some(error)) => format!("request log: disabled: {error}\n"),
        _ => String::new(),
    }
}

/// The VS Code windows offering chat models (docs/vscode.md), one line.
fn vscode_line(vscode: &Value) -> String {
    let chat = vscode["chat"].as_str().unwrap_or("off");
    let editors = vscode["editors"].as_u64().unwrap_or(0);
    let mut line = match chat {
        "off" => "vscode: no editor connected".to_owned(),
        _ => format!("vscode: {editors} editor(s), chat {chat}"),
    };
    let models: Vec<&str> = vscode["models"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !models.is_empty() {
        line.push_str(&format!(" (models: vscode/{})", models.join(", vscode/")));
    }
    if chat == "unavailable"
        && let Some(reasons) = vscode["reasons"].as_array()
    {
        let reasons: Vec<&str> = reasons.iter().filter_map(Value::as_str).collect();
        line.push_str(&format!("; {}", reasons.join("; ")));
    }
    line.push('\n');
    line
}

/// The OpenClaw gateway connection, one line.
fn openclaw_line(openclaw: &Value) -> String {
    let state = openclaw["state"].as_str().unwrap_or("off");
    if state == "off" {
        return "openclaw gateway: off\n".to_owned();
    }
    let mut line = format!("openclaw gateway: {state} ({})", text(&openclaw["url"]));
    if let Some(version) = openclaw["server"]["version"].as_str() {
        line.push_str(&format!(", OpenClaw {version}"));
    }
    if state != "connected"
        && let Some(error) = openclaw["lastError"].as_str()
    {
        line.push_str(&format!("; {error}"));
    }
    line.push('\n');
    line
}
