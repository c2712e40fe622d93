//! Audit log. (STUB: to be implemented.)

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::PolicyError;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub timestamp: String,
    pub session_id: String,
    pub hook: String,
    pub tool: String,
    pub input: Value,
    pub output: Value,
    pub decision: String,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone)]
pub struct AuditLog {
    dir: PathBuf,
}

impl AuditLog {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn append(&self, _entry: &AuditEntry) -> Result<(), PolicyError> {
        let _ = &self.dir;
        Ok(())
    }
}
