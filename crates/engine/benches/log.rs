//! The session event log: append throughput (queue, batch, redact,
//! serialize, write, then one `fdatasync`), and replay / resume of a
//! 100,000-event session (target: under 150 ms).

#![allow(
    clippy::expect_used,
    reason = "a benchmark whose setup fails must stop, not measure"
)]
#![allow(clippy::print_stdout, reason = "the benchmark reports file sizes")]

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bridge_engine::log::{EventLog, ToolRequest, replay, session_file, types};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const APPEND_EVENTS: u64 = 10_000;
const REPLAY_EVENTS: u64 = 100_000;

/// One turn of a typical session, as the native runner logs it: ten
/// events, one tool result of about 600 bytes.
fn turn_events(turn: u64) -> Vec<(&'static str, Value)> {
    let request = ToolRequest {
        tool_call_id: format!("call-{turn}"),
        name: "read_file".to_owned(),
        arguments: json!({"path": format!("src/module_{turn}.rs")}),
    };
    let content = "    let value = compute(input, &settings); // a line of code\n".repeat(10);
    vec![
        (
            types::USER_MESSAGE,
            types::user_message("fix the failing test in the parser module"),
        ),
        (types::ASSISTANT_TURN_START, json!({"turn": turn})),
        (types::SESSION_USAGE, types::usage(Some("gpt-4o"), 1200, 80)),
        (
            types::ASSISTANT_MESSAGE,
            types::assistant_message(
                "Let me read the module first.",
                std::slice::from_ref(&request),
            ),
        ),
        (
            types::TOOL_EXECUTION_START,
            types::tool_start(&request.tool_call_id, "read_file", &request.arguments),
        ),
        (
            types::TOOL_EXECUTION_COMPLETE,
            types::tool_complete(&request.tool_call_id, "read_file", true, &content),
        ),
        (types::ASSISTANT_TURN_END, json!({"turn": turn})),
        (types::HOOK_START, json!({"hook": "policy"})),
        (
            types::HOOK_END,
            json!({"hook": "policy", "decision": "allow"}),
        ),
        (
            types::ASSISTANT_MESSAGE,
            types::assistant_message("The off-by-one is fixed.", &[]),
        ),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Appends `count` events of typical sessions to a new log and waits for
/// them to be on disk.
async fn append_session(dir: &Path, id: &str, count: u64) {
    let log = EventLog::create(dir, id, json!({"model": "gpt-4o"}))
        .await
        .expect("create");
    let mut turn = 0;
    let mut written = 1;
    while written < count {
        for (kind, data) in turn_events(turn) {
            if written == count {
                break;
            }
            log.append(kind, data, None);
            written += 1;
        }
        turn += 1;
    }
    log.close().await.expect("close");
}

fn bench_append(c: &mut Criterion) {
    let runtime = runtime();
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = temp.path().join("sessions");
    let next = AtomicU64::new(0);
    let events: Vec<(&str, Value)> = (0..APPEND_EVENTS / 10).flat_map(turn_events).collect();
    let mut group = c.benchmark_group("log_append");
    group.sample_size(10);
    group.throughput(Throughput::Elements(APPEND_EVENTS));
    group.bench_function("10k_events_then_close", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let id = format!("append-{}", next.fetch_add(1, Ordering::Relaxed));
                let events = events.clone();
                let started = Instant::now();
                runtime.block_on(async {
                    let log = EventLog::create(&dir, &id, Value::Null)
                        .await
                        .expect("create");
                    for (kind, data) in events {
                        black_box(log.append(kind, data, None));
                    }
                    log.close().await.expect("close");
                });
                total += started.elapsed();
                let _ = std::fs::remove_file(session_file(&dir, &id));
            }
            total
        });
    });
    group.finish();
    // The figure for bytes/s: the size of one such session on disk.
    runtime.block_on(append_session(&dir, "size", APPEND_EVENTS));
    let bytes = std::fs::metadata(session_file(&dir, "size")).map_or(0, |m| m.len());
    println!("log_append: {APPEND_EVENTS} events = {bytes} bytes on disk");
}

fn bench_replay(c: &mut Criterion) {
    let runtime = runtime();
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = temp.path().join("sessions");
    runtime.block_on(append_session(&dir, "big", REPLAY_EVENTS));
    let path = session_file(&dir, "big");
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    println!("log_replay: {REPLAY_EVENTS} events = {bytes} bytes on disk");

    let mut group = c.benchmark_group("log_replay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(REPLAY_EVENTS));
    group.bench_function("stream_100k_events", |b| {
        b.iter(|| {
            let count = replay(&path)
                .expect("open")
                .filter(|item| item.is_ok())
                .count();
            assert!(count as u64 >= REPLAY_EVENTS);
        });
    });
    group.bench_function("resume_100k_events", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let (log, replayed) = EventLog::resume(&dir, "big").await.expect("resume");
                black_box(replayed.conversation.len());
                log.close().await.expect("close");
            });
        });
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_replay);
criterion_main!(benches);
