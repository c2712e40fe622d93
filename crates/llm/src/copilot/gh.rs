//! Reading the GitHub token of the `gh` CLI, for auto-detection.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `gh auth token` may take: it only reads its config (or the
/// system keyring), so anything slower is a hang we must not wait on.
pub const GH_TOKEN_TIMEOUT: Duration = Duration::from_secs(5);

/// The token `gh auth token` prints, or `None` when `gh` is missing, not
/// logged in, fails, or hangs. Blocks for up to [`GH_TOKEN_TIMEOUT`]: call it
/// from `spawn_blocking` inside async code.
pub fn github_token_from_gh() -> Option<String> {
    github_token_from_command("gh", &["auth", "token"], GH_TOKEN_TIMEOUT)
}

/// The trimmed standard output of `program args…` when it exits
/// successfully within `timeout` with something printed; `None` otherwise.
/// The child is killed when it overstays.
pub fn github_token_from_command(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // gh explains "not logged in" on stderr; that is not our output.
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                // Best effort: the child may have exited in between.
                let _ = child.kill();
                let _ = child.wait();
                tracing::debug!(program, "gave up waiting for the token command");
                return None;
            }
        }
    };
    if !status.success() {
        return None;
    }
    // A token is tiny, so it fits in the pipe buffer and the child could
    // exit before we read.
    let mut output = String::new();
    child.stdout.take()?.read_to_string(&mut output).ok()?;
    let token = output.trim();
    (!token.is_empty()).then(|| token.to_owned())
}
