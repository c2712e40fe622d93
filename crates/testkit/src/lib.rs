//! Test support for copilot-bridge: real temporary workspaces on disk, a
//! mock LLM upstream speaking the real wire formats over real HTTP
//! ([`mock_llm`]), a WebSocket provider client ([`provider_client`]),
//! private keys shaped like real ones for redaction tests ([`fake_keys`]),
//! and a real VS Code (code-server in headless Chromium) for the editor
//! extension's tests ([`vscode`]).
//!
//! Only ever a dev-dependency. It must not contain production logic, and it
//! must not fake the thing under test: helpers here build real files, real
//! directories and real symlinks for tests to run against.

pub mod browser;
pub mod fake_keys;
pub mod mcp_http;
pub mod memory_corpus;
pub mod mock_llm;
pub mod openclaw;
pub mod otlp;
pub mod peers;
pub mod provider_client;
pub mod swap_race;
pub mod vscode;

pub use fake_keys::FakeKey;
pub use mock_llm::{MockLlm, MockReply, MockToolCall, RecordedRequest};
pub use peers::{agent_cli, npm, python, repo_root};
pub use provider_client::{ProviderClient, Received};
pub use swap_race::SwapRace;

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A workspace directory that is removed when dropped.
#[derive(Debug)]
pub struct TempWorkspace {
    dir: TempDir,
    root: PathBuf,
}

impl TempWorkspace {
    /// An empty workspace; its path is canonical (symlinks such as macOS
    /// `/tmp` resolved), so tests can compare paths directly.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bridge-ws-")
            .tempdir()
            .unwrap_or_else(|err| panic!("cannot create temp workspace: {err}"));
        let root = fs::canonicalize(dir.path())
            .unwrap_or_else(|err| panic!("cannot canonicalize temp workspace: {err}"));
        Self { dir, root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Writes `contents` at the workspace-relative `relative`, creating parents.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", parent.display()));
        }
        fs::write(&path, contents)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
        path
    }

    /// Reads the workspace-relative file as UTF-8.
    pub fn read(&self, relative: &str) -> String {
        let path = self.root.join(relative);
        fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
    }

    pub fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.root.join(relative);
        fs::create_dir_all(&path)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", path.display()));
        path
    }

    /// Creates a symlink at `relative` pointing to `target` (any path).
    #[cfg(unix)]
    pub fn symlink(&self, target: impl AsRef<Path>, relative: &str) -> PathBuf {
        let link = self.root.join(relative);
        if let Some(parent) = link.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", parent.display()));
        }
        std::os::unix::fs::symlink(target.as_ref(), &link)
            .unwrap_or_else(|err| panic!("cannot symlink {}: {err}", link.display()));
        link
    }

    /// Keeps the directory on disk after the test (for debugging).
    pub fn keep(self) -> PathBuf {
        let root = self.root.clone();
        let _ = self.dir.keep();
        root
    }
}

impl Default for TempWorkspace {
    fn default() -> Self {
        Self::new()
    }
}

/// An executable `copilot` in `dir` that runs `fake-copilot-cli`'s `task`
/// script, recording every message to `record` when given: what a test
/// names as `COPILOT_CLI_PATH` (the CLI gets the launcher's minimal
/// environment, so the fake's settings travel in the script, as a user's
/// own wrapper would carry them).
///
/// Panics (tests only) when the script cannot be written.
#[allow(clippy::expect_used)]
pub fn fake_copilot_cli(dir: &Path, record: Option<&Path>) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let wrapper = dir.join("copilot");
    let record = record
        .map(|path| format!("FAKE_COPILOT_RECORD='{}' ", path.display()))
        .unwrap_or_default();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec env FAKE_COPILOT_SCRIPT=task {record}'{}' \"$@\"\n",
            built_binary("fake-copilot-cli").display()
        ),
    )
    .expect("the fake Copilot CLI's script is written");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("the fake Copilot CLI's script is made executable");
    wrapper
}

/// The path of one of this crate's binaries (`mock-llm`, `fake-copilot-cli`,
/// `mcp-test-server`), built on first use. A dev-dependency's binaries are
/// not built by `cargo test` of the crate that depends on it, so tests that
/// spawn them call this.
///
/// Panics (tests only) when the build fails.
#[allow(clippy::expect_used)]
pub fn built_binary(name: &str) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Mutex::default);
    let mut built = built
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let workspace = peers::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args(["build", "-q", "-p", "bridge-testkit", "--bin", name])
        .current_dir(&workspace)
        .status()
        .expect("cargo build of a testkit binary could not start");
    assert!(
        status.success(),
        "cargo build -p bridge-testkit --bin {name} failed"
    );
    // The test executable lives in target/<profile>/deps/.
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable is in target/<profile>/deps");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    built.insert(name.to_owned(), path.clone());
    path
}

/// Runs one `#[ignore]`d test of the current test binary again, in a child
/// process with `env` added to its environment, and panics unless it
/// passed. For tests that need variables in the process environment
/// (setting them in-process is unsafe while other test threads run): the
/// ignored test does the work, the caller's test only starts it.
pub fn rerun_ignored_test_with_env(test: &str, env: &[(&str, &str)]) {
    let exe =
        std::env::current_exe().unwrap_or_else(|err| panic!("the test executable's path: {err}"));
    let output = std::process::Command::new(exe)
        .args(["--ignored", "--exact", test, "--test-threads=1"])
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|err| panic!("cannot run {test} again: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed in the child:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
