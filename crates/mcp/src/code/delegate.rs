//! `copilot_code`, `copilot_code_verbose` and `copilot_orchestrate`: whole
//! tasks handed to the host's [`TaskRunner`](super::TaskRunner), in the
//! code server's one line, their steps streamed as progress.

use std::time::Duration;

use bridge_engine::log::steps::Step;
use bridge_engine::orchestrate::{DEFAULT_MAX_CONCURRENCY, MAX_CONCURRENCY};
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value};

use super::queue::Place;
use super::{CodeServer, CodeTask, HttpFacts, OrchestrateTask, Progress, tools};
use crate::depth;

impl CodeServer {
    /// Joins the line and waits for this call's turn, reporting the place
    /// as progress; a call cancelled while waiting leaves the line.
    pub(super) async fn wait_in_line(
        &self,
        progress: &Progress,
        context: &RequestContext<RoleServer>,
    ) -> Result<Place, ErrorData> {
        let place = self.shared.queue.join();
        let waited = place.ahead() > 0;
        let waiting = place.wait_turn(|ahead| {
            progress.send(format!(
                "queued: {ahead} task{} ahead of this one",
                if ahead == 1 { "" } else { "s" }
            ))
        });
        tokio::select! {
            () = waiting => {}
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled while waiting in line", None));
            }
        }
        if waited {
            progress.send("running".to_owned()).await;
        }
        Ok(place)
    }

    /// `copilot_code` and (`verbose`) `copilot_code_verbose`.
    pub(super) async fn code(
        &self,
        args: Map<String, Value>,
        depth: u64,
        http: HttpFacts,
        context: RequestContext<RoleServer>,
        verbose: bool,
    ) -> Result<CallToolResult, ErrorData> {
        let name = if verbose {
            tools::CODE_VERBOSE
        } else {
            tools::CODE
        };
        let args: tools::CodeArgs = tools::parse(name, args)?;
        check_task(name, &args.task, args.timeout)?;
        let task = CodeTask {
            prompt: args.task,
            model: args.model.filter(|m| !m.trim().is_empty()),
            working_dir: http.working_dir(args.working_dir),
            timeout: args.timeout.map(Duration::from_secs),
            onward_depth: depth::onward(depth),
            session: http.session,
        };
        let progress = Progress::new(&context);
        let place = self.wait_in_line(&progress, &context).await?;
        let (sink, mut received) = tokio::sync::mpsc::unbounded_channel::<Step>();
        let run = self
            .shared
            .tasks
            .run_task(task, context.ct.clone(), verbose.then_some(sink));
        tokio::pin!(run);
        let mut steps = Vec::new();
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                Some(step) = received.recv() => {
                    if step.tool_call {
                        progress.send(step.line.clone()).await;
                    }
                    steps.push(step.line);
                }
            }
        };
        // What the run sent as it ended is still news.
        while let Ok(step) = received.try_recv() {
            if step.tool_call {
                progress.send(step.line.clone()).await;
            }
            steps.push(step.line);
        }
        drop(place);
        Ok(match outcome {
            Ok(report) => tools::code_result(&report, verbose.then_some(steps.as_slice())),
            Err(reason) => tools::task_error(&reason),
        })
    }

    pub(super) async fn orchestrate(
        &self,
        args: Map<String, Value>,
        depth: u64,
        http: HttpFacts,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = tools::ORCHESTRATE;
        let args: tools::OrchestrateArgs = tools::parse(name, args)?;
        check_task(name, &args.task, args.timeout)?;
        bridge_engine::orchestrate::check_task(&args.task)
            .map_err(|err| tools::invalid_params(format!("{name}: {err}")))?;
        let max_concurrency = args
            .max_concurrency
            .map_or(Ok(DEFAULT_MAX_CONCURRENCY), usize::try_from)
            .ok()
            .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
            .ok_or_else(|| {
                tools::invalid_params(format!(
                    "{name}: maxConcurrency must be between 1 and {MAX_CONCURRENCY}"
                ))
            })?;
        let task = OrchestrateTask {
            task: args.task,
            working_dir: http.working_dir(args.working_dir),
            max_concurrency,
            timeout: args.timeout.map(Duration::from_secs),
            onward_depth: depth::onward(depth),
            session: http.session,
        };
        let progress = Progress::new(&context);
        let place = self.wait_in_line(&progress, &context).await?;
        let (sink, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
        let run = self
            .shared
            .tasks
            .orchestrate(task, context.ct.clone(), sink);
        tokio::pin!(run);
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                Some(line) = lines.recv() => progress.send(line).await,
            }
        };
        while let Ok(line) = lines.try_recv() {
            progress.send(line).await;
        }
        drop(place);
        Ok(match outcome {
            Ok(result) => tools::orchestrated_result(&result),
            Err(reason) => tools::task_error(&reason),
        })
    }
}

fn check_task(name: &str, task: &str, timeout: Option<u64>) -> Result<(), ErrorData> {
    if task.trim().is_empty() {
        return Err(tools::invalid_params(format!(
            "{name}: the task is empty: say what to do"
        )));
    }
    if timeout == Some(0) {
        return Err(tools::invalid_params(format!(
            "{name}: timeout must be at least 1 second"
        )));
    }
    Ok(())
}
