//! Other processes by pid: is it alive, ask it to stop.

use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process, test_kill_process};

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

/// Whether a process with this pid is running (possibly someone else's:
/// callers confirm with `/healthz`). A zombie — exited, not yet reaped, as
/// happens under a container init that does not reap — is not running.
pub fn is_alive(raw: u32) -> bool {
    let Some(pid) = pid(raw) else { return false };
    let exists = match test_kill_process(pid) {
        Ok(()) => true,
        // It exists; we may not signal it.
        Err(err) => err == Errno::PERM,
    };
    exists && !is_zombie(raw)
}

/// Linux only (elsewhere: never a zombie as far as we know).
fn is_zombie(raw: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{raw}/stat")) else {
        return false;
    };
    // `pid (comm) state ...`; comm may contain spaces and parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z")
}

/// Sends SIGTERM.
pub fn terminate(raw: u32) -> Result<(), String> {
    let pid = pid(raw).ok_or_else(|| format!("{raw} is not a valid pid"))?;
    kill_process(pid, Signal::TERM).map_err(|err| format!("cannot signal pid {raw}: {err}"))
}

/// This process's pid.
pub fn own_pid() -> u32 {
    std::process::id()
}
