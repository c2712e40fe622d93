//! What telemetry adds to a tool call (docs/benchmarks.md, "Telemetry on
//! the tool-call path"): `Session::call_tool` of a tool that answers at
//! once, with the audit log on, first with telemetry off (nothing
//! started: every call site asks `bridge_telemetry::active()` and finds
//! nothing), then — in the same run, the same session — with export on
//! (an `execute_tool` span and the tool-call counter per call, queued to
//! the SDK's batch processor; the collector is a local port that refuses
//! connections, so export work happens on the processor's own thread and
//! never reaches the caller). Target: under 2 µs added per span; nothing
//! measurable when off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use bridge_engine::{
    CallOrigin, RegistrySettings, SessionDefaults, SessionRegistry, SessionSpec, ToolEntry,
    ToolFailure, ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_policy::AuditLog;
use bridge_protocol::{ToolEffect, ToolSpec};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

struct Echo;

#[async_trait]
impl ToolHandler for Echo {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        Ok(invocation.args)
    }
}

fn telemetry(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let defaults = SessionDefaults {
        audit: Some(AuditLog::new(state.path().join("audit"))),
        ..SessionDefaults::restrictive().unwrap()
    };
    let registry = SessionRegistry::new(defaults, RegistrySettings::default());
    let session = registry
        .create(SessionSpec {
            id: Some("bench".to_owned()),
            label: "bench".to_owned(),
            cwd: state.path().to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Rpc,
        })
        .unwrap();
    let owner = ToolOwner::Service("bench".to_owned());
    session
        .register_tools(
            &owner,
            vec![ToolEntry {
                spec: ToolSpec {
                    name: "echo".to_owned(),
                    description: "echo".to_owned(),
                    input_schema: json!({"type": "object"}),
                    effect: ToolEffect::Read,
                },
                owner: owner.clone(),
                handler: Arc::new(Echo),
            }],
        )
        .unwrap();
    let args = json!({"city": "Lisbon", "days": 3});
    let mut group = c.benchmark_group("tool_call");
    group.bench_function("telemetry_off", |b| {
        b.iter(|| runtime.block_on(session.call_tool("echo", args.clone(), CallOrigin::Rpc)))
    });
    // A port nothing listens on: exports fail on the processor's thread.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let config = bridge_config::TelemetryConfig {
        endpoint: Some(endpoint),
        service_name: "bench".to_owned(),
        batch_delay_ms: 1000,
        metric_interval_ms: 60_000,
        ..bridge_config::TelemetryConfig::default()
    };
    let handle = runtime.handle().clone();
    bridge_telemetry::Telemetry::start(&config, "bench", handle)
        .unwrap()
        .expect("export on");
    group.bench_function("telemetry_on", |b| {
        b.iter(|| runtime.block_on(session.call_tool("echo", args.clone(), CallOrigin::Rpc)))
    });
    group.finish();
}

criterion_group!(benches, telemetry);
criterion_main!(benches);
