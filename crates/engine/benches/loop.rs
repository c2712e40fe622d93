//! Loop overhead per tool round trip, the model excluded: an in-process
//! backend answers at once with one tool call per turn, and the tool answers
//! at once, so what is measured is the loop itself (request building,
//! stream assembly, `Session::call_tool` with policy, rules, redaction,
//! `onPostToolUse`, events). Target: < 100 µs per round trip, the same
//! for a short task and a long one (the conversation grows each turn, so
//! each length is measured: `round_trip/20` and `round_trip/200`).

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
    let logs = tempfile::tempdir().unwrap();
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
                id: Some(format!("bench-{n}-{with_log}")),
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
        let name = if with_log {
            "round_trip_with_session_log"
        } else {
            "round_trip"
        };
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
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
