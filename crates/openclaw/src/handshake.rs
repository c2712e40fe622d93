//! The `connect` request and what a refused one means.

use serde_json::{Value, json};

use crate::device::{DeviceIdentity, SignedFields, payload_v3};
use crate::frame::{PROTOCOL, RemoteError};

/// The client id the gateway knows backends by (custom ids are refused:
/// "must be equal to one of the allowed values").
pub const CLIENT_ID: &str = "gateway-client";
pub const CLIENT_MODE: &str = "backend";
pub const DISPLAY_NAME: &str = "copilot-bridge";
pub const ROLE: &str = "operator";
pub const SCOPES: [&str; 2] = ["operator.read", "operator.write"];

/// The platform as Node names it (`process.platform`), which is what the
/// gateway compares with a paired device's.
pub fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// The challenge the gateway opens with.
#[derive(Debug, Clone)]
pub(crate) struct Challenge {
    pub nonce: String,
    pub ts: u64,
}

impl Challenge {
    pub fn from_payload(payload: &Value) -> Result<Self, String> {
        let nonce = payload
            .get("nonce")
            .and_then(Value::as_str)
            .filter(|nonce| !nonce.trim().is_empty())
            .ok_or("connect.challenge without a nonce")?;
        let ts = payload
            .get("ts")
            .and_then(Value::as_u64)
            .ok_or("connect.challenge without a timestamp")?;
        Ok(Self {
            nonce: nonce.to_owned(),
            ts,
        })
    }
}

/// `connect`'s params: `token` in `auth.token` (the device token when we
/// hold one, else the gateway token), the device block signed over the
/// challenge when there is an identity.
pub(crate) fn connect_params(
    client_version: &str,
    token: Option<&str>,
    identity: Option<&DeviceIdentity>,
    challenge: &Challenge,
) -> Value {
    let mut params = json!({
        "minProtocol": PROTOCOL,
        "maxProtocol": PROTOCOL,
        "client": {
            "id": CLIENT_ID,
            "version": client_version,
            "platform": platform(),
            "mode": CLIENT_MODE,
            "displayName": DISPLAY_NAME,
        },
        "role": ROLE,
        "scopes": SCOPES,
        "caps": [],
        "userAgent": format!("copilot-bridge/{client_version}"),
    });
    if let Some(token) = token {
        params["auth"] = json!({ "token": token });
    }
    if let Some(identity) = identity {
        let payload = payload_v3(&SignedFields {
            device_id: identity.device_id(),
            client_id: CLIENT_ID,
            client_mode: CLIENT_MODE,
            role: ROLE,
            scopes: &SCOPES,
            signed_at_ms: challenge.ts,
            token: token.unwrap_or(""),
            nonce: &challenge.nonce,
            platform: platform(),
            device_family: "",
        });
        params["device"] = json!({
            "id": identity.device_id(),
            "publicKey": identity.public_key(),
            "signature": identity.sign(&payload),
            "signedAt": challenge.ts,
            "nonce": challenge.nonce,
        });
    }
    params
}

/// What to do after the gateway answered `connect` with an error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The gateway is starting or asks us to wait: retry after the delay.
    Transient { retry_after_ms: Option<u64> },
    /// Our credentials, pairing or protocol: nothing changes by retrying
    /// soon.
    Final,
}

pub(crate) fn classify(error: &RemoteError) -> Refusal {
    let details = &error.details;
    let asks_to_wait = details.get("recommendedNextStep").and_then(Value::as_str)
        == Some("wait_then_retry")
        || details.get("pauseReconnect").and_then(Value::as_bool) == Some(false);
    if error.code == "UNAVAILABLE" || error.retryable || asks_to_wait {
        Refusal::Transient {
            retry_after_ms: error.retry_after_ms,
        }
    } else {
        Refusal::Final
    }
}

/// Whether a refusal of a connect that presented the device token means
/// the token is stale.
pub(crate) fn is_token_mismatch(error: &RemoteError) -> bool {
    matches!(
        error.detail_code(),
        Some("AUTH_TOKEN_MISMATCH" | "AUTH_DEVICE_TOKEN_MISMATCH")
    ) || error.message.contains("device token")
}

/// The status line of a final refusal: the URL, the gateway's reason and
/// what to do.
pub(crate) fn refusal_message(url: &str, error: &RemoteError, had_token: bool) -> String {
    let code = error.detail_code().unwrap_or(&error.code);
    let hint = match code {
        "PROTOCOL_MISMATCH" => format!(
            "this client speaks gateway protocol {PROTOCOL}; the gateway expects {}: update OpenClaw or copilot-bridge so they match",
            details_number(&error.details, "expectedProtocol")
        ),
        "PAIRING_REQUIRED" => "approve this device on the gateway host (`openclaw devices list`, then `openclaw devices approve`), or set OPENCLAW_GATEWAY_TOKEN to the gateway's token".to_owned(),
        "AUTH_RATE_LIMITED" => "too many failed attempts: set OPENCLAW_GATEWAY_TOKEN to the gateway's token (`openclaw gateway auth-token` on its host prints it); the gateway accepts attempts again later".to_owned(),
        _ if error.message.starts_with("invalid connect params") => {
            "the gateway refused this client's connect request: update copilot-bridge to a version that supports this OpenClaw".to_owned()
        }
        _ if !had_token => "no gateway token is configured: set OPENCLAW_GATEWAY_TOKEN to the gateway's token (`openclaw gateway auth-token` on its host prints it)".to_owned(),
        _ => "set OPENCLAW_GATEWAY_TOKEN to this gateway's token (`openclaw gateway auth-token` on its host prints it)".to_owned(),
    };
    format!(
        "the OpenClaw gateway at {url} refused the connection: {} ({code}); {hint}",
        bridge_policy::redact::shorten(&error.message, 500)
    )
}

fn details_number(details: &Value, key: &str) -> String {
    details
        .get(key)
        .map(Value::to_string)
        .unwrap_or_else(|| "another version".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(code: &str, message: &str, details: Value) -> RemoteError {
        RemoteError {
            code: code.to_owned(),
            message: message.to_owned(),
            details,
            retryable: false,
            retry_after_ms: None,
        }
    }

    #[test]
    fn auth_refusals_are_final_and_a_starting_gateway_is_not() {
        let mismatch = refusal(
            "INVALID_REQUEST",
            "unauthorized: gateway token mismatch",
            json!({"code": "AUTH_TOKEN_MISMATCH"}),
        );
        assert_eq!(classify(&mismatch), Refusal::Final);
        assert!(is_token_mismatch(&mismatch));
        let not_paired = refusal(
            "NOT_PAIRED",
            "device identity required",
            json!({"code": "DEVICE_IDENTITY_REQUIRED"}),
        );
        assert_eq!(classify(&not_paired), Refusal::Final);
        assert!(!is_token_mismatch(&not_paired));
        let mut starting = refusal("UNAVAILABLE", "gateway starting", json!({}));
        starting.retry_after_ms = Some(500);
        assert_eq!(
            classify(&starting),
            Refusal::Transient {
                retry_after_ms: Some(500)
            }
        );
    }

    #[test]
    fn the_message_names_the_url_the_reason_and_what_to_do() {
        let message = refusal_message(
            "ws://127.0.0.1:1",
            &refusal(
                "INVALID_REQUEST",
                "protocol mismatch",
                json!({"code": "PROTOCOL_MISMATCH", "expectedProtocol": 5}),
            ),
            true,
        );
        assert!(message.contains("ws://127.0.0.1:1"), "{message}");
        assert!(message.contains("PROTOCOL_MISMATCH"), "{message}");
        assert!(message.contains("expects 5"), "{message}");
        let message = refusal_message(
            "ws://h:1",
            &refusal("NOT_PAIRED", "device identity required", json!({})),
            false,
        );
        assert!(message.contains("OPENCLAW_GATEWAY_TOKEN"), "{message}");
    }
}
