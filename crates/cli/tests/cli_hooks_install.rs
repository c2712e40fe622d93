//! `copilot-bridge hooks install|uninstall|status`, the built binary, on
//! Claude Code's settings.json and the Copilot CLI's hooks directory: the
//! wrapper it writes answers for our hook and the user's together (the
//! precedence table of docs/hooks.md, row by row), the user's hooks come
//! back on uninstall, and nothing changes twice.

use std::path::{Path, PathBuf};
use std::process::Output;

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::support::{Bridge, stdout_json};

fn hooks(bridge: &Bridge, project: &Path, args: &[&str]) -> Output {
    let output = bridge
        .cmd()
        .arg("hooks")
        .args(args)
        .arg("--dir")
        .arg(project)
        .output()
        .unwrap();
    assert!(output.status.success(), "hooks {args:?}: {output:?}");
    output
}

/// A user hook that prints `answer` (or exits 2 with `answer` on stderr).
fn user_hook(answer: &str, exit_2: bool) -> String {
    if exit_2 {
        format!("echo '{answer}' >&2; exit 2")
    } else {
        format!("echo '{answer}'")
    }
}

/// The command our wrapper runs for `event` in Claude's settings.
fn claude_wrapper(project: &Path, event: &str) -> String {
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let groups = settings["hooks"][event].as_array().unwrap();
    assert_eq!(groups.len(), 1, "only our wrapper: {settings}");
    groups[0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// What Claude Code gives its hooks in `project`: the project directory
/// and the `env` of its settings (`settings.local.json` has this
/// machine's part of a project install).
fn claude_hook_env(project: &Path) -> Vec<(String, String)> {
    let mut env = vec![(
        "CLAUDE_PROJECT_DIR".to_owned(),
        project.display().to_string(),
    )];
    let local = project.join(".claude/settings.local.json");
    if let Ok(text) = std::fs::read_to_string(local) {
        let settings: Value = serde_json::from_str(&text).unwrap();
        for (name, value) in settings["env"].as_object().into_iter().flatten() {
            env.push((name.clone(), value.as_str().unwrap().to_owned()));
        }
    }
    env
}

/// What the Copilot CLI gives its hooks in `project`, with what `hooks
/// install` told the user to export (`  export NAME='VALUE'`).
fn copilot_hook_env(project: &Path, installed: &Output) -> Vec<(String, String)> {
    let mut env = vec![(
        "COPILOT_PROJECT_DIR".to_owned(),
        project.display().to_string(),
    )];
    for line in String::from_utf8_lossy(&installed.stdout).lines() {
        if let Some((name, value)) = line
            .trim()
            .strip_prefix("export ")
            .and_then(|e| e.split_once('='))
        {
            env.push((name.to_owned(), value.trim_matches('\'').to_owned()));
        }
    }
    env
}

/// Runs a wrapper command with `payload` on stdin, as the agent would:
/// `env` is what the agent adds to a bare environment.
fn run_wrapper(
    bridge: &Bridge,
    command: &str,
    env: &[(String, String)],
    payload: &Value,
) -> Output {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", bridge.state.path())
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

fn claude_bash(project: &Path, command: &str) -> Value {
    json!({"session_id": "s1", "cwd": project, "hook_event_name": "PreToolUse",
           "tool_name": "Bash", "tool_input": {"command": command}})
}

/// Claude's settings with one user PreToolUse hook for Bash.
fn claude_project_with(user_command: &str) -> TempWorkspace {
    let project = TempWorkspace::new();
    std::fs::create_dir_all(project.path().join(".claude")).unwrap();
    std::fs::write(
        project.path().join(".claude/settings.json"),
        json!({"model": "sonnet", "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": user_command}]}
        ]}})
        .to_string(),
    )
    .unwrap();
    project
}

#[test]
fn each_row_of_the_precedence_table_through_claudes_wrapper() {
    let deny_reason = |output: &Output| {
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let answer = stdout_json(output);
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{answer}"
        );
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let user_allows =
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#;
    let user_asks = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"user asks"}}"#;
    for (row, user, command, expect) in [
        // 1. Our explicit decision first, whatever the user's hook says.
        (1, user_hook(user_allows, false), "sudo true", "ours"),
        // 2. Else the user's explicit decision, unchanged.
        (2, user_hook(user_asks, false), "ls", "theirs"),
        // 3. Else a legacy block, as a deny (also exit code 2).
        (
            3,
            user_hook(r#"{"block": true, "message": "legacy no"}"#, false),
            "ls",
            "legacy",
        ),
        (3, user_hook("exit-2 no", true), "ls", "exit 2"),
        // 4. Else nothing.
        (4, user_hook("{}", false), "ls", "none"),
    ] {
        let bridge = Bridge::new();
        let project = claude_project_with(&user);
        hooks(&bridge, project.path(), &["install", "--agent", "claude"]);
        let wrapper = claude_wrapper(project.path(), "PreToolUse");
        let env = claude_hook_env(project.path());
        let output = run_wrapper(
            &bridge,
            &wrapper,
            &env,
            &claude_bash(project.path(), command),
        );
        match expect {
            "ours" => assert!(deny_reason(&output).contains("superuser"), "row {row}"),
            "theirs" => assert_eq!(
                stdout_json(&output),
                serde_json::from_str::<Value>(user_asks).unwrap(),
                "row {row}"
            ),
            "legacy" => assert_eq!(deny_reason(&output), "legacy no", "row {row}"),
            "exit 2" => assert_eq!(deny_reason(&output), "exit-2 no", "row {row}"),
            _ => {
                assert_eq!(output.status.code(), Some(0), "row {row}: {output:?}");
                assert_eq!(stdout_json(&output), json!({}), "row {row}");
            }
        }
    }
}

#[test]
fn claudes_settings_keep_the_users_hooks_and_get_them_back() {
    let bridge = Bridge::new();
    let project = claude_project_with("echo mine");
    let settings = project.path().join(".claude/settings.json");
    let original = std::fs::read_to_string(&settings).unwrap();
    let installed = hooks(&bridge, project.path(), &["install", "--agent", "claude"]);
    assert!(String::from_utf8_lossy(&installed.stdout).contains("Backup of the previous file"));
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(after["model"], "sonnet", "other settings stay");
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SessionEnd",
    ] {
        assert!(
            claude_wrapper(project.path(), event).contains(" hook "),
            "{event}"
        );
    }
    let once = std::fs::read_to_string(&settings).unwrap();
    let again = hooks(&bridge, project.path(), &["install", "--agent", "claude"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already installed"));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), once);

    let status = hooks(&bridge, project.path(), &["status", "--agent", "claude"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("PreToolUse") && status.contains("1 of yours chained"),
        "{status}"
    );

    // The committed file names no path of this machine; the backup is in
    // the state directory, not in the repository.
    assert!(
        !once.contains(&*bridge.state.path().display().to_string()),
        "{once}"
    );
    assert!(
        !once.contains(env!("CARGO_BIN_EXE_copilot-bridge")),
        "{once}"
    );
    assert!(bridge.state.path().join("backups").is_dir());

    hooks(&bridge, project.path(), &["uninstall", "--agent", "claude"]);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        original,
        "the very bytes"
    );
    let left: Vec<String> = std::fs::read_dir(project.path().join(".claude"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["settings.json"], "nothing of ours left, no backup");
}

/// A Copilot CLI project with a hook file of the user's.
fn copilot_project_with(user_command: &str) -> (TempWorkspace, PathBuf) {
    let project = TempWorkspace::new();
    let hooks_dir = project.path().join(".github/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    let mine = hooks_dir.join("mine.json");
    std::fs::write(
        &mine,
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": user_command, "timeoutSec": 10}],
            "agentStop": [{"type": "command", "bash": "true"}]
        }})
        .to_string(),
    )
    .unwrap();
    (project, mine)
}

#[test]
fn the_copilot_clis_hook_files_run_through_our_wrapper_and_come_back() {
    let bridge = Bridge::new();
    let (project, mine) = copilot_project_with(&user_hook(
        r#"{"permissionDecision": "deny", "permissionDecisionReason": "mine says no"}"#,
        false,
    ));
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&mine).unwrap()).unwrap();
    let installed = hooks(&bridge, project.path(), &["install", "--agent", "copilot"]);
    let ours: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".github/hooks/copilot-bridge.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(ours["version"], 1);
    let wrapper = ours["hooks"]["preToolUse"][0]["bash"]
        .as_str()
        .unwrap()
        .to_owned();
    // The user's preToolUse moved into the chain; their other events stay.
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&mine).unwrap()).unwrap();
    assert!(left["hooks"].get("preToolUse").is_none(), "{left}");
    assert_eq!(left["hooks"]["agentStop"], original["hooks"]["agentStop"]);

    let payload = json!({"sessionId": "s", "cwd": project.path(), "toolName": "bash",
                         "toolArgs": json!({"command": "ls"}).to_string()});
    let env = copilot_hook_env(project.path(), &installed);
    let output = run_wrapper(&bridge, &wrapper, &env, &payload);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        stdout_json(&output),
        json!({"permissionDecision": "deny", "permissionDecisionReason": "mine says no"})
    );

    hooks(
        &bridge,
        project.path(),
        &["uninstall", "--agent", "copilot"],
    );
    let restored: Value = serde_json::from_str(&std::fs::read_to_string(&mine).unwrap()).unwrap();
    assert_eq!(restored, original);
    assert!(
        !project
            .path()
            .join(".github/hooks/copilot-bridge.json")
            .exists()
    );
}

#[test]
fn codex_hooks_that_cannot_be_trusted_are_not_reported_as_installed() {
    let bridge = Bridge::new();
    let project = TempWorkspace::new();
    // No `codex` on PATH: the trust cannot be written through Codex.
    let output = bridge
        .cmd()
        .env("PATH", "/usr/bin:/bin")
        .args(["hooks", "install", "--agent", "codex", "--dir"])
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("could not trust its hooks: `codex` is not on PATH"),
        "{said}"
    );
    assert!(said.contains("type /hooks"), "{said}");
    assert!(
        said.contains("trust_level = \"trusted\""),
        "the project's trust: {said}"
    );
    // The shared file names no path of this machine.
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(command.starts_with("\"${COPILOT_BRIDGE_BIN:-copilot-bridge}\" hook pre-tool-use --agent codex --chain \"$(git rev-parse --show-toplevel"), "{command}");
    assert!(
        !command.contains(&*project.path().display().to_string()),
        "{command}"
    );
    let status = bridge
        .cmd()
        .env("PATH", "/usr/bin:/bin")
        .args(["hooks", "status", "--agent", "codex", "--dir"])
        .arg(project.path())
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("PermissionRequest"), "{status}");
    assert!(
        status.contains("Codex's trust: unknown (`codex` is not on PATH)"),
        "{status}"
    );
}
