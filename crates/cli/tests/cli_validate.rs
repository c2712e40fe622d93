//! `copilot-bridge validate` against the testkit's mock LLM over real HTTP.

use bridge_testkit::{MockLlm, MockReply};
use predicates::str::contains;

use crate::support::Bridge;

/// A URL where nothing listens: the port was free a moment ago.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// `copilot-bridge validate` aimed at the mock as an OpenAI BYOK backend.
fn validate_against(bridge: &Bridge, mock: &MockLlm) -> assert_cmd::Command {
    let mut cmd = bridge.cmd();
    cmd.arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_BYOK_MODEL", "m");
    cmd
}

/// The binary blocks this thread; the mock keeps serving on the runtime's
/// worker threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usable_backend_prints_the_status_table_and_exits_0() {
    let mock = MockLlm::start(vec![MockReply::Text {
        chunks: vec!["po".into(), "ng".into()],
    }])
    .await;
    let bridge = Bridge::new();
    let output = validate_against(&bridge, &mock).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "backend           openai",
        "selected because  COPILOT_BYOK_PROVIDER=openai",
        &format!("base URL          {}/v1", mock.base_url()),
        "model             m",
        "auth              ok",
        "chat              ok in ",
        "status            OK",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected:?} missing from:\n{stdout}"
        );
    }
    assert!(stdout.contains("models            "), "{stdout}");

    let requests = mock.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "GET" && r.path == "/v1/models"),
        "{requests:?}"
    );
    let chat = requests
        .iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("a chat request");
    assert_eq!(chat.body["model"], "m");
    let max_tokens = chat.body["max_tokens"].as_u64().unwrap();
    assert!((1..=5).contains(&max_tokens), "{max_tokens}");
    let auth = chat
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    assert_eq!(auth.map(|(_, value)| value.as_str()), Some("Bearer x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_key_exits_1_with_the_reason() {
    let mock = MockLlm::start(vec![MockReply::Error {
        status: 401,
        body: "Incorrect API key provided".into(),
        retry_after_secs: None,
    }])
    .await;
    let bridge = Bridge::new();
    let output = validate_against(&bridge, &mock).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("status            FAILED"), "{stdout}");
    assert!(stdout.contains("auth              failed"), "{stdout}");
    assert!(stdout.contains("chat              error: "), "{stdout}");
    assert!(
        stderr.contains("FAILED: the openai backend is unusable"),
        "{stderr}"
    );
    assert!(stderr.contains("Incorrect API key provided"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_backend_exits_1() {
    let bridge = Bridge::new();
    let dead = dead_url();
    let output = bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("COPILOT_BYOK_PROVIDER", "openai")
        .env("COPILOT_BYOK_BASE_URL", format!("{dead}/v1"))
        .env("COPILOT_BYOK_API_KEY", "x")
        .env("COPILOT_MAX_RETRIES", "0")
        .env("COPILOT_TRANSIENT_RETRIES", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("status            FAILED"), "{stdout}");
    assert!(stderr.contains("cannot reach"), "{stderr}");
}

#[test]
fn nothing_configured_exits_1_naming_the_settings() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", dead_url())
        .assert()
        .code(1)
        .stderr(contains("no LLM backend configured"))
        .stderr(contains("COPILOT_GITHUB_TOKEN"))
        .stderr(contains("gh auth login"))
        .stderr(contains("COPILOT_BYOK_PROVIDER"))
        .stderr(contains("OPENAI_API_KEY"))
        .stderr(contains("ANTHROPIC_API_KEY"))
        .stderr(contains("Ollama"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_ollama_is_auto_detected_and_validated() {
    let mock = MockLlm::start(Vec::new()).await;
    let bridge = Bridge::new();
    let output = bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", mock.base_url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    let expected = format!(
        "selected because  auto-detected: Ollama at {}",
        mock.base_url()
    );
    assert!(stdout.contains(&expected), "{stdout}");
    assert!(stdout.contains("backend           ollama"), "{stdout}");
    assert!(
        stdout.contains("models            2 (llama3.2:latest, qwen2.5-coder:7b)"),
        "{stdout}"
    );

    // Ollama's own form of OLLAMA_HOST: host:port without a scheme.
    let bare_host = mock.base_url().trim_start_matches("http://").to_owned();
    bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("OLLAMA_HOST", bare_host)
        .assert()
        .success()
        .stdout(contains("backend           ollama"));
}

#[test]
fn chosen_provider_missing_its_settings_is_a_config_error() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BRIDGE_NO_GH", "1")
        .env("COPILOT_BYOK_PROVIDER", "azure")
        .env("COPILOT_BYOK_API_KEY", "x")
        .assert()
        .code(3)
        .stderr(contains("COPILOT_BYOK_BASE_URL"));
}

#[test]
fn unknown_provider_is_a_config_error() {
    let bridge = Bridge::new();
    bridge
        .cmd()
        .arg("validate")
        .env("COPILOT_BYOK_PROVIDER", "gemini")
        .assert()
        .code(3)
        .stderr(contains("gemini"));
}
