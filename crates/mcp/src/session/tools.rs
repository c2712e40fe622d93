//! A session's provider tools (or one service's) as MCP tools, and call
//! outcomes as MCP results.

use std::sync::Arc;

use bridge_engine::{CallOutcome, Session, ToolEntry, ToolOwner};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};

use crate::depth;

/// Which of a session's tools a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolScope {
    /// Those of providers (the workspace's and MCP servers' tools have
    /// their own doors): `/mcp/session`.
    Providers,
    /// Those of one in-process service (`ToolOwner::Service`): the
    /// session's own tools served to an agent CLI the hub runs
    /// (crate::session::for_agent).
    Service(String),
}

impl ToolScope {
    fn holds(&self, owner: &ToolOwner) -> bool {
        match (self, owner) {
            (Self::Providers, ToolOwner::Provider(_)) => true,
            (Self::Service(name), ToolOwner::Service(owner)) => name == owner,
            _ => false,
        }
    }
}

/// The tools of `scope` in `session`, sorted by name.
pub(crate) fn scoped_tools(session: &Session, scope: &ToolScope) -> Vec<Arc<ToolEntry>> {
    session
        .tools()
        .into_iter()
        .filter(|entry| scope.holds(&entry.owner))
        .collect()
}

/// The tool `name` of `session`, if `scope` holds it.
pub(crate) fn scoped_tool(
    session: &Session,
    scope: &ToolScope,
    name: &str,
) -> Option<Arc<ToolEntry>> {
    session.tool(name).filter(|entry| scope.holds(&entry.owner))
}

/// What a client sees of the list; two equal snapshots need no
/// notification between them.
pub(crate) type Snapshot = Vec<(String, String, Value)>;

pub(crate) fn snapshot(session: &Session, scope: &ToolScope) -> Snapshot {
    scoped_tools(session, scope)
        .iter()
        .map(|entry| {
            (
                entry.spec.name.clone(),
                entry.spec.description.clone(),
                entry.spec.input_schema.clone(),
            )
        })
        .collect()
}

/// The MCP tool for `entry`: its schema (an object schema even if the
/// provider sent something else) with `_depth` added.
pub(crate) fn mcp_tool(entry: &ToolEntry) -> Tool {
    let mut schema = match &entry.spec.input_schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    schema.insert("type".to_owned(), json!("object"));
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        *properties = Value::Object(Map::new());
    }
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(depth::DEPTH_ARG.to_owned(), depth::schema_property());
    }
    Tool::new(
        entry.spec.name.clone(),
        entry.spec.description.clone(),
        Arc::new(schema),
    )
}

/// A call's outcome as the agent reads it. Success: the result as text
/// (a string as is, anything else as JSON) and, when it is an object, as
/// `structuredContent`. Failure (the tool's error, a denial by policy, a
/// hook rule or a gate, a provider that went away): `isError` with
/// `CODE: message` and `structuredContent.error = {code, message}`. Text
/// that context rules added follows as further blocks.
pub(crate) fn call_result(outcome: CallOutcome) -> CallToolResult {
    let extra = outcome
        .context
        .iter()
        .map(|text| ContentBlock::text(format!("context: {text}")));
    match outcome.result {
        Ok(value) => {
            let mut content = success_content(&value);
            content.extend(extra);
            let mut result = CallToolResult::success(content);
            if value.is_object() {
                result.structured_content = Some(value);
            }
            result
        }
        Err(failure) => {
            let mut content = vec![ContentBlock::text(format!(
                "{}: {}",
                failure.code, failure.message
            ))];
            content.extend(extra);
            let mut result = CallToolResult::error(content);
            result.structured_content = Some(json!({ "error": failure }));
            result
        }
    }
}

fn success_content(value: &Value) -> Vec<ContentBlock> {
    match value {
        Value::String(text) => vec![ContentBlock::text(text.clone())],
        _ => match file_image(value) {
            Some(image) => {
                // The payload goes out once, as the image.
                let mut described = value.clone();
                if let Some(map) = described.as_object_mut() {
                    map.remove("base64");
                }
                vec![ContentBlock::text(described.to_string()), image]
            }
            None => vec![ContentBlock::text(value.to_string())],
        },
    }
}

/// A provider's file reference holding an image (`{"file": {"mimeType":
/// "image/..."}, "base64": ...}`, the gateway's form of a large result) as
/// an image block the agent can look at.
fn file_image(value: &Value) -> Option<ContentBlock> {
    let mime = value.get("file")?.get("mimeType")?.as_str()?;
    let data = value.get("base64")?.as_str()?;
    mime.starts_with("image/")
        .then(|| ContentBlock::image(data.to_owned(), mime.to_owned()))
}
