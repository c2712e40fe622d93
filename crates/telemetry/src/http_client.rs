//! The exporters' HTTP client: the hub's own reqwest client, its requests
//! run on the hub's tokio runtime. The SDK's batch processor exports from a
//! thread of its own; the request is handed to the runtime and its answer
//! awaited there, so no second HTTP stack and no blocking client are
//! needed, and a slow collector holds that thread only, bounded by the
//! export timeout.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};

/// How long one export request may take.
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer read (answers are small status
/// messages; more is cut).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub(crate) struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl RuntimeClient {
    pub(crate) fn new(runtime: tokio::runtime::Handle) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let mut outgoing = client
                .request(parts.method, parts.uri.to_string())
                .body(body);
            for (name, value) in &parts.headers {
                outgoing = outgoing.header(name, value);
            }
            let answer = outgoing.send().await?;
            let status = answer.status();
            let mut body = answer.bytes().await?;
            if body.len() > MAX_ANSWER_BYTES {
                body.truncate(MAX_ANSWER_BYTES);
            }
            Ok::<_, reqwest::Error>((status, body))
        });
        let (status, body) = sent.await??;
        let mut response = Response::new(body);
        *response.status_mut() = status;
        Ok(response)
    }
}
