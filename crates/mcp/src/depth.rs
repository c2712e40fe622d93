//! Cycle detection: every tool of our servers takes `_depth` (how many
//! agent hops led to this call; 0 when absent). At [`MAX_CALL_DEPTH`] or
//! more the tool answers an error result instead of running, and calls the
//! bridge makes onward carry `_depth + 1` ([`onward`]).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

/// Calls this deep (or deeper) are refused.
pub const MAX_CALL_DEPTH: u64 = 3;
/// The argument name.
pub const DEPTH_ARG: &str = "_depth";

/// Environment variable that carries the depth to MCP servers an agent of
/// the bridge starts (its value is the onward depth); our servers read it
/// as the least depth of every call ([`floor_from_env`]).
pub const DEPTH_ENV: &str = "COPILOT_BRIDGE_MCP_DEPTH";
/// HTTP header with the same meaning, sent to streamable HTTP servers.
pub const DEPTH_HEADER: &str = "copilot-bridge-mcp-depth";

/// The depth floor from [`DEPTH_ENV`] (0 when unset or not a number).
pub fn floor_from_env() -> u64 {
    std::env::var(DEPTH_ENV)
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// The JSON Schema property every tool adds for `_depth`.
pub fn schema_property() -> Value {
    json!({
        "type": "integer",
        "minimum": 0,
        "description": "Agent hops that led to this call (cycle detection; calls at depth 3 or more are refused). Leave it out when calling directly."
    })
}

/// Why `_depth` stops a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepthError {
    /// `_depth` is not a non-negative integer: an invalid-params error.
    Invalid(String),
    /// Too deep: an error *result* (the model reads it and stops).
    TooDeep(u64),
}

/// Removes `_depth` from `args` and checks it: the depth to run at.
pub fn take_depth(args: &mut Map<String, Value>) -> Result<u64, DepthError> {
    let depth = match args.remove(DEPTH_ARG) {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
            DepthError::Invalid(format!(
                "`{DEPTH_ARG}` must be a non-negative integer, not {n}"
            ))
        })?,
        Some(other) => {
            return Err(DepthError::Invalid(format!(
                "`{DEPTH_ARG}` must be a non-negative integer, not {}",
                json_kind(&other)
            )));
        }
    };
    if depth >= MAX_CALL_DEPTH {
        return Err(DepthError::TooDeep(depth));
    }
    Ok(depth)
}

/// The input schema of one of our tools: an object of `properties` plus
/// `_depth`, `required` as given, no other fields.
pub fn tool_schema(properties: Value, required: &[&str]) -> rmcp::model::JsonObject {
    let mut properties = match properties {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    properties.insert(DEPTH_ARG.to_owned(), schema_property());
    let mut schema = rmcp::model::JsonObject::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".to_owned(), json!(required));
    }
    schema.insert("additionalProperties".to_owned(), json!(false));
    schema
}

/// The error result for a call refused as too deep.
pub fn too_deep_result(depth: u64) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(too_deep_message(depth))])
}

/// Why a call at `depth` is refused, for the model that made it.
pub fn too_deep_message(depth: u64) -> String {
    format!(
        "refused: call depth {depth} reaches the limit of {MAX_CALL_DEPTH} (a chain of agents calling each other); answer from what you already know instead of delegating again"
    )
}

/// The `_depth` for calls made on behalf of a call at `depth`.
pub fn onward(depth: u64) -> u64 {
    depth.saturating_add(1)
}

pub use bridge_protocol::json_kind;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn absent_depth_is_zero_and_is_removed() {
        let mut a = args(json!({"path": "x"}));
        assert_eq!(take_depth(&mut a), Ok(0));
        let mut a = args(json!({"path": "x", "_depth": 2}));
        assert_eq!(take_depth(&mut a), Ok(2));
        assert!(!a.contains_key(DEPTH_ARG));
    }

    #[test]
    fn depth_three_or_more_is_refused() {
        assert_eq!(
            take_depth(&mut args(json!({"_depth": 3}))),
            Err(DepthError::TooDeep(3))
        );
        assert_eq!(
            take_depth(&mut args(json!({"_depth": 90}))),
            Err(DepthError::TooDeep(90))
        );
    }

    #[test]
    fn wrong_types_are_invalid() {
        for bad in [json!("2"), json!(-1), json!(1.5), json!(true), json!([1])] {
            assert!(matches!(
                take_depth(&mut args(json!({"_depth": bad}))),
                Err(DepthError::Invalid(_))
            ));
        }
    }
}
