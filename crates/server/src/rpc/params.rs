//! Named parameters, with errors that name the field (`-32602`).

use bridge_protocol::jsonrpc::{ErrorObject, INVALID_PARAMS};
use serde_json::{Map, Value, json};

/// Who sent a request, by the bearer token it presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Caller {
    /// The daemon's token (`gateway.json`), which agents and providers get.
    #[default]
    Agent,
    /// The approver token (`approver-token`): may also answer approvals.
    Approver,
}

/// Who sent a request and how to reach them unasked.
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub caller: Caller,
    /// A WebSocket connection's notifications; `None` over HTTP.
    pub push: Option<super::push::Push>,
}

impl Client {
    pub fn new(caller: Caller) -> Self {
        Self { caller, push: None }
    }
}

/// A request's `params` object.
#[derive(Debug, Clone, Default)]
pub struct Params {
    map: Map<String, Value>,
    /// The request sent positional params; every method here takes names.
    positional: bool,
    client: Client,
}

impl Params {
    pub fn new(map: Map<String, Value>) -> Self {
        Self {
            map,
            ..Self::default()
        }
    }

    pub(crate) fn positional() -> Self {
        Self {
            positional: true,
            ..Self::default()
        }
    }

    /// Who sent the request.
    pub fn caller(&self) -> Caller {
        self.client.caller
    }

    /// The sender's connection for notifications (WebSocket only).
    pub(crate) fn push(&self) -> Option<&super::push::Push> {
        self.client.push.as_ref()
    }

    pub(crate) fn sent_by(mut self, client: &Client) -> Self {
        self.client = client.clone();
        self
    }

    /// For methods that take no params: refuses positional ones, as every
    /// method here does.
    pub fn expect_named(&self) -> Result<(), ErrorObject> {
        self.check_shape()
    }

    fn check_shape(&self) -> Result<(), ErrorObject> {
        if self.positional {
            return Err(ErrorObject::new(
                INVALID_PARAMS,
                "invalid params: `params` must be an object of named parameters",
            )
            .with_data(json!({"field": "params"})));
        }
        Ok(())
    }

    /// Refuses any named param not in `known`, so a misspelt optional param
    /// is an error instead of a silently ignored default.
    pub fn only(&self, known: &[&str]) -> Result<(), ErrorObject> {
        self.check_shape()?;
        match self.map.keys().find(|key| !known.contains(&key.as_str())) {
            Some(unknown) => Err(invalid(
                unknown,
                &format!(
                    "is not a parameter of this method (it takes: {})",
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    pub fn required_str(&self, field: &str) -> Result<&str, ErrorObject> {
        self.check_shape()?;
        match self.map.get(field) {
            Some(Value::String(text)) if !text.is_empty() => Ok(text),
            Some(Value::String(_)) => Err(invalid(field, "must not be empty")),
            Some(_) => Err(invalid(field, "must be a string")),
            None => Err(invalid(field, "is required")),
        }
    }

    pub fn optional_str(&self, field: &str) -> Result<Option<&str>, ErrorObject> {
        self.check_shape()?;
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if !text.is_empty() => Ok(Some(text)),
            Some(Value::String(_)) => Err(invalid(field, "must not be empty")),
            Some(_) => Err(invalid(field, "must be a string")),
        }
    }

    pub fn optional_u64(&self, field: &str) -> Result<Option<u64>, ErrorObject> {
        self.check_shape()?;
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| invalid(field, "must be a non-negative integer")),
        }
    }

    pub fn optional_bool(&self, field: &str) -> Result<Option<bool>, ErrorObject> {
        self.check_shape()?;
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(invalid(field, "must be true or false")),
        }
    }

    /// Any JSON value, as given (`None` when absent or null).
    pub fn optional_value(&self, field: &str) -> Result<Option<&Value>, ErrorObject> {
        self.check_shape()?;
        Ok(self.map.get(field).filter(|value| !value.is_null()))
    }

    /// An object parameter; absent or null is `{}`.
    pub fn object_or_empty(&self, field: &str) -> Result<Value, ErrorObject> {
        self.check_shape()?;
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(Value::Object(Map::new())),
            Some(value @ Value::Object(_)) => Ok(value.clone()),
            Some(_) => Err(invalid(field, "must be a JSON object")),
        }
    }
}

/// `-32602` naming `field`.
pub fn invalid(field: &str, problem: &str) -> ErrorObject {
    ErrorObject::new(
        INVALID_PARAMS,
        format!("invalid params: `{field}` {problem}"),
    )
    .with_data(json!({"field": field}))
}

/// The directory a client named as a workspace (`field` of its params), if
/// it may be one (docs/policy.md, "Which directories may be a workspace").
pub(crate) async fn named_workspace(
    ctx: &crate::app::ServerContext,
    field: &str,
    dir: &std::path::Path,
) -> Result<std::path::PathBuf, ErrorObject> {
    ctx.workspace(dir)
        .await
        .map_err(|refused| invalid(field, &refused))
}

/// What a session of `dir` is called when nobody names it: the directory's
/// own name.
pub(crate) fn dir_label(dir: &std::path::Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}
