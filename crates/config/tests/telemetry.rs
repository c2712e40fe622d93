//! `[telemetry]` and the standard `OTEL_*` variables (docs/telemetry.md).

use bridge_config::{OtlpProtocol, Signal};

/// The configuration `env` and `toml` make, or its error's text.
fn load(env: &[(&str, &str)], toml: Option<&str>) -> Result<bridge_config::BridgeConfig, String> {
    crate::validation::load(env, toml).map_err(|err| err.to_string())
}

#[test]
fn export_is_off_until_an_endpoint_is_set_and_the_sdk_switch_wins() {
    let none = load(&[], None).unwrap().telemetry;
    assert!(!none.enabled());
    assert_eq!(none.service_name, "copilot-bridge");
    assert_eq!(none.protocol, OtlpProtocol::HttpProtobuf);
    assert!(!none.capture_content);

    let on = load(
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")],
        None,
    )
    .unwrap()
    .telemetry;
    assert!(on.enabled());
    assert_eq!(
        on.url(Signal::Traces).as_deref(),
        Some("http://127.0.0.1:4318/v1/traces")
    );
    // One signal's endpoint alone turns export on, for that signal.
    let traces_only = load(
        &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/t")],
        None,
    )
    .unwrap()
    .telemetry;
    assert!(traces_only.enabled());
    assert_eq!(traces_only.url(Signal::Metrics), None);

    let disabled = load(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ],
        None,
    )
    .unwrap()
    .telemetry;
    assert!(!disabled.enabled());
}

#[test]
fn every_standard_variable_and_the_section_are_read() {
    let config = load(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://api.honeycomb.io"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-honeycomb-team=hc-secret-0123,x-other=a%20b",
            ),
            ("OTEL_SERVICE_NAME", "hub-on-laptop"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "team=infra,deployment.environment=dev",
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "250"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "1000"),
        ],
        Some("[telemetry]\ncapture_content = true\n"),
    )
    .unwrap();
    let telemetry = &config.telemetry;
    assert_eq!(telemetry.protocol, OtlpProtocol::HttpJson);
    assert_eq!(telemetry.headers.len(), 2);
    assert_eq!(telemetry.headers[0].0, "x-honeycomb-team");
    assert_eq!(telemetry.headers[0].1.expose(), "hc-secret-0123");
    assert_eq!(telemetry.headers[1].1.expose(), "a b");
    assert_eq!(telemetry.service_name, "hub-on-laptop");
    assert_eq!(
        telemetry.resource_attributes,
        [
            ("team".to_owned(), "infra".to_owned()),
            ("deployment.environment".to_owned(), "dev".to_owned())
        ]
    );
    assert_eq!(telemetry.batch_delay_ms, 250);
    assert_eq!(telemetry.metric_interval_ms, 1000);
    assert!(telemetry.capture_content);
    // `config show` never prints a header's value.
    let shown = format!("{:?}", config.show());
    assert!(!shown.contains("hc-secret-0123"), "{shown}");
    assert!(shown.contains("x-honeycomb-team=[REDACTED]"), "{shown}");
}

#[test]
fn bad_values_name_the_variable_and_what_is_allowed() {
    for (name, value, expected) in [
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
            "grpc is not supported",
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "collector:4318",
            "http:// or https://",
        ),
        ("OTEL_EXPORTER_OTLP_HEADERS", "novalue", "key=value pairs"),
        ("OTEL_RESOURCE_ATTRIBUTES", "a=%zz", "key=value pairs"),
        ("OTEL_BSP_SCHEDULE_DELAY", "-5", ""),
        ("OTEL_SDK_DISABLED", "maybe", "true or false"),
    ] {
        let err = load(&[(name, value)], None).unwrap_err();
        assert!(
            err.contains(name) && err.contains(expected),
            "{name}: {err}"
        );
    }
    // A secret's value is not echoed in its error.
    let err = load(&[("OTEL_EXPORTER_OTLP_HEADERS", "k=%zzsecret-value")], None).unwrap_err();
    assert!(!err.contains("secret-value"), "{err}");
}
