//! Shell command analysis on tree-sitter-bash. (STUB: to be implemented.)

use std::path::Path;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellVerdict {
    Safe,
    NeedsApproval,
    Dangerous,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellAnalysis {
    pub verdict: ShellVerdict,
    pub reasons: Vec<String>,
}

pub fn analyze(_command: &str, _workspace: &Path, _home: Option<&Path>) -> ShellAnalysis {
    ShellAnalysis {
        verdict: ShellVerdict::Dangerous,
        reasons: vec!["shell analysis not implemented".to_owned()],
    }
}
