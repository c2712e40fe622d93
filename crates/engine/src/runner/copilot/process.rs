//! The `copilot` child process in SDK server mode (`--server --stdio`),
//! started through the one launcher (bridge-launch): its own process group,
//! and the minimal environment plus what the CLI needs to find its
//! configuration and the network ([`CLI_ENV`], `COPILOT_HOME`), the GitHub
//! token we give it, and the runner's configured `env`. Our tokens and BYOK
//! keys never reach it through the environment (the BYOK provider travels
//! in the session's configuration).

use std::path::Path;
use std::time::Duration;

use bridge_launch::{ChildEnv, Launch, Stderr};
use tokio::sync::mpsc;

use super::config::{AUTH_TOKEN_ENV, CopilotCliConfig};
use super::rpc::{Incoming, RpcConnection};

/// How many of the CLI's last stderr lines an error message quotes.
const STDERR_KEEP: usize = 20;

/// Variables the CLI inherits beyond the launcher's base (when present and
/// not secret): where its configuration and caches live, and how to reach
/// the network (proxies, extra CA certificates).
const CLI_ENV: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "COLORTERM",
];

/// A running CLI and our connection to it. Dropping it kills the process
/// and its group.
pub struct CliProcess {
    child: bridge_launch::Child,
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
        let mut env = ChildEnv::minimal()
            .inherit(CLI_ENV.iter().copied())
            .remove(config.env_remove.iter().cloned());
        // A path, but under a prefix the policy treats as secret: the CLI
        // keeps its configuration and sign-in there.
        if let Some(home) = std::env::var_os("COPILOT_HOME")
            && !config.env_remove.iter().any(|name| name == "COPILOT_HOME")
        {
            env = env.set("COPILOT_HOME", home);
        }
        let mut args: Vec<&str> = vec!["--server", "--stdio", "--no-auto-update"];
        if let Some(token) = &config.github_token {
            env = env.set(AUTH_TOKEN_ENV, token.expose());
            args.extend(["--auth-token-env", AUTH_TOKEN_ENV, "--no-auto-login"]);
        }
        let env = env.set_all(config.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let mut child = Launch::new(&program)
            .args(args)
            .args(&config.extra_args)
            .cwd(cwd)
            .env(env)
            .stdin_piped()
            .stderr(Stderr::Tail {
                lines: STDERR_KEEP,
                line_chars: 300,
            })
            .spawn()
            .map_err(|err| {
                let hint = if err.source.kind() == std::io::ErrorKind::NotFound {
                    " (install it with `npm install -g @github/copilot`, or set COPILOT_CLI_PATH)"
                } else {
                    ""
                };
                SpawnError(format!(
                    "cannot start the Copilot CLI {}: {}{hint}",
                    program.display(),
                    err.source
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
            return Err(SpawnError(
                "the Copilot CLI started without piped stdio".to_owned(),
            ));
        };
        let (rpc, incoming) = RpcConnection::start(Box::new(stdout), Box::new(stdin));
        Ok(Self {
            child,
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
        match self.child.stderr_tail() {
            None => status,
            Some(lines) => format!("{status}; its last output: {lines}"),
        }
    }

    /// Gives the CLI a moment to exit, then ends it and its group: the
    /// session is over and nothing of it is kept here.
    pub async fn shutdown(mut self) {
        if tokio::time::timeout(Duration::from_millis(200), self.child.wait())
            .await
            .is_err()
        {
            self.child.terminate(Duration::from_millis(500)).await;
        }
    }
}
