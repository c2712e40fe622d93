//! Running the built binary with a clean environment and its own state directory.

use std::io::Write as _;

use assert_cmd::Command;
use bridge_testkit::TempWorkspace;
use tempfile::TempDir;

/// The binary with an empty environment except PATH, a private HOME and a
/// private COPILOT_BRIDGE_HOME, so the developer's own settings never leak in.
pub struct Bridge {
    pub state: TempDir,
}

impl Bridge {
    pub fn new() -> Self {
        Self {
            state: TempDir::new().unwrap(),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("copilot-bridge").unwrap();
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.state.path())
            .env("COPILOT_BRIDGE_HOME", self.state.path())
            // Asks are denied at once, as before approvals, unless a test
            // waits for a person (docs/approvals.md).
            .env("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "0");
        cmd
    }

    /// `copilot-bridge tool NAME --args ARGS --cwd WS`.
    pub fn tool(&self, ws: &TempWorkspace, name: &str, args: &serde_json::Value) -> Command {
        let mut cmd = self.cmd();
        cmd.args(["tool", name, "--compact", "--args"])
            .arg(args.to_string())
            .arg("--cwd")
            .arg(ws.path());
        cmd
    }
}

pub fn stdout_json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The repository's root (the peers and their scripts live under it).
pub use bridge_testkit::{python, repo_root};

/// Runs tests/peers/python/mcp_probe.py in `mode` with `steps`, over a clean
/// environment plus `env` with `home` as HOME and the state directory: its
/// JSON answer, one result per step.
pub fn mcp_probe(
    python: &std::path::Path,
    mode: &[&str],
    env: &[(&str, String)],
    home: &std::path::Path,
    steps: serde_json::Value,
) -> Vec<serde_json::Value> {
    let mut cmd = std::process::Command::new(python);
    cmd.arg(repo_root().join("tests/peers/python/mcp_probe.py"))
        .args(mode)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_BRIDGE_HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(steps.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the probe failed: {stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("probe output is not JSON ({err}); stderr: {stderr}"))
}
