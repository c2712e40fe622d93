//! Azure OpenAI: the OpenAI chat-completions wire format, served per
//! deployment (`{endpoint}/openai/deployments/{deployment}/chat/completions`)
//! with an `api-version` query parameter and an `api-key` header instead of
//! a bearer token.

use bridge_util::Secret;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::{
    ChatBackend, ChatRequest, ChatResponse, ChatStream, LlmError, OpenAiBackend, OpenAiConfig,
};

/// Where and how to reach one Azure OpenAI deployment.
#[derive(Debug, Clone)]
pub struct AzureConfig {
    /// Shown in logs and errors.
    pub name: String,
    /// The resource's endpoint, e.g. `https://my-resource.openai.azure.com`
    /// (a trailing `/` is ignored).
    pub endpoint: String,
    /// The deployment name: Azure routes by it, not by the model field.
    pub deployment: String,
    /// The `api-version` query parameter, e.g. `2024-10-21`.
    pub api_version: String,
    /// Sent as the `api-key` header.
    pub api_key: Secret,
    /// Limit for connecting and receiving the response headers.
    pub request_timeout: Duration,
    /// Limit for waiting on the next bytes of a streamed answer.
    pub idle_timeout: Duration,
}

impl AzureConfig {
    pub fn new(
        endpoint: impl Into<String>,
        deployment: impl Into<String>,
        api_version: impl Into<String>,
        api_key: impl Into<Secret>,
    ) -> Self {
        Self {
            name: "azure".into(),
            endpoint: endpoint.into(),
            deployment: deployment.into(),
            api_version: api_version.into(),
            api_key: api_key.into(),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Debug)]
pub struct AzureBackend {
    inner: OpenAiBackend,
    deployment: String,
    chat_url: Url,
    headers: HeaderMap,
}

impl AzureBackend {
    /// Checks the configuration once, so a mistake shows at start-up.
    pub fn new(config: AzureConfig) -> Result<Self, LlmError> {
        let name = config.name.clone();
        let not_configured = |what: String| LlmError::NotConfigured(format!("{name}: {what}"));
        if config.deployment.trim().is_empty() {
            return Err(not_configured("no deployment configured".into()));
        }
        if config.api_version.trim().is_empty() {
            return Err(not_configured("no api-version configured".into()));
        }
        let endpoint = config.endpoint.trim_end_matches('/');
        let mut inner_config = OpenAiConfig::new(&config.name, endpoint, &config.deployment);
        inner_config.request_timeout = config.request_timeout;
        inner_config.idle_timeout = config.idle_timeout;
        // Validates the endpoint URL.
        let inner = OpenAiBackend::new(inner_config)?;

        // Url escapes the deployment and version, which come from user
        // configuration and must not break out of their path segment.
        let mut url = Url::parse(endpoint)
            .map_err(|err| not_configured(format!("invalid endpoint {endpoint:?}: {err}")))?;
        url.path_segments_mut()
            .map_err(|()| not_configured(format!("endpoint {endpoint:?} cannot have a path")))?
            .pop_if_empty()
            .extend([
                "openai",
                "deployments",
                &config.deployment,
                "chat",
                "completions",
            ]);
        url.query_pairs_mut()
            .append_pair("api-version", &config.api_version);

        let mut key = HeaderValue::from_str(config.api_key.expose()).map_err(|_| {
            not_configured("the API key contains characters not allowed in a header".into())
        })?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("api-key"), key);
        Ok(Self {
            inner,
            deployment: config.deployment,
            chat_url: url,
            headers,
        })
    }
}

#[async_trait]
impl ChatBackend for AzureBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.inner
            .stream_at(request, &self.chat_url, &self.headers)
            .await
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner
            .complete_at(request, &self.chat_url, &self.headers)
            .await
    }

    /// A deployment serves exactly one model, under the deployment's name.
    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(vec![self.deployment.clone()])
    }
}
