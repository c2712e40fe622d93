//! `tools` and `tool_choice` of a Messages request.

use serde_json::{Value, json};

use super::{InboundError, UpstreamFormat, required_string};
use crate::ToolDefinition;

/// The client's tools as functions. `defer_loading` (Claude Code's tool
/// search) has no equivalent elsewhere: a deferred tool is sent as an
/// ordinary function. Anthropic's server tools run at Anthropic only: for
/// another upstream they are left out and named in `ignored`.
pub(super) fn tools(
    tools: Option<&Value>,
    format: UpstreamFormat,
    ignored: &mut Vec<String>,
) -> Result<Vec<ToolDefinition>, InboundError> {
    let list = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(InboundError::invalid("tools", "must be an array")),
    };
    let mut definitions = Vec::new();
    for (index, tool) in list.iter().enumerate() {
        let param = format!("tools.{index}");
        let tool = tool
            .as_object()
            .ok_or_else(|| InboundError::invalid(&param, "must be an object"))?;
        let name = required_string(tool, "name", &param)?;
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        if kind != "custom" {
            if format != UpstreamFormat::Anthropic {
                ignored.push(format!("{param}: server tool {name:?} ({kind})"));
            }
            continue;
        }
        let description = match tool.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(_) => {
                return Err(InboundError::invalid(
                    format!("{param}.description"),
                    "must be a string",
                ));
            }
        };
        let parameters = match tool.get("input_schema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            None | Some(Value::Null) => {
                return Err(InboundError::missing(format!("{param}.input_schema")));
            }
            Some(_) => {
                return Err(InboundError::invalid(
                    format!("{param}.input_schema"),
                    "must be a JSON Schema object",
                ));
            }
        };
        definitions.push(ToolDefinition {
            name,
            description,
            parameters,
        });
    }
    Ok(definitions)
}

/// A validated `tool_choice`, in OpenAI's terms.
pub(super) struct ToolChoice {
    pub(super) openai: Value,
    pub(super) no_parallel: bool,
}

pub(super) fn tool_choice(choice: Option<&Value>) -> Result<Option<ToolChoice>, InboundError> {
    let choice = match choice {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(choice)) => choice,
        Some(_) => return Err(InboundError::invalid("tool_choice", "must be an object")),
    };
    let openai = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => {
            let name = required_string(choice, "name", "tool_choice")?;
            json!({"type": "function", "function": {"name": name}})
        }
        _ => {
            return Err(InboundError::invalid(
                "tool_choice.type",
                "must be \"auto\", \"any\", \"tool\" or \"none\"",
            ));
        }
    };
    let no_parallel = match choice.get("disable_parallel_tool_use") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return Err(InboundError::invalid(
                "tool_choice.disable_parallel_tool_use",
                "must be true or false",
            ));
        }
    };
    Ok(Some(ToolChoice {
        openai,
        no_parallel,
    }))
}
