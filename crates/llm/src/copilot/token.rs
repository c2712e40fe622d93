//! The exchange of a GitHub token for a short-lived Copilot API token, and
//! when to do it again.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;

use crate::LlmError;

/// The answer of `GET /copilot_internal/v2/token` (only what we use).
#[derive(Deserialize)]
pub(super) struct TokenAnswer {
    pub token: String,
    /// Unix seconds.
    pub expires_at: u64,
    /// Seconds after which GitHub suggests a refresh.
    #[serde(default)]
    pub refresh_in: Option<u64>,
    #[serde(default)]
    pub endpoints: Option<Endpoints>,
}

#[derive(Deserialize)]
pub(super) struct Endpoints {
    #[serde(default)]
    pub api: Option<String>,
}

/// A Copilot token in use. Its text only lives in a sensitive header value,
/// which `Debug` prints as `Sensitive`.
#[derive(Debug, Clone)]
pub(super) struct CopilotToken {
    pub bearer: HeaderValue,
    /// Where chat requests go, as the exchange told us (if it did).
    pub api_base: Option<String>,
    pub refresh_at: Instant,
}

impl CopilotToken {
    /// Reads an exchange answer. The token is refreshed after `refresh_in`,
    /// and in any case `margin` before it expires, so that a request started
    /// just before expiry does not carry a dead token.
    pub(super) fn from_answer(
        backend: &str,
        body: &str,
        margin: Duration,
    ) -> Result<Self, LlmError> {
        let protocol = |message: String| LlmError::Protocol {
            backend: backend.to_owned(),
            message,
        };
        // The body holds the token: an error must never quote it.
        let answer: TokenAnswer = serde_json::from_str(body)
            .map_err(|err| protocol(format!("invalid Copilot token answer: {err}")))?;
        if answer.token.is_empty() {
            return Err(protocol(
                "the Copilot token answer has an empty token".into(),
            ));
        }
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", answer.token))
            .map_err(|_| protocol("the Copilot token is not a valid header value".into()))?;
        bearer.set_sensitive(true);
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or(0);
        let valid_for = Duration::from_secs(answer.expires_at.saturating_sub(now_unix));
        let mut refresh_after = valid_for.saturating_sub(margin);
        if let Some(refresh_in) = answer.refresh_in {
            refresh_after = refresh_after.min(Duration::from_secs(refresh_in));
        }
        let api_base = answer
            .endpoints
            .and_then(|endpoints| endpoints.api)
            .map(|api| api.trim_end_matches('/').to_owned())
            .filter(|api| api.starts_with("https://") || api.starts_with("http://"));
        Ok(Self {
            bearer,
            api_base,
            refresh_at: Instant::now() + refresh_after,
        })
    }

    pub(super) fn is_fresh(&self) -> bool {
        Instant::now() < self.refresh_at
    }
}

/// The `Authorization` value of the exchange itself: GitHub wants
/// `token …`, not `Bearer …`.
pub(super) fn github_authorization(
    github_token: &str,
) -> Option<(reqwest::header::HeaderName, HeaderValue)> {
    let mut value = HeaderValue::from_str(&format!("token {github_token}")).ok()?;
    value.set_sensitive(true);
    Some((AUTHORIZATION, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix_now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn refresh_comes_at_refresh_in_or_margin_before_expiry_whichever_is_first() {
        let body = format!(
            r#"{{"token":"tok-secret-1","expires_at":{},"refresh_in":100,"endpoints":{{"api":"https://api.example/"}}}}"#,
            unix_now() + 1800
        );
        let token = CopilotToken::from_answer("c", &body, Duration::from_secs(60)).unwrap();
        let after = token.refresh_at - Instant::now();
        assert!(
            after <= Duration::from_secs(100) && after > Duration::from_secs(95),
            "{after:?}"
        );
        assert_eq!(token.api_base.as_deref(), Some("https://api.example"));
        assert!(token.bearer.is_sensitive());
        assert!(!format!("{token:?}").contains("tok-secret-1"));

        let body = format!(r#"{{"token":"t2","expires_at":{}}}"#, unix_now() + 90);
        let token = CopilotToken::from_answer("c", &body, Duration::from_secs(60)).unwrap();
        let after = token.refresh_at - Instant::now();
        assert!(
            after <= Duration::from_secs(30) && after > Duration::from_secs(25),
            "{after:?}"
        );
        assert_eq!(token.api_base, None);
    }

    #[test]
    fn an_expired_token_is_stale_at_once() {
        let body = format!(r#"{{"token":"t","expires_at":{}}}"#, unix_now() - 10);
        let token = CopilotToken::from_answer("c", &body, Duration::from_secs(60)).unwrap();
        assert!(!token.is_fresh());
    }

    #[test]
    fn bad_answers_are_protocol_errors_that_never_quote_the_token() {
        let err = CopilotToken::from_answer("c", r#"{"token":"secret-tok"}"#, Duration::ZERO)
            .unwrap_err();
        assert!(matches!(err, LlmError::Protocol { .. }), "{err}");
        assert!(!err.to_string().contains("secret-tok"), "{err}");
        let err = CopilotToken::from_answer("c", r#"{"token":"","expires_at":1}"#, Duration::ZERO)
            .unwrap_err();
        assert!(err.to_string().contains("empty token"), "{err}");
        let err = CopilotToken::from_answer(
            "c",
            r#"{"token":"bad\nsecret","expires_at":1}"#,
            Duration::ZERO,
        )
        .unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn an_api_endpoint_that_is_not_http_is_ignored() {
        let body = format!(
            r#"{{"token":"t","expires_at":{},"endpoints":{{"api":"file:///etc"}}}}"#,
            unix_now() + 100
        );
        let token = CopilotToken::from_answer("c", &body, Duration::ZERO).unwrap();
        assert_eq!(token.api_base, None);
    }
}
