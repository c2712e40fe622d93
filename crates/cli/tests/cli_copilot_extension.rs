//! The Copilot CLI extension's own logic against a real daemon, with the
//! CLI's SDK stood in (tests/peers/copilot-extension/): the tools it offers
//! follow the providers of its hub session as they come and go, and its
//! hooks answer from the hub. The real CLI runs it in
//! tests/agents/copilot_extension.rs, where a `-p` run cannot show a tool
//! arriving mid-run.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use bridge_testkit::{ProviderClient, agent_cli, repo_root};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::cli_serve::Served;

const HUB_SESSION: &str = "copilot-cli-fake-cli-session";

/// The extension as the CLI would load it: its source, its config.json, and
/// the stand-in SDK where `@github/copilot-sdk/extension` resolves.
fn stage(dir: &Path, served: &Served) {
    let sdk = dir.join("node_modules/@github/copilot-sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    std::fs::copy(
        repo_root().join("crates/agents/assets/copilot-extension/extension.mjs"),
        dir.join("extension.mjs"),
    )
    .unwrap();
    std::fs::write(
        dir.join("config.json"),
        json!({"binary": assert_cmd::cargo::cargo_bin("copilot-bridge"), "home": served.state()})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        sdk.join("package.json"),
        json!({"name": "@github/copilot-sdk", "type": "module",
               "exports": {"./extension": "./extension.mjs"}})
        .to_string(),
    )
    .unwrap();
    std::fs::copy(
        repo_root().join("tests/peers/copilot-extension/fake-sdk/extension.mjs"),
        sdk.join("extension.mjs"),
    )
    .unwrap();
}

async fn next(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the extension says something")
        .unwrap()
        .expect("the driver is still running");
    serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}: {line}"))
}

/// Reads until a `tools` line satisfies `wanted`.
async fn tools_until(
    lines: &mut Lines<BufReader<ChildStdout>>,
    wanted: impl Fn(&[String]) -> bool,
) {
    loop {
        let line = next(lines).await;
        if let Some(tools) = line["tools"].as_array() {
            let names: Vec<String> = tools
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect();
            if wanted(&names) {
                return;
            }
        }
    }
}

async fn ask(
    stdin: &mut ChildStdin,
    lines: &mut Lines<BufReader<ChildStdout>>,
    hook: &str,
    input: Value,
) -> Value {
    let request = json!({"hook": hook, "input": input}).to_string() + "\n";
    stdin.write_all(request.as_bytes()).await.unwrap();
    loop {
        let line = next(lines).await;
        if line.get("answer").is_some() {
            return line["answer"].clone();
        }
    }
}

#[tokio::test]
async fn the_extensions_tools_follow_its_providers_and_its_hooks_answer_from_the_hub() {
    let Some(node) = agent_cli("node24", "node") else {
        return;
    };
    let served = Served::start();
    let staged = tempfile::tempdir().unwrap();
    stage(staged.path(), &served);
    let mut driver = tokio::process::Command::new(node)
        .arg(repo_root().join("tests/peers/copilot-extension/driver.mjs"))
        .arg(format!(
            "file://{}",
            staged.path().join("extension.mjs").display()
        ))
        .current_dir(served.workspace.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", served.state())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = driver.stdin.take().unwrap();
    let mut lines = BufReader::new(driver.stdout.take().unwrap()).lines();
    loop {
        if next(&mut lines).await.get("joined").is_some() {
            break;
        }
    }
    // The session is in the hub once the extension joined.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let sessions = served.rpc("session.list", json!({})).await;
        if sessions.to_string().contains(HUB_SESSION) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{sessions}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A provider comes: its tool is offered; it goes: the tool is gone.
    let token = served.provider_token_for(HUB_SESSION).await;
    let (late, _) = ProviderClient::register(
        &served.ws_url(),
        &token,
        "late",
        json!({"session": HUB_SESSION,
               "tools": [{"name": "late_tool", "description": "Came later",
                          "parameters": {"type": "object", "properties": {}}}],
               "hooks": {"onPreToolUse": [{"match": {"tool": "view"}, "action": "deny",
                                            "reason": "late says no"}]}}),
    )
    .await
    .unwrap();
    tools_until(&mut lines, |names| {
        names.iter().any(|name| name == "late_tool")
    })
    .await;

    // The hub answers the CLI's own tool calls: the provider's rule…
    let answer = ask(
        &mut stdin,
        &mut lines,
        "onPreToolUse",
        json!({"toolName": "view", "toolArgs": {"path": "a.txt"}}),
    )
    .await;
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    assert!(
        answer["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("late says no")
    );
    // …and our policy.
    let answer = ask(
        &mut stdin,
        &mut lines,
        "onPreToolUse",
        json!({"toolName": "bash", "toolArgs": {"command": "sudo true"}}),
    )
    .await;
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");

    late.close().await;
    tools_until(&mut lines, |names| {
        !names.iter().any(|name| name == "late_tool")
    })
    .await;
    drop(stdin);
}
