//! The project's `.agent-policy.yaml`, loaded as every session loads it
//! (`bridge_policy::WorkspacePolicy::load`, crates/policy/src/workspace_policy.rs):
//! a file that does not load fails a new session in this workspace, and a
//! running one keeps its last good policy (docs/policy.md).

use std::path::Path;

use bridge_policy::WorkspacePolicy;
use bridge_policy::workspace_policy::POLICY_FILE_NAME;

use super::{Check, shell_word};

pub(super) fn check(project: &Path) -> Check {
    const NAME: &str = "workspace policy";
    let file = project.join(POLICY_FILE_NAME);
    if !file.exists() {
        return Check::ok(
            NAME,
            format!(
                "no {POLICY_FILE_NAME} in {}; config.toml's rules apply",
                project.display()
            ),
        );
    }
    match WorkspacePolicy::load(project) {
        Ok(_) => Check::ok(NAME, format!("{} is valid", file.display())),
        Err(err) => Check::fail(
            NAME,
            format!(
                "{err} (a new session here fails to load it; a running one keeps its last good policy)"
            ),
            format!("correct {} (see docs/policy.md)", shell_word(&file)),
        ),
    }
}
