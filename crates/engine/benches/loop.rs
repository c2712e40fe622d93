//! Loop overhead per tool round trip, the model excluded: an in-process
//! backend answers at once with one tool call per turn, and the tool answers
//! at once, so what is measured is the loop itself (request building,
//! stream assembly, `Session::call_tool` with policy, rules, redaction,
//! `onPostToolUse`, events). Target: < 60 µs per round trip, the same
//! for a short task and a long one (the conversation grows each turn, so
//! each length is measured: `round_trip/20` and `round_trip/200`, whole
//! runs divided by their round trips). What a run costs once, whatever its
//! length, is measured by a run without tool calls
//! (`run_without_tool_calls*`, per run): a round trip's own cost in a run
//! of n is `(n · round_trip/n − run_without_tool_calls) / n`.
//!
//! With the session log, the log lives on a memory file system
//! (`/dev/shm` where there is one) so the per-round-trip figure holds the
//! log's own work (events built, redacted, serialized, written with
//! `write(2)`) and not the one `fdatasync` a run ends with; that sync is
//! measured on its own, on the disk's temporary directory, after writing a
//! whole run's log: `session_log_final_sync/{20,200}`, per run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bridge_engine::log::EventLog;
use bridge_engine::runner::native::{NativeRunner, NativeSettings};
use bridge_engine::runner::{RunContext, RunRequest, RunStatus, Runner};
use bridge_engine::{
    RegistrySettings, SessionDefaults, SessionRegistry, SessionSpec, ToolEntry, ToolFailure,
    ToolHandler, ToolInvocation, ToolOwner,
};
use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, ChatStream, FinishReason, LlmError, Usage};
use bridge_protocol::{ToolEffect, ToolSpec};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The hub binary's allocator (crates/cli/src/allocator.rs): the loop and
/// the log's writer free on one thread what the other allocated, which the
/// system allocator serializes on a lock.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Round trips per run: the conversation grows with each, as in real use.
const ROUND_TRIPS: [u32; 2] = [20, 200];

/// Calls `echo` while `remaining` tool calls are left in the run (set
/// before each run), then answers.
struct ScriptedModel {
    turns: AtomicU32,
    remaining: AtomicU32,
}

#[async_trait]
impl ChatBackend for ScriptedModel {
    fn name(&self) -> &str {
        "bench"
    }

    async fn stream(&self, _request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed);
        let usage = ChatEvent::Usage {
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
            },
        };
        let calls_left = self
            .remaining
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        let events = if calls_left {
            vec![
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: format!("call{turn}"),
                    name: "echo".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    arguments: "{\"text\":\"hel".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    arguments: "lo\"}".into(),
                },
                ChatEvent::ToolCallEnd { index: 0 },
                usage,
                ChatEvent::Finish {
                    reason: FinishReason::ToolCalls,
                },
            ]
        } else {
            vec![
                ChatEvent::TextDelta {
                    text: "done".into(),
                },
                usage,
                ChatEvent::Finish {
                    reason: FinishReason::Stop,
                },
            ]
        };
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(vec!["bench".into()])
    }
}

struct Echo;

#[async_trait]
impl ToolHandler for Echo {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        Ok(json!({"echo": invocation.args}))
    }
}

fn bench_loop(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let logs = memory_tempdir();
    let mut defaults = SessionDefaults::restrictive().unwrap();
    defaults.read_only = true;
    let registry = SessionRegistry::new(defaults, RegistrySettings::default());
    let model = Arc::new(ScriptedModel {
        turns: AtomicU32::new(0),
        remaining: AtomicU32::new(0),
    });
    let runner = NativeRunner::new(model.clone(), NativeSettings::default());
    let owner = ToolOwner::Provider("bench".into());
    let run_once = |with_log: bool, round_trips: u32, n: u64| {
        let session = registry
            .create(SessionSpec {
                id: Some(format!("bench-{round_trips}-{n}-{with_log}")),
                label: "bench".into(),
                cwd: workspace.path().to_path_buf(),
                foreground: false,
                door: bridge_engine::Door::Rpc,
            })
            .unwrap();
        session
            .register_tools(
                &owner,
                vec![ToolEntry {
                    spec: ToolSpec {
                        name: "echo".into(),
                        description: "echo".into(),
                        input_schema: json!({"type": "object"}),
                        effect: ToolEffect::Read,
                    },
                    owner: owner.clone(),
                    handler: Arc::new(Echo),
                }],
            )
            .unwrap();
        let request = RunRequest {
            task: "echo many times".into(),
            model: None,
            max_turns: round_trips + 1,
            timeout: None,
        };
        runtime.block_on(async {
            let mut context = RunContext::new(CancellationToken::new());
            if with_log {
                let log = EventLog::create(logs.path(), session.id(), json!({}))
                    .await
                    .unwrap();
                context = context.with_log(log);
            }
            model.remaining.store(round_trips, Ordering::Relaxed);
            let started = Instant::now();
            let report = runner.run(session.clone(), request, context).await;
            let elapsed = started.elapsed();
            assert_eq!(report.status, RunStatus::Completed, "{report:?}");
            assert_eq!(report.tool_calls.len(), round_trips as usize);
            let _ = registry.end(session.id(), Some(Duration::ZERO)).await;
            elapsed
        })
    };
    let mut group = c.benchmark_group("native_loop");
    group.sample_size(20);
    let mut counter = 0u64;
    for with_log in [false, true] {
        let (name, fixed) = if with_log {
            (
                "round_trip_with_session_log",
                "run_without_tool_calls_with_session_log",
            )
        } else {
            ("round_trip", "run_without_tool_calls")
        };
        // What every run costs once, whatever its length: its start, the
        // model's answer, and with the log the flush that ends it (the
        // writer catching up, the hand-offs to the blocking pool); per run.
        group.bench_function(fixed, |b| {
            b.iter_custom(|iterations| {
                (0..iterations)
                    .map(|_| {
                        counter += 1;
                        run_once(with_log, 0, counter)
                    })
                    .sum()
            });
        });
        for round_trips in ROUND_TRIPS {
            group.bench_function(BenchmarkId::new(name, round_trips), |b| {
                b.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        counter += 1;
                        total += run_once(with_log, round_trips, counter) / round_trips;
                    }
                    total
                });
            });
        }
    }
    group.finish();
    // One logged run of each length, even when a filter skipped the ones
    // above: the final sync writes what such a run wrote.
    for round_trips in ROUND_TRIPS {
        counter += 1;
        run_once(true, round_trips, counter);
    }
    bench_final_sync(c, logs.path());
}

/// A temporary directory on a memory file system, where `fdatasync` costs
/// nothing; the disk's temporary directory where there is none.
fn memory_tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm).unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

/// The `fdatasync` a run with the session log ends with, per run: a whole
/// run's log (one the loop benchmark wrote) written to a file on the disk,
/// then synced; only the sync is timed.
fn bench_final_sync(c: &mut Criterion, logs: &std::path::Path) {
    use std::io::Write;
    let disk = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("session_log_final_sync");
    group.sample_size(20);
    for round_trips in ROUND_TRIPS {
        let run_log = std::fs::read_dir(logs)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                name.starts_with(&format!("bench-{round_trips}-"))
            })
            .map(|path| std::fs::read(path).unwrap())
            .expect("a log of the loop benchmark");
        let mut counter = 0u64;
        group.bench_function(BenchmarkId::from_parameter(round_trips), |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    counter += 1;
                    let path = disk.path().join(format!("run-{counter}.jsonl"));
                    let mut file = std::fs::File::create(&path).unwrap();
                    file.write_all(&run_log).unwrap();
                    let started = Instant::now();
                    file.sync_data().unwrap();
                    total += started.elapsed();
                    std::fs::remove_file(&path).unwrap();
                }
                total
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
