//! Runs one process the way every tool that executes must: through the one
//! launcher (bridge-launch: the scrubbed environment, no stdin, its own
//! process group, so a timeout takes its children down too), with a
//! timeout, and stdout/stderr read concurrently and capped.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_launch::{ChildEnv, Launch, Signal, Stderr};
use bridge_policy::redact::{CUT_CONTEXT_BYTES, redact_and_cut};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::env::git_hardening_env;

/// How long output is still read after the command ended; a process that
/// left the process group may hold the pipes open forever.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What a finished (or timed-out) process produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutcome {
    /// `None` when the process was killed by a signal.
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub duration_ms: u64,
}

impl ProcessOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Runs `program args...` in `cwd`. Errors only when it cannot be started.
pub(crate) async fn run_process<S: AsRef<OsStr>>(
    program: &OsStr,
    args: &[S],
    cwd: &Path,
    timeout: Duration,
    output_cap: usize,
) -> io::Result<ProcessOutcome> {
    let started = Instant::now();
    let mut child = Launch::new(program)
        .args(args)
        .cwd(cwd)
        .env(ChildEnv::scrubbed().set_all(git_hardening_env()))
        .stderr(Stderr::Piped)
        .spawn()
        .map_err(|err| err.source)?;
    let stdout = Capture::spawn(child.take_stdout(), output_cap);
    let stderr = Capture::spawn(child.take_stderr(), output_cap);

    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (Some(status?), false),
        Err(_elapsed) => {
            child.signal_group(Signal::Kill);
            (child.wait().await.ok(), true)
        }
    };
    // Background children still hold the pipes; they end with the command.
    child.signal_group(Signal::Kill);
    let (stdout, stdout_truncated) = stdout.finish().await;
    let (stderr, stderr_truncated) = stderr.finish().await;

    Ok(ProcessOutcome {
        exit_code: status.and_then(|status| status.code()),
        signal: status.and_then(signal_of),
        stdout,
        stderr,
        timed_out,
        stdout_truncated,
        stderr_truncated,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

#[cfg(unix)]
fn signal_of(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_status: std::process::ExitStatus) -> Option<i32> {
    None
}

#[derive(Default)]
struct Captured {
    /// Up to the cap plus [`CUT_CONTEXT_BYTES`]: the output is cut at the
    /// cap once redacted, so that a secret straddling it is seen whole.
    bytes: Vec<u8>,
    truncated: bool,
}

/// One output pipe, drained in its own task so that a full pipe never
/// blocks the child; bytes past the cap (and its lookahead) are read and
/// dropped.
struct Capture {
    captured: Arc<Mutex<Captured>>,
    task: Option<tokio::task::JoinHandle<()>>,
    cap: usize,
}

impl Capture {
    fn spawn<R: AsyncRead + Unpin + Send + 'static>(reader: Option<R>, cap: usize) -> Self {
        let captured = Arc::new(Mutex::new(Captured::default()));
        let task = reader.map(|mut reader| {
            let captured = Arc::clone(&captured);
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 16 * 1024];
                loop {
                    let read = match reader.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(read) => read,
                    };
                    let mut captured = bridge_util::sync::lock(&captured);
                    if captured.bytes.len() + read > cap {
                        captured.truncated = true;
                    }
                    let room = cap
                        .saturating_add(CUT_CONTEXT_BYTES)
                        .saturating_sub(captured.bytes.len());
                    captured.bytes.extend_from_slice(&buffer[..read.min(room)]);
                }
            })
        });
        Self {
            captured,
            task,
            cap,
        }
    }

    /// Waits for the pipe to close (up to [`DRAIN_GRACE`]), then returns the
    /// text, lossily decoded, and cut to the cap after redaction when the
    /// output went past it.
    async fn finish(mut self) -> (String, bool) {
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(DRAIN_GRACE, task).await.is_err() {
                abort.abort();
            }
        }
        let captured = std::mem::take(&mut *bridge_util::sync::lock(&self.captured));
        let text = decode(captured.bytes, captured.truncated);
        if !captured.truncated {
            return (text, false);
        }
        (redact_and_cut(&text, self.cap).text.into_owned(), true)
    }
}

/// Lossy UTF-8; a character cut in half by the cap is dropped rather than
/// shown as a replacement character.
fn decode(mut bytes: Vec<u8>, truncated: bool) -> String {
    if truncated
        && let Err(err) = std::str::from_utf8(&bytes)
        && err.error_len().is_none()
    {
        bytes.truncate(err.valid_up_to());
    }
    String::from_utf8(bytes)
        .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
}
