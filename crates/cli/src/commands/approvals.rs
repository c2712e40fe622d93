//! `copilot-bridge approvals`: the running daemon's asks, seen and answered
//! from this terminal (docs/approvals.md). Calls `/rpc` `approvals.*` with
//! the approver token of the state directory, which agents never get.
//!
//! Exit codes: 0 ok; 1 no daemon, or the ask was already answered (someone
//! else was first), timed out or is unknown; 2 bad arguments.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::Duration;

use bridge_agents::env::AgentEnv;
use bridge_config::BridgeConfig;
use bridge_server::GatewayClient;
use serde_json::{Value, json};

use super::remote::{call_failure, connect};
use super::tool::{print_json, write_stdout};
use crate::approver::{answer_options, chosen_scope};
use crate::args::{ApprovalsArgs, ApprovalsCommand};
use crate::exit::{self, Failure};

/// How long one `approvals.watch` long poll waits for an event.
const WATCH_POLL: Duration = Duration::from_secs(30);

pub async fn run(
    config: &BridgeConfig,
    args: ApprovalsArgs,
    agent_env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let client = approver_client(config).await?;
    let command = args.command.unwrap_or(ApprovalsCommand::List {
        session: None,
        json: args.json,
    });
    match command {
        ApprovalsCommand::List { session, json } => {
            let params = session.map_or_else(|| json!({}), |session| json!({"session": session}));
            let listed = call(&client, "approvals.list", params).await?;
            if json {
                print_json(&listed["asks"], false)?;
            } else {
                write_stdout(&asks_table(&listed))?;
            }
        }
        ApprovalsCommand::Allow {
            id,
            session,
            rule,
            for_secs,
        } => {
            let scope = if rule {
                "rule"
            } else if session {
                "session"
            } else {
                "once"
            };
            let mut params =
                json!({"id": id, "decision": "allow", "scope": scope, "surface": "cli"});
            if let Some(secs) = for_secs {
                params["expiresInSecs"] = json!(secs);
            }
            call(&client, "approvals.answer", params).await?;
            write_stdout(&format!("allowed {id} ({scope})\n"))?;
        }
        ApprovalsCommand::Deny { id, reason } => {
            let mut params = json!({"id": id, "decision": "deny", "surface": "cli"});
            if let Some(reason) = reason {
                params["reason"] = json!(reason);
            }
            call(&client, "approvals.answer", params).await?;
            write_stdout(&format!("denied {id}\n"))?;
        }
        ApprovalsCommand::Watch { no_notify, json } => {
            let notify = (!no_notify && !json).then(|| agent_env.desktop_session().to_vec());
            watch(&client, json, notify).await?;
        }
        ApprovalsCommand::Rules { json } => {
            let rules = call(&client, "approvals.rules", json!({})).await?;
            if json {
                print_json(&rules["rules"], false)?;
            } else {
                write_stdout(&rules_table(&rules["rules"]))?;
            }
        }
        ApprovalsCommand::Revoke { rule, workspace } => {
            let mut params = json!({"rule": rule});
            if let Some(workspace) = workspace {
                params["workspace"] = json!(workspace);
            }
            let revoked = call(&client, "approvals.revoke", params).await?;
            let removed = revoked["removed"].as_array().map_or(0, Vec::len);
            if removed == 0 {
                return Err(Failure::new(
                    exit::FAILED,
                    format!("no rule {rule:?} is kept (see `copilot-bridge approvals rules`)"),
                ));
            }
            write_stdout(&format!("revoked {rule:?} ({removed} workspace(s))\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The running daemon, called with the approver token.
pub(crate) async fn approver_client(config: &BridgeConfig) -> Result<GatewayClient, Failure> {
    let client = connect(config).await?;
    let home = config.home.clone();
    let token = tokio::task::spawn_blocking(move || {
        bridge_server::state_file::kept_approver_token(&home)
    })
    .await
    .map_err(|err| Failure::internal(format!("cannot read the approver token: {err}")))?
    .map_err(|err| {
        Failure::new(
            exit::FAILED,
            format!("cannot read the approver token: {err}"),
        )
    })?
    .ok_or_else(|| {
        Failure::new(
            exit::FAILED,
            format!(
                "the daemon has no approver token in {} (it predates approvals: restart it)",
                config.home.display()
            ),
        )
    })?;
    Ok(client.with_token(token))
}

async fn call(client: &GatewayClient, method: &str, params: Value) -> Result<Value, Failure> {
    client
        .call(method, params)
        .await
        .map_err(|err| call_failure(method, &err))
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// What an ask is about, on one line: the command of a shell call, else
/// the arguments.
fn about(ask: &Value) -> String {
    let arguments = &ask["arguments"];
    let shown = arguments["command"]
        .as_str()
        .map_or_else(|| arguments.to_string(), str::to_owned);
    bridge_policy::redact::shorten(&shown, 100)
}

fn asks_table(listed: &Value) -> String {
    let asks = listed["asks"].as_array().cloned().unwrap_or_default();
    if asks.is_empty() {
        return "no tool call is waiting for approval\n".to_owned();
    }
    let mut out = format!(
        "{:38} {:24} {:12} {:>5}  {}\n",
        "ID", "SESSION", "TOOL", "LEFT", "CALL"
    );
    for ask in &asks {
        out.push_str(&format!(
            "{:38} {:24} {:12} {:>4}s  {}\n",
            text(&ask["id"]),
            text(&ask["session"]),
            text(&ask["tool"]),
            ask["expiresInSecs"].as_u64().unwrap_or(0),
            about(ask),
        ));
        out.push_str(&format!(
            "{:38} why: {}; may be allowed: {}\n",
            "",
            text(&ask["reason"]),
            choices(ask).join(", ")
        ));
    }
    out.push_str("\nanswer with `copilot-bridge approvals allow ID [--session | --rule]` or `approvals deny ID`\n");
    out
}

fn choices(ask: &Value) -> Vec<&str> {
    ask["choices"]
        .as_array()
        .map(|choices| choices.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn rules_table(rules: &Value) -> String {
    let rules = rules.as_array().cloned().unwrap_or_default();
    if rules.is_empty() {
        return "no rules are kept\n".to_owned();
    }
    let mut out = format!("{:28} {:20} {}\n", "RULE", "EXPIRES", "WORKSPACE");
    for rule in &rules {
        let expires = rule["expiresAt"].as_u64().map_or_else(
            || "never".to_owned(),
            |at| bridge_util::time::unix_timestamp(at).unwrap_or_else(|| at.to_string()),
        );
        out.push_str(&format!(
            "{:28} {:20} {}\n",
            text(&rule["rule"]),
            expires,
            text(&rule["workspace"])
        ));
    }
    out
}

/// Prints each event as it comes; answers asks inline when stdin and
/// stdout are a terminal (and not `--json`).
async fn watch(
    client: &GatewayClient,
    json: bool,
    notify: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
) -> Result<(), Failure> {
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    // Where the events stand, then what is waiting now (an ask arriving
    // in between is both listed and an event: shown once).
    let mut since = call(client, "approvals.watch", json!({})).await?["next"]
        .as_u64()
        .unwrap_or(0);
    let listed = call(client, "approvals.list", json!({})).await?;
    let mut waiting: Vec<Value> = listed["asks"].as_array().cloned().unwrap_or_default();
    let mut shown = std::collections::HashSet::new();
    if !json {
        write_stdout(&format!(
            "watching for approvals ({} waiting); Ctrl-C to stop\n",
            waiting.len()
        ))?;
    }
    loop {
        for ask in std::mem::take(&mut waiting) {
            if !shown.insert(text(&ask["id"])) {
                continue;
            }
            if json {
                print_json(&json!({"type": "requested", "ask": ask}), true)?;
                continue;
            }
            write_stdout(&ask_text(&ask))?;
            if let Some(env) = &notify {
                desktop_notification(env, &ask);
            }
            if interactive {
                answer_inline(client, &ask).await?;
            }
        }
        let watched = call(
            client,
            "approvals.watch",
            json!({"since": since, "waitMs": WATCH_POLL.as_millis() as u64}),
        )
        .await?;
        since = watched["next"].as_u64().unwrap_or(since);
        for event in watched["events"].as_array().into_iter().flatten() {
            if event["type"] == "resolved" {
                // Every ask ends resolved: what was shown stays bounded.
                shown.remove(&text(&event["id"]));
            }
            match event["type"].as_str() {
                Some("requested") => waiting.push(event["ask"].clone()),
                Some("resolved") if json => print_json(event, true)?,
                Some("resolved") => write_stdout(&format!(
                    "{} {}{}\n",
                    text(&event["id"]),
                    text(&event["outcome"]),
                    event["surface"]
                        .as_str()
                        .map(|surface| format!(" by {surface}"))
                        .unwrap_or_default()
                ))?,
                _ => {}
            }
        }
    }
}

fn ask_text(ask: &Value) -> String {
    format!(
        "\n{} {} in session {}: {}\n  why: {}\n",
        text(&ask["id"]),
        text(&ask["tool"]),
        text(&ask["session"]),
        about(ask),
        text(&ask["reason"]),
    )
}

/// Reads y/s/r/n for `ask` and answers it; someone else answering first
/// is said, not an error.
async fn answer_inline(client: &GatewayClient, ask: &Value) -> Result<(), Failure> {
    let offered = choices(ask);
    let rules: Vec<String> = ask["rules"]
        .as_array()
        .map(|rules| {
            rules
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let options = answer_options(&offered, ask["shared"] == true, &rules);
    write_stdout(&format!("Allow? {options}, [n] no, [Enter] skip: "))?;
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .map_err(|err| Failure::internal(format!("cannot read the answer: {err}")))?
    .map_err(|err| Failure::new(exit::FAILED, format!("cannot read the answer: {err}")))?;
    let typed = line.trim();
    if typed.is_empty() {
        return Ok(());
    }
    let mut params = json!({"id": ask["id"], "surface": "cli"});
    match chosen_scope(typed, &offered) {
        Some(scope) => {
            params["decision"] = json!("allow");
            params["scope"] = json!(scope.name());
        }
        None => params["decision"] = json!("deny"),
    }
    match client.call("approvals.answer", params).await {
        Ok(answer) => write_stdout(&format!(
            "{} {}\n",
            text(&answer["decision"]),
            text(&ask["id"])
        )),
        Err(err) => write_stdout(&format!("not taken: {err}\n")),
    }
}

/// `notify-send` where it exists, with only the desktop session's
/// variables; a missing or failing notifier is silently skipped.
fn desktop_notification(env: &[(std::ffi::OsString, std::ffi::OsString)], ask: &Value) {
    if env.is_empty() {
        return;
    }
    let spawned = std::process::Command::new("notify-send")
        .env_clear()
        .envs(env.iter().cloned())
        .arg("--app-name=copilot-bridge")
        .arg(format!("{} needs approval", text(&ask["tool"])))
        .arg(about(ask))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        // Reaped in the background: a notifier that hangs holds nothing.
        std::thread::spawn(move || child.wait());
    }
}
