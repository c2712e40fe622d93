//! `openclaw register` / `unregister` on a temporary OpenClaw state
//! directory: the plugin, the MCP server and the token put in and taken
//! out, the user's JSON5 kept, nothing changed twice; and the `setup`
//! block that names the registered token.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bridge_agents::openclaw::{self, Plan, RunningDaemon, TOKEN_VARIABLE};
use bridge_agents::{AgentsError, Program, json_edit, setup};
use bridge_config::{BridgeConfig, ConfigLoader};
use serde_json::json;
use tempfile::TempDir;

const OPENCLAW_JSON: &str = r#"// my OpenClaw
{
  agents: { defaults: { workspace: '/work/space' } },
  gateway: { port: 18789 }, // keep
}
"#;

struct Setup {
    state: TempDir,
    openclaw: TempDir,
    config: BridgeConfig,
}

fn setup() -> Setup {
    let state = TempDir::new().unwrap();
    let openclaw = TempDir::new().unwrap();
    std::fs::write(openclaw.path().join("openclaw.json"), OPENCLAW_JSON).unwrap();
    let config = ConfigLoader::with_env([
        ("COPILOT_BRIDGE_HOME", state.path().display().to_string()),
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OPENCLAW_STATE_DIR", openclaw.path().display().to_string()),
    ])
    .cwd(state.path())
    .user_home(Some(state.path().to_path_buf()))
    .skip_dotenv()
    .load()
    .unwrap();
    Setup {
        state,
        openclaw,
        config,
    }
}

fn plan(setup: &Setup, dry_run: bool) -> Plan {
    let program = Program {
        path: "/opt/bin/copilot-bridge".into(),
        home: setup.state.path().to_owned(),
        home_configured: true,
        port: None,
        approval_timeout_secs: 120,
    };
    let running = RunningDaemon {
        host: "0.0.0.0",
        port: 8650,
    };
    Plan::new(&setup.config, &program, None, Some(running), dry_run)
}

fn backups(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".bak-")
        })
        .count()
}

fn token() -> Result<String, AgentsError> {
    Ok("btk-0123456789".to_owned())
}

#[test]
fn register_puts_the_plugin_server_and_token_in_once_and_unregister_takes_them_out() {
    let setup = setup();
    let file = setup.openclaw.path().join("openclaw.json");
    let said = plan(&setup, false).register(token).unwrap();
    assert!(said.starts_with("Registered copilot-bridge in"), "{said}");

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("// my OpenClaw") && text.contains("// keep"));
    let document = json_edit::parse(&text).unwrap();
    let plugin_dir = setup.state.path().join("openclaw-plugin");
    assert_eq!(
        document["plugins"]["load"]["paths"],
        json!([plugin_dir.display().to_string()])
    );
    assert_eq!(
        document["plugins"]["entries"]["copilot-bridge"],
        json!({"enabled": true, "config": {"binary": "/opt/bin/copilot-bridge",
            "home": setup.state.path()}})
    );
    let server = &document["mcp"]["servers"]["copilot-bridge"];
    // A daemon on every interface is reached on loopback, in the default
    // agent's workspace.
    assert_eq!(
        server["url"],
        "http://127.0.0.1:8650/mcp/code?workspace=%2Fwork%2Fspace"
    );
    assert_eq!(
        server["headers"]["Authorization"],
        format!("Bearer ${{{TOKEN_VARIABLE}}}")
    );
    assert!(plugin_dir.join("index.js").exists());
    let dotenv = setup.openclaw.path().join(".env");
    assert_eq!(
        std::fs::read_to_string(&dotenv).unwrap(),
        "COPILOT_BRIDGE_TOKEN=btk-0123456789\n"
    );
    assert_eq!(
        std::fs::metadata(&dotenv).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(openclaw::has_token(setup.openclaw.path(), "btk-0123456789"));
    assert_eq!(backups(setup.openclaw.path()), 1);

    let again = plan(&setup, false).register(token).unwrap();
    assert!(again.contains("already registered"), "{again}");
    assert_eq!(backups(setup.openclaw.path()), 1, "nothing written twice");

    let removed = plan(&setup, false).unregister().unwrap();
    assert!(
        removed.starts_with("Removed copilot-bridge from"),
        "{removed}"
    );
    assert_eq!(
        json_edit::parse(&std::fs::read_to_string(&file).unwrap()).unwrap(),
        json_edit::parse(OPENCLAW_JSON).unwrap()
    );
    assert!(!dotenv.exists(), "the .env held only our line");
    assert!(!plugin_dir.exists());
    assert!(!openclaw::has_token(
        setup.openclaw.path(),
        "btk-0123456789"
    ));
    let twice = plan(&setup, false).unregister().unwrap();
    assert!(twice.contains("not registered"), "{twice}");
}

#[test]
fn a_dry_run_writes_nothing_and_needs_no_token() {
    let setup = setup();
    let said = plan(&setup, true)
        .register(|| panic!("a dry run asked for the token"))
        .unwrap();
    assert!(said.starts_with("Would write the plugin to"), "{said}");
    assert!(said.contains("\"copilot-bridge\""), "{said}");
    assert_eq!(
        std::fs::read_to_string(setup.openclaw.path().join("openclaw.json")).unwrap(),
        OPENCLAW_JSON
    );
    assert!(!setup.state.path().join("openclaw-plugin").exists());
    assert!(!setup.openclaw.path().join(".env").exists());
}

#[test]
fn a_token_that_cannot_be_kept_fails_the_registration_with_the_reason() {
    let setup = setup();
    let home = setup.state.path().to_owned();
    let err = plan(&setup, false)
        .register(|| {
            Err(AgentsError::KeepToken {
                home,
                source: std::io::Error::other("disk full"),
            })
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot keep the daemon's token in {}: disk full",
            setup.state.path().display()
        )
    );
    assert!(!setup.openclaw.path().join(".env").exists());
}

#[test]
fn setup_names_the_registered_token_and_reads_a_missing_one_from_the_state_file() {
    let registered = setup::Facade {
        origin: "http://127.0.0.1:8650".to_owned(),
        token: "live-token".to_owned(),
        live: true,
        openclaw_has_token: true,
        openclaw_config: "/srv/claw/openclaw.json".into(),
        telemetry: None,
    };
    let text = setup::text(
        &["openclaw"],
        &registered,
        &setup::Served::default(),
        "gpt-4.1",
    );
    // The file OpenClaw reads (OPENCLAW_CONFIG_PATH), not a guess.
    assert!(
        text.contains("merge into /srv/claw/openclaw.json"),
        "{text}"
    );
    assert!(
        text.contains(&format!("\"apiKey\": \"${{{TOKEN_VARIABLE}}}\"")),
        "{text}"
    );
    assert!(!text.contains("live-token"), "{text}");
    let command = setup::token_command(Path::new("/home/u/my state/gateway.json"));
    assert_eq!(command, "$(jq -r .token '/home/u/my state/gateway.json')");
    let stopped = setup::Facade {
        origin: "http://127.0.0.1:8650".to_owned(),
        token: command,
        live: false,
        openclaw_has_token: false,
        openclaw_config: "/home/u/.openclaw/openclaw.json".into(),
        telemetry: None,
    };
    let text = setup::text(
        &["codex", "openclaw"],
        &stopped,
        &setup::Served::default(),
        "m",
    );
    assert!(text.starts_with("# No daemon is running"), "{text}");
    assert!(text.contains("PASTE-THE-TOKEN"), "{text}");
    assert!(
        text.contains(
            "export COPILOT_BRIDGE_API_KEY=$(jq -r .token '/home/u/my state/gateway.json')"
        ),
        "{text}"
    );
}
