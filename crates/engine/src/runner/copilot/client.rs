//! A started Copilot CLI after the handshake: the calls that need no
//! session (ping, status, sign-in state).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::config::CopilotCliConfig;
use super::process::CliProcess;
use super::rpc::RpcError;

/// The protocol versions this client speaks: 3 is the CLI's current one
/// (`connect`, permission prompts as session events); 2 asked for
/// permission with a `permission.request` call, which is answered too.
pub const PROTOCOL_VERSIONS: std::ops::RangeInclusive<u64> = 2..=3;

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// What went wrong talking to the CLI, worded for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct CopilotError(pub String);

/// The CLI's sign-in state (`auth.getStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStatus {
    pub authenticated: bool,
    pub login: Option<String>,
    pub auth_type: Option<String>,
    /// The CLI's own wording.
    pub status_message: Option<String>,
}

impl AuthStatus {
    fn from_wire(value: &Value) -> Self {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            authenticated: value
                .get("isAuthenticated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            login: text("login"),
            auth_type: text("authType"),
            status_message: text("statusMessage"),
        }
    }

    /// One line for the user: who is signed in, or how to sign in.
    pub fn user_message(&self) -> String {
        if self.authenticated {
            let who = self.login.as_deref().unwrap_or("an unnamed account");
            return match &self.auth_type {
                Some(kind) => format!("The Copilot CLI is signed in as {who} ({kind})."),
                None => format!("The Copilot CLI is signed in as {who}."),
            };
        }
        let cli_says = self
            .status_message
            .as_deref()
            .map(|m| format!(" (the CLI says: {m})"))
            .unwrap_or_default();
        format!(
            "The Copilot CLI is signed out{cli_says}. Sign in with `copilot` and its `/login` command, \
             set COPILOT_GITHUB_TOKEN to a token with Copilot access, or configure a BYOK provider \
             (COPILOT_BYOK_PROVIDER)."
        )
    }
}

/// The CLI's version and protocol (`status.get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliStatus {
    pub version: String,
    pub protocol_version: Option<u64>,
}

/// A running CLI, handshake done.
pub struct CopilotClient {
    pub(super) process: CliProcess,
    pub(super) timeout: Duration,
    protocol_version: Option<u64>,
}

impl CopilotClient {
    /// Starts the CLI in `cwd` and completes the handshake (`connect`, or
    /// `ping` for a CLI that predates it), refusing a protocol version this
    /// client does not speak.
    pub async fn start(config: &CopilotCliConfig, cwd: &Path) -> Result<Self, CopilotError> {
        let process = CliProcess::spawn(config, cwd).map_err(|err| CopilotError(err.0))?;
        let mut client = Self {
            process,
            timeout: config.request_timeout,
            protocol_version: None,
        };
        let handshake = match client.call("connect", json!({})).await {
            Err(RpcError::Remote { code, .. }) if code == METHOD_NOT_FOUND => {
                client.call("ping", json!({})).await
            }
            other => other,
        };
        let reply = match handshake {
            Ok(reply) => reply,
            Err(err) => {
                return Err(client
                    .fail("the handshake with the Copilot CLI failed", err)
                    .await);
            }
        };
        let version = reply.get("protocolVersion").and_then(Value::as_u64);
        if let Some(version) = version
            && !PROTOCOL_VERSIONS.contains(&version)
        {
            return Err(CopilotError(format!(
                "the Copilot CLI speaks SDK protocol {version}; copilot-bridge speaks {}–{}. \
                 Install a matching CLI (npm install -g @github/copilot) or update copilot-bridge.",
                PROTOCOL_VERSIONS.start(),
                PROTOCOL_VERSIONS.end()
            )));
        }
        client.protocol_version = version;
        Ok(client)
    }

    pub fn protocol_version(&self) -> Option<u64> {
        self.protocol_version
    }

    /// A round trip; returns the CLI's echo.
    pub async fn ping(&mut self, message: &str) -> Result<String, CopilotError> {
        match self.call("ping", json!({"message": message})).await {
            Ok(reply) => Ok(reply
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()),
            Err(err) => Err(self.fail("ping failed", err).await),
        }
    }

    pub async fn status(&mut self) -> Result<CliStatus, CopilotError> {
        match self.call("status.get", json!({})).await {
            Ok(reply) => Ok(CliStatus {
                version: reply
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_owned(),
                protocol_version: reply.get("protocolVersion").and_then(Value::as_u64),
            }),
            Err(err) => Err(self.fail("status.get failed", err).await),
        }
    }

    pub async fn auth_status(&mut self) -> Result<AuthStatus, CopilotError> {
        match self.call("auth.getStatus", json!({})).await {
            Ok(reply) => Ok(AuthStatus::from_wire(&reply)),
            Err(err) => Err(self.fail("auth.getStatus failed", err).await),
        }
    }

    /// Stops the CLI.
    pub async fn close(self) {
        self.process.shutdown().await;
    }

    pub(super) async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.process.rpc.call(method, params, self.timeout).await
    }

    /// An error for the user: what failed, and, when the connection is
    /// gone, how the process ended and what it last said.
    pub(super) async fn fail(&mut self, what: &str, err: RpcError) -> CopilotError {
        match err {
            RpcError::Closed(reason) => {
                let exit = self.process.exit_summary(Duration::from_millis(500)).await;
                CopilotError(format!("{what}: {reason}; {exit}"))
            }
            other => CopilotError(format!("{what}: {other}")),
        }
    }
}
