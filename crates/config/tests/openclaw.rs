//! OpenClaw's settings as OpenClaw reads them: its environment names, its
//! own `openclaw.json` (JSON5) under the bridge's sources, the gateway mode,
//! and each agent's workspace in OpenClaw's order.

use std::fs;
use std::path::{Path, PathBuf};

use bridge_config::{AutoSwitch, BridgeConfig, ConfigLoader, Source, keys};
use tempfile::TempDir;

/// A bridge state directory, an OpenClaw state directory and a user home.
struct Claw {
    bridge: TempDir,
    home: TempDir,
}

impl Claw {
    fn new() -> Self {
        let claw = Self {
            bridge: TempDir::new().unwrap(),
            home: TempDir::new().unwrap(),
        };
        fs::create_dir_all(claw.state()).unwrap();
        claw
    }

    /// OpenClaw's state directory: `~/.openclaw`.
    fn state(&self) -> PathBuf {
        self.home.path().join(".openclaw")
    }

    fn write_openclaw_json(&self, text: &str) {
        fs::write(self.state().join("openclaw.json"), text).unwrap();
    }

    fn write_config_toml(&self, text: &str) {
        fs::write(self.bridge.path().join("config.toml"), text).unwrap();
    }

    fn loader(&self, env: &[(&str, &str)]) -> ConfigLoader {
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.push((
            "COPILOT_BRIDGE_HOME".to_owned(),
            self.bridge.path().display().to_string(),
        ));
        ConfigLoader::with_env(env)
            .cwd(self.bridge.path())
            .user_home(Some(self.home.path().to_path_buf()))
    }

    fn load(&self, env: &[(&str, &str)]) -> BridgeConfig {
        self.loader(env).load().unwrap()
    }
}

fn row(config: &BridgeConfig, key: &str) -> bridge_config::ShownValue {
    config
        .show()
        .into_iter()
        .find(|row| row.key == key)
        .unwrap()
}

const JSON5_CONFIG: &str = r#"// written by `openclaw onboard`, then by hand
{
  gateway: {
    port: 19001, // not the default
    auth: { mode: 'token', token: 'file-token-0123456789', },
  },
  /* the agents */
  agents: {
    defaults: { workspace: "~/claw/main", },
    list: [
      { id: 'main', default: true, },
      { id: 'Work', workspace: '~/claw/work-ws', },
      { id: 'ops', },
    ],
  },
}
"#;

#[test]
fn a_json5_openclaw_json_gives_port_token_and_workspaces() {
    let claw = Claw::new();
    claw.write_openclaw_json(JSON5_CONFIG);
    let config = claw.load(&[]);
    let openclaw = &config.openclaw;
    let home = claw.home.path();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(openclaw.config_exists);
    assert_eq!(openclaw.port, 19001);
    assert_eq!(openclaw.gateway_url(), "ws://127.0.0.1:19001");
    assert_eq!(
        openclaw.gateway_token.as_ref().unwrap().expose(),
        "file-token-0123456789"
    );
    let from_file = Source::OpenClaw(claw.state().join("openclaw.json"));
    assert_eq!(config.source_of(keys::OPENCLAW_PORT), from_file);
    assert_eq!(config.source_of(keys::OPENCLAW_GATEWAY_TOKEN), from_file);
    let token = row(&config, keys::OPENCLAW_GATEWAY_TOKEN);
    assert_eq!(token.value.as_deref(), Some("[REDACTED]"));
    assert!(token.source.starts_with("openclaw "), "{}", token.source);
    // `~` expanded; ids lowercased as OpenClaw does.
    assert_eq!(openclaw.default_agent_id(), "main");
    assert_eq!(
        openclaw.workspace_for(None),
        (home.join("claw/main"), "agents.defaults.workspace")
    );
    assert_eq!(
        openclaw.workspace_for(Some("work")),
        (home.join("claw/work-ws"), "agents.list[].workspace")
    );
    assert_eq!(
        openclaw.workspace_for(Some("WORK")).0,
        home.join("claw/work-ws")
    );
    // Another agent without a workspace of its own: under the defaults' one.
    assert_eq!(
        openclaw.workspace_for(Some("ops")),
        (home.join("claw/main/ops"), "agents.defaults.workspace/<id>")
    );
    let everything = format!("{} {config:?}", config.to_redacted_json());
    assert!(
        !everything.contains("file-token-0123456789"),
        "{everything}"
    );
    let json = config.to_redacted_json();
    assert_eq!(json["openclaw"]["defaultAgent"], "main");
    assert_eq!(json["openclaw"]["agents"][1]["id"], "work");
}

#[test]
fn the_bridge_s_own_sources_win_over_openclaw_json() {
    let claw = Claw::new();
    claw.write_openclaw_json(JSON5_CONFIG);
    let config = claw.load(&[
        ("OPENCLAW_GATEWAY_PORT", "19500"),
        ("OPENCLAW_GATEWAY_TOKEN", "env-token-0123456789"),
    ]);
    assert_eq!(config.openclaw.port, 19500);
    assert_eq!(
        config.openclaw.gateway_token.as_ref().unwrap().expose(),
        "env-token-0123456789"
    );
    assert_eq!(
        row(&config, keys::OPENCLAW_GATEWAY_TOKEN).source,
        "env OPENCLAW_GATEWAY_TOKEN"
    );
    claw.write_config_toml("[openclaw]\nport = 19600\n");
    let config = claw.load(&[]);
    assert_eq!(config.openclaw.port, 19600);
    assert!(matches!(
        config.source_of(keys::OPENCLAW_PORT),
        Source::File(_)
    ));
}

#[test]
fn both_port_names_are_read_and_show_names_the_one_used() {
    let claw = Claw::new();
    let design = claw.load(&[("OPENCLAW_PORT", "18800")]);
    assert_eq!(design.openclaw.port, 18800);
    let shown = row(&design, keys::OPENCLAW_PORT);
    assert_eq!(shown.source, "env OPENCLAW_PORT");
    assert_eq!(shown.env, "OPENCLAW_GATEWAY_PORT");
    assert_eq!(shown.aliases, ["OPENCLAW_PORT"]);
    // OpenClaw's own name wins when both are set.
    let both = claw.load(&[
        ("OPENCLAW_PORT", "18800"),
        ("OPENCLAW_GATEWAY_PORT", "18900"),
    ]);
    assert_eq!(both.openclaw.port, 18900);
    assert_eq!(
        both.source_of(keys::OPENCLAW_PORT),
        Source::Env("OPENCLAW_GATEWAY_PORT".into())
    );
    let defaults = claw.load(&[]);
    assert_eq!(defaults.openclaw.port, 18789);
    assert_eq!(defaults.source_of(keys::OPENCLAW_PORT), Source::Default);
    assert!(!defaults.openclaw.config_exists);
}

#[test]
fn the_gateway_url_is_a_websocket_url_and_wins_over_host_and_port() {
    let claw = Claw::new();
    let config = claw.load(&[
        ("OPENCLAW_HOST", "claw.lan"),
        ("OPENCLAW_PORT", "1234"),
        ("OPENCLAW_GATEWAY_URL", "ws://claw.example:8080/gw/"),
    ]);
    assert_eq!(config.openclaw.gateway_url(), "ws://claw.example:8080/gw");
    let host_port = claw.load(&[("OPENCLAW_HOST", "claw.lan"), ("OPENCLAW_PORT", "1234")]);
    assert_eq!(host_port.openclaw.gateway_url(), "ws://claw.lan:1234");
    assert_eq!(
        row(&host_port, keys::OPENCLAW_GATEWAY_URL).value.as_deref(),
        Some("ws://claw.lan:1234")
    );
    for bad in ["http://claw.example", "claw.example:18789", "ws://"] {
        let err = claw
            .loader(&[("OPENCLAW_GATEWAY_URL", bad)])
            .load()
            .unwrap_err()
            .to_string();
        assert!(err.contains("openclaw.gateway_url"), "{err}");
        assert!(err.contains("a ws:// URL"), "{err}");
    }
    // No TLS in the client: refused with the way round it.
    let err = claw
        .loader(&[("OPENCLAW_GATEWAY_URL", "wss://claw.example/gw")])
        .load()
        .unwrap_err()
        .to_string();
    assert!(err.contains("wss:// is not supported"), "{err}");
    assert!(err.contains("ssh -L"), "{err}");
}

#[test]
fn gateway_mode_auto_follows_openclaw_s_presence() {
    let claw = Claw::new();
    let nothing = claw.load(&[]);
    assert_eq!(nothing.openclaw.gateway_mode, AutoSwitch::Auto);
    assert!(!nothing.openclaw.gateway_enabled());
    let token = claw.load(&[("OPENCLAW_GATEWAY_TOKEN", "t-0123456789abcdef")]);
    assert!(token.openclaw.gateway_enabled());
    let url = claw.load(&[("OPENCLAW_GATEWAY_URL", "ws://10.0.0.2:18789")]);
    assert!(url.openclaw.gateway_enabled());
    claw.write_openclaw_json("{}");
    assert!(claw.load(&[]).openclaw.gateway_enabled());
    let off = claw.load(&[("COPILOT_BRIDGE_OPENCLAW_GATEWAY", "off")]);
    assert_eq!(off.openclaw.gateway_mode, AutoSwitch::Off);
    assert!(!off.openclaw.gateway_enabled());
    assert_eq!(
        row(&off, keys::OPENCLAW_GATEWAY).value.as_deref(),
        Some("off")
    );
    fs::remove_file(claw.state().join("openclaw.json")).unwrap();
    claw.write_config_toml("[openclaw]\ngateway = \"on\"\n");
    assert!(claw.load(&[]).openclaw.gateway_enabled());
    let err = claw
        .loader(&[("COPILOT_BRIDGE_OPENCLAW_GATEWAY", "maybe")])
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("openclaw.gateway") && err.contains("auto, on or off"),
        "{err}"
    );
}

#[test]
fn memory_mode_is_auto_by_default_and_set_like_the_gateway_s() {
    let claw = Claw::new();
    assert_eq!(claw.load(&[]).openclaw.memory_mode, AutoSwitch::Auto);
    let off = claw.load(&[("COPILOT_BRIDGE_OPENCLAW_MEMORY", "off")]);
    assert_eq!(off.openclaw.memory_mode, AutoSwitch::Off);
    assert_eq!(
        row(&off, keys::OPENCLAW_MEMORY).value.as_deref(),
        Some("off")
    );
    claw.write_config_toml("[openclaw]\nmemory = \"on\"\n");
    assert_eq!(claw.load(&[]).openclaw.memory_mode, AutoSwitch::On);
    let err = claw
        .loader(&[("COPILOT_BRIDGE_OPENCLAW_MEMORY", "sometimes")])
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("openclaw.memory") && err.contains("auto, on or off"),
        "{err}"
    );
}

#[test]
fn a_broken_openclaw_json_is_a_warning_and_defaults_apply() {
    let claw = Claw::new();
    claw.write_openclaw_json(
        "{\n  gateway: { port: 19001,\n  auth: { token: 'leaky-secret-token' }\n",
    );
    let config = claw.load(&[]);
    assert_eq!(config.openclaw.port, 18789);
    assert!(config.openclaw.gateway_token.is_none());
    assert!(
        config.openclaw.config_exists,
        "it exists, though unreadable"
    );
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    let warning = &config.warnings[0];
    assert!(warning.contains("openclaw.json"), "{warning}");
    assert!(warning.contains("not JSON5"), "{warning}");
    assert!(
        warning.contains("none of its settings are used"),
        "{warning}"
    );
    assert!(!warning.contains("leaky-secret-token"), "{warning}");
    assert_eq!(config.to_redacted_json()["warnings"][0], warning.as_str());

    // Values of the wrong shape are skipped one by one.
    claw.write_openclaw_json("{gateway: {port: 'many', auth: {token: 42}}, agents: {list: 3}}");
    let config = claw.load(&[]);
    assert_eq!(config.openclaw.port, 18789);
    assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("gateway.port"));
}

#[test]
fn the_default_agent_s_workspace_follows_openclaw_s_order() {
    let claw = Claw::new();
    let state = claw.state();
    // Nothing: <state>/workspace.
    assert_eq!(
        claw.load(&[]).openclaw.workspace_for(None),
        (state.join("workspace"), "<state>/workspace")
    );
    // OPENCLAW_WORKSPACE_DIR, shown as the key's source.
    let env = claw.load(&[("OPENCLAW_WORKSPACE_DIR", "/from-env")]);
    assert_eq!(
        env.openclaw.workspace_for(None),
        (PathBuf::from("/from-env"), "OPENCLAW_WORKSPACE_DIR")
    );
    assert_eq!(
        row(&env, keys::OPENCLAW_WORKSPACE).source,
        "env OPENCLAW_WORKSPACE_DIR"
    );
    // agents.defaults.workspace ranks above OPENCLAW_WORKSPACE_DIR, as in OpenClaw.
    claw.write_openclaw_json("{agents: {defaults: {workspace: '/from-defaults'}}}");
    assert_eq!(
        claw.load(&[("OPENCLAW_WORKSPACE_DIR", "/from-env")])
            .openclaw
            .workspace_for(None),
        (PathBuf::from("/from-defaults"), "agents.defaults.workspace")
    );
    // The default agent's own entry ranks above the defaults.
    claw.write_openclaw_json(
        "{agents: {defaults: {workspace: '/from-defaults'}, list: [{id: 'main', workspace: '/own'}]}}",
    );
    assert_eq!(
        claw.load(&[]).openclaw.workspace_for(None),
        (PathBuf::from("/own"), "agents.list[].workspace")
    );
    // Set for the bridge (the older OPENCLAW_WORKSPACE, config.toml): first.
    let old = claw.load(&[("OPENCLAW_WORKSPACE", "/older-name")]);
    assert_eq!(
        old.openclaw.workspace_for(None),
        (PathBuf::from("/older-name"), "openclaw.workspace")
    );
    assert_eq!(
        row(&old, keys::OPENCLAW_WORKSPACE).source,
        "env OPENCLAW_WORKSPACE"
    );
    claw.write_config_toml("[openclaw]\nworkspace = \"~/pinned\"\n");
    assert_eq!(
        claw.load(&[]).openclaw.workspace_for(Some("main")),
        (claw.home.path().join("pinned"), "openclaw.workspace")
    );
}

#[test]
fn other_agents_workspaces_and_the_default_agent() {
    let claw = Claw::new();
    let state = claw.state();
    claw.write_openclaw_json(
        "{agents: {list: [{id: 'a'}, {id: 'b', default: true, workspace: '~/b-ws'}, {id: 'c', workspace: 'rel/c'}]}}",
    );
    let config = claw.load(&[("OPENCLAW_WORKSPACE_DIR", "/env-ws")]);
    let openclaw = &config.openclaw;
    assert_eq!(openclaw.default_agent_id(), "b");
    assert_eq!(
        openclaw.workspace_for(None).0,
        claw.home.path().join("b-ws")
    );
    assert_eq!(
        openclaw.workspace_for(Some("a")),
        (state.join("workspace-a"), "<state>/workspace-<id>")
    );
    // A relative workspace is taken from the working directory.
    assert_eq!(
        openclaw.workspace_for(Some("c")).0,
        claw.bridge.path().join("rel/c")
    );
    // Not listed: OpenClaw's place for it; a hostile id stays inside.
    assert_eq!(
        openclaw.workspace_for(Some("new")).0,
        state.join("workspace-new")
    );
    assert_eq!(
        openclaw.workspace_for(Some("../../x")).0,
        state.join("workspace-x")
    );
    // A sole agent is the default; the keyed `agents.entries` form too.
    claw.write_openclaw_json("{agents: {entries: {solo: {workspace: '/solo'}}}}");
    let solo = claw.load(&[]);
    assert_eq!(solo.openclaw.default_agent_id(), "solo");
    assert_eq!(
        solo.openclaw.workspace_for(None),
        (PathBuf::from("/solo"), "agents.list[].workspace")
    );
    // Several agents, none marked: `main`, which OpenClaw then does not
    // give the default workspace either.
    claw.write_openclaw_json("{agents: {list: [{id: 'x'}, {id: 'y'}]}}");
    let unmarked = claw.load(&[("OPENCLAW_WORKSPACE_DIR", "/env-ws")]);
    assert_eq!(unmarked.openclaw.default_agent_id(), "main");
    assert_eq!(
        unmarked.openclaw.workspace_for(None),
        (state.join("workspace-main"), "<state>/workspace-<id>")
    );
}

#[test]
fn openclaw_json_values_may_use_variables_and_env_references() {
    let claw = Claw::new();
    fs::write(
        claw.state().join(".env"),
        "CLAW_TOKEN=state-env-token-0123\n",
    )
    .unwrap();
    claw.write_openclaw_json(
        r#"{
  env: { vars: { WS_ROOT: "/inline-root" } },
  gateway: { auth: { token: "${CLAW_TOKEN}" } },
  agents: {
    defaults: { workspace: "${WS_ROOT}/main" },
    list: [
      { id: "main", default: true },
      { id: "lit", workspace: "$${NOT_A_VAR}" },
      { id: "gone", workspace: "${UNSET_VAR}/x" },
    ],
  },
}"#,
    );
    let config = claw.load(&[]);
    let openclaw = &config.openclaw;
    assert_eq!(
        openclaw.gateway_token.as_ref().unwrap().expose(),
        "state-env-token-0123"
    );
    assert_eq!(
        openclaw.workspace_for(None).0,
        Path::new("/inline-root/main")
    );
    assert_eq!(
        openclaw.workspace_for(Some("lit")).0,
        claw.bridge.path().join("${NOT_A_VAR}")
    );
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("UNSET_VAR"));
    // The process environment wins; a secret reference to a variable.
    claw.write_openclaw_json(
        "{gateway: {auth: {token: {source: 'env', provider: 'default', id: 'MY_CLAW_TOKEN'}}}}",
    );
    let config = claw.load(&[("MY_CLAW_TOKEN", "ref-token-0123456789")]);
    assert_eq!(
        config.openclaw.gateway_token.as_ref().unwrap().expose(),
        "ref-token-0123456789"
    );
    claw.write_openclaw_json("{gateway: {auth: {token: {source: 'exec', id: 'x'}}}}");
    let config = claw.load(&[]);
    assert!(config.openclaw.gateway_token.is_none());
    assert!(config.warnings[0].contains("OPENCLAW_GATEWAY_TOKEN"));
}

#[test]
fn openclaw_config_path_names_the_file_read() {
    let claw = Claw::new();
    let elsewhere = claw.home.path().join("elsewhere.json5");
    fs::write(&elsewhere, "{gateway: {port: 20000}}").unwrap();
    claw.write_openclaw_json("{gateway: {port: 19001}}");
    let path = elsewhere.display().to_string();
    let config = claw.load(&[("OPENCLAW_CONFIG_PATH", path.as_str())]);
    assert_eq!(config.openclaw.port, 20000);
    let state = claw.home.path().join("other-state");
    fs::create_dir_all(&state).unwrap();
    fs::write(state.join("openclaw.json"), "{gateway: {port: 21000}}").unwrap();
    let state = state.display().to_string();
    assert_eq!(
        claw.load(&[("OPENCLAW_STATE_DIR", state.as_str())])
            .openclaw
            .port,
        21000
    );
}

#[test]
fn a_repository_env_file_cannot_choose_the_gateway_or_the_workspace() {
    for (name, value) in [
        ("OPENCLAW_GATEWAY_URL", "ws://attacker.example"),
        ("OPENCLAW_HOST", "attacker.example"),
        ("OPENCLAW_GATEWAY_PORT", "1"),
        ("OPENCLAW_WORKSPACE_DIR", "/repo-chose-this"),
    ] {
        let claw = Claw::new();
        fs::write(claw.bridge.path().join(".env"), format!("{name}={value}\n")).unwrap();
        let err = claw.loader(&[]).load().unwrap_err().to_string();
        assert!(err.contains(name), "{name}: {err}");
    }
}
