//! JSON-RPC 2.0 envelopes (the tool bus at `/rpc` and anything else that
//! speaks JSON-RPC).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A request or notification id: a string or a number (never fractional).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    String(String),
}

/// A request; `id: None` makes it a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Id>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// The error member of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A response: exactly one of `result` and `error` is present. `id` is
/// `null` when the request could not be read far enough to find its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub jsonrpc: String,
    pub id: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl Response {
    pub fn success(id: Option<Id>, result: Value) -> Self {
        Self {
            jsonrpc: "2.0".to_owned(),
            id,
            result: Some(result),
            error: None,
        }
    }

    pub fn failure(id: Option<Id>, error: ErrorObject) -> Self {
        Self {
            jsonrpc: "2.0".to_owned(),
            id,
            result: None,
            error: Some(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn notification_has_no_id_and_ignores_unknown_fields() {
        let req: Request =
            serde_json::from_value(json!({"jsonrpc":"2.0","method":"x","extra":1})).unwrap();
        assert_eq!(req.id, None);
        assert_eq!(req.method, "x");
    }

    #[test]
    fn failure_serializes_null_id_and_no_result() {
        let resp = Response::failure(None, ErrorObject::new(PARSE_ERROR, "Parse error"));
        let v = serde_json::to_value(resp).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})
        );
    }

    #[test]
    fn ids_keep_their_type() {
        let s: Id = serde_json::from_value(json!("7")).unwrap();
        let n: Id = serde_json::from_value(json!(7)).unwrap();
        assert_eq!(s, Id::String("7".into()));
        assert_eq!(n, Id::Number(7));
    }
}
