//! The real OpenClaw gateway (`openclaw gateway run`, the version pinned in
//! scripts/install-test-deps.sh, under Node 24) for tests: in the
//! foreground on a free port of 127.0.0.1 with token auth, a private HOME
//! and state directory, offline (no update check, no telemetry, no
//! Bonjour), its agent's model provider pointing at an OpenAI-compatible
//! base URL (the [`MockLlm`](crate::MockLlm)). It can be stopped and
//! started again on the same port with the same state, and its process
//! group is killed when it is dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;

use crate::peers::{agent_cli, repo_root};

/// How long a start may take (a cold start on two cores takes 10–20 s).
const STARTUP_PATIENCE: Duration = Duration::from_secs(120);
/// How long a stop may take before the group is killed.
const STOP_PATIENCE: Duration = Duration::from_secs(15);
/// The line the gateway logs when it accepts connections and runs agents.
const READY_LINE: &str = "[gateway] ready";

/// A running OpenClaw gateway.
pub struct OpenClawGateway {
    program: PathBuf,
    home: TempDir,
    port: u16,
    token: String,
    llm_base_url: String,
    /// The model provider's API key (the daemon's token when the model is
    /// the daemon's facade).
    llm_api_key: String,
    /// The running gateway and its process group.
    child: Option<(tokio::process::Child, rustix::process::Pid)>,
    /// Which start this is (each writes its own output file).
    starts: u32,
}

impl std::fmt::Debug for OpenClawGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClawGateway")
            .field("port", &self.port)
            .field("home", &self.home.path())
            .finish_non_exhaustive()
    }
}

impl OpenClawGateway {
    /// Starts the gateway with its model at `llm_base_url` (without `/v1`)
    /// and waits until it is ready. `None` (with a notice) when OpenClaw is
    /// not installed; panics in CI then, and whenever it does not start.
    pub async fn start(llm_base_url: &str) -> Option<OpenClawGateway> {
        Self::start_with(llm_base_url, "mock-api-key", free_port()).await
    }

    /// [`Self::start`] on `port` (reserved by the caller, e.g. to tell a
    /// daemon where the gateway will be before it runs), its model's API
    /// key `api_key`.
    pub async fn start_with(
        llm_base_url: &str,
        api_key: &str,
        port: u16,
    ) -> Option<OpenClawGateway> {
        let program = agent_cli("openclaw", "openclaw")?;
        let home = tempfile::Builder::new()
            .prefix("openclaw-home-")
            .tempdir()
            .unwrap_or_else(|err| panic!("cannot create OpenClaw's home: {err}"));
        let mut gateway = OpenClawGateway {
            program,
            home,
            port,
            token: format!("test-gateway-token-{port}-0123456789"),
            llm_base_url: llm_base_url.trim_end_matches('/').to_owned(),
            llm_api_key: api_key.to_owned(),
            child: None,
            starts: 0,
        };
        gateway.write_config();
        gateway.launch().await;
        Some(gateway)
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The gateway's shared token (`gateway.auth.token`).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `OPENCLAW_STATE_DIR` (`HOME/.openclaw`).
    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join(".openclaw")
    }

    /// The agent's workspace (its `MEMORY.md` and `memory/` are searched).
    pub fn workspace(&self) -> PathBuf {
        self.state_dir().join("workspace")
    }

    /// Everything the gateway printed so far, all starts.
    pub fn output(&self) -> String {
        (1..=self.starts)
            .map(|start| std::fs::read_to_string(self.output_path(start)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n--- restart ---\n")
    }

    /// Stops the gateway (SIGTERM to its group, SIGKILL after 15 s).
    pub async fn stop(&mut self) {
        let Some((mut child, group)) = self.child.take() else {
            return;
        };
        signal_group(group, rustix::process::Signal::TERM);
        if tokio::time::timeout(STOP_PATIENCE, child.wait())
            .await
            .is_err()
        {
            signal_group(group, rustix::process::Signal::KILL);
            let _ = child.wait().await;
        }
        // Helpers of the gateway (its spawn broker) must not outlive it.
        signal_group(group, rustix::process::Signal::KILL);
    }

    /// Writes `text` as the agent's `MEMORY.md`.
    pub fn write_memory(&self, text: &str) {
        let path = self.workspace().join("MEMORY.md");
        std::fs::write(&path, text)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    }

    /// Stops and starts it again: same port, token and state.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    fn output_path(&self, start: u32) -> PathBuf {
        self.home.path().join(format!("gateway-output-{start}.log"))
    }

    fn write_config(&self) {
        let state = self.state_dir();
        std::fs::create_dir_all(self.workspace().join("memory"))
            .unwrap_or_else(|err| panic!("cannot create OpenClaw's workspace: {err}"));
        let config = json!({
            "gateway": {
                "mode": "local",
                "port": self.port,
                "bind": "loopback",
                "auth": {"mode": "token", "token": self.token},
            },
            "update": {"checkOnStart": false},
            "logging": {"file": state.join("logs/openclaw.log")},
            "agents": {"defaults": {
                "workspace": self.workspace(),
                "model": {"primary": "cb/mock-model"},
            }},
            "models": {"mode": "merge", "providers": {"cb": {
                "baseUrl": format!("{}/v1", self.llm_base_url),
                "apiKey": self.llm_api_key,
                "api": "openai-completions",
                "timeoutSeconds": 120,
                "models": [{
                    "id": "mock-model",
                    "name": "copilot-bridge mock",
                    "reasoning": false,
                    "input": ["text"],
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    "contextWindow": 128000,
                    "maxTokens": 4096,
                }],
            }}},
        });
        let path = state.join("openclaw.json");
        std::fs::write(
            &path,
            serde_json::to_vec_pretty(&config).unwrap_or_default(),
        )
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    }

    async fn launch(&mut self) {
        self.starts += 1;
        let output_path = self.output_path(self.starts);
        let output = std::fs::File::create(&output_path)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", output_path.display()));
        let errors = output
            .try_clone()
            .unwrap_or_else(|err| panic!("cannot share {}: {err}", output_path.display()));
        let node = repo_root().join(".peers/node24/node_modules/node/bin");
        let path = format!(
            "{}:{}",
            node.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let state = self.state_dir();
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(["gateway", "run", "--port", &self.port.to_string()])
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env("TMPDIR", self.home.path())
            .env("OPENCLAW_STATE_DIR", &state)
            .env("OPENCLAW_CONFIG_PATH", state.join("openclaw.json"))
            .env("OPENCLAW_NO_AUTO_UPDATE", "1")
            .env("OPENCLAW_DISABLE_BONJOUR", "1")
            .env("OPENCLAW_TELEMETRY", "0")
            .env("DO_NOT_TRACK", "1")
            .current_dir(self.home.path())
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", self.program.display()));
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
            .unwrap_or_else(|| panic!("the OpenClaw gateway has no process id"));
        let started = Instant::now();
        loop {
            let printed = std::fs::read_to_string(&output_path).unwrap_or_default();
            if printed.contains(READY_LINE) {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the OpenClaw gateway exited ({status}) before it was ready:\n{printed}");
            }
            if started.elapsed() > STARTUP_PATIENCE {
                signal_group(group, rustix::process::Signal::KILL);
                panic!(
                    "the OpenClaw gateway was not ready within {STARTUP_PATIENCE:?}:\n{printed}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        eprintln!(
            "OpenClaw gateway ready on port {} in {:.1} s (start {})",
            self.port,
            started.elapsed().as_secs_f64(),
            self.starts
        );
        self.child = Some((child, group));
    }
}

impl Drop for OpenClawGateway {
    fn drop(&mut self) {
        if let Some((_, group)) = self.child.as_ref() {
            signal_group(*group, rustix::process::Signal::KILL);
        }
    }
}

/// Sends `signal` to the gateway's process group (it leads its own).
fn signal_group(group: rustix::process::Pid, signal: rustix::process::Signal) {
    let _ = rustix::process::kill_process_group(group, signal);
}

/// A port of 127.0.0.1 free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|err| panic!("no free port: {err}"))
}
