//! `copilot-bridge orchestrate "TASK"` (docs/orchestrator.md): the task
//! planned by the model (or `--plan FILE`), run in waves with live
//! progress on stderr, the result as Markdown or `--json`; `--plan-only`
//! prints the plan as a plan file; `--resume ID` runs what had not
//! completed. The `mcp code` server's `copilot_orchestrate` runs through
//! [`orchestrate_task`] too.

mod nested;
mod progress;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bridge_agents::AgentEnv;
use bridge_compose::PlanningBackend;
use bridge_config::BridgeConfig;
use bridge_engine::orchestrate::{
    MAX_CONCURRENCY, OrchestratedResult, Orchestrator, PlanSource, PlanStatus, Planned, Planner,
    SubTaskRunner, TaskPlan, parse_plan_file,
};
use tokio_util::sync::CancellationToken;

use crate::args::OrchestrateArgs;
use crate::exit::{self, Failure};

/// What an orchestration needs, from the command line or an MCP call.
#[derive(Clone)]
pub struct OrchestrateOptions {
    pub max_concurrency: usize,
    pub model: Option<String>,
    pub default_runner: SubTaskRunner,
    /// Where the nested agents' binaries are and the settings they get.
    pub nested_agents: AgentEnv,
}

/// The orchestrator of this process and how it plans.
pub struct Prepared {
    pub orchestrator: Orchestrator,
    pub planner: Option<Planner>,
    /// Why there is no planner.
    pub no_planner: Option<String>,
    /// The nested agents' staged hooks and MCP servers, removed on drop.
    _stage: tempfile::TempDir,
}

/// Builds the orchestrator from the configuration (a backend is optional:
/// plan files and non-native runners need none). Sub-tasks' "ask" rules
/// are denied: several run at once and nobody watches one of them.
pub async fn prepare(
    config: &BridgeConfig,
    options: &OrchestrateOptions,
) -> Result<Prepared, Failure> {
    if options.max_concurrency == 0 || options.max_concurrency > MAX_CONCURRENCY {
        return Err(Failure::usage(format!(
            "--max-concurrency must be between 1 and {MAX_CONCURRENCY}"
        )));
    }
    let registry = bridge_compose::task_registry(config, Arc::new(bridge_policy::DenyAll))
        .map_err(super::run::compose_failure)?;
    let (backend, no_planner) = match PlanningBackend::select(config, options.model.clone()).await {
        Ok(backend) => (Some(backend), None),
        Err(err) => (None, Some(err.to_string())),
    };
    let nested = nested::runners(config, &options.nested_agents)?;
    let mut orchestrator = bridge_compose::orchestrator(
        config,
        registry,
        backend.as_ref(),
        options.max_concurrency,
        nested.runners,
    );
    orchestrator.set_default_runner(options.default_runner);
    Ok(Prepared {
        planner: backend.as_ref().map(bridge_compose::planner),
        orchestrator,
        no_planner,
        _stage: nested.stage,
    })
}

impl Prepared {
    /// The model's plan of `task` (or its fallback); exit 3 without a
    /// backend.
    pub async fn plan(&self, task: &str) -> Result<Planned, Failure> {
        match &self.planner {
            Some(planner) => Ok(planner.plan(task).await),
            None => Err(Failure::new(
                exit::CONFIG,
                format!(
                    "cannot plan: {}. Configure a backend (see `copilot-bridge validate`) or give a plan with --plan FILE.",
                    self.no_planner.as_deref().unwrap_or("no chat backend")
                ),
            )),
        }
    }
}

/// Plans (unless given a plan) and runs `task` in `cwd`, unattended:
/// `cancel` stops it. The `mcp code` server's `copilot_orchestrate`.
pub async fn orchestrate_task(
    config: &BridgeConfig,
    options: &OrchestrateOptions,
    task: &str,
    cwd: &Path,
    timeout: Option<Duration>,
    cancel: CancellationToken,
    on_event: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) -> Result<OrchestratedResult, Failure> {
    let prepared = prepare(config, options).await?;
    let planned = prepared.plan(task).await?;
    let opened = prepared
        .orchestrator
        .open(task, cwd, planned.plan, planned.source)
        .await
        .map_err(|err| Failure::new(exit::FAILED, err.to_string()))?;
    let forward =
        on_event.map(|sink| bridge_engine::orchestrate::progress::forward_lines(&opened.log, sink));
    let result = prepared.orchestrator.execute(opened, cancel, timeout).await;
    if let Some(forward) = forward {
        let _ = forward.await;
    }
    Ok(result)
}

pub async fn run(
    config: &BridgeConfig,
    args: OrchestrateArgs,
    env: &AgentEnv,
) -> Result<ExitCode, Failure> {
    let default_runner: SubTaskRunner = args.runner.parse().map_err(Failure::usage)?;
    let options = OrchestrateOptions {
        max_concurrency: args.max_concurrency,
        model: args.model.clone(),
        default_runner,
        nested_agents: env.clone(),
    };
    let variables = variables(&args.set)?;
    let given = match &args.plan {
        Some(file) => Some(read_plan_file(file, &variables)?),
        None => None,
    };
    if !variables.is_empty() && given.is_none() {
        return Err(Failure::usage(
            "--set fills {{KEY}} in a plan file: give one with --plan FILE",
        ));
    }
    let prepared = prepare(config, &options).await?;
    let opened = if let Some(id) = &args.resume {
        prepared
            .orchestrator
            .resume(id)
            .await
            .map_err(|err| Failure::new(exit::FAILED, err.to_string()))?
    } else {
        let cwd = match &args.cwd {
            Some(dir) => std::fs::canonicalize(dir)
                .map_err(|err| Failure::usage(format!("--cwd {}: {err}", dir.display())))?,
            None => std::env::current_dir().map_err(|err| {
                Failure::usage(format!("cannot read the current directory: {err}"))
            })?,
        };
        let (task, planned) = match (given, &args.task) {
            (Some(plan), task) => {
                let file = args.plan.as_deref().unwrap_or(Path::new("plan"));
                let task = task
                    .clone()
                    .unwrap_or_else(|| format!("the plan in {}", file.display()));
                let source = PlanSource::File {
                    path: file.display().to_string(),
                };
                (
                    task,
                    Planned {
                        plan,
                        source,
                        usage: Default::default(),
                    },
                )
            }
            (None, Some(task)) => {
                if task.trim().is_empty() {
                    return Err(Failure::usage("the task is empty: say what to do"));
                }
                bridge_engine::orchestrate::check_task(task)
                    .map_err(|err| Failure::usage(err.to_string()))?;
                eprintln!("{:>12} {}", "Planning", first_line(task));
                (task.clone(), prepared.plan(task).await?)
            }
            (None, None) => return Err(Failure::usage("say what to do, or give --plan FILE")),
        };
        if let PlanSource::Fallback { reason } = &planned.source {
            eprintln!(
                "{:>12} the model's plan: {reason}; running the task as one",
                "Fallback"
            );
        }
        if args.plan_only {
            return print_plan(&planned.plan, args.json);
        }
        prepared
            .orchestrator
            .open(&task, &cwd, planned.plan, planned.source)
            .await
            .map_err(|err| Failure::new(exit::FAILED, err.to_string()))?
    };
    let view = progress::Progress::start(&opened);
    let cancel = CancellationToken::new();
    let on_interrupt = tokio::spawn(super::run::cancel_on_interrupt(cancel.clone()));
    let result = prepared
        .orchestrator
        .execute(opened, cancel, args.timeout.map(Duration::from_secs))
        .await;
    on_interrupt.abort();
    view.finish().await;
    print_result(&result, args.json)?;
    Ok(match result.status {
        PlanStatus::Completed => ExitCode::SUCCESS,
        PlanStatus::Cancelled => ExitCode::from(super::run::CANCELLED),
        _ => ExitCode::from(exit::FAILED),
    })
}

/// `--set KEY=VALUE` pairs.
fn variables(pairs: &[String]) -> Result<BTreeMap<String, String>, Failure> {
    pairs
        .iter()
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| Failure::usage(format!("--set {pair:?}: expected KEY=VALUE")))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(Failure::usage(format!("--set {pair:?}: the key is empty")));
            }
            Ok((key.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Most bytes of a plan file.
const MAX_PLAN_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A plan file, its variables filled in, validated: a file with a cycle or
/// an unknown id is refused with an error that names it.
fn read_plan_file(
    file: &PathBuf,
    variables: &BTreeMap<String, String>,
) -> Result<TaskPlan, Failure> {
    let refuse = |reason: String| Failure::usage(format!("plan file {}: {reason}", file.display()));
    let size = std::fs::metadata(file)
        .map_err(|err| refuse(err.to_string()))?
        .len();
    if size > MAX_PLAN_FILE_BYTES {
        return Err(refuse(format!(
            "{size} bytes; at most {MAX_PLAN_FILE_BYTES} are read"
        )));
    }
    let text = std::fs::read_to_string(file).map_err(|err| refuse(err.to_string()))?;
    let mut plan = parse_plan_file(&text).map_err(refuse)?;
    plan.substitute(variables).map_err(refuse)?;
    plan.waves().map_err(|err| refuse(err.to_string()))?;
    Ok(plan)
}

fn print_plan(plan: &TaskPlan, as_json: bool) -> Result<ExitCode, Failure> {
    let waves = plan
        .waves()
        .map_err(|err| Failure::internal(err.to_string()))?;
    let text = serde_json::to_string_pretty(plan).unwrap_or_default();
    super::tool::write_stdout(&format!("{text}\n"))?;
    if !as_json {
        for (number, wave) in waves.iter().enumerate() {
            let ids: Vec<&str> = wave.iter().map(|&i| plan.tasks[i].id.as_str()).collect();
            eprintln!("{:>12} {}: {}", "Wave", number + 1, ids.join(", "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_result(result: &OrchestratedResult, as_json: bool) -> Result<(), Failure> {
    if as_json {
        let mut value = serde_json::to_value(result).unwrap_or_default();
        bridge_policy::redact_value(&mut value);
        return super::tool::print_json(&value, false);
    }
    super::tool::write_stdout(&bridge_policy::redact(&result.markdown()))
}

fn first_line(text: &str) -> String {
    bridge_policy::redact::shorten(text.lines().next().unwrap_or_default().trim(), 100)
}
