//! Running an opened plan: wave after wave, the sub-tasks of a wave at
//! once on the pool, writers in sandboxes merged back in plan order, a
//! failure skipping its transitive dependents, cancellation and the
//! deadline stopping what runs and skipping the rest.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bridge_policy::paths::WorkspaceRoot;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::plan::SubTask;
use super::pool::SessionPool;
use super::result::{OrchestratedResult, PlanStatus, TaskResult, TaskStatus, Workdir};
use super::sandbox::{self, Change, Sandbox, Snapshot};
use super::{Opened, Orchestrator, events};
use crate::log::{EventLog, new_session_id};
use crate::runner::nested::SPILL_BYTES;
use crate::runner::{RunReport, RunRequest, RunnerKind};
use crate::task::{TaskLog, TaskMeta, TaskRun};

/// Why the plan stopped early.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Cancelled,
    TimedOut,
}

/// Where one sub-task of a wave works.
struct Placement {
    cwd: PathBuf,
    workdir: Workdir,
    sandbox: Option<Sandbox>,
}

impl Orchestrator {
    /// Runs `opened` to its end, `cancel` or `timeout` stopping it early.
    /// Events go to `opened.log`, which is closed before this returns
    /// (its subscribers see the end).
    pub async fn execute(
        &self,
        opened: Opened,
        cancel: CancellationToken,
        timeout: Option<Duration>,
    ) -> OrchestratedResult {
        // One span over the orchestration: every sub-task's run (its own
        // `invoke_agent`) records under it, so the whole is one trace.
        let traced = bridge_telemetry::active()
            .map(|telemetry| telemetry.start_agent("orchestrator", &opened.id, None));
        let parent = traced.as_ref().map(|run| run.context().clone());
        let result = bridge_telemetry::propagation::traced(
            parent,
            self.execute_in_trace(opened, cancel, timeout),
        )
        .await;
        if let Some(run) = traced {
            let status = serde_json::to_value(result.status)
                .ok()
                .and_then(|status| status.as_str().map(str::to_owned))
                .unwrap_or_default();
            run.end(&status, None);
        }
        result
    }

    async fn execute_in_trace(
        &self,
        opened: Opened,
        cancel: CancellationToken,
        timeout: Option<Duration>,
    ) -> OrchestratedResult {
        let started = Instant::now();
        let stop = CancellationToken::new();
        let why = Arc::new(OnceLock::new());
        let watcher = tokio::spawn({
            let (stop, why) = (stop.clone(), why.clone());
            async move {
                let deadline = async {
                    match timeout {
                        Some(limit) => tokio::time::sleep(limit).await,
                        None => std::future::pending().await,
                    }
                };
                let reason = tokio::select! {
                    () = cancel.cancelled() => Stop::Cancelled,
                    () = deadline => Stop::TimedOut,
                };
                let _ = why.set(reason);
                stop.cancel();
            }
        });
        let pool = SessionPool::new(
            self.registry.clone(),
            self.settings.max_concurrency,
            &format!("orchestrate {}", opened.id),
        );
        let dependents = opened.plan.dependents().unwrap_or_default();
        let mut results = opened.reused.clone();
        let scratch = self.settings.scratch_dir.join(&opened.id);
        for (number, wave) in opened.waves.iter().enumerate() {
            if stop.is_cancelled() {
                break;
            }
            let pending: Vec<usize> = wave
                .iter()
                .copied()
                .filter(|&i| results[i].is_none())
                .collect();
            if pending.is_empty() {
                continue;
            }
            let finished = self
                .run_wave(&opened, &pool, &results, number, &pending, &scratch, &stop)
                .await;
            for (index, result) in finished {
                let completed = result.status == TaskStatus::Completed;
                results[index] = Some(result);
                if !completed {
                    skip_dependents(&opened, &dependents, &mut results, index);
                }
            }
        }
        watcher.abort();
        let stopped = why.get().copied();
        let reason = match stopped {
            Some(Stop::TimedOut) => "the plan timed out before it started",
            _ => "the plan was cancelled before it started",
        };
        for (task, slot) in opened.plan.tasks.iter().zip(results.iter_mut()) {
            if slot.is_none() {
                let skipped = TaskResult::skipped(&task.id, reason.to_owned());
                log_skipped(&opened.log, &skipped, None);
                *slot = Some(skipped);
            }
        }
        pool.drain().await;
        let _ = tokio::fs::remove_dir_all(&scratch).await;
        let tasks: Vec<TaskResult> = results.into_iter().flatten().collect();
        let completed = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        let status = match stopped {
            Some(Stop::Cancelled) => PlanStatus::Cancelled,
            Some(Stop::TimedOut) => PlanStatus::TimedOut,
            None if completed == tasks.len() => PlanStatus::Completed,
            None if completed == 0 => PlanStatus::Failed,
            None => PlanStatus::Partial,
        };
        let summary = OrchestratedResult::summarize(&tasks);
        let result = OrchestratedResult {
            id: opened.id.clone(),
            task: opened.task.clone(),
            status,
            waves: opened.wave_ids(),
            plan: opened.plan.clone(),
            source: opened.source.clone(),
            tasks,
            summary,
            duration_ms: millis(started.elapsed()),
        };
        let counts: serde_json::Map<String, Value> = [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Conflict,
            TaskStatus::Cancelled,
            TaskStatus::Skipped,
        ]
        .into_iter()
        .map(|s| (s.as_str().to_owned(), json!(result.count(s))))
        .collect();
        opened.log.append(
            events::PLAN_COMPLETE,
            json!({"status": result.status, "summary": result.summary,
                   "durationMs": result.duration_ms, "counts": counts}),
            None,
        );
        if let Err(err) = opened.log.close().await {
            tracing::warn!(error = %err, "the orchestration log could not be closed cleanly");
        }
        result
    }

    /// Runs the `pending` sub-tasks of wave `number`; results in plan order.
    #[allow(clippy::too_many_arguments)]
    async fn run_wave(
        &self,
        opened: &Opened,
        pool: &SessionPool,
        results: &[Option<TaskResult>],
        number: usize,
        pending: &[usize],
        scratch: &Path,
        stop: &CancellationToken,
    ) -> Vec<(usize, TaskResult)> {
        let read_only_plan = self.registry.read_only_by_default();
        let writers = pending
            .iter()
            .filter(|&&i| !opened.plan.tasks[i].read_only)
            .count();
        let separate = !read_only_plan && writers > 1 && self.settings.max_concurrency > 1;
        let mut snapshot = None;
        let mut refused = None;
        if separate {
            let (workspace, wave_dir) =
                (opened.cwd.clone(), scratch.join(format!("wave-{number}")));
            match tokio::task::spawn_blocking(move || Snapshot::take(&workspace, &wave_dir)).await {
                Ok(Ok(taken)) => snapshot = Some(Arc::new(taken)),
                Ok(Err(reason)) => refused = Some(reason),
                Err(err) => refused = Some(err.to_string()),
            }
        }
        let mut placements: Vec<(usize, Result<Placement, String>)> =
            Vec::with_capacity(pending.len());
        for &index in pending {
            let task = &opened.plan.tasks[index];
            let placement = match (&snapshot, &refused, task.read_only) {
                (_, Some(reason), false) => Err(reason.clone()),
                (Some(snapshot), _, false) => {
                    let dir = scratch.join(format!("wave-{number}")).join(&task.id);
                    let snap = snapshot.clone();
                    match tokio::task::spawn_blocking(move || snap.sandbox(&dir)).await {
                        Ok(Ok(sandbox)) => Ok(Placement {
                            cwd: sandbox.cwd.clone(),
                            workdir: snapshot.workdir(),
                            sandbox: Some(sandbox),
                        }),
                        Ok(Err(reason)) => Err(reason),
                        Err(err) => Err(err.to_string()),
                    }
                }
                _ => Ok(Placement {
                    cwd: opened.cwd.clone(),
                    workdir: Workdir::Workspace,
                    sandbox: None,
                }),
            };
            placements.push((index, placement));
        }
        let runs = placements.iter().map(|(index, placement)| async move {
            let index = *index;
            let result = match placement {
                Ok(placement) => {
                    self.run_task(opened, pool, results, number, index, placement, stop)
                        .await
                }
                Err(reason) => {
                    let task = &opened.plan.tasks[index];
                    let mut result = TaskResult::failed(
                        task,
                        format!("no separate working directory: {reason}"),
                    );
                    result.wave = Some(number);
                    result
                }
            };
            (index, result)
        });
        let mut finished = futures::future::join_all(runs).await;
        // In-place sub-tasks logged their end as it happened.
        let logged: Vec<bool> = placements
            .iter()
            .map(|(_, p)| p.as_ref().is_ok_and(|p| p.sandbox.is_none()))
            .collect();
        if let Some(snapshot) = snapshot {
            finished = merge_wave(opened, snapshot, placements, finished).await;
        }
        for ((_, result), logged) in finished.iter().zip(logged) {
            if result.status == TaskStatus::Skipped {
                log_skipped(&opened.log, result, None);
            } else if !logged {
                log_complete(&opened.log, result);
            }
        }
        finished
    }

    /// One sub-task from its place in line to its result (logged).
    #[allow(clippy::too_many_arguments)]
    async fn run_task(
        &self,
        opened: &Opened,
        pool: &SessionPool,
        results: &[Option<TaskResult>],
        wave: usize,
        index: usize,
        placement: &Placement,
        stop: &CancellationToken,
    ) -> TaskResult {
        let task = &opened.plan.tasks[index];
        let kind = task.runner.unwrap_or(self.settings.default_runner);
        let lease = tokio::select! {
            lease = pool.acquire(&placement.cwd, task.read_only) => lease,
            () = stop.cancelled() => {
                return TaskResult::skipped(&task.id, "the plan stopped before it started".to_owned());
            }
        };
        let lease = match lease {
            Ok(lease) => lease,
            Err(reason) => {
                let mut result = TaskResult::failed(task, format!("no session: {reason}"));
                result.wave = Some(wave);
                if placement.sandbox.is_none() {
                    log_complete(&opened.log, &result);
                }
                return result;
            }
        };
        if stop.is_cancelled() {
            pool.release(lease, false, placement.sandbox.is_none())
                .await;
            return TaskResult::skipped(&task.id, "the plan stopped before it started".to_owned());
        }
        // Each sub-task keeps a log of its own (`sessions show ID`), named
        // in its start event.
        let log_id = new_session_id();
        opened.log.append(
            events::TASK_START,
            json!({"taskId": task.id, "wave": wave, "runner": kind,
                   "workdir": placement.workdir, "log": log_id}),
            None,
        );
        let started = Instant::now();
        let context = dependency_context(opened, results, index);
        let (prompt, spilled) = match prompt_for(opened, task, &context, &placement.cwd).await {
            Ok(made) => made,
            Err(reason) => {
                pool.release(lease, true, false).await;
                let mut result = TaskResult::failed(task, reason);
                result.wave = Some(wave);
                if placement.sandbox.is_none() {
                    log_complete(&opened.log, &result);
                }
                return result;
            }
        };
        let report = match self.runners.get(&kind) {
            Some(runner) => {
                let request = RunRequest {
                    task: prompt,
                    model: self.settings.model.clone(),
                    max_turns: self.settings.max_turns,
                    timeout: self.settings.task_timeout,
                };
                let meta = TaskMeta {
                    cwd: placement.cwd.clone(),
                    model: self.settings.model.clone(),
                    runner: runner.kind(),
                    backend: match runner.kind() {
                        RunnerKind::Native => self.settings.backend.clone(),
                        RunnerKind::Copilot | RunnerKind::Nested => None,
                    },
                    label: format!("orchestrate {} · {}", opened.id, task.id),
                    orchestration: Some(opened.id.clone()),
                };
                match TaskLog::create(&self.settings.sessions_dir, &log_id, &meta).await {
                    Ok(log) => {
                        log.run(TaskRun {
                            runner: runner.clone(),
                            session: lease.session.clone(),
                            request,
                            cancel: stop.child_token(),
                            steps: None,
                        })
                        .await
                    }
                    Err(err) => RunReport::failed_early(
                        lease.session.id(),
                        format!("cannot start the sub-task's log: {err}"),
                    ),
                }
            }
            None => RunReport::failed_early(
                lease.session.id(),
                self.missing
                    .get(&kind)
                    .cloned()
                    .unwrap_or_else(|| format!("the {kind} runner is not available here")),
            ),
        };
        if let Some(file) = spilled {
            remove_spilled(&placement.cwd, &file).await;
        }
        let mut result = TaskResult::from_report(task, kind, report);
        result.wave = Some(wave);
        result.duration_ms = millis(started.elapsed());
        let tainted = result.status != TaskStatus::Completed;
        pool.release(lease, tainted, placement.sandbox.is_none())
            .await;
        // A sandboxed result is logged once its changes are merged.
        if placement.sandbox.is_none() {
            log_complete(&opened.log, &result);
        }
        result
    }
}

/// Merges the sandboxed sub-tasks' changes in plan order (`finished` is in
/// plan order) and removes the sandboxes.
async fn merge_wave(
    opened: &Opened,
    snapshot: Arc<Snapshot>,
    placements: Vec<(usize, Result<Placement, String>)>,
    finished: Vec<(usize, TaskResult)>,
) -> Vec<(usize, TaskResult)> {
    let workspace = opened.cwd.clone();
    let merged = tokio::task::spawn_blocking(move || {
        let root = WorkspaceRoot::new(&workspace).map_err(|err| err.to_string());
        let mut finished = finished;
        for ((_, placement), (_, result)) in placements.into_iter().zip(finished.iter_mut()) {
            let Some(sandbox) = placement.ok().and_then(|p| p.sandbox) else {
                continue;
            };
            if result.status == TaskStatus::Completed {
                let merged = root.as_ref().map_err(Clone::clone).and_then(|root| {
                    let changes: Vec<Change> = snapshot.changes(&sandbox)?;
                    sandbox::merge_back(root, &snapshot, &result.id, &changes)
                });
                match merged {
                    Ok(merged) if merged.conflicts.is_empty() => result.changed_files = merged.changed,
                    Ok(merged) => {
                        let files: Vec<&str> =
                            merged.conflicts.iter().map(|c| c.file.as_str()).collect();
                        result.status = TaskStatus::Conflict;
                        result.error = Some(format!(
                            "its changes conflict with the workspace (changed by an earlier sub-task of the wave) in {}; nothing of it was merged",
                            files.join(", ")
                        ));
                        result.conflicts = merged.conflicts;
                    }
                    Err(reason) => {
                        result.status = TaskStatus::Failed;
                        result.error = Some(format!("its changes could not be merged back: {reason}"));
                    }
                }
            }
            snapshot.remove(&sandbox);
        }
        snapshot.discard();
        finished
    })
    .await;
    match merged {
        Ok(finished) => finished,
        Err(err) => {
            tracing::error!(error = %err, "merging a wave's changes panicked");
            Vec::new()
        }
    }
}

/// Marks everything that transitively depends on `failed` as skipped
/// (breadth first), unless it already has a result.
fn skip_dependents(
    opened: &Opened,
    dependents: &[Vec<usize>],
    results: &mut [Option<TaskResult>],
    failed: usize,
) {
    let failed_id = opened.plan.tasks[failed].id.as_str();
    // (task to skip, the dependency that skips it)
    let mut queue: VecDeque<(usize, usize)> = dependents
        .get(failed)
        .into_iter()
        .flatten()
        .map(|&next| (next, failed))
        .collect();
    while let Some((next, via)) = queue.pop_front() {
        if results[next].is_some() {
            continue;
        }
        let status = results[via]
            .as_ref()
            .map_or("did not complete", |r| r.status.as_str());
        let skipped = TaskResult::skipped(
            &opened.plan.tasks[next].id,
            format!(
                "it depends on {}, which {}",
                opened.plan.tasks[via].id,
                verb(status)
            ),
        );
        log_skipped(&opened.log, &skipped, Some(failed_id));
        results[next] = Some(skipped);
        queue.extend(dependents[next].iter().map(|&after| (after, next)));
    }
}

fn verb(status: &str) -> String {
    match status {
        "failed" => "failed".to_owned(),
        "conflict" => "could not be merged".to_owned(),
        "cancelled" => "was cancelled".to_owned(),
        "skipped" => "was skipped".to_owned(),
        other => other.to_owned(),
    }
}

fn log_complete(log: &EventLog, result: &TaskResult) {
    let mut data = serde_json::to_value(result).unwrap_or_else(|_| json!({}));
    if let Some(object) = data.as_object_mut() {
        object.insert("taskId".to_owned(), json!(result.id));
    }
    log.append(events::TASK_COMPLETE, data, None);
}

fn log_skipped(log: &EventLog, result: &TaskResult, after: Option<&str>) {
    log.append(
        events::TASK_SKIPPED,
        json!({"taskId": result.id, "reason": result.error, "after": after}),
        None,
    );
}

/// The results of the sub-tasks `index` depends on, as the prompt shows them.
fn dependency_context(opened: &Opened, results: &[Option<TaskResult>], index: usize) -> String {
    let mut context = String::new();
    for dep in opened.plan.dependencies_of(index) {
        let task = &opened.plan.tasks[dep];
        let output = results[dep].as_ref().map_or("", |r| r.output.as_str());
        context.push_str(&format!(
            "### {}: {}\n\n{}\n\n",
            task.id,
            task.description.lines().next().unwrap_or_default(),
            output.trim()
        ));
    }
    context
}

/// The sub-task's prompt; dependency results of [`SPILL_BYTES`] or more go
/// to a file in its working directory (returned, to remove afterwards).
async fn prompt_for(
    opened: &Opened,
    task: &SubTask,
    context: &str,
    cwd: &Path,
) -> Result<(String, Option<PathBuf>), String> {
    let mut prompt = format!(
        "You are doing one sub-task of a larger task.\n\nThe whole task: {}\n\nYour sub-task ({}): {}\n",
        opened.task.trim(),
        task.id,
        task.description.trim()
    );
    if !task.files.is_empty() {
        prompt.push_str(&format!(
            "\nFiles it is expected to touch: {}\n",
            task.files.join(", ")
        ));
    }
    let mut spilled = None;
    if !context.is_empty() {
        if context.len() < SPILL_BYTES {
            prompt.push_str("\nResults of the sub-tasks it builds on:\n\n");
            prompt.push_str(context);
        } else {
            let relative = format!(
                "{}/context/{}-{}.md",
                sandbox::SCRATCH_DIR,
                opened.id,
                task.id
            );
            let file = cwd.join(&relative);
            if let Some(dir) = file.parent() {
                tokio::fs::create_dir_all(dir).await.map_err(|err| {
                    format!("cannot write its context to {}: {err}", dir.display())
                })?;
            }
            tokio::fs::write(&file, context)
                .await
                .map_err(|err| format!("cannot write its context to {}: {err}", file.display()))?;
            prompt.push_str(&format!(
                "\nThe results of the sub-tasks it builds on ({} bytes) are in the file {relative}: read it first.\n",
                context.len()
            ));
            spilled = Some(file);
        }
    }
    prompt.push_str(
        "\nDo only this sub-task, then answer with a short summary of what you did and found.",
    );
    Ok((prompt, spilled))
}

async fn remove_spilled(cwd: &Path, file: &Path) {
    let _ = tokio::fs::remove_file(file).await;
    // The directories go too when nothing else is in them.
    let scratch = cwd.join(sandbox::SCRATCH_DIR);
    let _ = tokio::fs::remove_dir(scratch.join("context")).await;
    let _ = tokio::fs::remove_dir(scratch).await;
}

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}
