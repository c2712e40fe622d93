//! GitHub Copilot: a GitHub token is exchanged for a short-lived Copilot
//! API token, which then authorizes chat requests in the OpenAI wire format
//! on Copilot's API, together with the editor and integration headers
//! Copilot requires.

mod gh;
mod token;

use bridge_util::Secret;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use tokio::sync::Mutex;

use crate::{
    ChatBackend, ChatRequest, ChatResponse, ChatStream, LlmError, OpenAiBackend, OpenAiConfig,
};
pub use gh::{GH_TOKEN_TIMEOUT, github_token_from_command, github_token_from_gh};
use token::{CopilotToken, github_authorization};

/// Where GitHub exchanges a GitHub token for a Copilot token.
pub const COPILOT_TOKEN_URL: &str = "https://api.github.com/copilot_internal/v2/token";

/// The Copilot plan, which decides the default API host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CopilotAccountType {
    #[default]
    Individual,
    Business,
    Enterprise,
}

impl CopilotAccountType {
    /// The API base used when neither the configuration nor the token
    /// exchange names one.
    pub fn default_api_base(self) -> &'static str {
        match self {
            Self::Individual => "https://api.githubcopilot.com",
            Self::Business => "https://api.business.githubcopilot.com",
            Self::Enterprise => "https://api.enterprise.githubcopilot.com",
        }
    }
}

impl std::str::FromStr for CopilotAccountType {
    type Err = String;

    /// `individual`, `business` or `enterprise` (config.toml's `account_type`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "individual" => Ok(Self::Individual),
            "business" => Ok(Self::Business),
            "enterprise" => Ok(Self::Enterprise),
            other => Err(format!(
                "unknown Copilot account type {other:?}: expected individual, business or enterprise"
            )),
        }
    }
}

/// The editor and integration headers Copilot's API checks. Copilot
/// identifies the client by them and GitHub changes what it accepts over
/// time (new editor versions, retired integration ids): when requests start
/// failing with 400/403 while the token is fine, update these in the
/// configuration rather than waiting for a release.
pub fn default_integration_headers() -> Vec<(String, String)> {
    [
        ("Editor-Version", "vscode/1.99.3"),
        ("Editor-Plugin-Version", "copilot-chat/0.26.7"),
        ("Copilot-Integration-Id", "vscode-chat"),
        ("User-Agent", "GitHubCopilotChat/0.26.7"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

#[derive(Debug, Clone)]
pub struct CopilotConfig {
    /// Shown in logs and errors.
    pub name: String,
    /// A GitHub token of an account with Copilot (`COPILOT_GITHUB_TOKEN`,
    /// else `gh auth token`). Secret: never logged.
    pub github_token: Secret,
    /// The token exchange endpoint ([`COPILOT_TOKEN_URL`]).
    pub token_url: String,
    /// Overrides the API base; else the one the token exchange names, else
    /// the account type's default.
    pub api_base: Option<String>,
    pub account_type: CopilotAccountType,
    /// Sent with every request, the exchange included
    /// ([`default_integration_headers`]).
    pub integration_headers: Vec<(String, String)>,
    /// Used when a request names no model.
    pub default_model: String,
    /// A token is exchanged again when less than this remains before it
    /// expires (or when the exchange's `refresh_in` has passed).
    pub refresh_margin: Duration,
    /// Limit for connecting and receiving the response headers.
    pub request_timeout: Duration,
    /// Limit for waiting on the next bytes of a streamed answer.
    pub idle_timeout: Duration,
}

impl CopilotConfig {
    pub fn new(github_token: impl Into<Secret>, default_model: impl Into<String>) -> Self {
        Self {
            name: "copilot".into(),
            github_token: github_token.into(),
            token_url: COPILOT_TOKEN_URL.into(),
            api_base: None,
            account_type: CopilotAccountType::default(),
            integration_headers: default_integration_headers(),
            default_model: default_model.into(),
            refresh_margin: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

pub struct CopilotBackend {
    /// Carries the integration headers; its base URL is the fallback base.
    inner: OpenAiBackend,
    token_url: String,
    exchange_headers: HeaderMap,
    api_base_override: Option<String>,
    fallback_api_base: String,
    refresh_margin: Duration,
    /// Held across an exchange, so concurrent requests exchange once.
    token: Mutex<Option<CopilotToken>>,
}

impl fmt::Debug for CopilotBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopilotBackend")
            .field("name", &self.inner.name())
            .field("token_url", &self.token_url)
            .field("api_base_override", &self.api_base_override)
            .field("fallback_api_base", &self.fallback_api_base)
            .finish_non_exhaustive()
    }
}

impl CopilotBackend {
    pub fn new(config: CopilotConfig) -> Result<Self, LlmError> {
        let name = config.name.clone();
        let not_configured = |what: &str| LlmError::NotConfigured(format!("{name}: {what}"));
        if config.github_token.expose().trim().is_empty() {
            return Err(not_configured(
                "no GitHub token: set COPILOT_GITHUB_TOKEN or run `gh auth login`",
            ));
        }
        let api_base_override = config
            .api_base
            .as_deref()
            .map(|base| base.trim_end_matches('/').to_owned());
        let fallback_api_base = api_base_override
            .clone()
            .unwrap_or_else(|| config.account_type.default_api_base().to_owned());
        let mut inner_config =
            OpenAiConfig::new(&config.name, &fallback_api_base, &config.default_model);
        inner_config.extra_headers = config
            .integration_headers
            .into_iter()
            .map(|(name, value)| (name, Secret::from(value)))
            .collect();
        inner_config.request_timeout = config.request_timeout;
        inner_config.idle_timeout = config.idle_timeout;
        // Validates the base URL and the integration headers.
        let inner = OpenAiBackend::new(inner_config)?;
        let (header, value) =
            github_authorization(config.github_token.expose()).ok_or_else(|| {
                not_configured("the GitHub token contains characters not allowed in a header")
            })?;
        let mut exchange_headers = HeaderMap::new();
        exchange_headers.insert(header, value);
        Ok(Self {
            inner,
            token_url: config.token_url,
            exchange_headers,
            api_base_override,
            fallback_api_base,
            refresh_margin: config.refresh_margin,
            token: Mutex::new(None),
        })
    }

    /// A fresh Copilot token, exchanged when there is none or it is due.
    async fn token(&self) -> Result<CopilotToken, LlmError> {
        let mut cached = self.token.lock().await;
        if let Some(token) = cached.as_ref().filter(|token| token.is_fresh()) {
            return Ok(token.clone());
        }
        let token = self.exchange().await?;
        *cached = Some(token.clone());
        Ok(token)
    }

    async fn exchange(&self) -> Result<CopilotToken, LlmError> {
        let name = self.inner.name();
        tracing::debug!(backend = %name, url = %self.token_url, "exchanging the GitHub token for a Copilot token");
        let body = self
            .inner
            .get_json_at(&self.token_url, &self.exchange_headers)
            .await
            .map_err(|err| match err {
                LlmError::Auth { backend, message } => LlmError::Auth {
                    backend,
                    message: format!(
                        "GitHub refused the Copilot token exchange at {} ({message}); \
                         check COPILOT_GITHUB_TOKEN or run `gh auth login`, and that the \
                         account has a Copilot subscription",
                        self.token_url
                    ),
                },
                other => other,
            })?;
        CopilotToken::from_answer(name, &body, self.refresh_margin)
    }

    /// The headers and base URL of one request.
    async fn authorized(&self) -> Result<(HeaderMap, String), LlmError> {
        let token = self.token().await?;
        let base = self
            .api_base_override
            .clone()
            .or(token.api_base)
            .unwrap_or_else(|| self.fallback_api_base.clone());
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, token.bearer);
        Ok((headers, base))
    }

    /// The headers and URL of one chat request.
    async fn chat_endpoint(&self) -> Result<(HeaderMap, reqwest::Url), LlmError> {
        let (headers, base) = self.authorized().await?;
        let url = crate::http::parse_url(self.inner.name(), &format!("{base}/chat/completions"))?;
        Ok((headers, url))
    }

    /// A token revoked before its time makes every request fail until it is
    /// replaced: drop it so that the next request exchanges again.
    async fn forget_token_on_auth_error<T>(
        &self,
        result: Result<T, LlmError>,
    ) -> Result<T, LlmError> {
        if matches!(result, Err(LlmError::Auth { .. })) {
            *self.token.lock().await = None;
        }
        result
    }
}

#[async_trait]
impl ChatBackend for CopilotBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let (headers, url) = self.chat_endpoint().await?;
        let result = self.inner.stream_at(request, &url, &headers).await;
        self.forget_token_on_auth_error(result).await
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (headers, url) = self.chat_endpoint().await?;
        let result = self.inner.complete_at(request, &url, &headers).await;
        self.forget_token_on_auth_error(result).await
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let (headers, base) = self.authorized().await?;
        let url = format!("{base}/models");
        let result = self.inner.models_at(&url, &headers).await;
        self.forget_token_on_auth_error(result).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_types_choose_their_api_hosts() {
        assert_eq!(
            CopilotAccountType::Individual.default_api_base(),
            "https://api.githubcopilot.com"
        );
        assert_eq!(
            CopilotAccountType::Business.default_api_base(),
            "https://api.business.githubcopilot.com"
        );
        assert_eq!(
            CopilotAccountType::Enterprise.default_api_base(),
            "https://api.enterprise.githubcopilot.com"
        );
    }

    #[test]
    fn the_github_token_stays_out_of_debug_output_and_errors() {
        let config = CopilotConfig::new("ghp_secret123", "gpt-4o");
        assert!(!format!("{config:?}").contains("ghp_secret123"));
        let backend = CopilotBackend::new(config).unwrap();
        assert!(!format!("{backend:?}").contains("ghp_secret123"));
        let err = CopilotBackend::new(CopilotConfig::new("ghp_bad\nsecret", "m")).unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        let err = CopilotBackend::new(CopilotConfig::new("  ", "m")).unwrap_err();
        assert!(err.to_string().contains("COPILOT_GITHUB_TOKEN"), "{err}");
    }
}
