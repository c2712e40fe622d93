//! A stdio MCP server: the child process (own process group, minimal
//! environment, stderr captured and redacted) and the transport over its
//! stdin/stdout.
//!
//! The transport is strict about stdout: the MCP spec allows nothing there
//! but JSON-RPC messages, so a line that is not one ends the connection with
//! a reason naming it (the supervisor then restarts the server). A reader
//! task owns stdout, so `receive` is a channel read and safe to cancel.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_config::McpServerConfig;
use bridge_config::mcp::expand_env_references;
use bridge_launch::{ChildEnv, Launch, Signal, Stderr, describe_exit};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use crate::session::lock;

/// Longest stdout line accepted (one JSON-RPC message).
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Longest stderr line kept (longer ones are cut).
const MAX_STDERR_LINE: usize = 2000;
/// Stderr lines kept for error messages.
const STDERR_KEEP: usize = 5;

/// What the reader tasks learned about why a connection ended, and the
/// newest stderr lines.
#[derive(Default)]
pub(crate) struct Diagnostics {
    reason: Mutex<Option<String>>,
    stderr: Mutex<VecDeque<String>>,
}

impl Diagnostics {
    fn set_reason(&self, reason: String) {
        lock(&self.reason).get_or_insert(reason);
    }

    pub(crate) fn reason(&self) -> Option<String> {
        lock(&self.reason).clone()
    }

    pub(crate) fn last_stderr(&self) -> Option<String> {
        let lines = lock(&self.stderr);
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

/// The child process (bridge-launch's: killed with its whole process group
/// when dropped).
pub(crate) struct ChildGuard {
    child: tokio::sync::Mutex<bridge_launch::Child>,
}

impl ChildGuard {
    /// Ends the server: stdin was closed by the transport; wait `grace`
    /// for it to exit, then SIGTERM the group, then SIGKILL. Returns how it
    /// ended, for error messages.
    pub(crate) async fn terminate(&self, grace: Duration) -> String {
        let mut child = self.child.lock().await;
        if let Ok(Ok(status)) = tokio::time::timeout(grace, child.wait()).await {
            child.signal_group(Signal::Kill);
            return describe_exit(status);
        }
        match child.terminate(grace.min(Duration::from_secs(1))).await {
            Some(status) => describe_exit(status),
            None => "did not exit after SIGKILL".to_owned(),
        }
    }
}

/// A started stdio server.
pub(crate) struct Spawned {
    pub(crate) transport: StdioTransport,
    pub(crate) child: Arc<ChildGuard>,
    pub(crate) diagnostics: Arc<Diagnostics>,
}

/// A failure to start; `fatal` when retrying cannot help (no such program).
pub(crate) struct SpawnError {
    pub(crate) message: String,
    pub(crate) fatal: bool,
}

pub(crate) fn spawn(
    server: &str,
    config: &McpServerConfig,
    lookup_env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<Spawned, SpawnError> {
    let fatal = |message: String| SpawnError {
        message,
        fatal: true,
    };
    let program = config
        .command
        .as_deref()
        .ok_or_else(|| fatal("no command configured".to_owned()))?;
    // The minimal environment as the configuration sees it, plus the
    // server's own `env` table (the bridge's tokens never reach a server
    // that does not name them).
    let inherited = bridge_launch::env::BASE_NAMES
        .iter()
        .filter_map(|name| Some(((*name).into(), lookup_env(name)?.into())))
        .collect();
    let mut env = ChildEnv::minimal().inherited_from(inherited);
    for (name, template) in &config.env {
        let value = expand_env_references(template, lookup_env)
            .map_err(|reason| fatal(format!("env {name}: {reason}")))?;
        env = env.set(name, value);
    }
    let mut launch = Launch::new(program)
        .args(&config.args)
        .env(env)
        .stdin_piped()
        .stderr(Stderr::Piped);
    if let Some(cwd) = &config.cwd {
        launch = launch.cwd(cwd);
    }
    let mut child = launch.spawn().map_err(|err| SpawnError {
        fatal: err.is_permanent(),
        message: format!("cannot start {program:?}: {}", err.source),
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.take_stdin(), child.take_stdout(), child.take_stderr())
    else {
        return Err(SpawnError {
            message: "the child process has no stdio pipes".to_owned(),
            fatal: false,
        });
    };
    let diagnostics = Arc::new(Diagnostics::default());
    tokio::spawn(read_stderr(server.to_owned(), stderr, diagnostics.clone()));
    let (messages, receiver) = mpsc::channel(64);
    tokio::spawn(read_stdout(stdout, messages, diagnostics.clone()));
    Ok(Spawned {
        transport: StdioTransport {
            messages: receiver,
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
        },
        child: Arc::new(ChildGuard {
            child: tokio::sync::Mutex::new(child),
        }),
        diagnostics,
    })
}

async fn read_stderr(
    server: String,
    stderr: impl AsyncRead + Unpin,
    diagnostics: Arc<Diagnostics>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut reader, &mut line, MAX_STDERR_LINE).await {
            Ok(LineRead::Eof) | Err(_) => return,
            Ok(LineRead::Line | LineRead::TooLong) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = bridge_policy::redact(text.trim_end()).into_owned();
        if text.is_empty() {
            continue;
        }
        tracing::info!(target: "bridge_engine::mcp_client", server = %server, "stderr: {text}");
        let mut kept = lock(&diagnostics.stderr);
        if kept.len() == STDERR_KEEP {
            kept.pop_front();
        }
        kept.push_back(text);
    }
}

async fn read_stdout(
    stdout: impl AsyncRead + Unpin,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    diagnostics: Arc<Diagnostics>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut reader, &mut line, MAX_MESSAGE_BYTES).await {
            Ok(LineRead::Eof) => {
                diagnostics.set_reason("closed its stdout".to_owned());
                return;
            }
            Err(err) => {
                diagnostics.set_reason(format!("stdout could not be read: {err}"));
                return;
            }
            Ok(LineRead::TooLong) => {
                diagnostics.set_reason(format!(
                    "wrote a line of more than {MAX_MESSAGE_BYTES} bytes to stdout"
                ));
                return;
            }
            Ok(LineRead::Line) => {}
        }
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text) {
            Ok(message) => {
                if messages.send(message).await.is_err() {
                    return;
                }
            }
            Err(err) => {
                let sample = bridge_policy::redact::shorten(&String::from_utf8_lossy(text), 200);
                let what = if serde_json::from_slice::<serde_json::Value>(text).is_ok() {
                    format!("a JSON value that is not a JSON-RPC message ({err})")
                } else {
                    "non-JSON".to_owned()
                };
                diagnostics.set_reason(format!(
                    "wrote {what} to stdout, where MCP allows only JSON-RPC messages (servers must log to stderr): {sample:?}"
                ));
                return;
            }
        }
    }
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line (without it) of at most `max` bytes; a
/// longer line is cut at `max` and the rest skipped up to the newline.
async fn read_line_bounded(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                LineRead::Eof
            } else if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
        let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            too_long = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let consumed = found.unwrap_or(available.len());
        reader.consume(consumed);
        if found.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// The rmcp transport over the child's pipes.
pub(crate) struct StdioTransport {
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut stdin = stdin.lock().await;
            let pipe = stdin.as_mut().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotConnected, "stdin is closed")
            })?;
            pipe.write_all(&bytes).await?;
            pipe.flush().await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.messages.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin is the MCP way to ask a stdio server to exit.
        self.stdin.lock().await.take();
        self.messages.close();
        Ok(())
    }
}
