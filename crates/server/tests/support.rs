//! A real daemon on 127.0.0.1:0 in this process, with its own state
//! directory and workspace, configured like a user would (environment
//! names, config.toml), and the clients tests talk to it with.

#![allow(dead_code)]

use std::time::Duration;

use bridge_config::ConfigLoader;
use bridge_server::{ConnectionLimits, Daemon, DaemonOptions, ServerContext};
use bridge_testkit::TempWorkspace;
use serde_json::Value;
use tempfile::TempDir;
use tokio::task::JoinHandle;

pub struct TestDaemon {
    pub ctx: ServerContext,
    pub port: u16,
    pub token: String,
    pub workspace: TempWorkspace,
    pub state: TempDir,
    run: Option<JoinHandle<()>>,
}

/// How to configure a test daemon.
#[derive(Default)]
pub struct Setup {
    /// Environment the configuration is read from (`COPILOT_BYOK_*`, …).
    pub env: Vec<(String, String)>,
    /// The contents of config.toml in the state directory.
    pub config_toml: Option<String>,
    /// Files written into the workspace before the daemon starts.
    pub files: Vec<(String, String)>,
    /// Connection cap and request-head timeout of the daemon's HTTP server.
    pub limits: ConnectionLimits,
}

impl Setup {
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.env.push((name.to_owned(), value.into()));
        self
    }

    /// An OpenAI-compatible backend at `base_url` (e.g. a `MockLlm`).
    pub fn openai_backend(self, base_url: &str) -> Self {
        self.env("COPILOT_BYOK_PROVIDER", "openai")
            .env("COPILOT_BYOK_BASE_URL", format!("{base_url}/v1"))
            .env("COPILOT_BYOK_API_KEY", "sk-test-upstream-key")
            .env("COPILOT_BYOK_MODEL", "mock-model")
    }

    /// An Anthropic backend at `base_url`.
    pub fn anthropic_backend(self, base_url: &str) -> Self {
        self.env("COPILOT_BYOK_PROVIDER", "anthropic")
            .env("COPILOT_BYOK_BASE_URL", base_url)
            .env("COPILOT_BYOK_API_KEY", "sk-ant-test-upstream-key")
            .env("COPILOT_BYOK_MODEL", "claude-mock")
    }

    pub fn config_toml(mut self, text: impl Into<String>) -> Self {
        self.config_toml = Some(text.into());
        self
    }

    pub fn limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn file(mut self, path: &str, contents: impl Into<String>) -> Self {
        self.files.push((path.to_owned(), contents.into()));
        self
    }
}

impl TestDaemon {
    /// A daemon with no chat backend.
    pub async fn start() -> Self {
        Self::with(Setup::default()).await
    }

    pub async fn with(setup: Setup) -> Self {
        let state = TempDir::new().unwrap();
        let workspace = TempWorkspace::new();
        for (path, contents) in &setup.files {
            workspace.write(path, contents);
        }
        if let Some(text) = &setup.config_toml {
            std::fs::write(state.path().join("config.toml"), text).unwrap();
        }
        let mut loader = ConfigLoader::with_env(
            [
                (
                    "COPILOT_BRIDGE_HOME".to_owned(),
                    state.path().display().to_string(),
                ),
                ("COPILOT_BRIDGE_PORT".to_owned(), "0".to_owned()),
                ("COPILOT_BRIDGE_NO_GH".to_owned(), "1".to_owned()),
                // A local Ollama of the developer's must not be auto-detected.
                ("OLLAMA_HOST".to_owned(), "http://127.0.0.1:9".to_owned()),
                // Asks are denied at once, as before approvals, unless a
                // test waits for a person (`Setup::env` overrides).
                (
                    "COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS".to_owned(),
                    "0".to_owned(),
                ),
            ]
            .into_iter()
            .chain(setup.env.iter().cloned()),
        )
        .cwd(workspace.path())
        .user_home(Some(state.path().to_path_buf()))
        .skip_dotenv();
        if setup.config_toml.is_some() {
            loader = loader.config_file(state.path().join("config.toml"));
        }
        let config = loader.load().expect("test configuration loads");
        // Following config.toml as `serve` does: read again by the same
        // loader, so this environment keeps its precedence.
        let daemon = Daemon::start(DaemonOptions {
            config,
            cwd: workspace.path().to_path_buf(),
            detached: false,
            trust_project_providers: false,
            limits: setup.limits,
        })
        .await
        .expect("daemon starts")
        .follow_config(loader);
        let ctx = daemon.context().clone();
        let port = daemon.port();
        let token = ctx.token.to_string();
        let run = tokio::spawn(daemon.run());
        Self {
            ctx,
            port,
            token,
            workspace,
            state,
            run: Some(run),
        }
    }

    /// config.toml in the state directory, the one the daemon follows.
    pub fn config_path(&self) -> std::path::PathBuf {
        self.state.path().join("config.toml")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    /// A client that sends the daemon's token.
    pub fn http(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap()
    }

    /// `POST path` with the token and a JSON body.
    pub async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http()
            .post(self.url(path))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `GET path` with the token: its JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        self.http()
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `POST path` with the token and a JSON body, sent from a task of its
    /// own: for a test that must play the other side before the answer.
    pub fn post_in_background(
        &self,
        path: &str,
        body: Value,
    ) -> tokio::task::JoinHandle<reqwest::Response> {
        let request = self
            .http()
            .post(self.url(path))
            .bearer_auth(&self.token)
            .json(&body);
        tokio::spawn(async move { request.send().await.unwrap() })
    }

    /// `GET /healthz` (it needs no token; the one sent is ignored): its JSON.
    pub async fn health(&self) -> Value {
        self.get_json("/healthz").await
    }

    /// A JSON-RPC call over HTTP POST: the whole response object.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.post_json("/rpc", &body).await.json().await.unwrap()
    }

    /// Every line of the daemon's audit log so far (flushed first).
    pub fn audit_text(&self) -> String {
        bridge_policy::audit::flush_all().unwrap();
        std::fs::read_dir(self.state.path().join("audit"))
            .unwrap()
            .flatten()
            .map(|entry| std::fs::read_to_string(entry.path()).unwrap_or_default())
            .collect()
    }

    pub async fn stop(mut self) {
        self.ctx.shutdown.cancel();
        if let Some(run) = self.run.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
        }
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}

/// The repository's root (the peers and their scripts live under it).
pub use bridge_testkit::{python, repo_root};

/// Runs a peer (a Python client of tests/peers) to its end within a
/// minute; its stdout. The test fails with its output if it fails.
pub async fn run_peer(command: &mut tokio::process::Command) -> String {
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        command
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the client finishes within a minute")
    .expect("the client starts");
    assert!(
        output.status.success(),
        "client failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// An MCP client of `daemon`'s `path` (`/mcp/code?…`).
pub struct McpHttp;

impl McpHttp {
    pub async fn connect(daemon: &TestDaemon, path: &str) -> bridge_testkit::mcp_http::McpHttp {
        bridge_testkit::mcp_http::McpHttp::connect(&daemon.url(path), &daemon.token).await
    }
}

/// How long an edit of a watched file (config.toml, `.agent-policy.yaml`)
/// may take to apply in the tests: the watchers look every 250 ms, and a
/// loaded machine is slower.
pub const EDIT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// Waits until `done` holds, failing with `what` after [`EDIT_PATIENCE`];
/// how long it took.
pub async fn waited_for<F, Fut>(what: &str, mut done: F) -> std::time::Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while !done().await {
        assert!(
            started.elapsed() < EDIT_PATIENCE,
            "{what}: not within {EDIT_PATIENCE:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    started.elapsed()
}
