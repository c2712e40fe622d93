//! The `copilot` child process in SDK server mode (`--server --stdio`).

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::config::{AUTH_TOKEN_ENV, CopilotCliConfig};
use super::rpc::{Incoming, RpcConnection};
use crate::session::lock;

/// How many of the CLI's last stderr lines an error message quotes.
const STDERR_KEEP: usize = 20;

/// A running CLI and our connection to it. Dropping it kills the process.
pub struct CliProcess {
    child: Child,
    stderr: Arc<Mutex<VecDeque<String>>>,
    pub rpc: RpcConnection,
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
}

/// The CLI could not be started.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpawnError(pub String);

impl CliProcess {
    pub fn spawn(config: &CopilotCliConfig, cwd: &Path) -> Result<Self, SpawnError> {
        let program = config.cli_path.clone().unwrap_or_else(|| "copilot".into());
        let mut command = Command::new(&program);
        command.args(["--server", "--stdio", "--no-auto-update"]);
        for name in &config.env_remove {
            command.env_remove(name);
        }
        command.envs(config.env.iter().map(|(k, v)| (k, v)));
        if let Some(token) = &config.github_token {
            command.env(AUTH_TOKEN_ENV, token).args([
                "--auth-token-env",
                AUTH_TOKEN_ENV,
                "--no-auto-login",
            ]);
        }
        command
            .args(&config.extra_args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|err| {
            let hint = if err.kind() == std::io::ErrorKind::NotFound {
                " (install it with `npm install -g @github/copilot`, or set COPILOT_CLI_PATH)"
            } else {
                ""
            };
            SpawnError(format!(
                "cannot start the Copilot CLI {}: {err}{hint}",
                program.display()
            ))
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SpawnError(
                "the Copilot CLI started without piped stdio".to_owned(),
            ));
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(keep_stderr_tail(stderr, tail.clone()));
        let (rpc, incoming) = RpcConnection::start(Box::new(stdout), Box::new(stdin));
        Ok(Self {
            child,
            stderr: tail,
            rpc,
            incoming,
        })
    }

    /// How the process ended, if it did within `wait`, with its last stderr
    /// lines: the part of an error message that tells the user why.
    pub async fn exit_summary(&mut self, wait: Duration) -> String {
        let status = match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(status)) => format!("the Copilot CLI exited ({status})"),
            Ok(Err(err)) => format!("the Copilot CLI's status is unknown ({err})"),
            Err(_) => "the Copilot CLI is still running".to_owned(),
        };
        let lines: Vec<String> = lock(&self.stderr).iter().cloned().collect();
        if lines.is_empty() {
            status
        } else {
            format!("{status}; its last output: {}", lines.join(" | "))
        }
    }

    /// Asks the CLI to stop by closing nothing but waiting briefly, then
    /// kills it: the session is over and nothing of it is kept here.
    pub async fn shutdown(mut self) {
        if tokio::time::timeout(Duration::from_millis(200), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

async fn keep_stderr_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = bridge_policy::redact(line.trim()).into_owned();
        if line.is_empty() {
            continue;
        }
        let mut tail = lock(&tail);
        if tail.len() == STDERR_KEEP {
            tail.pop_front();
        }
        tail.push_back(line.chars().take(300).collect());
    }
}
