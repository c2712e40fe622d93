//! How a tool describes itself to agents (MCP, OpenAI function calling, the
//! tool bus all carry the same three fields).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool does to the world; the policy treats each class differently
/// (writes obey read-only mode and the workspace policy's write globs,
/// execution obeys the shell analysis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolEffect {
    Read,
    Write,
    Execute,
}

impl ToolEffect {
    /// The wire name: `read`, `write` or `execute`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Execute => "execute",
        }
    }
}

/// A tool as agents see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's arguments object.
    pub input_schema: Value,
    pub effect: ToolEffect,
}
