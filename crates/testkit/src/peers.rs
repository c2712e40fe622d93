//! Where the repository and the installed test peers are: the Python venv
//! and the agent CLIs that `scripts/install-test-deps.sh` puts under
//! `.peers/`.

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
    let python = repo_root().join(".peers/venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    let message = "the Python peers are missing: run scripts/install-test-deps.sh";
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}
