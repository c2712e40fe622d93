//! The gateway's frames: `req` out, `res` and `event` in, and the parts of
//! `hello-ok` this client uses. Unknown fields are ignored everywhere.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this client speaks (`minProtocol` = `maxProtocol`).
pub const PROTOCOL: u32 = 4;

/// An event the gateway sent (`agent`, `chat`, `task`, `tick`, ...).
#[derive(Debug, Clone)]
pub struct GatewayEvent {
    pub event: String,
    pub payload: Value,
    pub seq: Option<u64>,
}

/// An error the gateway answered with: `{code, message, details}`.
#[derive(Debug, Clone)]
pub(crate) struct RemoteError {
    pub code: String,
    pub message: String,
    pub details: Value,
    /// `retryable: true` on the error (a gateway still starting).
    pub retryable: bool,
    pub retry_after_ms: Option<u64>,
}

impl RemoteError {
    /// `details.code` (`AUTH_TOKEN_MISMATCH`, `PAIRING_REQUIRED`, ...).
    pub fn detail_code(&self) -> Option<&str> {
        self.details.get("code").and_then(Value::as_str)
    }
}

/// One frame from the gateway.
#[derive(Debug)]
pub(crate) enum Incoming {
    Response {
        id: String,
        outcome: Result<Value, RemoteError>,
    },
    Event(GatewayEvent),
    /// A frame of a type this client does not handle (the gateway does not
    /// send requests to operators; anything else is new).
    Other(String),
}

/// Parses a text frame; the error says what was wrong (without quoting it).
pub(crate) fn parse(text: &str) -> Result<Incoming, String> {
    let value: Value = serde_json::from_str(text).map_err(|err| format!("not JSON: {err}"))?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or("no \"type\"")?;
    match kind {
        "res" => {
            let id = value
                .get("id")
                .and_then(Value::as_str)
                .ok_or("a response without an \"id\"")?
                .to_owned();
            let ok = value
                .get("ok")
                .and_then(Value::as_bool)
                .ok_or("a response without \"ok\"")?;
            let outcome = if ok {
                Ok(value.get("payload").cloned().unwrap_or(Value::Null))
            } else {
                Err(remote_error(value.get("error")))
            };
            Ok(Incoming::Response { id, outcome })
        }
        "event" => {
            let event = value
                .get("event")
                .and_then(Value::as_str)
                .ok_or("an event without a name")?
                .to_owned();
            Ok(Incoming::Event(GatewayEvent {
                event,
                payload: value.get("payload").cloned().unwrap_or(Value::Null),
                seq: value.get("seq").and_then(Value::as_u64),
            }))
        }
        other => Ok(Incoming::Other(other.to_owned())),
    }
}

fn remote_error(error: Option<&Value>) -> RemoteError {
    let field = |name: &str| {
        error
            .and_then(|error| error.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let details = error
        .and_then(|error| error.get("details"))
        .cloned()
        .unwrap_or(Value::Null);
    RemoteError {
        code: field("code").unwrap_or_else(|| "UNKNOWN".to_owned()),
        message: field("message").unwrap_or_else(|| "(no message)".to_owned()),
        retryable: error
            .and_then(|error| error.get("retryable"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        retry_after_ms: error
            .and_then(|error| error.get("retryAfterMs"))
            .and_then(Value::as_u64),
        details,
    }
}

/// A request frame as text.
pub(crate) fn request(id: &str, method: &str, params: Value) -> String {
    serde_json::json!({"type": "req", "id": id, "method": method, "params": params}).to_string()
}

/// The gateway's name and this connection's id, from `hello-ok`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub conn_id: String,
}

/// The parts of `hello-ok` this client uses.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloOk {
    #[serde(default)]
    pub protocol: u32,
    #[serde(default)]
    pub server: ServerInfo,
    #[serde(default)]
    pub auth: HelloAuth,
    #[serde(default)]
    pub policy: HelloPolicy,
}

#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloAuth {
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// A token for this device, to present on the next connect.
    #[serde(default, deserialize_with = "secret")]
    pub device_token: Option<bridge_util::Secret>,
    #[serde(default)]
    pub issued_at_ms: Option<u64>,
}

impl std::fmt::Debug for HelloAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelloAuth")
            .field("method", &self.method)
            .field("role", &self.role)
            .field("scopes", &self.scopes)
            .field("device_token", &self.device_token)
            .finish()
    }
}

fn secret<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<bridge_util::Secret>, D::Error> {
    let token: Option<String> = Option::deserialize(deserializer)?;
    Ok(token
        .filter(|token| !token.trim().is_empty())
        .map(bridge_util::Secret::new))
}

/// Limits the gateway set for this connection.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloPolicy {
    #[serde(default = "default_max_payload")]
    pub max_payload: u64,
    #[serde(default)]
    pub max_buffered_bytes: Option<u64>,
    #[serde(default = "default_tick_interval")]
    pub tick_interval_ms: u64,
}

impl Default for HelloPolicy {
    fn default() -> Self {
        Self {
            max_payload: default_max_payload(),
            max_buffered_bytes: None,
            tick_interval_ms: default_tick_interval(),
        }
    }
}

/// The gateway's own limit (`MAX_PAYLOAD_BYTES`, 25 MiB) until it says.
pub const DEFAULT_MAX_PAYLOAD: u64 = 26_214_400;
/// The gateway's tick interval when `hello-ok` names none.
pub const DEFAULT_TICK_INTERVAL_MS: u64 = 30_000;

fn default_max_payload() -> u64 {
    DEFAULT_MAX_PAYLOAD
}

fn default_tick_interval() -> u64 {
    DEFAULT_TICK_INTERVAL_MS
}

/// `payload` of a successful `connect` as `hello-ok`.
pub fn parse_hello(payload: &Value) -> Result<HelloOk, String> {
    match payload.get("type").and_then(Value::as_str) {
        Some("hello-ok") => {}
        other => return Err(format!("connect answered {other:?}, not \"hello-ok\"")),
    }
    HelloOk::deserialize(payload).map_err(|err| format!("hello-ok does not parse: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_response_keeps_code_message_and_details() {
        let text = r#"{"type":"res","id":"1","ok":false,"error":{"code":"INVALID_REQUEST","message":"protocol mismatch","details":{"code":"PROTOCOL_MISMATCH","expectedProtocol":4}}}"#;
        let Ok(Incoming::Response { id, outcome }) = parse(text) else {
            panic!("not a response")
        };
        assert_eq!(id, "1");
        let error = outcome.unwrap_err();
        assert_eq!(error.code, "INVALID_REQUEST");
        assert_eq!(error.detail_code(), Some("PROTOCOL_MISMATCH"));
        assert!(!error.retryable);
    }

    #[test]
    fn frames_without_their_fields_are_errors_not_panics() {
        for text in [
            "",
            "[]",
            "{}",
            r#"{"type":"res"}"#,
            r#"{"type":"res","id":"1"}"#,
            r#"{"type":"event"}"#,
            r#"{"type":"res","id":7,"ok":true}"#,
        ] {
            assert!(parse(text).is_err(), "{text}");
        }
        assert!(matches!(
            parse(r#"{"type":"req","id":"1"}"#),
            Ok(Incoming::Other(kind)) if kind == "req"
        ));
    }

    #[test]
    fn hello_without_a_policy_gets_the_gateway_defaults() {
        let hello = parse_hello(&serde_json::json!({"type": "hello-ok", "protocol": 4})).unwrap();
        assert_eq!(hello.policy.tick_interval_ms, 30_000);
        assert_eq!(hello.policy.max_payload, DEFAULT_MAX_PAYLOAD);
        assert!(hello.auth.device_token.is_none());
        assert!(parse_hello(&serde_json::json!({"type": "welcome"})).is_err());
    }
}
