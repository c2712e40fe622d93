//! An OTLP/HTTP receiver for tests: a real axum server on port 0 that
//! takes `/v1/traces`, `/v1/metrics` and `/v1/logs` in protobuf or JSON,
//! gzipped or not, as a collector does, and keeps what it received — spans
//! with their ids in hex and attributes as JSON, metric names, log records —
//! for a test to assert on. It can be told to answer 503 (a collector that
//! is down), to hold every request (one that hangs), or only to count the
//! spans it decodes (a benchmark's collector, `otlp-sink`).

use std::io::Read as _;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use serde_json::{Map, Value};

/// One span as received.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    /// 1 internal, 2 server, 3 client, …
    pub kind: i32,
    pub attributes: Map<String, Value>,
    pub resource: Map<String, Value>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
}

/// One log record as received.
#[derive(Debug, Clone)]
pub struct ReceivedLog {
    pub body: String,
    pub attributes: Map<String, Value>,
    pub resource: Map<String, Value>,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    pub path: String,
    pub content_type: String,
    pub gzip: bool,
    pub headers: HeaderMap,
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Behaviour {
    Accept = 0,
    /// 503, as a collector that is down.
    Unavailable = 1,
    /// Never answers (until the test ends).
    Hang = 2,
    /// Decodes and counts spans, keeps nothing: a collector under load.
    Count = 3,
}

#[derive(Default)]
struct Received {
    spans: Vec<ReceivedSpan>,
    metrics: Vec<(String, Map<String, Value>)>,
    logs: Vec<ReceivedLog>,
    requests: Vec<ReceivedRequest>,
}

#[derive(Clone)]
struct Shared {
    received: Arc<Mutex<Received>>,
    behaviour: Arc<AtomicU8>,
    /// Spans decoded, kept or not.
    span_count: Arc<AtomicU64>,
}

/// The receiver; stops when dropped.
pub struct OtlpReceiver {
    port: u16,
    shared: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl OtlpReceiver {
    /// Panics when no port can be bound (a test cannot go on without it).
    pub async fn start() -> Self {
        Self::try_start()
            .await
            .unwrap_or_else(|err| panic!("cannot start the OTLP receiver: {err}"))
    }

    pub async fn try_start() -> std::io::Result<Self> {
        let shared = Shared {
            received: Arc::default(),
            behaviour: Arc::new(AtomicU8::new(Behaviour::Accept as u8)),
            span_count: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .route("/v1/logs", post(logs))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            port,
            shared,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`: what `OTEL_EXPORTER_OTLP_ENDPOINT` names.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_behaviour(&self, behaviour: Behaviour) {
        self.shared
            .behaviour
            .store(behaviour as u8, Ordering::SeqCst);
    }

    /// Spans received so far (also when [`Behaviour::Count`] keeps none).
    pub fn span_count(&self) -> u64 {
        self.shared.span_count.load(Ordering::Relaxed)
    }

    pub fn spans(&self) -> Vec<ReceivedSpan> {
        lock(&self.shared.received).spans.clone()
    }

    /// Metric names with their resource attributes, in arrival order.
    pub fn metrics(&self) -> Vec<(String, Map<String, Value>)> {
        lock(&self.shared.received).metrics.clone()
    }

    pub fn logs(&self) -> Vec<ReceivedLog> {
        lock(&self.shared.received).logs.clone()
    }

    pub fn requests(&self) -> Vec<ReceivedRequest> {
        lock(&self.shared.received).requests.clone()
    }

    /// The first span `matches` accepts, waiting up to `within` for it.
    pub async fn wait_for_span(
        &self,
        within: Duration,
        matches: impl Fn(&ReceivedSpan) -> bool,
    ) -> Option<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(span) = self.spans().into_iter().find(&matches) {
                return Some(span);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits up to `within` until a metric named `name` has arrived.
    pub async fn wait_for_metric(&self, within: Duration, name: &str) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.metrics().iter().any(|(metric, _)| metric == name) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn counting(shared: &Shared) -> bool {
    shared.behaviour.load(Ordering::SeqCst) == Behaviour::Count as u8
}

fn lock(received: &Mutex<Received>) -> std::sync::MutexGuard<'_, Received> {
    received
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The body, un-gzipped, and whether it is JSON; or the answer to give.
async fn accept(
    shared: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Vec<u8>, bool), (StatusCode, String)> {
    match shared.behaviour.load(Ordering::SeqCst) {
        1 => return Err((StatusCode::SERVICE_UNAVAILABLE, "down".to_owned())),
        2 => {
            std::future::pending::<()>().await;
        }
        _ => {}
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let content_type = header("content-type");
    let gzip = header("content-encoding") == "gzip";
    if !counting(shared) {
        lock(&shared.received).requests.push(ReceivedRequest {
            path: path.to_owned(),
            content_type: content_type.clone(),
            gzip,
            headers: headers.clone(),
        });
    }
    let bytes = if gzip {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut plain)
            .map_err(|err| (StatusCode::BAD_REQUEST, format!("gzip: {err}")))?;
        plain
    } else {
        body.to_vec()
    };
    Ok((bytes, content_type.starts_with("application/json")))
}

fn decode<T: prost::Message + Default + serde::de::DeserializeOwned>(
    bytes: &[u8],
    json: bool,
) -> Result<T, (StatusCode, String)> {
    if json {
        serde_json::from_slice(bytes)
            .map_err(|err| (StatusCode::BAD_REQUEST, format!("json: {err}")))
    } else {
        T::decode(bytes).map_err(|err| (StatusCode::BAD_REQUEST, format!("protobuf: {err}")))
    }
}

async fn traces(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, (StatusCode, String)> {
    let (bytes, json) = accept(&shared, "/v1/traces", &headers, &body).await?;
    let request: ExportTraceServiceRequest = decode(&bytes, json)?;
    let spans = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|scope| scope.spans.len() as u64)
        .sum();
    shared.span_count.fetch_add(spans, Ordering::Relaxed);
    if counting(&shared) {
        return Ok(StatusCode::OK);
    }
    let mut received = lock(&shared.received);
    for resource_spans in request.resource_spans {
        let resource = attributes(
            resource_spans
                .resource
                .as_ref()
                .map(|r| r.attributes.as_slice())
                .unwrap_or_default(),
        );
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                received.spans.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: span.kind,
                    attributes: attributes(&span.attributes),
                    resource: resource.clone(),
                    status_code: span.status.map(|status| status.code).unwrap_or_default(),
                    start_unix_nano: span.start_time_unix_nano,
                    end_unix_nano: span.end_time_unix_nano,
                });
            }
        }
    }
    Ok(StatusCode::OK)
}

async fn metrics(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, (StatusCode, String)> {
    let (bytes, json) = accept(&shared, "/v1/metrics", &headers, &body).await?;
    let request: ExportMetricsServiceRequest = decode(&bytes, json)?;
    if counting(&shared) {
        return Ok(StatusCode::OK);
    }
    let mut received = lock(&shared.received);
    for resource_metrics in request.resource_metrics {
        let resource = attributes(
            resource_metrics
                .resource
                .as_ref()
                .map(|r| r.attributes.as_slice())
                .unwrap_or_default(),
        );
        for scope in resource_metrics.scope_metrics {
            for metric in scope.metrics {
                received.metrics.push((metric.name, resource.clone()));
            }
        }
    }
    Ok(StatusCode::OK)
}

async fn logs(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, (StatusCode, String)> {
    let (bytes, json) = accept(&shared, "/v1/logs", &headers, &body).await?;
    let request: ExportLogsServiceRequest = decode(&bytes, json)?;
    if counting(&shared) {
        return Ok(StatusCode::OK);
    }
    let mut received = lock(&shared.received);
    for resource_logs in request.resource_logs {
        let resource = attributes(
            resource_logs
                .resource
                .as_ref()
                .map(|r| r.attributes.as_slice())
                .unwrap_or_default(),
        );
        for scope in resource_logs.scope_logs {
            for record in scope.log_records {
                let body = record.body.as_ref().map(json_of).unwrap_or(Value::Null);
                let body = match body {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                received.logs.push(ReceivedLog {
                    body,
                    attributes: attributes(&record.attributes),
                    resource: resource.clone(),
                });
            }
        }
    }
    Ok(StatusCode::OK)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Attributes as a JSON object (values by their kind).
pub fn attributes(list: &[KeyValue]) -> Map<String, Value> {
    list.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(json_of).unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn json_of(value: &AnyValue) -> Value {
    match &value.value {
        Some(any_value::Value::StringValue(text)) => Value::String(text.clone()),
        Some(any_value::Value::BoolValue(flag)) => Value::Bool(*flag),
        Some(any_value::Value::IntValue(n)) => Value::from(*n),
        Some(any_value::Value::DoubleValue(n)) => Value::from(*n),
        Some(any_value::Value::ArrayValue(array)) => {
            Value::Array(array.values.iter().map(json_of).collect())
        }
        Some(any_value::Value::KvlistValue(list)) => Value::Object(attributes(&list.values)),
        Some(any_value::Value::BytesValue(bytes)) => Value::String(hex(bytes)),
        _ => Value::Null,
    }
}

/// An OTLP export request of one span, as an agent would send it:
/// `service` as its resource's `service.name`, plus a resource attribute
/// that claims to be the hub (which the hub must drop).
pub fn one_span_request(
    service: &str,
    trace_id: &str,
    span_id: &str,
    name: &str,
) -> ExportTraceServiceRequest {
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    let text = |key: &str, value: &str| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..KeyValue::default()
    };
    let bytes = |hex: &str| {
        (0..hex.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Vec<u8>>()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", service),
                    text("copilot_bridge.forwarded_by", "not the hub"),
                ],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    trace_id: bytes(trace_id),
                    span_id: bytes(span_id),
                    name: name.to_owned(),
                    kind: 1,
                    start_time_unix_nano: 1_700_000_000_000_000_000,
                    end_time_unix_nano: 1_700_000_000_500_000_000,
                    attributes: vec![text("agent.step", "tool")],
                    ..Span::default()
                }],
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

/// [`one_span_request`] as protobuf bytes.
pub fn protobuf(request: &ExportTraceServiceRequest) -> Vec<u8> {
    prost::Message::encode_to_vec(request)
}

/// [`one_span_request`] as OTLP/JSON (ids in hex).
pub fn json(request: &ExportTraceServiceRequest) -> String {
    serde_json::to_string(request).unwrap_or_default()
}

/// `bytes` gzipped.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}
