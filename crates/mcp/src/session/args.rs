//! Checks on a call's arguments before it reaches the session: size, and
//! the JSON types the tool's schema declares. A provider validates its own
//! arguments too; these checks give the agent a clear invalid-params error
//! at once instead of a round trip to the provider.

use serde_json::{Map, Value};

/// Arguments larger than this (serialized) are refused: the gateway's
/// message limit to a provider is 2 MB, and the call carries an envelope.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// Refuses arguments over [`MAX_ARGUMENT_BYTES`].
pub(crate) fn check_size(tool: &str, args: &Map<String, Value>) -> Result<(), String> {
    let size = serde_json::to_vec(args).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_ARGUMENT_BYTES {
        return Err(format!(
            "the arguments of {tool} are {size} bytes; the limit is {MAX_ARGUMENT_BYTES} bytes"
        ));
    }
    Ok(())
}

/// The `required` properties are present and every argument the schema
/// types has that type. Only the top level is checked; anything the schema
/// does not describe passes (the provider decides).
pub(crate) fn check_types(
    tool: &str,
    schema: &Value,
    args: &Map<String, Value>,
) -> Result<(), String> {
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(name) {
                return Err(format!("{tool}: missing required argument `{name}`"));
            }
        }
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, value) in args {
        let Some(declared) = properties.get(name).and_then(|p| p.get("type")) else {
            continue;
        };
        let allowed: Vec<&str> = match declared {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if !allowed.is_empty() && !allowed.iter().any(|kind| has_type(value, kind)) {
            return Err(format!(
                "{tool}: argument `{name}` must be {}, not {}",
                allowed.join(" or "),
                schema_type_of(value)
            ));
        }
    }
    Ok(())
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // A type this check does not know: the provider decides.
        _ => true,
    }
}

/// The JSON Schema `type` `value` has (`integer` for a whole number): the
/// schema's own words, unlike [`bridge_protocol::json_kind`]'s prose.
fn schema_type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn declared_types_and_required_properties_are_checked() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": ["string", "null"]}},
            "required": ["q"]
        });
        assert!(
            check_types(
                "t",
                &schema,
                &args(json!({"q": "a", "n": 2, "x": null, "extra": 1}))
            )
            .is_ok()
        );
        assert!(check_types("t", &schema, &args(json!({"q": "a", "n": 2.0}))).is_ok());
        let err = check_types("t", &schema, &args(json!({"q": 5}))).unwrap_err();
        assert_eq!(err, "t: argument `q` must be string, not integer");
        let err = check_types("t", &schema, &args(json!({"q": "a", "n": 1.5}))).unwrap_err();
        assert_eq!(err, "t: argument `n` must be integer, not number");
        let err = check_types("t", &schema, &args(json!({"n": 1}))).unwrap_err();
        assert_eq!(err, "t: missing required argument `q`");
    }

    #[test]
    fn oversized_arguments_are_refused() {
        let big = args(json!({"q": "x".repeat(MAX_ARGUMENT_BYTES)}));
        assert!(
            check_size("t", &big)
                .unwrap_err()
                .contains("the limit is 1048576 bytes")
        );
        assert!(check_size("t", &args(json!({"q": "x"}))).is_ok());
    }
}
