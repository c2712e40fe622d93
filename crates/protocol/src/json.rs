//! Naming JSON values in error messages.

use serde_json::Value;

/// How an error message names a JSON value's type: "null", "a boolean",
/// "a number", "a string", "an array", "an object".
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
