//! The agents' own telemetry through the hub (docs/telemetry.md, "The
//! agents' own telemetry"): an OTLP/HTTP export request the daemon
//! received — protobuf or JSON, gzipped or not — decoded, its resources
//! marked as forwarded by the hub, and sent on to the configured exporter
//! in the exporter's protocol, span names and ids unchanged. Every answer
//! is OTLP-shaped: the empty export response on success, a `Status`
//! (`{code, message}`) otherwise, in the request's encoding.

use std::io::Read as _;
use std::time::Duration;

use bridge_config::{OtlpProtocol, Signal, TelemetryConfig};
use bytes::Bytes;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;

/// The most a request may hold, after decompression.
pub const MAX_DECODED_BYTES: usize = 16 * 1024 * 1024;
/// How long the collector gets to take a forwarded request.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);
/// The attribute the hub adds to every forwarded resource (and removes
/// from what a sender set under its prefix).
pub const FORWARDED_BY: &str = "copilot_bridge.forwarded_by";
const HUB_PREFIX: &str = "copilot_bridge.";

/// OTLP's encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// From a request's `Content-Type`; `None` for one OTLP does not have.
    pub fn of_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/x-protobuf" => Some(Self::Protobuf),
            "application/json" => Some(Self::Json),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }

    fn of_protocol(protocol: OtlpProtocol) -> Self {
        match protocol {
            OtlpProtocol::HttpProtobuf => Self::Protobuf,
            OtlpProtocol::HttpJson => Self::Json,
        }
    }
}

/// An answer for the agent: status, content type, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
}

/// `google.rpc.Status`, OTLP's error body.
#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// gRPC status codes OTLP/HTTP errors carry.
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNAVAILABLE: i32 = 14;

/// An OTLP-shaped error in `encoding`.
pub fn error(status: u16, code: i32, message: &str, encoding: Encoding) -> Answer {
    let body = match encoding {
        Encoding::Protobuf => Bytes::from(
            Status {
                code,
                message: message.to_owned(),
            }
            .encode_to_vec(),
        ),
        Encoding::Json => {
            Bytes::from(serde_json::json!({"code": code, "message": message}).to_string())
        }
    };
    Answer {
        status,
        content_type: encoding.content_type(),
        body,
    }
}

/// 404 when the hub exports nothing: there is nowhere to forward to.
pub fn not_exported(signal: Signal, encoding: Encoding) -> Answer {
    error(
        404,
        NOT_FOUND,
        &format!(
            "this hub exports no telemetry, so it takes none at {}: set OTEL_EXPORTER_OTLP_ENDPOINT for `copilot-bridge serve` (docs/telemetry.md)",
            signal.path()
        ),
        encoding,
    )
}

/// Sends the agents' export requests on to the configured collector.
#[derive(Debug, Clone)]
pub struct Forwarder {
    client: reqwest::Client,
    config: TelemetryConfig,
    hub: String,
}

impl Forwarder {
    /// The forwarder of `config`, when it exports to a collector.
    pub fn new(config: &TelemetryConfig, version: &str) -> Option<Self> {
        if !config.exports_otlp() {
            return None;
        }
        let client = reqwest::Client::builder()
            .timeout(FORWARD_TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(Self {
            client,
            config: config.clone(),
            hub: format!("copilot-bridge {version}"),
        })
    }

    /// Forwards one export request of `signal` (`content_type` and
    /// `content_encoding` as the agent sent them).
    pub async fn forward(
        &self,
        signal: Signal,
        content_type: &str,
        content_encoding: Option<&str>,
        body: Bytes,
    ) -> Answer {
        let Some(encoding) = Encoding::of_content_type(content_type) else {
            return error(
                415,
                INVALID_ARGUMENT,
                &format!(
                    "OTLP/HTTP takes application/x-protobuf or application/json, not {content_type:?}"
                ),
                Encoding::Json,
            );
        };
        let Some(url) = self.config.url(signal) else {
            return not_exported(signal, encoding);
        };
        let plain = match decoded(content_encoding, body) {
            Ok(plain) => plain,
            Err(answer) => return answer(encoding),
        };
        let outgoing = Encoding::of_protocol(self.config.protocol);
        let converted = match signal {
            Signal::Traces => self.convert::<ExportTraceServiceRequest>(
                &plain,
                encoding,
                outgoing,
                |request, hub| {
                    for spans in &mut request.resource_spans {
                        mark(spans.resource.get_or_insert_with(Resource::default), hub);
                    }
                },
            ),
            Signal::Metrics => self.convert::<ExportMetricsServiceRequest>(
                &plain,
                encoding,
                outgoing,
                |request, hub| {
                    for metrics in &mut request.resource_metrics {
                        mark(metrics.resource.get_or_insert_with(Resource::default), hub);
                    }
                },
            ),
            Signal::Logs => self.convert::<ExportLogsServiceRequest>(
                &plain,
                encoding,
                outgoing,
                |request, hub| {
                    for logs in &mut request.resource_logs {
                        mark(logs.resource.get_or_insert_with(Resource::default), hub);
                    }
                },
            ),
        };
        let payload = match converted {
            Ok(payload) => payload,
            Err(message) => return error(400, INVALID_ARGUMENT, &message, encoding),
        };
        let mut request = self
            .client
            .post(&url)
            .header("content-type", outgoing.content_type())
            .body(payload);
        for (name, value) in &self.config.headers {
            request = request.header(name, value.expose());
        }
        match request.send().await {
            Ok(answer) if answer.status().is_success() => success(signal, encoding),
            Ok(answer) => error(
                502,
                UNAVAILABLE,
                &format!("the collector at {url} answered {}", answer.status()),
                encoding,
            ),
            Err(err) => error(
                503,
                UNAVAILABLE,
                &format!(
                    "the collector at {url} cannot be reached: {}",
                    without_url(&err)
                ),
                encoding,
            ),
        }
    }

    fn convert<T>(
        &self,
        plain: &[u8],
        from: Encoding,
        to: Encoding,
        mark_all: impl Fn(&mut T, &str),
    ) -> Result<Vec<u8>, String>
    where
        T: prost::Message + Default + serde::Serialize + serde::de::DeserializeOwned,
    {
        let mut request: T = match from {
            Encoding::Protobuf => {
                T::decode(plain).map_err(|err| format!("not OTLP protobuf: {err}"))?
            }
            Encoding::Json => {
                serde_json::from_slice(plain).map_err(|err| format!("not OTLP JSON: {err}"))?
            }
        };
        mark_all(&mut request, &self.hub);
        match to {
            Encoding::Protobuf => Ok(request.encode_to_vec()),
            Encoding::Json => {
                serde_json::to_vec(&request).map_err(|err| format!("cannot write OTLP JSON: {err}"))
            }
        }
    }
}

/// The empty export response in `encoding`.
fn success(signal: Signal, encoding: Encoding) -> Answer {
    let body = match (encoding, signal) {
        (Encoding::Json, _) => Bytes::from_static(b"{}"),
        (Encoding::Protobuf, Signal::Traces) => {
            Bytes::from(ExportTraceServiceResponse::default().encode_to_vec())
        }
        (Encoding::Protobuf, Signal::Metrics) => {
            Bytes::from(ExportMetricsServiceResponse::default().encode_to_vec())
        }
        (Encoding::Protobuf, Signal::Logs) => {
            Bytes::from(ExportLogsServiceResponse::default().encode_to_vec())
        }
    };
    Answer {
        status: 200,
        content_type: encoding.content_type(),
        body,
    }
}

/// The body without its gzip, bounded after decompression.
fn decoded(content_encoding: Option<&str>, body: Bytes) -> Result<Vec<u8>, fn(Encoding) -> Answer> {
    let too_large = |encoding| {
        error(
            413,
            RESOURCE_EXHAUSTED,
            "the request is larger than 16 MiB once decompressed",
            encoding,
        )
    };
    match content_encoding.map(str::trim) {
        None | Some("" | "identity") => {
            if body.len() > MAX_DECODED_BYTES {
                return Err(too_large);
            }
            Ok(body.to_vec())
        }
        Some("gzip") => {
            let mut plain = Vec::new();
            let limit = u64::try_from(MAX_DECODED_BYTES + 1).unwrap_or(u64::MAX);
            match flate2::read::GzDecoder::new(&body[..])
                .take(limit)
                .read_to_end(&mut plain)
            {
                Ok(_) if plain.len() > MAX_DECODED_BYTES => Err(too_large),
                Ok(_) => Ok(plain),
                Err(_) => Err(|encoding| {
                    error(
                        400,
                        INVALID_ARGUMENT,
                        "the gzip body does not decompress",
                        encoding,
                    )
                }),
            }
        }
        Some(_) => Err(|encoding| {
            error(
                415,
                INVALID_ARGUMENT,
                "OTLP/HTTP bodies are sent plain or gzip-compressed",
                encoding,
            )
        }),
    }
}

/// The hub's mark on a forwarded resource; what a sender set under the
/// hub's prefix is dropped, so a forwarded resource cannot claim to be
/// the hub.
fn mark(resource: &mut Resource, hub: &str) {
    resource
        .attributes
        .retain(|attribute| !attribute.key.starts_with(HUB_PREFIX));
    resource.attributes.push(KeyValue {
        key: FORWARDED_BY.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(hub.to_owned())),
        }),
        ..KeyValue::default()
    });
}

/// A reqwest error's text without its URL (the URL may carry a secret in
/// its query).
fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(url.as_str(), "the collector");
    }
    text
}
