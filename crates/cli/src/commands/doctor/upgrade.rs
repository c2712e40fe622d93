//! Whether the running daemon is older than this program: its version
//! (gateway.json) against this binary's, and whether the file it was
//! started from has been replaced since (an upgrade installed over it).
//! `daemon start`, `daemon status`, `status` and `doctor` say so, with the
//! command that restarts it (docs/cli.md, "doctor").
//!
//! The executable a process runs is `/proc/PID/exe` (Linux): when the file
//! at its path was replaced, the path names another file than the one the
//! process runs (or, removed, `/proc` shows it as `(deleted)`). The new
//! file's version is what it prints for `--version`, asked within
//! `NETWORK_TIMEOUT`. Elsewhere only the versions are compared.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bridge_config::BridgeConfig;
use bridge_server::GatewayFile;

use super::{invocation, program_version};

/// Why the running daemon is not this program's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stale {
    /// The file it was started from is another file now.
    Replaced {
        path: PathBuf,
        /// What the file there says it is (`copilot-bridge X`), if it
        /// answered; `None` when it is gone or did not answer.
        now: Option<String>,
    },
    /// It reports another version than this binary's.
    OtherVersion,
}

/// What the daemon of `file` runs, when it is older than it should be.
pub(crate) async fn stale(file: &GatewayFile) -> Option<Stale> {
    if let Some((path, replaced)) = executable(file.pid)
        && replaced
    {
        let now = if path.is_file() {
            version_of(&path).await
        } else {
            None
        };
        return Some(Stale::Replaced { path, now });
    }
    (file.version != bridge_server::VERSION).then_some(Stale::OtherVersion)
}

/// The path the process `pid` was started from, and whether that path now
/// names another file; `None` where `/proc` does not tell (not Linux, or
/// not a process of ours).
fn executable(pid: u32) -> Option<(PathBuf, bool)> {
    let link = PathBuf::from(format!("/proc/{pid}/exe"));
    let target = std::fs::read_link(&link).ok()?;
    let running = std::fs::metadata(&link).ok()?;
    let text = target.to_string_lossy();
    let path = PathBuf::from(text.strip_suffix(" (deleted)").unwrap_or(&text));
    let replaced = match std::fs::metadata(&path) {
        Ok(now) => (now.dev(), now.ino()) != (running.dev(), running.ino()),
        Err(_) => true,
    };
    Some((path, replaced))
}

/// `X` of the `copilot-bridge X` that `path --version` prints.
async fn version_of(path: &Path) -> Option<String> {
    let line = program_version(path).await?;
    let version = line.strip_prefix("copilot-bridge ")?;
    let plain = |c: char| c.is_ascii_alphanumeric() || ".-+".contains(c);
    (!version.is_empty() && version.chars().all(plain)).then(|| version.to_owned())
}

/// The command that restarts the daemon of `config` with this program.
pub(crate) fn restart_command(config: &BridgeConfig) -> String {
    let program = invocation(config);
    format!("{program} daemon stop && {program} daemon start")
}

impl Stale {
    /// One sentence about the daemon of `file`.
    pub(crate) fn describe(&self, file: &GatewayFile) -> String {
        let daemon = format!("the daemon (pid {}, version {})", file.pid, file.version);
        match self {
            Self::Replaced {
                path,
                now: Some(now),
            } => format!(
                "{daemon} runs a binary replaced since it started: {} is copilot-bridge {now} now",
                path.display()
            ),
            Self::Replaced { path, now: None } => format!(
                "{daemon} runs a binary replaced since it started: {} is not the file it was started from",
                path.display()
            ),
            Self::OtherVersion => format!(
                "{daemon} is not this copilot-bridge's version ({})",
                bridge_server::VERSION
            ),
        }
    }

    /// The line `daemon start`, `daemon status` and `status` print.
    pub(crate) fn notice(&self, file: &GatewayFile, config: &BridgeConfig) -> String {
        format!(
            "note: {}; restart it: {}\n",
            self.describe(file),
            restart_command(config)
        )
    }
}
