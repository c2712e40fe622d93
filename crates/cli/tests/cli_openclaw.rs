//! `copilot-bridge openclaw register|unregister` against real files, and
//! `copilot-bridge mcp config`: the entry names this binary, edits keep the
//! user's settings and comments, back up first, and are idempotent.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::Bridge;

fn exe() -> String {
    std::fs::canonicalize(assert_cmd::cargo::cargo_bin("copilot-bridge"))
        .unwrap()
        .display()
        .to_string()
}

fn our_entry() -> Value {
    json!({"command": exe(), "args": ["mcp", "code"]})
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().contains(".bak-"))
        .collect();
    found.sort();
    found
}

fn run(bridge: &Bridge, args: &[&str]) -> (i32, String, String) {
    let output = bridge.cmd().args(args).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn with_env(mut entry: Value, env: &Value) -> Value {
    entry["env"] = env.clone();
    entry
}

/// Strict JSON after removing `//` comment lines (enough for these files).
fn parse_loosely(text: &str) -> Value {
    let without: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    serde_json::from_str(&without.join("\n")).unwrap()
}

#[test]
fn register_creates_the_entry_and_a_second_run_changes_nothing() {
    let bridge = Bridge::new();
    let config = bridge.state.path().join(".openclaw/openclaw.json");
    let (code, stdout, stderr) = run(&bridge, &["openclaw", "register"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("Registered mcp.servers.copilot-bridge"),
        "{stdout}"
    );
    assert!(
        stdout.contains("copilot_orchestrate is not available yet"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&config).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&written).unwrap(),
        json!({"mcp": {"servers": {"copilot-bridge": our_entry()}}})
    );
    assert_eq!(
        std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        backups(config.parent().unwrap()).is_empty(),
        "nothing to back up"
    );

    let (code, stdout, _) = run(&bridge, &["openclaw", "register"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("already registered"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written);
    assert!(backups(config.parent().unwrap()).is_empty());
}

const USER_CONFIG: &str = r#"// OpenClaw configuration (JSON5)
{
  agents: {
    defaults: { workspace: "~/.openclaw/workspace" },
  },
  /* servers I added by hand */
  mcp: {
    servers: {
      filesystem: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
    },
  },
  gateway: { port: 18789, auth: { token: "keep-me" } },
}
"#;

#[test]
fn register_and_unregister_keep_comments_and_settings_and_back_up_first() {
    let bridge = Bridge::new();
    let dir = bridge.state.path().join("custom");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("openclaw.json5");
    std::fs::write(&config, USER_CONFIG).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).unwrap();
    let path = config.display().to_string();

    let (code, stdout, stderr) = run(&bridge, &["openclaw", "register", "--config-file", &path]);
    assert_eq!(code, 0, "{stderr}");
    let registered = std::fs::read_to_string(&config).unwrap();
    for kept in [
        "// OpenClaw configuration (JSON5)",
        "/* servers I added by hand */",
        "token: \"keep-me\"",
        "agents: {",
    ] {
        assert!(registered.contains(kept), "lost {kept:?}:\n{registered}");
    }
    assert!(
        registered.contains(&format!("\"command\": \"{}\"", exe())),
        "{registered}"
    );
    assert_eq!(
        std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let saved = backups(&dir);
    assert_eq!(saved.len(), 1);
    assert_eq!(std::fs::read_to_string(&saved[0]).unwrap(), USER_CONFIG);
    assert!(stdout.contains(&saved[0].display().to_string()), "{stdout}");

    // Again: nothing to do, no second backup.
    let (_, stdout, _) = run(&bridge, &["openclaw", "register", "--config-file", &path]);
    assert!(stdout.contains("already registered"));
    assert_eq!(backups(&dir).len(), 1);

    let (code, stdout, _) = run(&bridge, &["openclaw", "unregister", "--config-file", &path]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Removed mcp.servers.copilot-bridge"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), USER_CONFIG);
    assert_eq!(backups(&dir).len(), 2);

    let (_, stdout, _) = run(&bridge, &["openclaw", "unregister", "--config-file", &path]);
    assert!(stdout.contains("not registered"), "{stdout}");
    assert_eq!(backups(&dir).len(), 2);
}

#[test]
fn a_changed_entry_is_replaced_and_other_servers_stay() {
    let bridge = Bridge::new();
    let state = bridge.state.path().join("oc-state");
    std::fs::create_dir_all(&state).unwrap();
    let config = state.join("openclaw.json");
    std::fs::write(
        &config,
        "{\n  \"mcp\": {\n    \"servers\": {\n      \"copilot-bridge\": {\"command\": \"/old/copilot-bridge\", \"args\": [\"mcp\", \"code\"]},\n      \"other\": {\"url\": \"http://127.0.0.1:1/mcp\"}\n    }\n  }\n}\n",
    )
    .unwrap();
    let output = bridge
        .cmd()
        .env("OPENCLAW_STATE_DIR", &state)
        .args(["openclaw", "register"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let value = parse_loosely(&std::fs::read_to_string(&config).unwrap());
    assert_eq!(value["mcp"]["servers"]["copilot-bridge"], our_entry());
    assert_eq!(
        value["mcp"]["servers"]["other"],
        json!({"url": "http://127.0.0.1:1/mcp"})
    );
    assert_eq!(backups(&state).len(), 1);
}

#[test]
fn dry_run_writes_nothing_and_a_broken_file_is_left_alone() {
    let bridge = Bridge::new();
    let config = bridge.state.path().join("openclaw.json");
    std::fs::write(&config, "{\"gateway\": {\"port\": 1}}\n").unwrap();
    let output = bridge
        .cmd()
        .env("OPENCLAW_CONFIG_PATH", &config)
        .args(["openclaw", "register", "--dry-run"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Would add or update mcp.servers.copilot-bridge"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "{\"gateway\": {\"port\": 1}}\n"
    );
    assert!(backups(bridge.state.path()).is_empty());

    let broken = "{\n  gateway: { port: 1 }\n  mcp: {}\n}\n";
    std::fs::write(&config, broken).unwrap();
    let output = bridge
        .cmd()
        .env("OPENCLAW_CONFIG_PATH", &config)
        .args(["openclaw", "register"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not valid JSON5 (line 3, column 3"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), broken);
    assert!(backups(bridge.state.path()).is_empty());
}

#[test]
fn mcp_config_prints_a_snippet_per_agent_with_this_binary() {
    let bridge = Bridge::new();
    let (code, stdout, _) = run(&bridge, &["mcp", "config"]);
    assert_eq!(code, 0);
    for header in [
        "# OpenClaw:",
        "# GitHub Copilot CLI: ~/.copilot/mcp-config.json",
        "# Claude Code: .mcp.json",
        "# Codex: ~/.codex/config.toml",
    ] {
        assert!(stdout.contains(header), "missing {header}:\n{stdout}");
    }

    let (_, copilot, _) = run(&bridge, &["mcp", "config", "--agent", "copilot"]);
    let json_part: String = copilot.lines().skip(1).collect::<Vec<_>>().join("\n");
    let value: Value = serde_json::from_str(&json_part).unwrap();
    // The home is not the default one: the servers are told where it is.
    let home = json!({"COPILOT_BRIDGE_HOME": bridge.state.path().display().to_string()});
    assert_eq!(
        value["mcpServers"]["openclaw-memory"],
        json!({"type": "local", "command": exe(), "args": ["mcp", "memory"], "tools": ["*"], "env": home})
    );
    assert!(!copilot.contains("# OpenClaw"));

    let (_, claude, _) = run(&bridge, &["mcp", "config", "--agent", "claude"]);
    let value: Value =
        serde_json::from_str(&claude.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
    let servers: Vec<&String> = value["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(
        servers,
        [
            "copilot-bridge",
            "copilot-bridge-session",
            "openclaw-memory"
        ],
        "Claude Code gets the code server too"
    );
    assert_eq!(
        value["mcpServers"]["copilot-bridge"]["args"],
        json!(["mcp", "code"])
    );

    let (_, openclaw, _) = run(&bridge, &["mcp", "config", "--agent", "OpenClaw"]);
    let value: Value =
        serde_json::from_str(&openclaw.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
    assert_eq!(
        value,
        json!({"mcp": {"servers": {"copilot-bridge": with_env(our_entry(), &home)}}})
    );

    let (_, codex, _) = run(&bridge, &["mcp", "config", "--agent", "codex"]);
    assert!(
        codex.contains(&format!(
            "[mcp_servers.openclaw-memory]\ncommand = \"{}\"\nargs = [\"mcp\", \"memory\"]\nenv = {{ COPILOT_BRIDGE_HOME = \"{}\" }}\n",
            exe(),
            bridge.state.path().display()
        )),
        "{codex}"
    );
    // A port that is not the default is passed on too.
    let output = bridge
        .cmd()
        .env("COPILOT_BRIDGE_PORT", "9555")
        .args(["mcp", "config", "--agent", "claude"])
        .output()
        .unwrap();
    let claude = String::from_utf8_lossy(&output.stdout);
    assert!(
        claude.contains("\"COPILOT_BRIDGE_PORT\": \"9555\""),
        "{claude}"
    );

    let (code, _, stderr) = run(&bridge, &["mcp", "config", "--agent", "vim"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown agent \"vim\""), "{stderr}");
}
