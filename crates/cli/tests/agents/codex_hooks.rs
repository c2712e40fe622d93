//! Codex 0.169.0 under the hub's policy, unmodified, offline, through the
//! daemon's facade: `hooks install --agent codex` puts our hook in
//! `$CODEX_HOME/hooks.json` and has Codex's own app-server trust it (Codex
//! runs no untrusted hook), then Codex's shell and its `apply_patch` pass
//! the one decision; `launch codex --via-hub` does the same for one run.

use std::path::{Path, PathBuf};

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace, agent_cli};
use serde_json::{Value, json};

use super::{StopDaemon, agent_command, chat_requests, exports, run_agent, serve_with, setup};
use crate::cli_serve::Served;

/// The mock asks Codex's shell to run each of `commands` in turn, then
/// answers "done".
async fn mock_running(commands: &[&str]) -> MockLlm {
    let mut replies: Vec<MockReply> = commands
        .iter()
        .enumerate()
        .map(|(n, command)| MockReply::ToolCalls {
            text: None,
            calls: vec![MockToolCall::new(
                format!("call_{n}"),
                "exec_command",
                // Not a login shell, and Codex's longest wait for output:
                // the test is about the hook, not the machine's speed.
                json!({"cmd": command, "login": false, "yield_time_ms": 30000}).to_string(),
            )],
        })
        .collect();
    replies.push(MockReply::chunks(["done"]));
    MockLlm::start(replies).await
}

/// PATH with the pinned Codex first, as a user who installed it has.
fn path_with(codex: &Path) -> std::ffi::OsString {
    let mut dirs = vec![codex.parent().unwrap().to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// A Codex home configured as `setup` prints it, with our hooks installed
/// and trusted by `hooks install --agent codex --scope user`.
struct CodexHome {
    program: PathBuf,
    home: tempfile::TempDir,
    exports: Vec<(String, String)>,
}

async fn codex_home(served: &Served) -> Option<CodexHome> {
    let program = agent_cli("codex", "codex")?;
    let home = tempfile::tempdir().unwrap();
    let printed = setup(served, "codex").await;
    let (config, shell) = printed.split_once("# and in the shell").unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let installed = served
        .cli()
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("PATH", path_with(&program))
        .args(["hooks", "install", "--agent", "codex", "--scope", "user"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&installed.stdout);
    assert!(installed.status.success(), "hooks install: {installed:?}");
    assert!(
        said.contains("Codex trusts copilot-bridge's 5 hooks (5 newly"),
        "{said}"
    );
    // Codex's own record of the trust, written by its app-server.
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("hooks.json:pre_tool_use:0:0"), "{config}");
    assert!(config.contains("trusted_hash = \"sha256:"), "{config}");
    Some(CodexHome {
        program,
        home,
        exports: exports(shell),
    })
}

/// `codex exec PROMPT` in `served`'s workspace with `codex`'s home.
async fn codex_exec(served: &Served, codex: &CodexHome, prompt: &str) -> String {
    let mut command = agent_command(&codex.program, codex.home.path(), served.workspace.path());
    command
        .env("CODEX_HOME", codex.home.path())
        .envs(codex.exports.iter().cloned())
        // Codex's own sandbox needs user namespaces a CI kernel may refuse;
        // the hub's policy is what these tests are about.
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            prompt,
        ]);
    let (stdout, stderr) = run_agent(command, "codex").await;
    format!("{stdout}\n{stderr}")
}

/// What Codex sent the model back for each tool call, in order: the last
/// tool message of each request after the first.
fn tool_outputs(mock: &MockLlm) -> Vec<String> {
    chat_requests(mock)
        .iter()
        .skip(1)
        .filter_map(|request| {
            let messages = request.body["messages"].as_array()?;
            let last = messages.iter().rev().find(|m| m["role"] == "tool")?;
            Some(last["content"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn audit(served: &Served) -> Vec<Value> {
    let Ok(files) = std::fs::read_dir(served.state().join("audit")) else {
        return Vec::new();
    };
    files
        .flat_map(|file| {
            std::fs::read_to_string(file.unwrap().path())
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

#[tokio::test]
async fn codexs_shell_is_denied_a_dangerous_command_and_runs_a_safe_one() {
    let mock = mock_running(&["touch pwned.txt; sudo true", "echo hi-from-codex"]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(codex) = codex_home(&served).await else {
        return;
    };
    let log = codex_exec(&served, &codex, "Run the commands").await;
    let outputs = tool_outputs(&mock);
    assert_eq!(outputs.len(), 2, "{log}");
    assert!(
        outputs[0].contains("blocked by PreToolUse hook") && outputs[0].contains("superuser"),
        "{}",
        outputs[0]
    );
    assert!(
        !served.workspace.path().join("pwned.txt").exists(),
        "it did not run"
    );
    assert!(outputs[1].contains("hi-from-codex"), "{}", outputs[1]);

    let entries = audit(&served);
    let hooks: Vec<(&str, &str)> = entries
        .iter()
        .filter_map(|entry| Some((entry["hook"].as_str()?, entry["decision"].as_str()?)))
        .collect();
    assert!(
        hooks.contains(&("pre-tool-use:codex", "deny")),
        "{entries:?}"
    );
    assert!(
        hooks.contains(&("pre-tool-use:codex", "allow")),
        "{entries:?}"
    );
    assert!(
        entries
            .iter()
            .any(|entry| entry["hook"] == "post-tool-use:codex"
                && entry["input"]["command"] == "echo hi-from-codex"),
        "{entries:?}"
    );
}

#[tokio::test]
async fn codexs_apply_patch_outside_writes_allow_is_refused() {
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "the secret word is pineapple\n");
    workspace.write("src/lib.txt", "old\n");
    workspace.write(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n");
    let patch = |file: &str, from: &str, to: &str| {
        format!(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {file}\n@@\n-{from}\n+{to}\n*** End Patch\nEOF\n"
        )
    };
    let outside = patch(
        "notes.txt",
        "the secret word is pineapple",
        "the secret word is mango",
    );
    let inside = patch("src/lib.txt", "old", "new");
    let mock = mock_running(&[&outside, &inside]).await;
    let served = serve_with(&mock, workspace);
    let Some(codex) = codex_home(&served).await else {
        return;
    };
    let log = codex_exec(&served, &codex, "Patch the files").await;
    let outputs = tool_outputs(&mock);
    assert_eq!(outputs.len(), 2, "{log}");
    assert!(
        outputs[0].contains("blocked by PreToolUse hook"),
        "{}",
        outputs[0]
    );
    let notes = std::fs::read_to_string(served.workspace.path().join("notes.txt")).unwrap();
    assert!(
        notes.contains("pineapple"),
        "the patch outside was not applied: {notes}"
    );
    let lib = std::fs::read_to_string(served.workspace.path().join("src/lib.txt")).unwrap();
    assert_eq!(lib, "new\n", "the patch inside writes.allow was: {log}");
    let entries = audit(&served);
    let denied = entries
        .iter()
        .find(|entry| entry["hook"] == "pre-tool-use:codex" && entry["decision"] == "deny")
        .unwrap_or_else(|| panic!("{entries:?}"));
    assert!(
        denied["output"]["reason"]
            .as_str()
            .unwrap()
            .contains("notes.txt"),
        "{denied}"
    );
}

#[tokio::test]
async fn launch_codex_via_the_hub_trusts_its_own_hooks_and_denies_a_dangerous_command() {
    let mock = mock_running(&["touch pwned.txt; sudo true"]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let Some(program) = agent_cli("codex", "codex") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let _stop = StopDaemon(served.state());
    let output = tokio::time::timeout(
        super::AGENT_PATIENCE,
        served
            .cli()
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .env("PATH", path_with(&program))
            .args([
                "launch",
                "codex",
                "--via-hub",
                "--model",
                "mock-model",
                "--",
            ])
            .args([
                "exec",
                "--skip-git-repo-check",
                "--sandbox",
                "danger-full-access",
                "Run the command",
            ])
            .output(),
    )
    .await
    .expect("launch ends")
    .unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{log}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "done",
        "{log}"
    );
    let outputs = tool_outputs(&mock);
    assert!(
        outputs[0].contains("blocked by PreToolUse hook") && outputs[0].contains("superuser"),
        "{log}"
    );
    assert!(!served.workspace.path().join("pwned.txt").exists());
    assert!(
        audit(&served)
            .iter()
            .any(|entry| entry["hook"] == "pre-tool-use:codex" && entry["decision"] == "deny")
    );
    // The user's Codex home got the trust of the launch's hooks, nothing else.
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("/<session-flags>/config.toml:pre_tool_use:0:0"),
        "{config}"
    );
    assert!(!home.path().join("hooks.json").exists());
}
