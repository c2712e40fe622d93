//! `hooks install` / `uninstall` / `status` on a temporary home and
//! project: our wrapper in front of every event, the user's own hooks
//! moved into the chain file and put back, nothing changed twice.

use std::path::{Path, PathBuf};

use bridge_agents::hooks::{self, CHAIN_FILE, COPILOT_FILE, Layout};
use bridge_agents::{AgentEnv, AgentsError, Program, Scope};
use bridge_agents::{installed, json_edit};
use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

fn program(home: &Path) -> Program {
    Program {
        path: PathBuf::from("/opt/bin/copilot-bridge"),
        home: home.to_owned(),
        home_configured: true,
        port: None,
        approval_timeout_secs: 120,
    }
}

/// Claude Code's settings of a user who has a hook of their own, other
/// settings and a comment (Claude Code reads JSON; we keep whatever is
/// there).
const CLAUDE_SETTINGS: &str = r#"{
  // my settings
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
    ]
  }
}
"#;

fn read_json5(path: &Path) -> Value {
    json_edit::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The backups in the state directory `state`.
fn backups(state: &Path) -> usize {
    std::fs::read_dir(state.join("backups"))
        .map(|entries| {
            entries
                .filter(|entry| {
                    entry
                        .as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .contains(".bak-")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn claude_codes_project_hooks_name_no_path_of_this_machine_and_come_out_byte_for_byte() {
    let project = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let claude = project.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::create_dir_all(project.path().join(".git/info")).unwrap();
    let settings = claude.join("settings.json");
    std::fs::write(&settings, CLAUDE_SETTINGS).unwrap();
    let env = AgentEnv::from_vars([("HOME", "/nonexistent")]);
    let layout = Layout::new(Agent::ClaudeCode, Scope::Project(project.path()), &env).unwrap();
    assert_eq!(layout.config, settings);

    let report = hooks::install(&program(state.path()), &layout).unwrap();
    assert!(
        report.contains("1 hook(s) of yours run through it"),
        "{report}"
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("// my settings"), "comments kept:\n{text}");
    // The files a team commits: no path of this machine in them.
    let shared = format!(
        "{text}{}",
        std::fs::read_to_string(claude.join(CHAIN_FILE)).unwrap()
    );
    for machine in [
        "/opt/bin",
        &*state.path().display().to_string(),
        &*project.path().display().to_string(),
    ] {
        assert!(!shared.contains(machine), "{machine} in:\n{shared}");
    }
    let installed = read_json5(&settings);
    assert_eq!(installed["model"], "opus");
    for (event, ours) in hooks::CLAUDE_EVENTS {
        let groups = installed["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "only our wrapper for {event}");
        let command = groups[0]["hooks"][0]["command"].as_str().unwrap();
        assert_eq!(
            command,
            format!(
                "\"${{COPILOT_BRIDGE_BIN:-copilot-bridge}}\" hook {ours} --agent claude --chain \"$CLAUDE_PROJECT_DIR\"/'.claude/{CHAIN_FILE}'"
            )
        );
    }
    // This machine's part: where Claude Code keeps what is not committed,
    // kept out of git in this clone.
    let local = read_json5(&claude.join("settings.local.json"));
    assert_eq!(
        local["env"]["COPILOT_BRIDGE_BIN"],
        "/opt/bin/copilot-bridge"
    );
    assert_eq!(
        local["env"]["COPILOT_BRIDGE_HOME"],
        state.path().display().to_string()
    );
    let exclude = std::fs::read_to_string(project.path().join(".git/info/exclude")).unwrap();
    assert_eq!(exclude, "/.claude/settings.local.json\n");
    let chain = read_json5(&claude.join(CHAIN_FILE));
    assert_eq!(
        chain["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./lint.sh"
    );
    // Backups in the state directory, none in the repository.
    assert_eq!(backups(state.path()), 1, "the old settings were backed up");
    assert_eq!(
        files_under(&claude),
        [CHAIN_FILE, "settings.json", "settings.local.json"]
    );

    let again = hooks::install(&program(state.path()), &layout).unwrap();
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(backups(state.path()), 1, "nothing written the second time");
    let status = hooks::status(&layout, state.path()).unwrap();
    assert!(
        status.contains("PreToolUse") && status.contains("1 of yours chained"),
        "{status}"
    );

    let report = hooks::uninstall(&layout, state.path()).unwrap();
    assert!(report.contains("Restored"), "{report}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        CLAUDE_SETTINGS,
        "the very bytes"
    );
    assert_eq!(files_under(&claude), ["settings.json"]);
    let twice = hooks::uninstall(&layout, state.path()).unwrap();
    assert!(twice.contains("not installed"), "{twice}");
}

#[test]
fn settings_edited_since_install_keep_the_edit_and_get_the_users_hooks_back() {
    let project = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let claude = project.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    let settings = claude.join("settings.json");
    std::fs::write(&settings, CLAUDE_SETTINGS).unwrap();
    std::fs::write(
        claude.join("settings.local.json"),
        "{\"env\": {\"MINE\": \"1\"}}\n",
    )
    .unwrap();
    let env = AgentEnv::from_vars([("HOME", "/nonexistent")]);
    let layout = Layout::new(Agent::ClaudeCode, Scope::Project(project.path()), &env).unwrap();
    hooks::install(&program(state.path()), &layout).unwrap();
    // The user changes a setting after install, in both files.
    let edited = std::fs::read_to_string(&settings)
        .unwrap()
        .replace("\"opus\"", "\"sonnet\"");
    std::fs::write(&settings, edited).unwrap();
    let local = claude.join("settings.local.json");
    let edited = std::fs::read_to_string(&local)
        .unwrap()
        .replace("\"MINE\": \"1\"", "\"MINE\": \"2\"");
    std::fs::write(&local, edited).unwrap();

    hooks::uninstall(&layout, state.path()).unwrap();
    let mut expected = json_edit::parse(CLAUDE_SETTINGS).unwrap();
    expected["model"] = json!("sonnet");
    assert_eq!(read_json5(&settings), expected);
    assert_eq!(read_json5(&local), json!({"env": {"MINE": "2"}}));
}

#[test]
fn the_copilot_clis_hook_files_in_copilot_home_are_taken_over_and_restored() {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let copilot_home = home.path().join("copilot");
    let hooks_dir = copilot_home.join("hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    let mine = hooks_dir.join("mine.json");
    let users = json!({"version": 1, "hooks": {
        "preToolUse": [{"type": "command", "bash": "./check.sh", "timeoutSec": 5}],
        "agentStop": [{"type": "command", "bash": "./notify.sh"}],
    }});
    std::fs::write(&mine, serde_json::to_string_pretty(&users).unwrap()).unwrap();
    let env = AgentEnv::from_vars([
        ("HOME", home.path().as_os_str()),
        ("COPILOT_HOME", copilot_home.as_os_str()),
    ]);
    let layout = Layout::new(Agent::CopilotCli, Scope::User, &env).unwrap();
    assert_eq!(layout.config, hooks_dir);

    hooks::install(&program(state.path()), &layout).unwrap();
    let ours = read_json5(&hooks_dir.join(COPILOT_FILE));
    assert!(
        ours["hooks"]["preToolUse"][0]["bash"]
            .as_str()
            .unwrap()
            .contains(" hook pre-tool-use --agent copilot --chain ")
    );
    let taken = read_json5(&mine);
    assert!(
        taken["hooks"].get("preToolUse").is_none(),
        "runs through ours now"
    );
    assert_eq!(
        taken["hooks"]["agentStop"], users["hooks"]["agentStop"],
        "events we do not answer stay"
    );
    let chain = read_json5(&copilot_home.join(CHAIN_FILE));
    assert_eq!(chain["hooks"]["preToolUse"][0]["bash"], "./check.sh");

    hooks::uninstall(&layout, state.path()).unwrap();
    assert_eq!(read_json5(&mine), users);
    assert!(!hooks_dir.join(COPILOT_FILE).exists());
    assert!(!copilot_home.join(CHAIN_FILE).exists());
}

#[test]
fn the_users_scope_needs_a_home_and_a_broken_file_is_left_alone() {
    let env = AgentEnv::from_vars([("PATH", "/bin")]);
    let err = Layout::new(Agent::ClaudeCode, Scope::User, &env).unwrap_err();
    assert!(matches!(err, AgentsError::NoHomeForUserScope));
    assert_eq!(err.to_string(), "HOME is not set; use --scope project");

    let project = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let claude = project.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    let settings = claude.join("settings.json");
    std::fs::write(&settings, "{\"hooks\": ").unwrap();
    let layout = Layout::new(Agent::ClaudeCode, Scope::Project(project.path()), &env).unwrap();
    let err = hooks::install(&program(state.path()), &layout).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot change {}: it is not valid JSON5",
            settings.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{\"hooks\": ");
    assert!(!claude.join(CHAIN_FILE).exists());
}

#[test]
fn codexs_hooks_json_gets_our_wrapper_per_event_and_comes_back_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let hooks_json = codex_home.join("hooks.json");
    let users = "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"./notify.sh\"}]}],\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"./lint.sh\", \"timeout\": 5}]}]\n  }\n}\n";
    std::fs::write(&hooks_json, users).unwrap();
    let env = AgentEnv::from_vars([
        ("HOME", home.path().as_os_str()),
        ("CODEX_HOME", codex_home.as_os_str()),
    ]);
    let layout = Layout::new(Agent::Codex, Scope::User, &env).unwrap();
    assert_eq!(layout.config, hooks_json);
    hooks::install(&program(state.path()), &layout).unwrap();
    let installed = read_json5(&hooks_json);
    for (event, ours) in hooks::CODEX_EVENTS {
        let command = installed["hooks"][event][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(
            command.contains(&format!(" hook {ours} --agent codex --chain ")),
            "{event}: {command}"
        );
        // Codex's own field names: a matcher and `timeout` in seconds.
        assert_eq!(installed["hooks"][event][0]["matcher"], "*");
        assert_eq!(installed["hooks"][event][0]["hooks"][0]["timeout"], 130);
    }
    assert_eq!(
        installed["hooks"]["Stop"][0]["hooks"][0]["command"], "./notify.sh",
        "an event we do not answer stays"
    );
    let chain = read_json5(&codex_home.join(CHAIN_FILE));
    assert_eq!(
        chain["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./lint.sh"
    );
    hooks::uninstall(&layout, state.path()).unwrap();
    assert_eq!(std::fs::read_to_string(&hooks_json).unwrap(), users);
    assert!(!codex_home.join(CHAIN_FILE).exists());
}

#[test]
fn installed_hooks_name_the_binary_they_run_and_whether_it_is_gone() {
    let temp = tempfile::tempdir().unwrap();
    let env = AgentEnv::from_vars([("HOME", temp.path().join("home"))]);
    let project = temp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let binary = temp.path().join("bin/copilot-bridge");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::write(&binary, "").unwrap();
    let mut program = program(temp.path());
    program.path = binary.clone();
    for (agent, scope) in [
        (Agent::ClaudeCode, Scope::User),
        (Agent::CopilotCli, Scope::User),
        (Agent::Codex, Scope::Project(&project)),
    ] {
        assert_eq!(installed::hooks(agent, scope, &env).unwrap(), []);
        let layout = Layout::new(agent, scope, &env).unwrap();
        hooks::install(&program, &layout).unwrap();
        let found = installed::hooks(agent, scope, &env).unwrap();
        let expected = match scope {
            Scope::User => installed::Binary::Path(binary.clone()),
            // A project's shared files name no path of this machine.
            Scope::Project(_) => installed::Binary::Portable,
        };
        assert_eq!(found.len(), 1, "{agent:?}: {found:?}");
        assert_eq!(found[0].binary, expected, "{agent:?}");
        assert_eq!(found[0].file, layout.our_file());
        assert_eq!(found[0].missing_binary(), None);
    }
    std::fs::remove_file(&binary).unwrap();
    let claude = installed::hooks(Agent::ClaudeCode, Scope::User, &env).unwrap();
    assert_eq!(claude[0].missing_binary(), Some(binary.as_path()));
}
