//! Where the `mcp-test-server` binary (an MCP server built on the official
//! SDK, see `src/bin/mcp-test-server.rs`) is, for tests of other crates.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of `mcp-test-server`, next to the running test binary's target
/// directory. `cargo test --workspace` builds it; when a test of another
/// crate runs alone (`cargo test -p ...`) and it is missing, it is built
/// once here.
pub fn mcp_test_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe()
            .unwrap_or_else(|err| panic!("cannot locate the test binary: {err}"));
        // target/<profile>/deps/<test> -> target/<profile>/mcp-test-server
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .unwrap_or_else(|| panic!("unexpected test binary path {}", exe.display()));
        let path = profile_dir.join(format!("mcp-test-server{}", std::env::consts::EXE_SUFFIX));
        if !path.is_file() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "bridge-testkit", "--bin", "mcp-test-server"])
                .status()
                .unwrap_or_else(|err| panic!("cannot run cargo to build mcp-test-server: {err}"));
            assert!(status.success(), "building mcp-test-server failed");
        }
        assert!(
            path.is_file(),
            "mcp-test-server not found at {}",
            path.display()
        );
        path
    })
    .clone()
}
