//! Times an MCP server over stdio with a bare JSON-RPC client (no SDK, so
//! the client adds next to nothing): spawn → `initialize` →
//! `notifications/initialized` → first `tools/list` answer, repeated over
//! fresh processes; then, in one session, the latency of `tools/list` and
//! of given tool calls.
//!
//! Usage: `mcp-bench [--runs N] [--calls N] [--call NAME JSON_ARGS]... -- CMD [ARGS...]`
//! Prints one JSON object: `{"startup_ms": {min, median, p99, max},
//! "calls": [{"name", "min_us", "median_us", "p99_us"}]}`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Options {
    runs: usize,
    calls: usize,
    tool_calls: Vec<(String, Value)>,
    command: Vec<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        runs: 20,
        calls: 200,
        tool_calls: Vec::new(),
        command: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--runs" => options.runs = value("--runs")?.parse().map_err(|_| "bad --runs")?,
            "--calls" => options.calls = value("--calls")?.parse().map_err(|_| "bad --calls")?,
            "--call" => {
                let name = value("--call")?;
                let raw = value("--call")?;
                let parsed = serde_json::from_str(&raw)
                    .map_err(|err| format!("bad JSON for {name}: {err}"))?;
                options.tool_calls.push((name, parsed));
            }
            "--" => {
                options.command = args.by_ref().collect();
                break;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.command.is_empty() {
        return Err(
            "usage: mcp-bench [--runs N] [--calls N] [--call NAME JSON]... -- CMD [ARGS...]"
                .to_owned(),
        );
    }
    Ok(options)
}

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn spawn(command: &[String]) -> Result<Self, String> {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot spawn {}: {err}", command[0]))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|err| format!("cannot write to the server: {err}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .stdout
                .read_line(&mut line)
                .map_err(|err| format!("cannot read from the server: {err}"))?;
            if read == 0 {
                return Err(format!(
                    "the server closed stdout before answering {method}"
                ));
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(id)) {
                if let Some(error) = message.get("error") {
                    return Err(format!("{method} failed: {error}"));
                }
                return Ok(message["result"].clone());
            }
        }
    }

    fn initialize(&mut self) -> Result<(), String> {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp-bench", "version": "1"}}),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary_ms(mut times: Vec<Duration>) -> Value {
    times.sort();
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    json!({
        "min": ms(times[0]),
        "median": ms(percentile(&times, 50.0)),
        "p99": ms(percentile(&times, 99.0)),
        "max": ms(times[times.len() - 1]),
    })
}

fn summary_us(name: &str, mut times: Vec<Duration>) -> Value {
    times.sort();
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    json!({
        "name": name,
        "min_us": us(times[0]),
        "median_us": us(percentile(&times, 50.0)),
        "p99_us": us(percentile(&times, 99.0)),
    })
}

fn measure(options: &Options) -> Result<Value, String> {
    let mut startups = Vec::with_capacity(options.runs);
    for _ in 0..options.runs.max(1) {
        let started = Instant::now();
        let mut session = Session::spawn(&options.command)?;
        session.initialize()?;
        session.request("tools/list", json!({}))?;
        startups.push(started.elapsed());
        session.close();
    }
    let mut session = Session::spawn(&options.command)?;
    session.initialize()?;
    let mut calls = Vec::new();
    let mut lists = Vec::with_capacity(options.calls);
    for _ in 0..options.calls.max(1) {
        let started = Instant::now();
        session.request("tools/list", json!({}))?;
        lists.push(started.elapsed());
    }
    calls.push(summary_us("tools/list", lists));
    for (name, args) in &options.tool_calls {
        let mut times = Vec::with_capacity(options.calls);
        for _ in 0..options.calls.max(1) {
            let started = Instant::now();
            let result = session.request("tools/call", json!({"name": name, "arguments": args}))?;
            times.push(started.elapsed());
            if result["isError"] == json!(true) {
                return Err(format!("{name} answered an error: {result}"));
            }
        }
        calls.push(summary_us(name, times));
    }
    session.close();
    Ok(json!({"startup_ms": summary_ms(startups), "calls": calls}))
}

fn main() -> ExitCode {
    let outcome = parse_options().and_then(|options| measure(&options));
    match outcome {
        Ok(report) => {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("mcp-bench: {err}");
            ExitCode::FAILURE
        }
    }
}
