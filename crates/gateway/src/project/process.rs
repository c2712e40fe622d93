//! One spawned provider, supervised: started through the one launcher
//! (bridge-launch: its own process group, the minimal environment plus its
//! configured `env` and its `TAP_*` variables), its output forwarded line by
//! line (redacted) to the daemon log, restarted a bounded number of times if
//! it crashes, and taken down with its whole group (SIGTERM, SIGKILL after a
//! grace) when asked.

use std::process::ExitStatus;
use std::sync::Weak;
use std::time::{Duration, Instant};

use bridge_engine::Session;
use bridge_launch::{ChildEnv, Signal, Stderr, describe_exit};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::config::Launch;
use crate::auth;
use crate::state::GatewayInner;

/// A provider that ran this long before crashing earns a fresh restart
/// budget: it is not crash-looping.
const STABLE_RUN: Duration = Duration::from_secs(60);
/// Longest output line forwarded to the log; the rest of it follows as
/// further lines.
const MAX_LINE_BYTES: usize = 4096;
/// How long output is still read after the group is gone: a process that
/// left the group may hold the pipes open forever.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What a supervisor needs besides its launch.
pub(crate) struct Supervisor {
    pub gw: Weak<GatewayInner>,
    pub session: Weak<Session>,
    pub session_id: String,
    pub launch: Launch,
    /// Cancelled when the provider must go (its session ends, the gateway
    /// shuts down).
    pub stop: CancellationToken,
}

impl Supervisor {
    /// Runs the provider until it is stopped, exits normally, or has used
    /// its restarts; the process group is gone when this returns.
    pub(crate) async fn run(self) {
        let Some((limit, base_backoff, grace)) = self.gw.upgrade().map(|gw| {
            (
                gw.settings.project_restart_limit,
                gw.settings.project_restart_backoff,
                gw.settings.project_stop_grace,
            )
        }) else {
            return;
        };
        let mut restarts: u32 = 0;
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            let started = Instant::now();
            let Some(mut running) = self.start() else {
                return;
            };
            let status = tokio::select! {
                status = running.child.wait() => status,
                () = self.stop.cancelled() => {
                    running.terminate(grace).await;
                    self.log(&format!("※ project provider '{}' stopped", self.launch.name));
                    return;
                }
            };
            // Whatever the provider left behind in its group goes with it.
            running.child.signal_group(Signal::Kill);
            let described = match &status {
                Ok(status) => describe_exit(*status),
                Err(err) => format!("could not be waited for ({err})"),
            };
            if status.as_ref().is_ok_and(ExitStatus::success) {
                self.log(&format!(
                    "※ project provider '{}' {described}; not restarting it",
                    self.launch.name
                ));
                return;
            }
            if started.elapsed() >= STABLE_RUN {
                restarts = 0;
            }
            if restarts >= limit {
                self.warn(&format!(
                    "※ project provider '{}' {described}; giving up after {restarts} restart(s)",
                    self.launch.name
                ));
                return;
            }
            restarts += 1;
            let backoff = base_backoff.saturating_mul(1 << (restarts - 1).min(16));
            self.warn(&format!(
                "※ project provider '{}' {described}; restarting it in {} ms (restart {restarts} of {limit})",
                self.launch.name,
                backoff.as_millis()
            ));
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    /// Starts one run of the provider; `None` (logged) when it cannot be.
    fn start(&self) -> Option<Running> {
        let name = &self.launch.name;
        let gw = self.gw.upgrade()?;
        let Some(url) = gw.lock().public_url.clone() else {
            self.warn(&format!(
                "※ project provider '{name}' not started: the gateway's URL is not known yet"
            ));
            return None;
        };
        // A fresh token per run: scoped to this session, dropped with it.
        let token = match auth::issue_project_token(&gw, &self.session_id, true) {
            Ok(token) => token,
            Err(err) => {
                tracing::info!(session = %self.session_id, provider = %name, "project provider not started: {err}");
                return None;
            }
        };
        drop(gw);
        let env = ChildEnv::minimal()
            .set_all(
                self.launch
                    .env
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            )
            .set("TAP_PROVIDER_TOKEN", token)
            .set("TAP_GATEWAY_URL", url)
            .set("TAP_SESSION_ID", &self.session_id);
        let launched = bridge_launch::Launch::new(&self.launch.program)
            .args(&self.launch.args)
            .cwd(&self.launch.cwd)
            .env(env)
            .stderr(Stderr::Piped)
            .spawn();
        let mut child = match launched {
            Ok(child) => child,
            Err(err) => {
                self.warn(&format!(
                    "※ project provider '{name}' could not be started ({} in {}): {}",
                    self.launch.program.display(),
                    self.launch.cwd.display(),
                    err.source
                ));
                return None;
            }
        };
        let readers = [
            child.take_stdout().map(|out| self.forward(out, "stdout")),
            child.take_stderr().map(|err| self.forward(err, "stderr")),
        ];
        self.log(&format!(
            "※ project provider '{name}' started (pid {})",
            child
                .id()
                .map_or_else(|| "?".to_owned(), |pid| pid.to_string())
        ));
        Some(Running {
            child,
            readers: readers.into_iter().flatten().collect(),
        })
    }

    /// Forwards one output pipe to the daemon log, a line per event.
    fn forward<R: AsyncRead + Unpin + Send + 'static>(
        &self,
        pipe: R,
        stream: &'static str,
    ) -> tokio::task::JoinHandle<()> {
        let provider = self.launch.name.clone();
        let session = self.session_id.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_LINE_BYTES as u64)
                    .read_until(b'\n', &mut line)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&line);
                let text = bridge_policy::redact::printable(
                    line.trim_end_matches(['\n', '\r']),
                    MAX_LINE_BYTES,
                );
                if text.is_empty() {
                    continue;
                }
                tracing::info!(session = %session, provider = %provider, stream, "{text}");
            }
        })
    }

    /// A lifecycle line: the session timeline and (through it) the daemon
    /// log.
    fn log(&self, text: &str) {
        match self.session.upgrade() {
            Some(session) => session.log("gateway", text),
            None => tracing::info!(session = %self.session_id, "{text}"),
        }
    }

    /// A problem: the timeline, and a warning in the daemon log.
    fn warn(&self, text: &str) {
        tracing::warn!(session = %self.session_id, "{text}");
        if let Some(session) = self.session.upgrade() {
            session.log("gateway", text);
        }
    }
}

/// One run of the provider process; dropping it kills the group.
struct Running {
    child: bridge_launch::Child,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// SIGTERM to the group, SIGKILL after `grace`; returns once the
    /// provider itself is reaped.
    async fn terminate(&mut self, grace: Duration) {
        self.child.terminate(grace).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Output normally ends with the group; a straggler that left the
        // group keeps the pipes, so reading stops after a grace.
        let readers = std::mem::take(&mut self.readers);
        if readers.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for reader in readers {
                    let abort = reader.abort_handle();
                    if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
                        abort.abort();
                    }
                }
            });
        }
    }
}
