//! `loadgen`: see the crate docs (`bridge_loadgen`) and `loadgen --help`.
//! Prints one JSON line of results on stdout; a run with failed requests
//! also says so on stderr. Exit status 2 when the run could not be made.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use bridge_loadgen::options::{Load, Options};
use bridge_loadgen::{Connection, Report, closed_loop, open_loop};
use clap::Parser;

fn main() -> ExitCode {
    let options = Options::parse();
    let threads = options.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run(&options, threads)),
        Err(err) => Err(format!("cannot start the async runtime: {err}")),
    };
    match outcome.and_then(|report| print(&report).map(|()| report)) {
        Ok(report) => {
            if report.errors > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "loadgen: {} of {} requests failed ({:?}); first: {}",
                    report.errors,
                    report.requests,
                    report.error_kinds,
                    report.first_error.as_deref().unwrap_or("-"),
                );
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "loadgen: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(options: &Options, threads: usize) -> Result<Report, String> {
    let load = options.load()?;
    let template = Arc::new(options.template().await?);
    let measured = options.measured()?;
    let mut connections: Vec<Connection> = (0..options.connection_count()?)
        .map(|_| Connection::new(&template.target))
        .collect();
    // Connect before any timing, so the first requests do not pay for it.
    for connection in &mut connections {
        connection
            .open()
            .await
            .map_err(|failure| failure.describe())?;
    }
    let (mut warmup_errors, mut warmup_ok) = (0, 0);
    if let Some(warmup) = options.warmup_phase()? {
        let (kept, report) = match load {
            Load::Open { rate } => {
                open_loop(connections, Arc::clone(&template), rate, warmup).await?
            }
            Load::Closed { .. } => closed_loop(connections, Arc::clone(&template), warmup).await?,
        };
        connections = kept;
        warmup_errors = report.errors;
        warmup_ok = report.ok;
    }
    let (_, mut report) = match load {
        Load::Open { rate } => open_loop(connections, template, rate, measured).await?,
        Load::Closed { .. } => closed_loop(connections, template, measured).await?,
    };
    report.label = options.label.clone();
    report.stream = options.stream;
    report.threads = threads;
    report.warmup_errors = warmup_errors;
    report.warmup_ok = warmup_ok;
    Ok(report)
}

fn print(report: &Report) -> Result<(), String> {
    let line =
        serde_json::to_string(report).map_err(|err| format!("cannot encode the report: {err}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|err| format!("cannot write to stdout: {err}"))
}
