//! The Anthropic Messages backend (`POST /v1/messages`), and the reverse
//! mapping of our events to its stream format for the facade.

mod message;
mod stream;
mod wire;

use bridge_util::Secret;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};

use crate::http::{Connection, Delivery, Upstream, WireReader, model_for, model_ids};
use crate::{ChatBackend, ChatRequest, ChatResponse, ChatStream, LlmError, collect};

/// The API version this mapping is written against.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// How Messages answers are read, whole or streamed.
const WIRE: WireReader = WireReader {
    whole: message::message_events,
    events: stream::chat_stream,
};

/// Where and how to reach the Anthropic API.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Shown in logs and errors (`anthropic`, `claude-proxy`, …).
    pub name: String,
    /// The URL that `/v1/messages` and `/v1/models` are appended to,
    /// WITHOUT the version path. A trailing `/` is ignored.
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<Secret>,
    /// Added to every request (`anthropic-beta`, a proxy's header, …).
    pub extra_headers: Vec<(String, Secret)>,
    /// Used when a request names no model.
    pub default_model: String,
    /// `max_tokens` of requests that set none: Anthropic requires one.
    pub max_tokens: u32,
    /// Limit for connecting and receiving the response headers.
    pub request_timeout: Duration,
    /// Limit for waiting on the next bytes of a streamed answer.
    pub idle_timeout: Duration,
}

impl AnthropicConfig {
    pub fn new(name: impl Into<String>, default_model: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base_url: DEFAULT_BASE_URL.into(),
            api_key: None,
            extra_headers: Vec::new(),
            default_model: default_model.into(),
            max_tokens: 4096,
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Debug)]
pub struct AnthropicBackend {
    name: String,
    base_url: String,
    messages_url: reqwest::Url,
    default_model: String,
    max_tokens: u32,
    request_timeout: Duration,
    idle_timeout: Duration,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl AnthropicBackend {
    /// Checks the configuration (URL, header names and values) once, so a
    /// mistake shows at start-up rather than at the first request.
    pub fn new(config: AnthropicConfig) -> Result<Self, LlmError> {
        let name = config.name;
        let credential = config
            .api_key
            .as_ref()
            .map(|key| (HeaderName::from_static("x-api-key"), key.clone()));
        let connection = Connection::new(
            &name,
            &config.base_url,
            &[("anthropic-version", ANTHROPIC_VERSION)],
            credential,
            &config.extra_headers,
            config.request_timeout,
        )?;
        let messages_url = connection.endpoint(&name, "/v1/messages")?;
        let Connection {
            base_url,
            headers,
            client,
        } = connection;
        Ok(Self {
            name,
            base_url,
            messages_url,
            default_model: config.default_model,
            max_tokens: config.max_tokens,
            request_timeout: config.request_timeout,
            idle_timeout: config.idle_timeout,
            headers,
            client,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// One answer from `/v1/messages`, streamed or asked for whole.
    async fn answer(
        &self,
        request: &ChatRequest,
        delivery: Delivery,
    ) -> Result<ChatStream, LlmError> {
        let model = model_for(&self.name, request.model.as_ref(), &self.default_model)?;
        let url = &self.messages_url;
        let body = wire::request_body(request, &model, self.max_tokens, &self.name, delivery)?;
        tracing::debug!(backend = %self.name, %url, %model, ?delivery, "anthropic message");
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, delivery.accept());
        let mut builder = self.client.post(url.clone()).headers(headers).json(&body);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let response = self.upstream().send(builder, url.as_str()).await?;
        self.upstream()
            .answer_events(response, self.idle_timeout, WIRE)
            .await
    }

    fn upstream(&self) -> Upstream<'_> {
        Upstream {
            backend: &self.name,
            request_timeout: self.request_timeout,
        }
    }

    fn protocol(&self, message: String) -> LlmError {
        LlmError::Protocol {
            backend: self.name.clone(),
            message,
        }
    }
}

#[async_trait]
impl ChatBackend for AnthropicBackend {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.answer(request, Delivery::Streamed).await
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        collect(self.answer(request, Delivery::Whole).await?).await
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = self.url("/v1/models");
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let response = self
            .upstream()
            .send(self.client.get(&url).headers(headers), &url)
            .await?;
        let body = self.upstream().whole_body(response).await?;
        model_ids(url.as_str(), &body).map_err(|message| self.protocol(message))
    }
}

/// The events of a whole streamed body, counted, through the same decoder
/// and event mapping as [`AnthropicBackend::stream`]: for the benchmarks only.
#[doc(hidden)]
pub fn decode_stream_for_bench(reads: &[bytes::Bytes]) -> Result<usize, LlmError> {
    crate::sse_stream::count_events_for_bench(stream::EventMapper::new("bench"), reads)
}
