//! Scheduling overhead of the orchestrator on a generated 1,000-task DAG
//! (20 waves of 50, each task depending on two of the wave before), the
//! work itself excluded: an instant runner answers every sub-task at once.
//! What is measured is everything around the work: validation and waves
//! (Kahn), the session pool, a session per directory, the prompts with the
//! dependencies' results, skips, the events and the log on disk. Target:
//! < 50 ms for the whole plan. Side by side: the same plan run by the
//! native loop over an instant backend (one model turn per sub-task), and
//! the floor, the same waves of no-op futures joined.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bridge_engine::orchestrate::{
    Complexity, Orchestrator, OrchestratorSettings, PlanSource, PlanStatus, SubTask, SubTaskRunner,
    TaskPlan,
};
use bridge_engine::runner::native::{NativeRunner, NativeSettings};
use bridge_engine::runner::{RunContext, RunReport, RunRequest, RunStatus, Runner, RunnerKind};
use bridge_engine::{RegistrySettings, Session, SessionDefaults, SessionRegistry};
use bridge_llm::{ChatBackend, ChatEvent, ChatRequest, ChatStream, FinishReason, LlmError};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;

const WAVES: usize = 20;
const PER_WAVE: usize = 50;

fn generated_plan() -> TaskPlan {
    let id = |wave: usize, i: usize| format!("w{wave}-t{i}");
    let mut tasks = Vec::new();
    let mut dependencies = BTreeMap::new();
    for wave in 0..WAVES {
        for i in 0..PER_WAVE {
            tasks.push(SubTask {
                id: id(wave, i),
                description: format!("Sub-task {i} of wave {wave}: look at module {i}"),
                estimated_complexity: Complexity::S,
                runner: None,
                files: Vec::new(),
                read_only: true,
            });
            if wave > 0 {
                dependencies.insert(
                    id(wave, i),
                    vec![id(wave - 1, i), id(wave - 1, (i * 7 + 3) % PER_WAVE)],
                );
            }
        }
    }
    TaskPlan {
        tasks,
        dependencies,
    }
}

/// Answers every sub-task at once.
struct Instant_;

#[async_trait]
impl Runner for Instant_ {
    fn kind(&self) -> RunnerKind {
        RunnerKind::Native
    }

    async fn run(
        &self,
        session: Arc<Session>,
        _request: RunRequest,
        _context: RunContext,
    ) -> RunReport {
        let mut report = RunReport::failed_early(session.id(), "");
        report.status = RunStatus::Completed;
        report.error = None;
        report.final_text = "done: nothing to change".to_owned();
        report
    }
}

/// A model that answers at once, without calling a tool.
struct InstantModel;

#[async_trait]
impl ChatBackend for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    async fn stream(&self, _request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let events = vec![
            Ok(ChatEvent::TextDelta {
                text: "done: nothing to change".into(),
            }),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
            }),
        ];
        Ok(Box::pin(futures::stream::iter(events)))
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(vec!["instant".into()])
    }
}

struct Bench {
    rt: tokio::runtime::Runtime,
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    plan: TaskPlan,
}

impl Bench {
    fn orchestrator(&self, runner: Arc<dyn Runner>) -> Orchestrator {
        let registry = SessionRegistry::new(
            SessionDefaults::restrictive().unwrap(),
            RegistrySettings::default(),
        );
        Orchestrator::new(
            registry,
            OrchestratorSettings {
                max_concurrency: 3,
                max_turns: 5,
                model: None,
                backend: None,
                default_runner: SubTaskRunner::Native,
                sessions_dir: self.home.path().join("sessions"),
                scratch_dir: self.home.path().join("orchestrate"),
                task_timeout: None,
            },
        )
        .with_runner(SubTaskRunner::Native, runner)
    }

    fn run_plan(&self, orchestrator: &Orchestrator) -> Duration {
        self.rt.block_on(async {
            let started = Instant::now();
            let opened = orchestrator
                .open(
                    "bench",
                    self.ws.path(),
                    self.plan.clone(),
                    PlanSource::Given,
                )
                .await
                .unwrap();
            let result = orchestrator
                .execute(opened, CancellationToken::new(), None)
                .await;
            assert_eq!(result.status, PlanStatus::Completed);
            started.elapsed()
        })
    }

    /// The floor: the same waves of no-op futures, joined wave by wave.
    fn floor(&self) -> Duration {
        let waves = self.plan.waves().unwrap();
        self.rt.block_on(async {
            let started = Instant::now();
            for wave in &waves {
                futures::future::join_all(
                    wave.iter().map(|&i| async move { std::hint::black_box(i) }),
                )
                .await;
            }
            started.elapsed()
        })
    }
}

fn orchestrate(c: &mut Criterion) {
    let bench = Bench {
        rt: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
        ws: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir().unwrap(),
        plan: generated_plan(),
    };
    let instant = bench.orchestrator(Arc::new(Instant_));
    let native = bench.orchestrator(Arc::new(NativeRunner::new(
        Arc::new(InstantModel),
        NativeSettings::default(),
    )));
    let mut group = c.benchmark_group("orchestrate_1000_tasks");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("kahn_waves", |b| b.iter(|| bench.plan.waves().unwrap()));
    group.bench_function("floor_joined_waves", |b| {
        b.iter_custom(|n| (0..n).map(|_| bench.floor()).sum())
    });
    group.bench_function("instant_runner", |b| {
        b.iter_custom(|n| (0..n).map(|_| bench.run_plan(&instant)).sum())
    });
    group.bench_function("native_loop_instant_backend", |b| {
        b.iter_custom(|n| (0..n).map(|_| bench.run_plan(&native)).sum())
    });
    group.finish();
}

criterion_group!(benches, orchestrate);
criterion_main!(benches);
