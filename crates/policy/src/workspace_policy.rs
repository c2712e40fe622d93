//! `.agent-policy.yaml` in the workspace root: write allow/deny globs and the
//! shell allow list. (STUB: to be implemented.)

use std::path::Path;

use bridge_protocol::Decision;

use crate::PolicyError;

pub const POLICY_FILE_NAME: &str = ".agent-policy.yaml";

#[derive(Debug, Clone, Default)]
pub struct WorkspacePolicy {}

impl WorkspacePolicy {
    /// Loads the policy file of `root`; a missing file is the empty policy.
    pub fn load(_root: &Path) -> Result<Self, PolicyError> {
        Ok(Self {})
    }

    pub fn from_yaml(_text: &str, _origin: &str) -> Result<Self, PolicyError> {
        Ok(Self {})
    }

    /// May the workspace-relative path `relative` be written?
    pub fn write_decision(&self, relative: &str, read_only: bool) -> Decision {
        let _ = (relative, read_only);
        Decision::deny("workspace policy not implemented")
    }

    pub fn shell_allowed(&self, _command: &str) -> bool {
        false
    }
}
