//! `copilot-bridge doctor [--json]`: a healthy setup all ok, and each
//! failure produced for real — a backend refusing its key (the mock with a
//! required key), hooks installed by a binary since moved away, a daemon
//! whose binary was replaced by another version (an upgrade), an invalid
//! `.agent-policy.yaml` — with the message, the fix and the exit code; the
//! JSON shape docs/cli.md documents.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, TempWorkspace, repo_root};
use serde_json::Value;

use crate::cli_serve::{Served, command};
use crate::support::{Bridge, stdout_json};

/// The environment of a machine whose only backend is `mock`, reached
/// with `key`, and nothing else found (no `gh`, no Ollama).
pub(crate) fn backend_env(mock: &MockLlm, key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
        ("COPILOT_BYOK_PROVIDER", "openai".to_owned()),
        ("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url())),
        ("COPILOT_BYOK_API_KEY", key.to_owned()),
        ("COPILOT_BYOK_MODEL", "mock-model".to_owned()),
    ]
}

pub(crate) fn closed_address() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// `doctor [ARGS]` of the state directory `state` in `dir`, with `env`,
/// without blocking the test's runtime (the mock upstream runs on it).
pub(crate) async fn doctor_output(
    state: &Path,
    dir: &Path,
    env: &[(&str, String)],
    args: &[&str],
) -> Output {
    let mut cmd = command(state);
    cmd.args(["--port", "0", "doctor", "--dir"])
        .arg(dir)
        .args(args)
        .current_dir(dir);
    for (name, value) in env {
        cmd.env(name, value);
    }
    tokio::process::Command::from(cmd).output().await.unwrap()
}

/// `doctor --json`: the output and its checks.
pub(crate) async fn doctor(
    state: &Path,
    dir: &Path,
    env: &[(&str, String)],
) -> (Output, Vec<Value>) {
    let output = doctor_output(state, dir, env, &["--json"]).await;
    let checks = stdout_json(&output)["checks"].as_array().unwrap().clone();
    (output, checks)
}

pub(crate) fn named<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|check| check["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {checks:#?}"))
}

/// Runs a check's fix as the user would paste it into `sh`, with the
/// built binary first on PATH as `copilot-bridge`: its output.
pub(crate) fn run_fix(state: &Path, fix: &str) -> String {
    let built = assert_cmd::cargo::cargo_bin("copilot-bridge");
    let path = format!(
        "{}:{}",
        built.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("sh")
        .args(["-c", fix])
        .env_clear()
        .env("PATH", path)
        .env("HOME", state)
        .env("COPILOT_BRIDGE_HOME", state)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the fix {fix:?} failed: {text}");
    text
}

/// A copy of the built binary at `dir/bin/copilot-bridge`: a binary that
/// can be moved away or replaced under what it installed or started.
pub(crate) fn copied_binary(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let copy = bin.join("copilot-bridge");
    std::fs::copy(assert_cmd::cargo::cargo_bin("copilot-bridge"), &copy).unwrap();
    copy
}

#[tokio::test]
async fn a_healthy_setup_is_all_ok_within_the_time_bound() {
    let mock = MockLlm::start(Vec::new()).await;
    mock.require_key("sk-doctor-right-key");
    let env = backend_env(&mock, "sk-doctor-right-key");
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = Served::start_in(Bridge::new(), TempWorkspace::new(), &env_refs);
    served
        .workspace
        .write(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n");

    // Claude Code told to send its model requests to the hub (`setup`).
    let mut env = env;
    env.push((
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", served.port),
    ));
    let started = Instant::now();
    let (output, checks) = doctor(served.state(), served.workspace.path(), &env).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(0), "{checks:#?}");
    for check in &checks {
        assert_eq!(check["status"], "ok", "{check}");
        assert_check_shape(check);
    }
    let daemon = named(&checks, "daemon")["message"].as_str().unwrap();
    assert!(
        daemon.contains(&format!("pid {}", served.child.id()))
            && daemon.contains(env!("CARGO_PKG_VERSION")),
        "{daemon}"
    );
    let port = named(&checks, "port")["message"].as_str().unwrap();
    assert!(
        port.contains(&format!("127.0.0.1:{}", served.port)),
        "{port}"
    );
    let backend = named(&checks, "backend openai")["message"]
        .as_str()
        .unwrap();
    assert!(
        backend.contains(&mock.base_url()) && backend.contains("answers"),
        "{backend}"
    );
    assert!(
        named(&checks, "workspace policy")["message"]
            .as_str()
            .unwrap()
            .ends_with(".agent-policy.yaml is valid")
    );
    for name in [
        "configuration",
        "state directory",
        "agent claude",
        "agent copilot",
        "agent codex",
        "openclaw",
    ] {
        named(&checks, name);
    }
    // The key went to the upstream, and no message shows it.
    assert!(!String::from_utf8_lossy(&output.stdout).contains("sk-doctor-right-key"));

    // The table says the same.
    let table = doctor_output(served.state(), served.workspace.path(), &env, &[]).await;
    assert_eq!(table.status.code(), Some(0), "{table:?}");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&format!("\n{} ok, 0 warn, 0 fail\n", checks.len())),
        "{text}"
    );
    let claude = named(&checks, "agent claude")["message"].as_str().unwrap();
    assert!(
        claude.ends_with("; model requests through the hub (ANTHROPIC_BASE_URL)"),
        "{claude}"
    );

    // The Copilot CLI told a loopback port the hub is not on.
    let elsewhere = closed_address();
    env.push((
        "COPILOT_PROVIDER_BASE_URL",
        format!("http://{elsewhere}/v1"),
    ));
    let (output, checks) = doctor(served.state(), served.workspace.path(), &env).await;
    assert_eq!(output.status.code(), Some(0), "a warning is no failure");
    let copilot = named(&checks, "agent copilot");
    assert_eq!(copilot["status"], "warn", "{copilot}");
    assert!(
        copilot["message"].as_str().unwrap().ends_with(&format!(
            "COPILOT_PROVIDER_BASE_URL sends its model requests to http://{elsewhere}/v1, but the daemon's port is {}",
            served.port
        )),
        "{copilot}"
    );
    assert_eq!(
        copilot["fix"],
        format!(
            "copilot-bridge --home {} --port 0 setup --agent copilot (and set what it prints)",
            served.state().display()
        )
    );
}

#[tokio::test]
async fn a_backend_refusing_its_key_fails_with_the_variable_to_set_and_a_stuck_one_is_bounded() {
    let mock = MockLlm::start(Vec::new()).await;
    mock.require_key("sk-doctor-right-key");
    // Accepts connections and never answers.
    let stuck = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bridge = Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        format!(
            "[backends.mock]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_UPSTREAM_KEY\"\n\n\
             [backends.stuck]\nprovider = \"openai\"\nbase_url = \"http://{}/v1\"\napi_key_env = \"STUCK_UPSTREAM_KEY\"\n",
            mock.base_url(),
            stuck.local_addr().unwrap()
        ),
    )
    .unwrap();
    let ws = TempWorkspace::new();
    let mut env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
        ("MOCK_UPSTREAM_KEY", "sk-doctor-wrong-key".to_owned()),
        ("STUCK_UPSTREAM_KEY", "sk-doctor-unused".to_owned()),
    ];

    let started = Instant::now();
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(1), "{checks:#?}");
    let mock_check = named(&checks, "backend mock");
    assert_eq!(mock_check["status"], "fail", "{mock_check}");
    let message = mock_check["message"].as_str().unwrap();
    assert!(
        message.contains("the upstream refused the key"),
        "{message}"
    );
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("sk-doctor-wrong-key"), "{message}");
    assert_eq!(
        mock_check["fix"],
        format!(
            "set MOCK_UPSTREAM_KEY to a valid key for {}/v1 ([backends.mock] api_key_env in config.toml)",
            mock.base_url()
        )
    );
    let stuck_check = named(&checks, "backend stuck");
    assert_eq!(stuck_check["status"], "fail");
    assert!(
        stuck_check["message"]
            .as_str()
            .unwrap()
            .ends_with("no answer within 3 s"),
        "{stuck_check}"
    );
    // The table marks the failure and exits 1 as well.
    let table = doctor_output(bridge.state.path(), ws.path(), &env, &[]).await;
    assert_eq!(table.status.code(), Some(1));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("fail  backend mock "), "{text}");
    assert!(
        text.contains("fix: set MOCK_UPSTREAM_KEY to a valid key"),
        "{text}"
    );

    // Doing what the fix says turns the check ok.
    env[2].1 = "sk-doctor-right-key".to_owned();
    let (_, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    assert_eq!(named(&checks, "backend mock")["status"], "ok");
    drop(stuck);
}

#[tokio::test]
async fn an_invalid_agent_policy_fails_with_the_file_to_correct() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let policy = ws.write(
        ".agent-policy.yaml",
        "writes:\n  allow: [\"src/**\"\nshell: {}\n",
    );
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    assert_eq!(output.status.code(), Some(1), "{checks:#?}");
    let check = named(&checks, "workspace policy");
    assert_eq!(check["status"], "fail", "{check}");
    let message = check["message"].as_str().unwrap();
    assert!(message.contains(".agent-policy.yaml"), "{message}");
    assert!(
        message.contains("not in force") || message.contains("fails to load"),
        "{message}"
    );
    assert_eq!(
        check["fix"],
        format!("correct {} (see docs/policy.md)", policy.display())
    );
    // Everything else of this bare machine is no failure.
    let failed: Vec<&Value> = checks.iter().filter(|c| c["status"] == "fail").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");

    std::fs::write(&policy, "writes:\n  allow: [\"src/**\"]\n").unwrap();
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    assert_eq!(named(&checks, "workspace policy")["status"], "ok");
    assert_eq!(output.status.code(), Some(0), "{checks:#?}");
}

/// The shape every check of `--json` has, as docs/cli.md documents it.
pub(crate) fn assert_check_shape(check: &Value) {
    let keys: Vec<&str> = check
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["fix", "message", "name", "status"], "{check}");
    assert!(
        check["name"].is_string() && check["message"].is_string(),
        "{check}"
    );
    match check["status"].as_str().unwrap() {
        "ok" => assert!(check["fix"].is_null(), "{check}"),
        "warn" | "fail" => assert!(check["fix"].is_string(), "{check}"),
        other => panic!("status {other:?} in {check}"),
    }
}

#[tokio::test]
async fn the_json_shape_is_the_one_docs_cli_md_shows() {
    let docs = std::fs::read_to_string(repo_root().join("docs/cli.md")).unwrap();
    let section = docs
        .split("\n## `doctor")
        .nth(1)
        .expect("a doctor section in docs/cli.md");
    let example = section
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("a JSON example in the doctor section");
    let example: Value = serde_json::from_str(example).unwrap();
    assert_eq!(example.as_object().unwrap().len(), 1, "{example}");
    let documented = example["checks"].as_array().unwrap();
    assert!(!documented.is_empty());
    documented.iter().for_each(assert_check_shape);

    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    assert_eq!(stdout_json(&output).as_object().unwrap().len(), 1);
    checks.iter().for_each(assert_check_shape);
    // Every name the example uses is a check the command makes.
    for check in documented {
        named(&checks, check["name"].as_str().unwrap());
    }
}

#[tokio::test]
async fn a_port_another_program_holds_and_a_token_others_may_read_fail() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let token = bridge.state.path().join("token");
    std::fs::write(&token, "btk-doctor-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = command(bridge.state.path());
    cmd.args(["--port", &port.to_string(), "doctor", "--json"])
        .current_dir(ws.path())
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", format!("http://{}", closed_address()));
    let output = tokio::process::Command::from(cmd).output().await.unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let checks = stdout_json(&output)["checks"].as_array().unwrap().clone();
    let port_check = named(&checks, "port");
    assert_eq!(port_check["status"], "fail", "{port_check}");
    assert_eq!(
        port_check["message"],
        format!("127.0.0.1:{port} is taken by another program, not this state directory's daemon")
    );
    assert!(
        port_check["fix"]
            .as_str()
            .unwrap()
            .starts_with("choose another port")
    );
    let state = named(&checks, "state directory");
    assert_eq!(state["status"], "fail", "{state}");
    assert_eq!(
        state["message"],
        format!(
            "{} holds a secret but is readable by others (mode 644)",
            token.display()
        )
    );
    assert!(
        state["fix"]
            .as_str()
            .unwrap()
            .starts_with(&format!("chmod 600 {}", token.display()))
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("btk-doctor-0123456789abcdef"));
    drop(taken);
}

#[tokio::test]
async fn a_gateway_json_whose_live_pid_does_not_answer_warns() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let sleeper = crate::cli_serve::ChildGuard(
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap(),
    );
    let port = closed_address().port();
    let file = serde_json::json!({
        "port": port, "pid": sleeper.id(), "host": "127.0.0.1",
        "token": "btk-doctor-gateway-token-0123", "providerToken": "tap-doctor",
        "defaultSession": "s", "startedAt": "2026-01-01T00:00:00Z", "version": "0.0.1",
    });
    let path = bridge.state.path().join("gateway.json");
    std::fs::write(&path, file.to_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env = vec![
        ("COPILOT_BRIDGE_NO_GH", "1".to_owned()),
        ("OLLAMA_HOST", format!("http://{}", closed_address())),
    ];
    let (output, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    let daemon = named(&checks, "daemon");
    assert_eq!(daemon["status"], "warn", "{daemon}");
    assert!(
        daemon["message"].as_str().unwrap().starts_with(&format!(
            "gateway.json names pid {}, which runs but does not answer on 127.0.0.1:{port}",
            sleeper.id()
        )),
        "{daemon}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("btk-doctor-gateway-token"));

    drop(sleeper);
    let (_, checks) = doctor(bridge.state.path(), ws.path(), &env).await;
    let daemon = named(&checks, "daemon");
    assert_eq!(daemon["status"], "ok", "{daemon}");
    assert!(
        daemon["message"]
            .as_str()
            .unwrap()
            .contains("which is gone"),
        "{daemon}"
    );
}
