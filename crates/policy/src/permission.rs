//! Permission rules: blocked tools → blocked argument patterns → ask tools →
//! allowlist → default allow. (STUB: to be implemented.)

use bridge_protocol::Decision;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::PolicyError;

/// The rules as written in configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "snake_case", deny_unknown_fields)]
pub struct PermissionRules {
    /// Empty means every tool not otherwise blocked is allowed.
    pub allowed_tools: Vec<String>,
    pub blocked_tools: Vec<String>,
    pub ask_tools: Vec<String>,
    /// Regexes matched against the arguments serialized as JSON.
    pub blocked_patterns: Vec<String>,
}

/// Compiled rules.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    rules: PermissionRules,
}

impl PermissionPolicy {
    pub fn compile(rules: &PermissionRules) -> Result<Self, PolicyError> {
        Ok(Self {
            rules: rules.clone(),
        })
    }

    pub fn evaluate(&self, tool: &str, _args: &Value) -> Decision {
        let _ = (&self.rules, tool);
        Decision::deny("permission policy not implemented")
    }
}
