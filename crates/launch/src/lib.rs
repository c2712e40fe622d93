//! The one way copilot-bridge starts a child process: the shell tool's
//! commands, tasks and formatters, MCP servers over stdio, project
//! providers, the Copilot CLI, and every agent CLI launched later.
//!
//! A [`Launch`] gets its environment from the one policy in [`env`] (never
//! the daemon's environment whole: our tokens and BYOK keys reach a child
//! only when [`ChildEnv::set`] names them for it), runs in a process group
//! of its own, and its [`Child`] kills that whole group (grandchildren
//! included) when dropped, so no path leaves a process running. Stderr is
//! either handed to the caller or kept as a bounded tail of redacted lines
//! for error messages.
//!
//! This crate must not decide whether a command may run (the policy's
//! decision did, before), and must not log or keep anything a child prints
//! unredacted.

pub mod env;

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

pub use env::{ChildEnv, is_secret_env_name};

/// What happens to a child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// Discarded.
    Null,
    /// Handed to the caller ([`Child::take_stderr`]).
    Piped,
    /// Read in the background; the last `lines` lines (each cut to
    /// `line_chars` characters, redacted) are kept for
    /// [`Child::stderr_tail`].
    Tail { lines: usize, line_chars: usize },
}

/// How to start a child.
#[derive(Debug)]
pub struct Launch {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: ChildEnv,
    stdin: bool,
    stdout: bool,
    stderr: Stderr,
}

/// A child that could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start {program}: {source}")]
pub struct LaunchError {
    /// The program as it was named.
    pub program: String,
    #[source]
    pub source: std::io::Error,
}

impl LaunchError {
    /// The program does not exist or may not be executed: retrying will
    /// not help.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self.source.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
        )
    }
}

impl Launch {
    /// `program` with no arguments, the minimal environment, no stdin, a
    /// piped stdout and a kept stderr tail (20 lines).
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: ChildEnv::minimal(),
            stdin: false,
            stdout: true,
            stderr: Stderr::Tail {
                lines: 20,
                line_chars: 300,
            },
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    pub fn env(mut self, env: ChildEnv) -> Self {
        self.env = env;
        self
    }

    /// Give the child a stdin pipe ([`Child::take_stdin`]).
    pub fn stdin_piped(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// Discard the child's stdout instead of piping it.
    pub fn stdout_null(mut self) -> Self {
        self.stdout = false;
        self
    }

    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// Starts the child in a process group of its own.
    pub fn spawn(self) -> Result<Child, LaunchError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.build())
            .stdin(pipe_or_null(self.stdin))
            .stdout(pipe_or_null(self.stdout))
            .stderr(pipe_or_null(self.stderr != Stderr::Null))
            .kill_on_drop(true);
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|source| LaunchError {
            program: self.program.to_string_lossy().into_owned(),
            source,
        })?;
        let tail = match self.stderr {
            Stderr::Tail { lines, line_chars } => {
                let tail = Arc::new(Mutex::new(VecDeque::with_capacity(lines)));
                if let Some(stderr) = child.stderr.take() {
                    tokio::spawn(keep_tail(stderr, tail.clone(), lines, line_chars));
                }
                Some(tail)
            }
            Stderr::Null | Stderr::Piped => None,
        };
        Ok(Child {
            group: child.id(),
            inner: child,
            tail,
        })
    }
}

fn pipe_or_null(piped: bool) -> Stdio {
    if piped { Stdio::piped() } else { Stdio::null() }
}

/// Keeps the last `lines` lines of `stderr`, redacted and cut.
async fn keep_tail(
    stderr: ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    lines: usize,
    line_chars: usize,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a child that never ends its line cannot grow this.
        match (&mut reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() || lines == 0 {
            continue;
        }
        let mut tail = bridge_util::sync::lock(&tail);
        if tail.len() == lines {
            tail.pop_front();
        }
        tail.push_back(bridge_policy::redact::preview(text, line_chars));
    }
}

/// A started child. Dropping it kills its whole process group.
#[derive(Debug)]
pub struct Child {
    inner: tokio::process::Child,
    /// The group's id (the child leads it); `None` once it is known gone.
    group: Option<u32>,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
}

/// A signal for the whole group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Please stop.
    Term,
    /// Stop now.
    Kill,
}

impl Child {
    pub fn id(&self) -> Option<u32> {
        self.inner.id()
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.inner.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.inner.stdout.take()
    }

    /// The stderr pipe, with [`Stderr::Piped`].
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.inner.stderr.take()
    }

    /// The kept stderr lines, joined with ` | ` (with [`Stderr::Tail`]).
    pub fn stderr_tail(&self) -> Option<String> {
        let tail = self.tail.as_ref()?;
        let lines = bridge_util::sync::lock(tail);
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }

    /// Waits for the child itself to exit.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.inner.wait().await
    }

    /// The exit status if the child has exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.inner.try_wait()
    }

    /// Signals every process of the group (grandchildren included).
    /// Errors mean the group is already gone.
    pub fn signal_group(&self, signal: Signal) {
        #[cfg(unix)]
        if let Some(pid) = self
            .group
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let signal = match signal {
                Signal::Term => rustix::process::Signal::TERM,
                Signal::Kill => rustix::process::Signal::KILL,
            };
            let _ = rustix::process::kill_process_group(pid, signal);
        }
        #[cfg(not(unix))]
        let _ = signal;
    }

    /// Ends the child: SIGTERM to the group, SIGKILL after `grace`; the
    /// group's stragglers are killed in any case. Returns how the child
    /// ended, if it did.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal_group(Signal::Term);
        if let Ok(Ok(status)) = tokio::time::timeout(grace, self.inner.wait()).await {
            self.signal_group(Signal::Kill);
            return Some(status);
        }
        self.signal_group(Signal::Kill);
        let _ = self.inner.start_kill();
        tokio::time::timeout(Duration::from_secs(5), self.inner.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // The child itself has kill_on_drop (tokio reaps it); its group may
        // hold grandchildren that would outlive us.
        self.signal_group(Signal::Kill);
    }
}

/// How a child ended, in words for error messages.
pub fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}
