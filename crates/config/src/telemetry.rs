//! `[telemetry]`: where the hub sends its OpenTelemetry traces and metrics
//! (docs/telemetry.md). The standard `OTEL_*` variables are this section's
//! environment names, read here like every other setting — so the one rule
//! "only bridge-config reads the environment" holds for the exporter too,
//! and the SDK's builders are given the values rather than reading them.
//!
//! Export is off unless an endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`
//! or a per-signal one) or `OTEL_METRICS_EXPORTER` names `prometheus` (the
//! daemon's `GET /metrics`); `OTEL_SDK_DISABLED=true` turns it off whatever
//! is set.

use bridge_util::Secret;

use crate::keys;
use crate::loader::Builder;
use crate::value;

/// The service name the hub reports unless `OTEL_SERVICE_NAME` says another.
pub const DEFAULT_SERVICE_NAME: &str = "copilot-bridge";
/// `OTEL_BSP_SCHEDULE_DELAY`'s default, in milliseconds.
pub const DEFAULT_BATCH_DELAY_MS: u64 = 5_000;
/// `OTEL_METRIC_EXPORT_INTERVAL`'s default, in milliseconds.
pub const DEFAULT_METRIC_INTERVAL_MS: u64 = 60_000;

/// How OTLP travels over HTTP (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OtlpProtocol {
    #[default]
    HttpProtobuf,
    HttpJson,
}

impl OtlpProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HttpProtobuf => "http/protobuf",
            Self::HttpJson => "http/json",
        }
    }

    /// The `Content-Type` of an export request.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::HttpProtobuf => "application/x-protobuf",
            Self::HttpJson => "application/json",
        }
    }

    fn parse(text: &str) -> Result<Self, &'static str> {
        match text.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "http/json" => Ok(Self::HttpJson),
            _ => Err(
                "http/protobuf or http/json (grpc is not supported: point it at the collector's HTTP port, usually 4318)",
            ),
        }
    }
}

/// One OTLP signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
    Logs,
}

impl Signal {
    /// The path a base endpoint gets for this signal (the OTLP/HTTP rule).
    pub fn path(self) -> &'static str {
        match self {
            Self::Traces => "/v1/traces",
            Self::Metrics => "/v1/metrics",
            Self::Logs => "/v1/logs",
        }
    }
}

/// The exporter's settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TelemetryConfig {
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: the base URL (each signal adds its path).
    pub endpoint: Option<String>,
    /// `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`: used as they are.
    pub traces_endpoint: Option<String>,
    pub metrics_endpoint: Option<String>,
    pub logs_endpoint: Option<String>,
    pub protocol: OtlpProtocol,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,…`, values percent-decoded):
    /// often a vendor's API key, so a secret.
    pub headers: Vec<(String, Secret)>,
    /// `OTEL_SERVICE_NAME`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES` (`key=value,…`).
    pub resource_attributes: Vec<(String, String)>,
    /// `OTEL_SDK_DISABLED`.
    pub disabled: bool,
    /// `OTEL_BSP_SCHEDULE_DELAY`, milliseconds.
    pub batch_delay_ms: u64,
    /// `OTEL_METRIC_EXPORT_INTERVAL`, milliseconds.
    pub metric_interval_ms: u64,
    /// `telemetry.capture_content`: prompts, answers, tool arguments and
    /// results on spans, redacted and bounded (off by default).
    pub capture_content: bool,
    /// `OTEL_METRICS_EXPORTER`: where the hub's own metrics go.
    pub metrics_exporter: MetricsExporter,
}

/// `OTEL_METRICS_EXPORTER`: a comma-separated list of `otlp`, `prometheus`
/// and `none` (the OpenTelemetry SDK's variable; `console` and the others
/// are refused by name rather than ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsExporter {
    /// Pushed to the OTLP metrics endpoint, when one is set (the default).
    pub otlp: bool,
    /// Served in Prometheus text format at the daemon's `GET /metrics`.
    pub prometheus: bool,
}

impl Default for MetricsExporter {
    fn default() -> Self {
        Self {
            otlp: true,
            prometheus: false,
        }
    }
}

impl MetricsExporter {
    fn parse(text: &str) -> Result<Self, &'static str> {
        const EXPECTED: &str = "otlp, prometheus, otlp,prometheus or none";
        let mut exporter = Self {
            otlp: false,
            prometheus: false,
        };
        let mut named = false;
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "otlp" => exporter.otlp = true,
                "prometheus" => exporter.prometheus = true,
                "none" => {}
                _ => return Err(EXPECTED),
            }
            named = true;
        }
        if named { Ok(exporter) } else { Err(EXPECTED) }
    }

    /// The names, as `OTEL_METRICS_EXPORTER` would say them.
    fn names(self) -> String {
        match (self.otlp, self.prometheus) {
            (true, true) => "otlp,prometheus",
            (true, false) => "otlp",
            (false, true) => "prometheus",
            (false, false) => "none",
        }
        .to_owned()
    }
}

impl TelemetryConfig {
    /// Whether telemetry runs at all: it is exported to a collector or
    /// served at `GET /metrics`, and the SDK is not disabled.
    pub fn enabled(&self) -> bool {
        self.exports_otlp() || self.serves_prometheus()
    }

    /// Whether an OTLP endpoint is set (and the SDK is not disabled): where
    /// the hub's spans go and the agents' own telemetry is forwarded.
    pub fn exports_otlp(&self) -> bool {
        !self.disabled
            && (self.endpoint.is_some()
                || self.traces_endpoint.is_some()
                || self.metrics_endpoint.is_some()
                || self.logs_endpoint.is_some())
    }

    /// Whether the daemon serves its metrics at `GET /metrics`.
    pub fn serves_prometheus(&self) -> bool {
        !self.disabled && self.metrics_exporter.prometheus
    }

    /// Where the hub's own metrics are pushed: the metrics endpoint, unless
    /// `OTEL_METRICS_EXPORTER` leaves `otlp` out.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics_exporter
            .otlp
            .then(|| self.url(Signal::Metrics))
            .flatten()
    }

    /// `OTEL_METRICS_EXPORTER` as it would be written.
    pub fn metrics_exporter_names(&self) -> String {
        self.metrics_exporter.names()
    }

    /// Where `signal` goes: its own endpoint as it is, else the base
    /// endpoint with the signal's path; `None` when export is off or
    /// nothing names a place for it.
    pub fn url(&self, signal: Signal) -> Option<String> {
        if self.disabled {
            return None;
        }
        let own = match signal {
            Signal::Traces => &self.traces_endpoint,
            Signal::Metrics => &self.metrics_endpoint,
            Signal::Logs => &self.logs_endpoint,
        };
        own.clone().or_else(|| {
            self.endpoint
                .as_ref()
                .map(|base| format!("{}{}", base.trim_end_matches('/'), signal.path()))
        })
    }
}

impl crate::loader::ConfigLoader {
    /// The `[telemetry]` section from its keys.
    pub(crate) fn telemetry_section(&self, builder: &mut Builder<'_>) -> TelemetryConfig {
        TelemetryConfig {
            endpoint: builder.parse(keys::OTEL_ENDPOINT, value::parse_url),
            traces_endpoint: builder.parse(keys::OTEL_TRACES_ENDPOINT, value::parse_url),
            metrics_endpoint: builder.parse(keys::OTEL_METRICS_ENDPOINT, value::parse_url),
            logs_endpoint: builder.parse(keys::OTEL_LOGS_ENDPOINT, value::parse_url),
            protocol: builder
                .parse(keys::OTEL_PROTOCOL, OtlpProtocol::parse)
                .unwrap_or_default(),
            headers: builder
                .parse(keys::OTEL_HEADERS, |text| {
                    parse_pairs(text).map(|pairs| {
                        pairs
                            .into_iter()
                            .map(|(key, value)| (key, Secret::new(value)))
                            .collect()
                    })
                })
                .unwrap_or_default(),
            service_name: builder
                .parse(keys::OTEL_SERVICE_NAME, |text| {
                    let name = text.trim();
                    if name.is_empty() {
                        Err("a service name")
                    } else {
                        Ok(name.to_owned())
                    }
                })
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
            resource_attributes: builder
                .parse(keys::OTEL_RESOURCE_ATTRIBUTES, parse_pairs)
                .unwrap_or_default(),
            disabled: builder
                .parse(keys::OTEL_SDK_DISABLED, value::parse_bool)
                .unwrap_or(false),
            batch_delay_ms: builder
                .parse(keys::OTEL_BATCH_DELAY_MS, value::parse_positive)
                .unwrap_or(DEFAULT_BATCH_DELAY_MS),
            metric_interval_ms: builder
                .parse(keys::OTEL_METRIC_INTERVAL_MS, value::parse_positive)
                .unwrap_or(DEFAULT_METRIC_INTERVAL_MS),
            capture_content: builder
                .parse(keys::OTEL_CAPTURE_CONTENT, value::parse_bool)
                .unwrap_or(false),
            metrics_exporter: builder
                .parse(keys::OTEL_METRICS_EXPORTER, MetricsExporter::parse)
                .unwrap_or_default(),
        }
    }
}

/// Pairs of the W3C Baggage shape the OTel variables use: `key=value`
/// separated by commas, values percent-decoded, blanks around both
/// trimmed. A pair without `=` or with an empty key is an error.
pub(crate) fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, &'static str> {
    const EXPECTED: &str = "key=value pairs separated by commas (values percent-encoded)";
    let mut pairs = Vec::new();
    for item in text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let (key, value) = item.split_once('=').ok_or(EXPECTED)?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(EXPECTED);
        }
        pairs.push((
            key.to_owned(),
            percent_decoded(value.trim()).ok_or(EXPECTED)?,
        ));
    }
    Ok(pairs)
}

/// `%XX` escapes decoded; `None` for a broken escape or bytes that are not
/// UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_split_trimmed_and_decoded() {
        assert_eq!(
            parse_pairs(" a=1 , b = x%20y,,c=%E2%9C%93 ").unwrap(),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "x y".to_owned()),
                ("c".to_owned(), "✓".to_owned())
            ]
        );
        assert!(parse_pairs("novalue").is_err());
        assert!(parse_pairs("=v").is_err());
        assert!(parse_pairs("a=%zz").is_err());
        assert!(parse_pairs("a=%").is_err());
        assert!(parse_pairs("a=%ff").is_err(), "not UTF-8");
    }

    #[test]
    fn each_signal_gets_its_own_endpoint_or_the_base_with_its_path() {
        let mut config = TelemetryConfig::default();
        assert!(!config.enabled());
        assert_eq!(config.url(Signal::Traces), None);
        config.endpoint = Some("http://collector:4318/".to_owned());
        assert!(config.enabled());
        assert_eq!(
            config.url(Signal::Traces).as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        config.metrics_endpoint = Some("http://other:9/m".to_owned());
        assert_eq!(
            config.url(Signal::Metrics).as_deref(),
            Some("http://other:9/m")
        );
        config.disabled = true;
        assert!(!config.enabled());
        assert_eq!(config.url(Signal::Logs), None);
    }

    #[test]
    fn metrics_go_where_the_exporter_list_says() {
        let parse = MetricsExporter::parse;
        assert_eq!(parse("otlp").unwrap(), MetricsExporter::default());
        let both = parse(" otlp , prometheus ").unwrap();
        assert!(both.otlp && both.prometheus);
        let none = parse("none").unwrap();
        assert!(!none.otlp && !none.prometheus);
        assert!(parse("console").is_err(), "refused by name, not ignored");
        assert!(parse(" , ").is_err());

        let mut config = TelemetryConfig {
            metrics_exporter: parse("prometheus").unwrap(),
            ..TelemetryConfig::default()
        };
        assert!(config.enabled(), "/metrics alone turns telemetry on");
        assert!(!config.exports_otlp());
        config.endpoint = Some("http://collector:4318".to_owned());
        assert_eq!(config.metrics_url(), None, "otlp left out of the list");
        assert!(
            config.url(Signal::Metrics).is_some(),
            "still forwarded there"
        );
        config.metrics_exporter.otlp = true;
        assert_eq!(
            config.metrics_url().as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
        config.disabled = true;
        assert!(!config.serves_prometheus() && !config.enabled());
    }
}
