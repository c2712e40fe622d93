//! `tool.call` → `tool.result` round trips through the gateway.
//!
//! The caller is in-process (`Session::call_tool` on a session of a gateway
//! served by axum on 127.0.0.1:0); the provider is a lean tokio-tungstenite
//! client over loopback that answers every `tool.call` at once, batching its
//! writes. Prints p50/p99 latency and calls per second at 1, 10 and 100
//! calls in flight, with the audit log off (as in the tests) and on (as the
//! daemon runs).
//!
//! `cargo bench -p bridge-gateway --bench roundtrip`
//! Environment: `BENCH_SECS` (measured seconds per level, default 3),
//! `BENCH_LEVELS` (e.g. `1,10,100`), `BENCH_AUDIT` (`off`, `on` or `both`),
//! `BENCH_WORKERS` (tokio worker threads; default one per core).
//!
//! `allocs/call` counts every heap allocation of the process (gateway,
//! caller and provider) in the measured window, divided by the calls: the
//! bench runs on a counting wrapper of the system allocator.

#![allow(clippy::print_stdout)]

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use bridge_engine::{
    CallOrigin, RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec,
};
use bridge_gateway::{Gateway, GatewaySettings};
use futures::{FutureExt, SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocations (reallocations included) so far.
fn allocations() -> usize {
    let stats = ALLOCATOR.stats();
    stats.allocations + stats.reallocations
}

const WARM_UP: Duration = Duration::from_millis(700);

fn main() -> BenchResult<()> {
    let secs: f64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let levels: Vec<usize> = std::env::var("BENCH_LEVELS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 10, 100]);
    let audit_modes: Vec<bool> = match std::env::var("BENCH_AUDIT").as_deref() {
        Ok("on") => vec![true],
        Ok("off") => vec![false],
        _ => vec![false, true],
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        builder.worker_threads(workers);
    }
    let runtime = builder.enable_all().build()?;
    println!(
        "tool.call → tool.result round trip, {secs} s per level after {} ms warm-up",
        WARM_UP.as_millis()
    );
    println!(
        "{:<10} {:>9} {:>12} {:>10} {:>10} {:>10} {:>14} {:>12}",
        "audit", "in flight", "calls/s", "p50 µs", "p99 µs", "max µs", "CPU µs/call", "allocs/call"
    );
    // The floor: the same thread layout (caller on the runtime, peer on
    // its own thread) with nothing but a 100-byte TCP echo between them.
    let floor = runtime.block_on(tcp_echo_floor(Duration::from_secs_f64(secs)))?;
    println!(
        "{:<10} {:>9} {:>12.0} {:>10.1} {:>10.1} {:>10.1} {:>14.1} {:>12.1}",
        "tcp echo",
        1,
        floor.calls_per_sec,
        floor.p50_us,
        floor.p99_us,
        floor.max_us,
        floor.cpu_us_per_call,
        floor.allocs_per_call
    );
    for audit in audit_modes {
        runtime.block_on(async {
            let bench = Bench::start(audit).await?;
            for &level in &levels {
                let report = bench.run(level, Duration::from_secs_f64(secs)).await?;
                println!(
                    "{:<10} {:>9} {:>12.0} {:>10.1} {:>10.1} {:>10.1} {:>14.1} {:>12.1}",
                    if audit { "on" } else { "off" },
                    level,
                    report.calls_per_sec,
                    report.p50_us,
                    report.p99_us,
                    report.max_us,
                    report.cpu_us_per_call,
                    report.allocs_per_call
                );
            }
            bench.gateway.shutdown().await;
            BenchResult::Ok(())
        })?;
    }
    Ok(())
}

struct Bench {
    gateway: Gateway,
    session: Arc<Session>,
    _dirs: Vec<tempfile::TempDir>,
}

struct Report {
    /// CPU time of the whole process (gateway, caller and provider) per
    /// call: what bounds throughput on a machine with other work, where
    /// the wall-clock figures move with the neighbours.
    cpu_us_per_call: f64,
    /// Heap allocations of the whole process per call.
    allocs_per_call: f64,
    calls_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
}

impl Report {
    /// `latencies` in nanoseconds, of the calls that ended in `window`.
    fn from_latencies(
        mut latencies: Vec<u32>,
        window: Duration,
        cpu: Duration,
        allocated: usize,
    ) -> Self {
        latencies.sort_unstable();
        let pick = |q: f64| {
            let index =
                ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
            f64::from(latencies.get(index).copied().unwrap_or(0)) / 1000.0
        };
        Self {
            cpu_us_per_call: cpu.as_secs_f64() * 1e6 / latencies.len().max(1) as f64,
            allocs_per_call: allocated as f64 / latencies.len().max(1) as f64,
            calls_per_sec: latencies.len() as f64 / window.as_secs_f64(),
            p50_us: pick(0.50),
            p99_us: pick(0.99),
            max_us: f64::from(latencies.last().copied().unwrap_or(0)) / 1000.0,
        }
    }
}

impl Bench {
    async fn start(audit: bool) -> BenchResult<Self> {
        let workspace = tempfile::tempdir()?;
        let state_dir = tempfile::tempdir()?;
        let audit_dir = tempfile::tempdir()?;
        let mut defaults = SessionDefaults::restrictive()?;
        if audit {
            defaults.audit = Some(bridge_policy::AuditLog::new(audit_dir.path()));
        }
        let registry = SessionRegistry::new(defaults, RegistrySettings::default());
        let gateway = Gateway::new(
            registry.clone(),
            GatewaySettings::default(),
            state_dir.path().to_path_buf(),
        );
        let session = registry.create(SessionSpec {
            id: Some("bench".to_owned()),
            label: "bench".to_owned(),
            cwd: workspace.path().to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Rpc,
        })?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("ws://{}/", listener.local_addr()?);
        let app = gateway.router();
        // As the daemon serves it: Nagle off, since the gateway's writer
        // already batches; with it on, a reply behind an unacknowledged
        // frame can wait for the peer's delayed ACK.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let token = gateway.issue_project_token("bench")?;
        // The provider is another process in real life: it gets its own
        // thread and runtime, so it neither shares nor steals the
        // gateway's workers.
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = ready_tx.send(Err(err.to_string()));
                    return;
                }
            };
            runtime.block_on(async move {
                match connect_provider(&url, &token).await {
                    Ok(ws) => {
                        let _ = ready_tx.send(Ok(()));
                        serve_calls(ws).await;
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(err.to_string()));
                    }
                }
            });
        });
        ready_rx.await??;
        Ok(Self {
            gateway,
            session,
            _dirs: vec![workspace, state_dir, audit_dir],
        })
    }

    /// `in_flight` callers, each calling back to back: warm-up, then
    /// `measure`, recording every call that finished inside the window.
    async fn run(&self, in_flight: usize, measure: Duration) -> BenchResult<Report> {
        let recording = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let mut callers = Vec::with_capacity(in_flight);
        for _ in 0..in_flight {
            let session = self.session.clone();
            let recording = recording.clone();
            let stop = stop.clone();
            callers.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(1 << 16);
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let outcome = session
                        .call_tool("echo", json!({"text": "hello"}), CallOrigin::Rpc)
                        .await;
                    let elapsed = started.elapsed();
                    if let Err(err) = outcome.result {
                        return Err(format!("call failed: {err}"));
                    }
                    if recording.load(Ordering::Relaxed) {
                        latencies.push(u32::try_from(elapsed.as_nanos()).unwrap_or(u32::MAX));
                    }
                }
                Ok(latencies)
            }));
        }
        tokio::time::sleep(WARM_UP).await;
        recording.store(true, Ordering::Relaxed);
        let started = Instant::now();
        let cpu_before = process_cpu_time();
        let allocations_before = allocations();
        tokio::time::sleep(measure).await;
        recording.store(false, Ordering::Relaxed);
        let cpu = process_cpu_time().saturating_sub(cpu_before);
        let allocated = allocations() - allocations_before;
        let window = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for caller in callers {
            all.extend(caller.await??);
        }
        Ok(Report::from_latencies(all, window, cpu, allocated))
    }
}

/// A 100-byte echo over loopback TCP, one in flight, to a peer on its own
/// thread and runtime: what two thread wake-ups and two loopback sends
/// cost on this machine, with no WebSocket, JSON or gateway.
async fn tcp_echo_floor(measure: Duration) -> BenchResult<Report> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let Ok((mut peer, _)) = listener.accept().await else {
                return;
            };
            let _ = peer.set_nodelay(true);
            let mut buffer = [0u8; 100];
            while peer.read_exact(&mut buffer).await.is_ok() {
                if peer.write_all(&buffer).await.is_err() {
                    return;
                }
            }
        });
    });
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut buffer = [7u8; 100];
    let mut latencies = Vec::with_capacity(1 << 18);
    let warm_up_end = Instant::now() + WARM_UP;
    while Instant::now() < warm_up_end {
        stream.write_all(&buffer).await?;
        stream.read_exact(&mut buffer).await?;
    }
    let cpu_before = process_cpu_time();
    let allocations_before = allocations();
    let started = Instant::now();
    while started.elapsed() < measure {
        let sent = Instant::now();
        stream.write_all(&buffer).await?;
        stream.read_exact(&mut buffer).await?;
        latencies.push(u32::try_from(sent.elapsed().as_nanos()).unwrap_or(u32::MAX));
    }
    let cpu = process_cpu_time().saturating_sub(cpu_before);
    let allocated = allocations() - allocations_before;
    let window = started.elapsed();
    Ok(Report::from_latencies(latencies, window, cpu, allocated))
}

/// User + system CPU time of this process so far (`/proc/self/stat`, in
/// clock ticks of 10 ms: a 3 s window at full load is read to ±0.5 %).
fn process_cpu_time() -> Duration {
    const TICKS_PER_SEC: u64 = 100;
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // The command name (field 2) may hold spaces; count from after it.
    let Some(rest) = stat.rfind(')').map(|end| &stat[end + 1..]) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 11 and 12 after ')'.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 1000 / TICKS_PER_SEC)
}

/// Just enough of a `tool.call` to answer it.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    #[serde(default, borrow)]
    id: Option<&'a str>,
}

type ProviderSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects, authenticates and registers the `echo` tool.
async fn connect_provider(url: &str, token: &str) -> BenchResult<ProviderSocket> {
    // tungstenite zero-fills its whole read buffer before each read: keep it
    // small, as the gateway does.
    let config = WebSocketConfig::default().read_buffer_size(16 * 1024);
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await?;
    ws.send(Message::text(
        json!({"type": "auth", "token": token}).to_string(),
    ))
    .await?;
    expect(&mut ws, "sessions").await?;
    let hello = json!({
        "type": "hello", "name": "bench", "protocolVersion": 2, "session": "bench",
        "tools": [{"name": "echo", "description": "answers at once",
                   "parameters": {"type": "object"}}]
    });
    ws.send(Message::text(hello.to_string())).await?;
    expect(&mut ws, "hello.ack").await?;
    Ok(ws)
}

/// Answers `tool.call`s until the socket ends: everything already received
/// is answered before one flush.
async fn serve_calls(mut ws: ProviderSocket) {
    while let Some(Ok(first)) = ws.next().await {
        let mut next = Some(first);
        while let Some(message) = next.take() {
            if let Some(reply) = answer(&message)
                && ws.feed(Message::text(reply)).await.is_err()
            {
                return;
            }
            next = match ws.next().now_or_never() {
                Some(Some(Ok(message))) => Some(message),
                _ => None,
            };
        }
        if ws.flush().await.is_err() {
            return;
        }
    }
}

fn answer(message: &Message) -> Option<String> {
    let Message::Text(text) = message else {
        return None;
    };
    let incoming: Incoming<'_> = serde_json::from_str(text.as_str()).ok()?;
    if incoming.kind != "tool.call" {
        return None;
    }
    let id = serde_json::to_string(incoming.id?).ok()?;
    Some(format!(r#"{{"type":"tool.result","id":{id},"data":"ok"}}"#))
}

async fn expect(ws: &mut ProviderSocket, kind: &str) -> BenchResult<()> {
    while let Some(message) = ws.next().await {
        if let Message::Text(text) = message? {
            let value: serde_json::Value = serde_json::from_str(text.as_str())?;
            if value["type"] == kind {
                return Ok(());
            }
            return Err(format!("expected {kind}, got {value}").into());
        }
    }
    Err(format!("the gateway closed before {kind}").into())
}
