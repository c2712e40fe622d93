//! The OpenAI chat-completions backend, for OpenAI itself and every server
//! that speaks its wire format (vLLM, llama.cpp, LM Studio, Ollama's `/v1`,
//! OpenRouter, …).

mod completion;
mod stream;
mod wire;

use bridge_util::Secret;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};

use crate::http::{Connection, Delivery, Upstream, WireReader, model_for, model_ids};
use crate::{ChatBackend, ChatRequest, ChatResponse, ChatStream, LlmError, collect};

/// How chat-completions answers are read, whole or streamed.
const WIRE: WireReader = WireReader {
    whole: completion::completion_events,
    events: stream::chat_stream,
};

/// Where and how to reach an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Shown in logs and errors (`openai`, `vllm-local`, …).
    pub name: String,
    /// The URL that `/chat/completions` and `/models` are appended to,
    /// INCLUDING the version path: `https://api.openai.com/v1` for OpenAI,
    /// `http://localhost:11434/v1` for Ollama. A trailing `/` is ignored.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …`; `None` for local servers.
    pub api_key: Option<Secret>,
    /// Added to every request (`OpenAI-Organization`, a proxy's header, …).
    pub extra_headers: Vec<(String, Secret)>,
    /// Used when a request names no model.
    pub default_model: String,
    /// Limit for connecting and receiving the response headers.
    pub request_timeout: Duration,
    /// Limit for waiting on the next bytes of a streamed answer: a model may
    /// stream for many minutes, but not fall silent for long.
    pub idle_timeout: Duration,
}

impl OpenAiConfig {
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        default_model: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            api_key: None,
            extra_headers: Vec::new(),
            default_model: default_model.into(),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

#[derive(Debug)]
pub struct OpenAiBackend {
    name: String,
    base_url: String,
    chat_url: reqwest::Url,
    default_model: String,
    request_timeout: Duration,
    idle_timeout: Duration,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl OpenAiBackend {
    /// Checks the configuration (URL, header names and values) once, so a
    /// mistake shows at start-up rather than at the first request.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        let name = config.name;
        let credential = config.api_key.as_ref().map(|key| {
            (
                AUTHORIZATION,
                Secret::from(format!("Bearer {}", key.expose())),
            )
        });
        let connection = Connection::new(
            &name,
            &config.base_url,
            &[],
            credential,
            &config.extra_headers,
            config.request_timeout,
        )?;
        let chat_url = connection.endpoint(&name, "/chat/completions")?;
        let Connection {
            base_url,
            headers,
            client,
        } = connection;
        Ok(Self {
            name,
            base_url,
            chat_url,
            default_model: config.default_model,
            request_timeout: config.request_timeout,
            idle_timeout: config.idle_timeout,
            headers,
            client,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
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
impl ChatBackend for OpenAiBackend {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.stream_at(request, &self.chat_url, &HeaderMap::new())
            .await
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.complete_at(request, &self.chat_url, &HeaderMap::new())
            .await
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = self.url("/models");
        self.models_at(&url, &HeaderMap::new()).await
    }
}

/// Hooks for backends that speak this wire format at a URL or with
/// credentials that change per request (Azure deployments, Copilot's
/// short-lived tokens).
impl OpenAiBackend {
    /// Streams a chat completion from `url`, with `headers` added to (and
    /// overriding) the configured ones.
    pub(crate) async fn stream_at(
        &self,
        request: &ChatRequest,
        url: &reqwest::Url,
        headers: &HeaderMap,
    ) -> Result<ChatStream, LlmError> {
        self.answer_at(request, url, headers, Delivery::Streamed)
            .await
    }

    /// One whole chat completion from `url`, asked for unstreamed.
    pub(crate) async fn complete_at(
        &self,
        request: &ChatRequest,
        url: &reqwest::Url,
        headers: &HeaderMap,
    ) -> Result<ChatResponse, LlmError> {
        collect(
            self.answer_at(request, url, headers, Delivery::Whole)
                .await?,
        )
        .await
    }

    async fn answer_at(
        &self,
        request: &ChatRequest,
        url: &reqwest::Url,
        headers: &HeaderMap,
        delivery: Delivery,
    ) -> Result<ChatStream, LlmError> {
        let model = model_for(&self.name, request.model.as_ref(), &self.default_model)?;
        let body = wire::request_body(request, &model, delivery);
        tracing::debug!(backend = %self.name, %url, %model, ?delivery, "chat completion");
        let mut all_headers = self.headers.clone();
        all_headers.insert(ACCEPT, delivery.accept());
        all_headers.extend(headers.clone());
        let builder = self
            .client
            .post(url.clone())
            .headers(all_headers)
            .json(&body);
        let response = self.upstream().send(builder, url.as_str()).await?;
        self.upstream()
            .answer_events(response, self.idle_timeout, WIRE)
            .await
    }

    /// The whole body of a JSON `GET url`, with the error mapping and limits
    /// of every other request of this backend.
    pub(crate) async fn get_json_at(
        &self,
        url: &str,
        headers: &HeaderMap,
    ) -> Result<String, LlmError> {
        let mut all_headers = self.headers.clone();
        all_headers.extend(headers.clone());
        all_headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let response = self
            .upstream()
            .send(self.client.get(url).headers(all_headers), url)
            .await?;
        self.upstream().whole_body(response).await
    }

    /// The model ids of the OpenAI-style list at `url`.
    pub(crate) async fn models_at(
        &self,
        url: &str,
        headers: &HeaderMap,
    ) -> Result<Vec<String>, LlmError> {
        let body = self.get_json_at(url, headers).await?;
        model_ids(url, &body).map_err(|message| self.protocol(message))
    }
}

/// The events of a whole streamed body, counted, through the same decoder
/// and event mapping as [`OpenAiBackend::stream`]: for the benchmarks only.
#[doc(hidden)]
pub fn decode_stream_for_bench(reads: &[bytes::Bytes]) -> Result<usize, LlmError> {
    crate::sse_stream::count_events_for_bench(stream::ChunkMapper::new("bench"), reads)
}
