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

/// What `register` writes into openclaw.json for a daemon on the default
/// port whose OpenClaw workspace is `workspace`.
fn registered(bridge: &Bridge, workspace: &Path) -> Value {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("workspace", &workspace.display().to_string())
        .finish();
    json!({
        "plugins": {
            "load": {"paths": [plugin_dir(bridge).display().to_string()]},
            "entries": {"copilot-bridge": {
                "enabled": true,
                "config": {"binary": exe(), "home": bridge.state.path()}
            }}
        },
        "mcp": {"servers": {"copilot-bridge": {
            "url": format!("http://127.0.0.1:9400/mcp/code?{query}"),
            "transport": "streamable-http",
            "headers": {"Authorization": "Bearer ${COPILOT_BRIDGE_TOKEN}"},
            "requestTimeoutMs": 1_800_000
        }}}
    })
}

fn plugin_dir(bridge: &Bridge) -> PathBuf {
    bridge.state.path().join("openclaw-plugin")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
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

/// A JSON5 document (OpenClaw's configuration) as a value.
fn parse_loosely(text: &str) -> Value {
    bridge_config::json5::parse_value(text).unwrap()
}

#[test]
fn register_installs_the_plugin_the_server_and_the_token_and_a_second_run_changes_nothing() {
    let bridge = Bridge::new();
    let state = bridge.state.path().join(".openclaw");
    let config = state.join("openclaw.json");
    let (code, stdout, stderr) = run(&bridge, &["openclaw", "register"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Registered copilot-bridge in"), "{stdout}");
    assert!(
        stdout.contains("tools copilot_code, copilot_code_verbose, copilot_orchestrate"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rewrites openclaw.json as plain JSON"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&config).unwrap();
    // No workspace configured anywhere: OpenClaw's own default.
    let expected = registered(&bridge, &state.join("workspace"));
    assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), expected);
    assert_eq!(mode(&config), 0o600);
    assert!(backups(&state).is_empty(), "nothing to back up");
    // The plugin's files are the ones in the repository.
    let assets = exe_assets();
    for name in [
        "openclaw.plugin.json",
        "package.json",
        "index.js",
        "daemon.js",
    ] {
        assert_eq!(
            std::fs::read(plugin_dir(&bridge).join(name)).unwrap(),
            std::fs::read(assets.join(name)).unwrap(),
            "{name}"
        );
    }
    // The daemon's token is kept, and OpenClaw gets it from its .env.
    let kept = std::fs::read_to_string(bridge.state.path().join("token")).unwrap();
    assert!(kept.trim().starts_with("btk-"), "{kept}");
    assert_eq!(mode(&bridge.state.path().join("token")), 0o600);
    let dotenv = state.join(".env");
    assert_eq!(
        std::fs::read_to_string(&dotenv).unwrap(),
        format!("COPILOT_BRIDGE_TOKEN={}\n", kept.trim())
    );
    assert_eq!(mode(&dotenv), 0o600);
    assert!(!stdout.contains(kept.trim()), "the token is never printed");

    let (code, stdout, _) = run(&bridge, &["openclaw", "register"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("already registered"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written);
    assert!(backups(&state).is_empty());
    assert_eq!(
        std::fs::read_to_string(bridge.state.path().join("token")).unwrap(),
        kept
    );

    // OpenClaw's model provider can name the kept token too.
    let (code, stdout, _) = run(&bridge, &["setup", "--agent", "openclaw"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("\"apiKey\": \"${COPILOT_BRIDGE_TOKEN}\""),
        "{stdout}"
    );

    let (code, stdout, _) = run(&bridge, &["openclaw", "unregister"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Removed copilot-bridge from"), "{stdout}");
    let (_, stdout, _) = run(&bridge, &["setup", "--agent", "openclaw"]);
    assert!(stdout.contains("PASTE-THE-TOKEN"), "{stdout}");
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&config).unwrap()).unwrap(),
        json!({}),
        "no trace of us"
    );
    assert!(!dotenv.exists(), "the .env held only our line");
    assert!(!plugin_dir(&bridge).exists());
}

/// crates/agents/assets/openclaw-plugin.
fn exe_assets() -> PathBuf {
    bridge_testkit::repo_root().join("crates/agents/assets/openclaw-plugin")
}

const USER_CONFIG: &str = r#"// OpenClaw configuration (JSON5)
{
  agents: {
    defaults: { workspace: "~/work/claw" },
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
    let dotenv = bridge.state.path().join(".openclaw/.env");
    std::fs::create_dir_all(dotenv.parent().unwrap()).unwrap();
    std::fs::write(&dotenv, "OPENAI_API_KEY=mine\n").unwrap();
    let path = config.display().to_string();
    // OpenClaw reads this file (so the workspace comes from it); the flag
    // names the file to edit.
    let openclaw = |verb: &str| {
        let output = bridge
            .cmd()
            .env("OPENCLAW_CONFIG_PATH", &config)
            .args(["openclaw", verb, "--config-file", &path])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };

    let stdout = openclaw("register");
    let text = std::fs::read_to_string(&config).unwrap();
    for kept in [
        "// OpenClaw configuration (JSON5)",
        "/* servers I added by hand */",
        "token: \"keep-me\"",
        "filesystem: { command: \"npx\"",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    // The agent's workspace from the file itself, `~` expanded.
    let mut expected = registered(&bridge, &bridge.state.path().join("work/claw"));
    let value = parse_loosely(&text);
    assert_eq!(
        value["mcp"]["servers"]["copilot-bridge"],
        expected["mcp"]["servers"]["copilot-bridge"]
    );
    assert_eq!(value["plugins"], expected["plugins"].take());
    assert!(value["mcp"]["servers"]["filesystem"].is_object());
    assert_eq!(mode(&config), 0o640);
    let saved = backups(&dir);
    assert_eq!(saved.len(), 1);
    assert_eq!(std::fs::read_to_string(&saved[0]).unwrap(), USER_CONFIG);
    assert!(stdout.contains(&saved[0].display().to_string()), "{stdout}");
    let env_text = std::fs::read_to_string(&dotenv).unwrap();
    assert!(
        env_text.starts_with("OPENAI_API_KEY=mine\nCOPILOT_BRIDGE_TOKEN=btk-"),
        "{env_text}"
    );

    // Again: nothing to do, no second backup.
    let stdout = openclaw("register");
    assert!(stdout.contains("already registered"), "{stdout}");
    assert_eq!(backups(&dir).len(), 1);

    let stdout = openclaw("unregister");
    assert!(stdout.contains("Removed copilot-bridge"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), USER_CONFIG);
    assert_eq!(backups(&dir).len(), 2);
    assert_eq!(
        std::fs::read_to_string(&dotenv).unwrap(),
        "OPENAI_API_KEY=mine\n"
    );

    let stdout = openclaw("unregister");
    assert!(stdout.contains("not registered"), "{stdout}");
    assert_eq!(backups(&dir).len(), 2);
}

#[test]
fn a_changed_entry_is_replaced_other_servers_stay_and_a_chosen_token_is_not_kept() {
    let bridge = Bridge::new();
    let state = bridge.state.path().join("oc-state");
    std::fs::create_dir_all(&state).unwrap();
    let config = state.join("openclaw.json");
    std::fs::write(
        &config,
        "{\n  \"mcp\": {\n    \"servers\": {\n      \"copilot-bridge\": {\"command\": \"/old/copilot-bridge\", \"args\": [\"mcp\", \"code\"]},\n      \"other\": {\"url\": \"http://127.0.0.1:1/mcp\"}\n    }\n  }\n}\n",
    )
    .unwrap();
    let workspace = bridge.state.path().join("claw-ws");
    let output = bridge
        .cmd()
        .env("OPENCLAW_STATE_DIR", &state)
        .env("OPENCLAW_WORKSPACE_DIR", &workspace)
        .env("COPILOT_BRIDGE_TOKEN", "chosen-token-0123456789")
        .env("COPILOT_BRIDGE_PORT", "9555")
        .args(["openclaw", "register"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let value = parse_loosely(&std::fs::read_to_string(&config).unwrap());
    let mut server = registered(&bridge, &workspace)["mcp"]["servers"]["copilot-bridge"].clone();
    server["url"] = json!(server["url"].as_str().unwrap().replace(":9400/", ":9555/"));
    assert_eq!(value["mcp"]["servers"]["copilot-bridge"], server);
    assert_eq!(
        value["mcp"]["servers"]["other"],
        json!({"url": "http://127.0.0.1:1/mcp"})
    );
    assert_eq!(backups(&state).len(), 1);
    assert_eq!(
        std::fs::read_to_string(state.join(".env")).unwrap(),
        "COPILOT_BRIDGE_TOKEN=chosen-token-0123456789\n"
    );
    assert!(
        !bridge.state.path().join("token").exists(),
        "the configured token is the one the daemon uses; none is kept"
    );
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
    assert!(stdout.contains("Would write the plugin to"), "{stdout}");
    assert!(stdout.contains("\"copilot-bridge\""), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "{\"gateway\": {\"port\": 1}}\n"
    );
    assert!(backups(bridge.state.path()).is_empty());
    assert!(!plugin_dir(&bridge).exists());
    assert!(!bridge.state.path().join("token").exists());

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
    assert!(!plugin_dir(&bridge).exists(), "nothing half done");

    // plugins.load.paths that is not a list of paths is not overwritten.
    std::fs::write(&config, "{\"plugins\": {\"load\": {\"paths\": \"/x\"}}}").unwrap();
    let output = bridge
        .cmd()
        .env("OPENCLAW_CONFIG_PATH", &config)
        .args(["openclaw", "register"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("plugins.load.paths is not a list"),
        "{output:?}"
    );
}

#[test]
fn persona_prints_when_and_how_to_delegate() {
    let bridge = Bridge::new();
    let (code, stdout, _) = run(&bridge, &["openclaw", "persona"]);
    assert_eq!(code, 0);
    for tool in [
        "copilot_code",
        "copilot_code_verbose",
        "copilot_orchestrate",
    ] {
        assert!(stdout.contains(&format!("`{tool}`")), "{stdout}");
    }
    assert!(stdout.contains("When to delegate"), "{stdout}");
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

#[test]
fn setup_names_the_configuration_file_openclaw_reads() {
    let bridge = Bridge::new();
    let (code, stdout, _) = run(&bridge, &["setup", "--agent", "openclaw"]);
    assert_eq!(code, 0);
    let default = bridge.state.path().join(".openclaw/openclaw.json");
    assert!(
        stdout.contains(&format!("merge into {}", default.display())),
        "{stdout}"
    );
    let elsewhere = bridge.state.path().join("claw/settings.json");
    let output = bridge
        .cmd()
        .env("OPENCLAW_CONFIG_PATH", &elsewhere)
        .args(["setup", "--agent", "openclaw"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("merge into {}", elsewhere.display())),
        "{stdout}"
    );
}

#[test]
fn unregister_keeps_the_token_the_setup_provider_still_uses() {
    let bridge = Bridge::new();
    let state = bridge.state.path().join(".openclaw");
    let config = state.join("openclaw.json");
    let dotenv = state.join(".env");
    let (code, _, stderr) = run(&bridge, &["openclaw", "register"]);
    assert_eq!(code, 0, "{stderr}");
    // The model provider `setup --agent openclaw` prints, merged in.
    let mut document: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    document["models"] = json!({"mode": "merge", "providers": {"copilot-bridge": {
        "baseUrl": "http://127.0.0.1:9400/v1", "apiKey": "${COPILOT_BRIDGE_TOKEN}",
        "api": "openai-completions", "models": [{"id": "m", "name": "m"}]}}});
    std::fs::write(&config, document.to_string()).unwrap();

    let (code, stdout, _) = run(&bridge, &["openclaw", "unregister"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Kept COPILOT_BRIDGE_TOKEN"), "{stdout}");
    assert!(
        std::fs::read_to_string(&dotenv)
            .unwrap()
            .starts_with("COPILOT_BRIDGE_TOKEN="),
        "the provider's token stays"
    );
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(
        left["models"], document["models"],
        "the provider is the user's"
    );
    assert!(left.get("plugins").is_none(), "{left}");

    // Without the provider, the token goes too.
    std::fs::write(&config, "{}").unwrap();
    let (code, stdout, _) = run(&bridge, &["openclaw", "unregister"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(!dotenv.exists(), "{stdout}");
}
