//! Ollama: chat through its OpenAI-compatible `/v1` API (no key), models
//! from its native `GET /api/tags`, which lists what is pulled locally —
//! Ollama's `/v1/models` is missing on older versions.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use crate::http::{MESSAGE_CUT_CHARS, cut};
use crate::{ChatBackend, ChatRequest, ChatStream, LlmError, OpenAiBackend, OpenAiConfig};

/// Where Ollama listens unless told otherwise.
pub const OLLAMA_DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

#[derive(Debug, Clone)]
pub struct OllamaConfig {
    /// Shown in logs and errors.
    pub name: String,
    /// Ollama's root URL, WITHOUT `/v1` (a trailing `/` is ignored).
    pub base_url: String,
    /// Used when a request names no model (`llama3.2`, …).
    pub default_model: String,
    /// Limit for connecting and receiving the response headers; a local
    /// model may take long to load before its first byte.
    pub request_timeout: Duration,
    /// Limit for waiting on the next bytes of a streamed answer.
    pub idle_timeout: Duration,
}

impl OllamaConfig {
    pub fn new(default_model: impl Into<String>) -> Self {
        Self {
            name: "ollama".into(),
            base_url: OLLAMA_DEFAULT_BASE_URL.into(),
            default_model: default_model.into(),
            request_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Debug)]
pub struct OllamaBackend {
    inner: OpenAiBackend,
    tags_url: String,
}

impl OllamaBackend {
    pub fn new(config: OllamaConfig) -> Result<Self, LlmError> {
        let base_url = config.base_url.trim_end_matches('/');
        let mut inner_config = OpenAiConfig::new(
            &config.name,
            format!("{base_url}/v1"),
            &config.default_model,
        );
        inner_config.request_timeout = config.request_timeout;
        inner_config.idle_timeout = config.idle_timeout;
        Ok(Self {
            inner: OpenAiBackend::new(inner_config)?,
            tags_url: format!("{base_url}/api/tags"),
        })
    }
}

/// The answer of `GET /api/tags`.
#[derive(Debug, Deserialize)]
struct Tags {
    models: Vec<Tag>,
}

#[derive(Debug, Deserialize)]
struct Tag {
    name: String,
}

#[async_trait]
impl ChatBackend for OllamaBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.inner.stream(request).await
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let body = self
            .inner
            .get_json_at(&self.tags_url, &HeaderMap::new())
            .await?;
        let tags: Tags = serde_json::from_str(&body).map_err(|err| LlmError::Protocol {
            backend: self.inner.name().to_owned(),
            message: format!(
                "invalid model list from {}: {err}: {}",
                self.tags_url,
                cut(body.trim(), MESSAGE_CUT_CHARS)
            ),
        })?;
        Ok(tags.models.into_iter().map(|tag| tag.name).collect())
    }
}

/// Whether an Ollama server answers at `base_url` within `timeout` — for
/// auto-detection, so any failure is just `false`.
pub async fn ollama_is_running(base_url: &str, timeout: Duration) -> bool {
    let url = format!("{}/api/tags", base_url.trim_end_matches('/'));
    let Ok(client) = reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
    else {
        return false;
    };
    let probe = async {
        let response = client.get(&url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        // Another server on the port may answer 200 too; only Ollama's
        // tag list proves it is Ollama.
        response.json::<Tags>().await.ok()
    };
    matches!(tokio::time::timeout(timeout, probe).await, Ok(Some(_)))
}
