//! The daemon's OpenTelemetry export (docs/telemetry.md): started from
//! `[telemetry]` once the port is known, refused when an endpoint is the
//! daemon itself (its own spans would be exported to it, and forwarded on,
//! for ever), flushed at shutdown; and `GET /metrics` for those who scrape.

use std::net::{IpAddr, SocketAddr};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridge_config::{BridgeConfig, Signal};
use bridge_util::ids::constant_time_eq;

use crate::app::ServerContext;
use crate::daemon::DaemonError;
use crate::guard::{presented_token, refusal, unauthorized};

/// `GET /metrics`: the hub's metrics in Prometheus's text format, for the
/// daemon's token (as `/rpc` takes it, or the approver's) or the scrape
/// token of `metrics-token`; 404 unless `OTEL_METRICS_EXPORTER` names
/// `prometheus`.
pub(crate) async fn metrics(State(ctx): State<ServerContext>, headers: HeaderMap) -> Response {
    let Some(presented) = presented_token(&headers, None) else {
        return unauthorized();
    };
    let accepted = [
        Some(&ctx.token),
        Some(&ctx.approver_token),
        ctx.metrics_token.as_ref(),
    ];
    if !accepted
        .into_iter()
        .flatten()
        .any(|token| constant_time_eq(presented, token))
    {
        return unauthorized();
    }
    let not_served = || {
        refusal(
            StatusCode::NOT_FOUND,
            "not_found",
            "the daemon serves no metrics: start it with OTEL_METRICS_EXPORTER=prometheus (or \
             [telemetry] metrics_exporter = \"otlp,prometheus\") to scrape GET /metrics",
        )
    };
    if ctx.metrics_token.is_none() {
        return not_served();
    }
    let Some(telemetry) = bridge_telemetry::active() else {
        return not_served();
    };
    // Collecting runs the gauges' callbacks: off the async workers.
    match tokio::task::spawn_blocking(|| telemetry.prometheus_text()).await {
        Ok(Some(Ok(text))) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Ok(None) => not_served(),
        Ok(Some(Err(err))) => refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            err.to_string(),
        ),
        Err(err) => refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("collecting the metrics failed: {err}"),
        ),
    }
}

/// Starts the export `config` asks for; nothing when it asks for none.
pub(crate) fn start(config: &BridgeConfig, port: u16) -> Result<(), DaemonError> {
    let telemetry = &config.telemetry;
    if !telemetry.enabled() {
        return Ok(());
    }
    let ours = SocketAddr::new(config.bind_address, port);
    for signal in [Signal::Traces, Signal::Metrics, Signal::Logs] {
        if let Some(url) = telemetry.url(signal)
            && names_this_daemon(&url, ours)
        {
            return Err(DaemonError::Config(format!(
                "telemetry: the exporter endpoint {url} is this daemon's own address ({ours}); point OTEL_EXPORTER_OTLP_ENDPOINT at a collector, not at the hub (agents send their telemetry to the hub; the hub exports to a collector)"
            )));
        }
    }
    match bridge_telemetry::Telemetry::start(
        telemetry,
        crate::VERSION,
        tokio::runtime::Handle::current(),
    ) {
        Ok(Some(_)) => {
            tracing::info!(
                traces = telemetry.url(Signal::Traces).as_deref().unwrap_or("-"),
                metrics = telemetry.metrics_url().as_deref().unwrap_or("-"),
                prometheus = telemetry.serves_prometheus(),
                protocol = telemetry.protocol.as_str(),
                "telemetry: exporting"
            );
            Ok(())
        }
        Ok(None) => Ok(()),
        // A second daemon in one process (tests): the first's export serves.
        Err(bridge_telemetry::StartError::AlreadyStarted) => Ok(()),
        Err(err) => Err(DaemonError::Config(err.to_string())),
    }
}

/// Whether `url` reaches `ours`: its port, and a host that is ours
/// (loopback, the bound address, or any address when bound to all).
fn names_this_daemon(url: &str, ours: SocketAddr) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    if parsed.port_or_known_default() != Some(ours.port()) {
        return false;
    }
    let host = parsed
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']']);
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip == ours.ip() || ours.ip().is_unspecified(),
        Err(_) => false,
    }
}

/// The daemon's gauges: asks waiting for a person, providers connected.
pub(crate) fn gauges(ctx: &crate::app::ServerContext) {
    let Some(telemetry) = bridge_telemetry::active() else {
        return;
    };
    let approvals = ctx.approvals.clone();
    telemetry.gauge(
        "copilot_bridge.approvals.pending",
        "{ask}",
        "Tool calls waiting for a person's answer",
        move || u64::try_from(approvals.list(None).len()).unwrap_or(u64::MAX),
    );
    let gateway = ctx.gateway.clone();
    telemetry.gauge(
        "copilot_bridge.provider.connections",
        "{connection}",
        "Providers connected over the Provider Interface",
        move || u64::try_from(gateway.status().providers.len()).unwrap_or(u64::MAX),
    );
}

/// Exports what is queued before the daemon goes (bounded by the export
/// timeout).
pub(crate) async fn flush() {
    if let Some(telemetry) = bridge_telemetry::active() {
        let _ = tokio::task::spawn_blocking(|| telemetry.flush()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_this_daemon_by_port_and_host() {
        let ours: SocketAddr = "127.0.0.1:9400".parse().unwrap_or_else(|_| unreachable!());
        for url in [
            "http://127.0.0.1:9400/v1/traces",
            "http://localhost:9400",
            "http://[::1]:9400/v1/metrics",
        ] {
            assert!(names_this_daemon(url, ours), "{url}");
        }
        for url in [
            "http://127.0.0.1:4318/v1/traces",
            "http://collector.internal:9400",
            "https://api.honeycomb.io",
        ] {
            assert!(!names_this_daemon(url, ours), "{url}");
        }
        let everywhere: SocketAddr = "0.0.0.0:9400".parse().unwrap_or_else(|_| unreachable!());
        assert!(names_this_daemon("http://192.168.1.5:9400", everywhere));
    }
}
