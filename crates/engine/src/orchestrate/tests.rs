//! The scheduler with a scripted runner: waves, concurrency, skips,
//! resume, cancellation. (Against the mock LLM and real worktrees:
//! crates/cli/tests/cli_orchestrate.rs.)

use std::sync::Mutex;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::registry::{RegistrySettings, SessionDefaults};
use crate::runner::{RunContext, RunReport, RunRequest, RunStatus, RunnerKind, UsageTotals};
use crate::session::Session;

/// Answers each sub-task after `delay`; fails those whose prompt names a
/// task listed in `failing`; records start and end order and the most
/// running at once.
#[derive(Default)]
struct Scripted {
    delay: Duration,
    failing: Vec<String>,
    log: Mutex<Vec<String>>,
    running: Mutex<(usize, usize)>,
}

fn task_of(prompt: &str) -> String {
    let at = prompt.find("Your sub-task (").unwrap() + "Your sub-task (".len();
    prompt[at..].split(')').next().unwrap().to_owned()
}

#[async_trait]
impl Runner for Scripted {
    fn kind(&self) -> RunnerKind {
        RunnerKind::Native
    }

    async fn run(
        &self,
        session: Arc<Session>,
        request: RunRequest,
        context: RunContext,
    ) -> RunReport {
        let id = task_of(&request.task);
        self.log.lock().unwrap().push(format!("start {id}"));
        {
            let mut running = self.running.lock().unwrap();
            running.0 += 1;
            running.1 = running.1.max(running.0);
        }
        let cancelled = tokio::select! {
            () = tokio::time::sleep(self.delay) => false,
            () = context.cancel_token().cancelled() => true,
        };
        self.running.lock().unwrap().0 -= 1;
        self.log.lock().unwrap().push(format!("end {id}"));
        let mut report = RunReport::failed_early(session.id(), "scripted failure");
        report.final_text = format!("result of {id}; saw: {}", request.task.contains("### "));
        report.status = if cancelled {
            RunStatus::Cancelled
        } else if self.failing.contains(&id) {
            RunStatus::Failed
        } else {
            report.error = None;
            RunStatus::Completed
        };
        report.usage = UsageTotals::default();
        report
    }
}

struct Setup {
    orchestrator: Orchestrator,
    runner: Arc<Scripted>,
    ws: tempfile::TempDir,
    _home: tempfile::TempDir,
}

fn setup(runner: Scripted, max_concurrency: usize) -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let registry = SessionRegistry::new(
        SessionDefaults::restrictive().unwrap(),
        RegistrySettings::default(),
    );
    let runner = Arc::new(runner);
    let orchestrator = Orchestrator::new(
        registry,
        OrchestratorSettings {
            max_concurrency,
            max_turns: 5,
            model: None,
            backend: None,
            default_runner: SubTaskRunner::Native,
            sessions_dir: home.path().join("sessions"),
            scratch_dir: home.path().join("orchestrate"),
            task_timeout: None,
        },
    )
    .with_runner(SubTaskRunner::Native, runner.clone());
    Setup {
        orchestrator,
        runner,
        ws,
        _home: home,
    }
}

fn diamond() -> TaskPlan {
    parse_plan_file(
        r#"{"tasks": [
            {"id": "t1", "description": "one"}, {"id": "t2", "description": "two"},
            {"id": "t3", "description": "three"}, {"id": "t4", "description": "four"},
            {"id": "t5", "description": "five"}],
            "dependencies": {"t3": ["t1", "t2"], "t4": ["t1"], "t5": ["t3", "t4"]}}"#,
    )
    .unwrap()
}

async fn run(setup: &Setup, plan: TaskPlan) -> OrchestratedResult {
    let opened = setup
        .orchestrator
        .open("the task", setup.ws.path(), plan, PlanSource::Given)
        .await
        .unwrap();
    setup
        .orchestrator
        .execute(opened, CancellationToken::new(), None)
        .await
}

fn statuses(result: &OrchestratedResult) -> Vec<(&str, TaskStatus)> {
    result
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.status))
        .collect()
}

#[tokio::test]
async fn a_diamond_runs_wave_by_wave_with_its_dependencies_results() {
    let setup = setup(
        Scripted {
            delay: Duration::from_millis(30),
            ..Scripted::default()
        },
        3,
    );
    let result = run(&setup, diamond()).await;
    assert_eq!(
        result.status,
        PlanStatus::Completed,
        "{}",
        result.markdown()
    );
    assert_eq!(
        result.waves,
        [vec!["t1", "t2"], vec!["t3", "t4"], vec!["t5"]]
    );
    let log = setup.runner.log.lock().unwrap().clone();
    let at = |what: &str| log.iter().position(|l| l == what).unwrap();
    assert!(
        at("end t1") < at("start t3") && at("end t2") < at("start t3"),
        "{log:?}"
    );
    assert!(
        at("end t3") < at("start t5") && at("end t4") < at("start t5"),
        "{log:?}"
    );
    assert_eq!(setup.runner.running.lock().unwrap().1, 2);
    // Dependents see their dependencies' results; the first wave sees none.
    assert!(result.tasks[0].output.ends_with("saw: false"));
    assert!(result.tasks[4].output.ends_with("saw: true"));
    assert_eq!(result.tasks[4].wave, Some(2));
}

#[tokio::test]
async fn the_pool_bounds_how_many_run_at_once() {
    let setup = setup(
        Scripted {
            delay: Duration::from_millis(20),
            ..Scripted::default()
        },
        2,
    );
    let plan = parse_plan_file(
        r#"{"tasks": [{"id": "a", "description": "x", "readOnly": true}, {"id": "b", "description": "x", "readOnly": true},
            {"id": "c", "description": "x", "readOnly": true}, {"id": "d", "description": "x", "readOnly": true},
            {"id": "e", "description": "x", "readOnly": true}]}"#,
    )
    .unwrap();
    let result = run(&setup, plan).await;
    assert_eq!(result.count(TaskStatus::Completed), 5);
    assert_eq!(setup.runner.running.lock().unwrap().1, 2);
}

#[tokio::test]
async fn a_failure_skips_exactly_its_transitive_dependents() {
    let setup = setup(
        Scripted {
            failing: vec!["t1".into()],
            ..Scripted::default()
        },
        3,
    );
    let result = run(&setup, diamond()).await;
    assert_eq!(
        statuses(&result),
        [
            ("t1", TaskStatus::Failed),
            ("t2", TaskStatus::Completed),
            ("t3", TaskStatus::Skipped),
            ("t4", TaskStatus::Skipped),
            ("t5", TaskStatus::Skipped),
        ]
    );
    assert_eq!(result.status, PlanStatus::Partial);
    assert!(
        result.tasks[2].error.as_deref().unwrap().contains("t1"),
        "{:?}",
        result.tasks[2]
    );
    assert!(
        result.summary.contains("3 skipped (t3, t4, t5)"),
        "{}",
        result.summary
    );
    let log = setup.runner.log.lock().unwrap().clone();
    assert!(
        !log.iter().any(|l| l.contains("t3") || l.contains("t5")),
        "{log:?}"
    );
}

#[tokio::test]
async fn resume_reruns_only_what_had_not_completed() {
    let first = setup(
        Scripted {
            failing: vec!["t4".into()],
            ..Scripted::default()
        },
        3,
    );
    let result = run(&first, diamond()).await;
    assert_eq!(
        result.count(TaskStatus::Completed),
        3,
        "{}",
        result.markdown()
    );
    // The same home, now with a runner that succeeds.
    let again = Scripted::default();
    let orchestrator = Orchestrator::new(
        first.orchestrator.registry.clone(),
        first.orchestrator.settings.clone(),
    )
    .with_runner(SubTaskRunner::Native, Arc::new(again));
    let opened = orchestrator.resume(&result.id).await.unwrap();
    assert_eq!(opened.to_run(), 2);
    let resumed = orchestrator
        .execute(opened, CancellationToken::new(), None)
        .await;
    assert_eq!(
        resumed.status,
        PlanStatus::Completed,
        "{}",
        resumed.markdown()
    );
    let reused: Vec<&str> = resumed
        .tasks
        .iter()
        .filter(|t| t.reused)
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(reused, ["t1", "t2", "t3"]);
    // Its log holds both runs; a resume of a finished plan runs nothing.
    let opened = orchestrator.resume(&result.id).await.unwrap();
    assert_eq!(opened.to_run(), 0);
}

#[tokio::test]
async fn cancelling_stops_running_tasks_and_skips_the_rest() {
    let setup = setup(
        Scripted {
            delay: Duration::from_secs(30),
            ..Scripted::default()
        },
        3,
    );
    let opened = setup
        .orchestrator
        .open("the task", setup.ws.path(), diamond(), PlanSource::Given)
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stopper.cancel();
    });
    let started = std::time::Instant::now();
    let result = setup.orchestrator.execute(opened, cancel, None).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(result.status, PlanStatus::Cancelled);
    assert_eq!(
        statuses(&result),
        [
            ("t1", TaskStatus::Cancelled),
            ("t2", TaskStatus::Cancelled),
            ("t3", TaskStatus::Skipped),
            ("t4", TaskStatus::Skipped),
            ("t5", TaskStatus::Skipped),
        ]
    );
}

#[tokio::test]
async fn a_missing_runner_fails_its_task_with_the_reason() {
    let mut setup = setup(Scripted::default(), 3);
    setup.orchestrator = setup
        .orchestrator
        .without_runner(SubTaskRunner::Claude, "claude is not installed");
    let plan =
        parse_plan_file(r#"{"tasks": [{"id": "t1", "description": "x", "runner": "claude"}]}"#)
            .unwrap();
    let result = run(&setup, plan).await;
    assert_eq!(result.status, PlanStatus::Failed);
    assert_eq!(
        result.tasks[0].error.as_deref(),
        Some("claude is not installed")
    );
}
