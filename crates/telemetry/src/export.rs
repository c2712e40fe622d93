//! The exporter: a tracer provider with a batch processor and a meter
//! provider with a periodic reader, both OTLP/HTTP in the configured
//! protocol, made once per process and kept in [`crate::ACTIVE`].

use std::collections::HashMap;
use std::time::Duration;

use bridge_config::{OtlpProtocol, Signal, TelemetryConfig};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider,
};

use crate::http_client::{EXPORT_TIMEOUT, RuntimeClient};
use crate::semconv;

/// Spans waiting for export at most; more are dropped (counted by the SDK),
/// so an unreachable collector costs this much memory, never a caller's time.
pub const MAX_QUEUED_SPANS: usize = 2048;

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("telemetry: {0}")]
    Build(String),
    #[error("telemetry was already started in this process")]
    AlreadyStarted,
}

/// The running exporter and the instruments the hub records with.
#[derive(Debug)]
pub struct Telemetry {
    tracer: SdkTracer,
    meter: Meter,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    /// What `GET /metrics` reads, when it is served.
    prometheus: Option<prometheus::Registry>,
    pub(crate) instruments: Instruments,
    capture_content: bool,
}

/// The metrics (GenAI conventions and the hub's own).
#[derive(Debug)]
pub(crate) struct Instruments {
    pub token_usage: Histogram<u64>,
    pub operation_duration: Histogram<f64>,
    pub time_to_first_chunk: Histogram<f64>,
    pub tool_calls: Counter<u64>,
    pub approval_wait: Histogram<f64>,
    pub facade_requests: Counter<u64>,
}

impl Instruments {
    fn new(meter: &Meter) -> Self {
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used by a model call, by gen_ai.token.type")
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of a model call")
                .build(),
            time_to_first_chunk: meter
                .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
                .with_unit("s")
                .with_description("Time from a streamed model call's start to its first chunk")
                .build(),
            tool_calls: meter
                .u64_counter("copilot_bridge.tool.calls")
                .with_unit("{call}")
                .with_description("Tool calls, by tool, door and decision")
                .build(),
            approval_wait: meter
                .f64_histogram("copilot_bridge.approval.wait")
                .with_unit("s")
                .with_description("Time a tool call waited for a person's answer")
                .build(),
            facade_requests: meter
                .u64_counter("copilot_bridge.facade.requests")
                .with_unit("{request}")
                .with_description("Facade requests, by route and status")
                .build(),
        }
    }
}

impl Telemetry {
    /// Starts the exporter `config` describes, for this process, its
    /// requests run on `runtime`. `Ok(None)` when export is off.
    pub fn start(
        config: &TelemetryConfig,
        service_version: &str,
        runtime: tokio::runtime::Handle,
    ) -> Result<Option<&'static Telemetry>, StartError> {
        if !config.enabled() {
            return Ok(None);
        }
        if crate::ACTIVE.get().is_some() {
            return Err(StartError::AlreadyStarted);
        }
        let client = RuntimeClient::new(runtime)
            .map_err(|err| StartError::Build(format!("cannot make the HTTP client: {err}")))?;
        let resource = resource(config, service_version);
        let tracer_provider = config
            .url(Signal::Traces)
            .map(|url| tracer_provider(config, &url, client.clone(), resource.clone()))
            .transpose()?;
        let prometheus = config.serves_prometheus().then(prometheus::Registry::new);
        let meter_provider = meter_provider(
            config,
            config.metrics_url().as_deref(),
            prometheus.as_ref(),
            client.clone(),
            resource.clone(),
        )?;
        let tracer = match &tracer_provider {
            Some(provider) => provider.tracer("copilot-bridge"),
            // Metrics only: spans go nowhere.
            None => SdkTracerProvider::builder()
                .build()
                .tracer("copilot-bridge"),
        };
        let meter = match &meter_provider {
            Some(provider) => provider.meter("copilot-bridge"),
            None => SdkMeterProvider::builder().build().meter("copilot-bridge"),
        };
        let telemetry = Telemetry {
            tracer,
            meter: meter.clone(),
            tracer_provider,
            meter_provider,
            prometheus,
            instruments: Instruments::new(&meter),
            capture_content: config.capture_content,
        };
        crate::ACTIVE
            .set(telemetry)
            .map_err(|_| StartError::AlreadyStarted)?;
        Ok(crate::ACTIVE.get())
    }

    pub(crate) fn tracer(&self) -> &SdkTracer {
        &self.tracer
    }

    /// A gauge read when metrics are collected (`read` runs on the
    /// exporter's thread: keep it cheap and non-blocking). The instrument
    /// lives as long as the process's telemetry.
    pub fn gauge(
        &self,
        name: &'static str,
        unit: &'static str,
        description: &'static str,
        read: impl Fn() -> u64 + Send + Sync + 'static,
    ) {
        let _gauge = self
            .meter
            .u64_observable_gauge(name)
            .with_unit(unit)
            .with_description(description)
            .with_callback(move |observer| observer.observe(read(), &[]))
            .build();
    }

    /// The metrics in Prometheus's text format (version 0.0.4), read now;
    /// `None` when `GET /metrics` is not served.
    pub fn prometheus_text(&self) -> Option<Result<String, StartError>> {
        use prometheus::Encoder as _;
        let registry = self.prometheus.as_ref()?;
        let mut text = Vec::new();
        let encoded = prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .map_err(|err| StartError::Build(format!("cannot encode the metrics: {err}")))
            .and_then(|()| {
                String::from_utf8(text)
                    .map_err(|_| StartError::Build("the metrics are not UTF-8".to_owned()))
            });
        Some(encoded)
    }

    /// Whether spans carry prompts, answers, arguments and results.
    pub fn captures_content(&self) -> bool {
        self.capture_content
    }

    /// Exports what is queued, waiting at most for the export timeout: at
    /// the end of a process.
    pub fn flush(&self) {
        if let Some(provider) = &self.tracer_provider
            && let Err(err) = provider.force_flush()
        {
            tracing::warn!(error = %err, "telemetry: spans could not be exported");
        }
        if let Some(provider) = &self.meter_provider
            && let Err(err) = provider.force_flush()
        {
            tracing::warn!(error = %err, "telemetry: metrics could not be exported");
        }
    }
}

fn resource(config: &TelemetryConfig, service_version: &str) -> Resource {
    Resource::builder_empty()
        .with_service_name(config.service_name.clone())
        .with_schema_url(
            [KeyValue::new("service.version", service_version.to_owned())],
            semconv::SCHEMA_URL,
        )
        .with_attributes(
            config
                .resource_attributes
                .iter()
                // The hub's identity is its own to say.
                .filter(|(key, _)| key != "service.name")
                .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
        )
        .build()
}

fn protocol(config: &TelemetryConfig) -> Protocol {
    match config.protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
    }
}

fn headers(config: &TelemetryConfig) -> HashMap<String, String> {
    config
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.expose().to_owned()))
        .collect()
}

fn tracer_provider(
    config: &TelemetryConfig,
    url: &str,
    client: RuntimeClient,
    resource: Resource,
) -> Result<SdkTracerProvider, StartError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(url)
        .with_protocol(protocol(config))
        .with_headers(headers(config))
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|err| StartError::Build(format!("the span exporter for {url}: {err}")))?;
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUED_SPANS)
        .with_scheduled_delay(Duration::from_millis(config.batch_delay_ms))
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

/// The meter provider with a reader for each place metrics go: pushed to
/// `url`, read by `GET /metrics` through `prometheus`; `None` for neither.
fn meter_provider(
    config: &TelemetryConfig,
    url: Option<&str>,
    prometheus: Option<&prometheus::Registry>,
    client: RuntimeClient,
    resource: Resource,
) -> Result<Option<SdkMeterProvider>, StartError> {
    if url.is_none() && prometheus.is_none() {
        return Ok(None);
    }
    let mut builder = SdkMeterProvider::builder().with_resource(resource);
    if let Some(url) = url {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(url)
            .with_protocol(protocol(config))
            .with_headers(headers(config))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|err| StartError::Build(format!("the metric exporter for {url}: {err}")))?;
        builder = builder.with_reader(
            PeriodicReader::builder(exporter)
                .with_interval(Duration::from_millis(config.metric_interval_ms))
                .build(),
        );
    }
    if let Some(registry) = prometheus {
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .map_err(|err| StartError::Build(format!("the Prometheus reader: {err}")))?;
        builder = builder.with_reader(reader);
    }
    Ok(Some(builder.build()))
}
