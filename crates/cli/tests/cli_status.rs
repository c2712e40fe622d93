//! `copilot-bridge status`: the running daemon's endpoints, backends,
//! providers, sessions and policy, as a table or JSON; exit 1 without one.

use bridge_testkit::{MockLlm, TempWorkspace};
use serde_json::json;

use crate::cli_serve::Served;
use crate::support::{Bridge, stdout_json};

/// A daemon with the auto-selected backend at `mock` and a configured one
/// nothing listens on.
fn served_with_backends(mock: &MockLlm, dead_port: u16) -> Served {
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        format!(
            "[backends.offline]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{dead_port}/v1\"\nstyle = \"single-prompt\"\n"
        ),
    )
    .unwrap();
    let base_url = format!("{}/v1", mock.base_url());
    Served::start_in(
        bridge,
        TempWorkspace::new(),
        &[
            ("COPILOT_BRIDGE_NO_GH", "1"),
            ("OLLAMA_HOST", "http://127.0.0.1:9"),
            ("COPILOT_BYOK_PROVIDER", "openai"),
            ("COPILOT_BYOK_BASE_URL", &base_url),
            ("COPILOT_BYOK_API_KEY", "sk-status-upstream-key"),
            ("COPILOT_BYOK_MODEL", "mock-model"),
        ],
    )
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn status_prints_backends_endpoints_and_policy_as_json_and_as_a_table() {
    let mock = MockLlm::start(Vec::new()).await;
    let served = served_with_backends(&mock, closed_port());
    let port = served.port;

    let output = served
        .cli()
        .args(["status", "--json"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let status = stdout_json(&output);
    assert_eq!(status["pid"], served.child.id());
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        status["endpoints"]["openai"],
        format!("http://127.0.0.1:{port}/v1")
    );
    assert_eq!(
        status["endpoints"]["provider"],
        format!("ws://127.0.0.1:{port}/")
    );
    assert_eq!(
        status["endpoints"]["rpc"]["http"],
        format!("http://127.0.0.1:{port}/rpc")
    );
    let backends = status["backends"].as_array().unwrap();
    assert_eq!(backends.len(), 2, "{status}");
    assert_eq!(backends[0]["name"], "openai");
    assert_eq!(backends[0]["availability"], "ok");
    assert_eq!(backends[0]["default"], true);
    assert_eq!(backends[0]["defaultModel"], "mock-model");
    assert_eq!(backends[1]["name"], "offline");
    assert_eq!(backends[1]["availability"], "unavailable");
    assert_eq!(backends[1]["style"], "single-prompt");
    assert_eq!(backends[1]["historyTurns"], 3);
    assert_eq!(status["providers"], json!({"count": 0, "names": []}));
    assert_eq!(status["sessions"]["count"], 1);
    assert_eq!(status["sessions"]["default"], served.file["defaultSession"]);
    assert_eq!(status["policy"]["readOnly"], true);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("sk-status-upstream-key"), "{stdout}");
    assert!(
        !stdout.contains(&served.token),
        "the bearer token is never printed"
    );

    let output = served.cli().arg("status").output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    for expected in [
        format!("openai       http://127.0.0.1:{port}/v1"),
        format!("rpc (ws)     ws://127.0.0.1:{port}/rpc"),
        "BACKENDS".to_owned(),
        "openai*".to_owned(),
        "unavailable".to_owned(),
        "providers: 0".to_owned(),
        format!(
            "sessions: 1 (default: {})",
            served.file["defaultSession"].as_str().unwrap()
        ),
        "policy: read-only; workspace policy: none".to_owned(),
        // Where the token is, as the facade's 401 says `status` shows.
        format!("state directory: {}", served.state().display()),
    ] {
        assert!(
            table.contains(&expected),
            "missing {expected:?} in:\n{table}"
        );
    }
    let offline_row = table
        .lines()
        .find(|line| line.trim_start().starts_with("offline"))
        .unwrap_or_else(|| panic!("no offline row in:\n{table}"));
    assert!(offline_row.contains("unavailable"), "{offline_row}");
    assert!(offline_row.contains("single-prompt"), "{offline_row}");
    assert!(!table.contains(&served.token));
}

#[test]
fn status_without_a_daemon_exits_1_and_says_how_to_start_one() {
    let bridge = Bridge::new();
    for args in [vec!["status"], vec!["status", "--json"]] {
        let output = bridge.cmd().args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("no gateway is running; start one with `copilot-bridge serve`"),
            "{args:?}: {stderr}"
        );
    }
}

/// `serve` follows config.toml: `status` says which file and when it was
/// loaded, what waits for a restart (not `port`, which `serve --port 0`
/// sets: a flag keeps its precedence over the file), and why a bad edit is
/// not in force; a refused call says so too.
#[tokio::test]
async fn status_shows_the_config_file_its_edits_and_their_problems() {
    let bridge = Bridge::new();
    let config = bridge.state.path().join("config.toml");
    std::fs::write(&config, "[permissions]\nblocked_tools = []\n").unwrap();
    let served = Served::start_in(
        bridge,
        TempWorkspace::new(),
        &[
            ("COPILOT_BRIDGE_NO_GH", "1"),
            ("OLLAMA_HOST", "http://127.0.0.1:9"),
        ],
    );
    let status_text = || async {
        let output = served.cli().arg("status").output().await.unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let table = status_text().await;
    assert!(
        table.contains(&format!("config file: {} (loaded ", config.display())),
        "{table}"
    );
    assert!(!table.contains("restart needed"), "{table}");

    std::fs::write(
        &config,
        "port = 1\nidle_exit_secs = 99\n[permissions]\nblocked_tools = [\"shell\"]\n",
    )
    .unwrap();
    let mut table = String::new();
    for _ in 0..100 {
        table = status_text().await;
        if table.contains("restart needed for") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        table.contains("  restart needed for: idle_exit_secs\n"),
        "{table}"
    );
    let refused = served
        .cli()
        .args([
            "tool",
            "shell",
            "--session",
            "default",
            "--args",
            r#"{"command":"true"}"#,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(4), "{refused:?}");

    std::fs::write(&config, "[permissions\n").unwrap();
    for _ in 0..100 {
        table = status_text().await;
        if table.contains("CONFIG EDIT NOT IN FORCE") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        table.contains("CONFIG EDIT NOT IN FORCE: config file ")
            && table.contains("the last good configuration"),
        "{table}"
    );
    // Every other command stops at the bad file; the daemon's refusals
    // say why its last good configuration is in force.
    let refused = served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": "shell", "arguments": {"command": "true"}}),
        )
        .await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the last good configuration"), "{refused}");
}
