//! `mock-llm`: the mock LLM upstream as a standalone server, for manual runs
//! and end-to-end tests of the binary.
//!
//! Usage: `mock-llm [--port N] [--script FILE] [--echo]`
//! `--script` reads a JSON array of replies (`[{"type": "text", "chunks": ["hi"]}]`);
//! once they are used up, and with `--echo` from the start, chat requests
//! echo the last user message. Prints `listening on http://127.0.0.1:PORT`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use bridge_testkit::{MockLlm, MockReply};

const USAGE: &str = "usage: mock-llm [--port N] [--script FILE] [--echo]";

struct Options {
    port: u16,
    script: Option<PathBuf>,
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        port: 0,
        script: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                options.port = value
                    .parse()
                    .map_err(|err| format!("invalid --port {value:?}: {err}"))?;
            }
            "--script" => {
                options.script = Some(args.next().ok_or("--script needs a file")?.into());
            }
            // Echo is what an empty script does; the flag makes it explicit.
            "--echo" => {}
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

fn load_script(path: &PathBuf) -> Result<Vec<MockReply>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read script {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("invalid script {}: {err}", path.display()))
}

async fn run() -> Result<(), String> {
    let options = parse_options(std::env::args().skip(1))?;
    let script = match &options.script {
        Some(path) => load_script(path)?,
        None => Vec::new(),
    };
    let address = SocketAddr::from(([127, 0, 0, 1], options.port));
    let mock = MockLlm::start_at(address, script)
        .await
        .map_err(|err| format!("cannot listen on {address}: {err}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on {}", mock.base_url())
        .and_then(|()| stdout.flush())
        .map_err(|err| format!("cannot write to stdout: {err}"))?;
    // Serves until the process is killed.
    std::future::pending::<()>().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "mock-llm: {message}");
            ExitCode::from(2)
        }
    }
}
