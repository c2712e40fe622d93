//! `copilot-bridge`: the binary. Parses the command line, loads the
//! configuration, sets up logging and runs one command.
//!
//! Command logic that other doors also need, and what we know about the
//! agents we join (`bridge-agents`), lives in the library crates; this crate
//! must stay a thin shell of argument parsing, terminal output and exit
//! codes.

mod allocator;
mod approver;
mod args;
mod commands;
mod exit;
mod logging;

use std::process::ExitCode;

use bridge_agents::AgentEnv;

use crate::args::{Cli, Command};
use crate::exit::Failure;

fn main() -> ExitCode {
    let cli = Cli::from_process();
    let code = match run(cli) {
        Ok(code) => code,
        Err(failure) => failure.report(),
    };
    flush_audit();
    code
}

/// The daemon's async worker threads: half the CPUs, at least one; `None`
/// leaves tokio's choice (one per CPU, or `TOKIO_WORKER_THREADS` when set).
///
/// Its async work is short (sockets, JSON, policy; large file work runs on
/// the blocking pool, only a session log's small appends on the worker), and
/// it shares the machine with the agents, providers and
/// model servers it connects. Workers that have little to do wake each other
/// to steal it, and on a busy machine each wake-up costs more than the work:
/// with one worker instead of two on 2 CPUs, a provider tool call over
/// `/rpc` at 10 in flight went from 0.62× to 0.96× of copilot-tap-extension's
/// rate (docs/benchmarks.md, "Provider tool calls side by side").
fn daemon_worker_threads() -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    Some((cpus / 2).max(1))
}

/// Writes the audit entries still queued (`bridge_policy::audit`): a log
/// kept alive past `run` (in a leaked or static handle) is not dropped at
/// exit, and its writer thread would die with the process.
pub(crate) fn flush_audit() {
    if let Err(err) = bridge_policy::audit::flush_all() {
        tracing::error!(error = %err, "audit entries lost at exit");
    }
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    // The agents' variables (their homes, what they set for a hook), read
    // once for every command that installs into or answers an agent.
    let agent_env = AgentEnv::from_process();
    // Listing the tools needs no configuration: it must work while the
    // configuration is being fixed.
    if let Command::Tools(cmd) = cli.command {
        return commands::tool::list(cmd);
    }
    // Nor do completion scripts and the version of this build.
    match cli.command {
        Command::Completion(cmd) => return commands::version::completion(&cmd),
        Command::Version(cmd) => return commands::version::version(&cmd),
        _ => {}
    }
    // A hook answers every failure itself (with a deny): it must not exit
    // like other commands when the configuration cannot be loaded, since
    // an agent runs the tool on any exit code but 2.
    if let Command::Hook(cmd) = &cli.command {
        return Ok(commands::hook::run(&cli.global, cmd, &agent_env));
    }
    let config = match cli.global.load_config() {
        Ok(config) => config,
        // `status` asks the running daemon, which says why an edit of
        // config.toml is not in force: a file being fixed must not hide it.
        // `doctor` says what is wrong with it among its other checks.
        Err(failure) if matches!(cli.command, Command::Status(_) | Command::Doctor(_)) => {
            eprintln!("copilot-bridge: {}", failure.message);
            cli.global
                .loader()?
                .without_config_file()
                .load()
                .map_err(Failure::config)?
        }
        Err(failure) => return Err(failure),
    };
    logging::init(config.log_level);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if matches!(cli.command, Command::Serve(_)) {
        allocator::tune_for_daemon();
        if let Some(workers) = daemon_worker_threads() {
            runtime.worker_threads(workers);
        }
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|err| Failure::internal(format!("cannot start the async runtime: {err}")))?;
    match cli.command {
        Command::Config(cmd) => commands::config::run(&config, cmd),
        Command::Tool(cmd) => {
            runtime.block_on(with_telemetry(&config, commands::tool::run(&config, cmd)))
        }
        Command::Tools(cmd) => commands::tool::list(cmd),
        Command::Validate => runtime.block_on(commands::validate::run(&config)),
        Command::Serve(cmd) => runtime.block_on(commands::serve::run(&cli.global, config, cmd)),
        Command::Daemon(cmd) => {
            runtime.block_on(commands::daemon::run(&cli.global, &config, cmd, &agent_env))
        }
        Command::ProviderToken(cmd) => {
            runtime.block_on(commands::remote::provider_token(&config, cmd))
        }
        Command::Pair => runtime.block_on(commands::remote::pair(&config)),
        // The commands that run the hub's agent or its tools in their own
        // process export their spans when telemetry is on
        // (docs/telemetry.md), flushed before they exit.
        Command::Run(cmd) => {
            runtime.block_on(with_telemetry(&config, commands::run::run(&config, cmd)))
        }
        Command::Orchestrate(cmd) => runtime.block_on(with_telemetry(
            &config,
            commands::orchestrate::run(&config, cmd, &agent_env),
        )),
        Command::Sessions(cmd) => runtime.block_on(with_telemetry(
            &config,
            commands::sessions::run(&config, cmd),
        )),
        Command::Audit(cmd) => runtime.block_on(commands::audit::run(&config, cmd)),
        Command::Chat(cmd) => runtime.block_on(commands::chat::run(&cli.global, &config, cmd)),
        Command::Ui(cmd) => {
            runtime.block_on(commands::ui::run(&cli.global, &config, cmd, &agent_env))
        }
        Command::Approvals(cmd) => {
            runtime.block_on(commands::approvals::run(&config, cmd, &agent_env))
        }
        // MCP servers over stdio export their `tools/call` spans too.
        Command::Mcp(cmd) => {
            let outcome = runtime.block_on(with_telemetry(
                &config,
                commands::mcp::run(&cli.global, &config, cmd, &agent_env),
            ));
            // A stdio server's stdin reader is a blocking thread that never
            // returns once the server stopped for a signal; waiting for it
            // would hang the exit.
            runtime.shutdown_background();
            outcome
        }
        Command::Openclaw(cmd) => runtime.block_on(commands::openclaw::run(&config, cmd)),
        Command::Status(cmd) => runtime.block_on(commands::status::run(&config, cmd)),
        Command::Setup(cmd) => runtime.block_on(commands::setup::run(&config, cmd)),
        Command::Hook(cmd) => Ok(commands::hook::run(&cli.global, &cmd, &agent_env)),
        Command::Hooks(cmd) => commands::install::run_hooks(&config, cmd, &agent_env),
        Command::Launch(cmd) => {
            runtime.block_on(commands::launch::run(&cli.global, &config, cmd, &agent_env))
        }
        Command::CopilotExtension(cmd) => {
            commands::install::run_copilot_extension(&config, cmd, &agent_env)
        }
        Command::Vscode(cmd) => commands::install::run_vscode(&config, cmd, &agent_env),
        // copilot-bridge itself as an installed program (docs/install.md).
        Command::Completion(cmd) => commands::version::completion(&cmd),
        Command::Version(cmd) => commands::version::version(&cmd),
        Command::Service(cmd) => runtime.block_on(commands::service::run(
            &cli.global,
            &config,
            cmd,
            &agent_env,
        )),
        Command::Doctor(cmd) => {
            runtime.block_on(commands::doctor::run(&cli.global, &config, cmd, &agent_env))
        }
    }
}

/// `command` with the process's telemetry export started first (when
/// configured) and flushed after it, so a short-lived command's spans are
/// not lost at exit.
async fn with_telemetry<T>(
    config: &bridge_config::BridgeConfig,
    command: impl std::future::Future<Output = T>,
) -> T {
    // Only the daemon serves `GET /metrics`: a command's process pushes.
    let mut telemetry = config.telemetry.clone();
    telemetry.metrics_exporter.prometheus = false;
    match bridge_telemetry::Telemetry::start(
        &telemetry,
        env!("CARGO_PKG_VERSION"),
        tokio::runtime::Handle::current(),
    ) {
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "telemetry is not exported"),
    }
    let answer = command.await;
    flush_telemetry().await;
    answer
}

/// Exports the spans and metrics still queued (bounded by the export
/// timeout); for a command that ends its process without returning, too.
pub(crate) async fn flush_telemetry() {
    if let Some(telemetry) = bridge_telemetry::active() {
        let _ = tokio::task::spawn_blocking(|| telemetry.flush()).await;
    }
}
