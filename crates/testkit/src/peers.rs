//! Where the repository and the installed test peers are: the Python venv
//! and the real agent CLIs that `scripts/install-test-deps.sh` puts under
//! `.peers/`. A missing peer skips its test loudly on a developer's machine
//! and fails it in CI (`CI` set), which installs every peer first.

use std::path::PathBuf;

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    // crates/testkit → the workspace root.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python peers' interpreter (scripts/install-test-deps.sh makes the
/// venv); without it the test is skipped loudly, and fails in CI, which
/// installs it first.
pub fn python() -> Option<PathBuf> {
    installed(
        repo_root().join(".peers/venv/bin/python"),
        "the Python peers",
    )
}

/// The executable `bin` of the npm package installed under `.peers/DIR`
/// (`agent_cli("claude", "claude")`: Claude Code).
pub fn agent_cli(dir: &str, bin: &str) -> Option<PathBuf> {
    let path = repo_root()
        .join(".peers")
        .join(dir)
        .join("node_modules/.bin")
        .join(bin);
    installed(path, bin)
}

/// The `npm` on PATH (scripts/install-test-deps.sh installs Node.js and
/// npm from the system's packages), for tests that pack and install the
/// npm package (npm/): skipped loudly without it, failed in CI.
pub fn npm() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("npm"))
            .find(|candidate| candidate.is_file())
    });
    // An empty path exists nowhere: skipped (or failed in CI) below.
    installed(found.unwrap_or_default(), "npm")
}

fn installed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let message = format!("{what}: not installed; run scripts/install-test-deps.sh");
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}
