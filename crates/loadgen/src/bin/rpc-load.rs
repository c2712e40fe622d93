//! `rpc-load`: side A of `scripts/bench-gateway.sh` — a client of the
//! daemon's `/rpc` WebSocket calling one provider tool with
//! `session.tools.call`, N calls in flight on one persistent connection, as a
//! user's program drives the hub from outside.
//!
//! `rpc-load --url ws://127.0.0.1:PORT/rpc --token T --session S --cpu-pid PID
//! [--provider-pid PID]` connects, prints `ready`, then reads commands on
//! stdin, one per line: `run <in-flight> <warm-up seconds> <measured
//! seconds>`, answered by one JSON line `{calls, seconds, callsPerSec, p50Us,
//! p99Us, cpuUsPerCall, providerCpuUsPerCall, callerCpuUsPerCall, errors}`
//! (the same shape as side B's `scripts/bench-gateway/tap-caller.mjs`).
//! `cpuUsPerCall` is the user + system time of process `--cpu-pid` (the
//! daemon) over the measured window, divided by the calls answered in it;
//! `providerCpuUsPerCall` the same of `--provider-pid`, `callerCpuUsPerCall`
//! of this process.
//!
//! Like a careful client it writes every request it has ready before one
//! flush (answers that arrive together are replaced together).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures::{FutureExt, SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

struct Options {
    url: String,
    token: String,
    session: String,
    cpu_pid: Option<u32>,
    provider_pid: Option<u32>,
}

fn parse_pid(flag: &str, value: &str) -> Result<u32, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} {value:?} is not a pid"))
}

fn parse_options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut url, mut token, mut session) = (None, None, None);
    let (mut cpu_pid, mut provider_pid) = (None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => url = Some(value),
            "--token" => token = Some(value),
            "--session" => session = Some(value),
            "--cpu-pid" => cpu_pid = Some(parse_pid(&flag, &value)?),
            "--provider-pid" => provider_pid = Some(parse_pid(&flag, &value)?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Options {
        url: url.ok_or("--url is required")?,
        token: token.ok_or("--token is required")?,
        session: session.ok_or("--session is required")?,
        cpu_pid,
        provider_pid,
    })
}

/// User + system CPU time of a process so far, from `/proc/PID/stat`
/// (clock ticks of 10 ms: Linux's USER_HZ is 100).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields are counted after its ')'.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// The CPU time so far of the daemon, the provider and this process.
#[derive(Clone, Copy)]
struct CpuTimes([Option<Duration>; 3]);

impl CpuTimes {
    fn now(daemon: Option<u32>, provider: Option<u32>) -> Self {
        Self([
            daemon.and_then(cpu_time),
            provider.and_then(cpu_time),
            cpu_time(std::process::id()),
        ])
    }

    /// Microseconds a call of each since `start`, over `calls` calls.
    fn per_call_since(&self, start: &Self, calls: u64) -> [f64; 3] {
        std::array::from_fn(|index| match (start.0[index], self.0[index]) {
            // A pid that died and was reused reads lower: no panic, 0.
            (Some(a), Some(b)) if calls > 0 => {
                b.saturating_sub(a).as_secs_f64() * 1e6 / calls as f64
            }
            _ => 0.0,
        })
    }
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

struct Driver {
    socket: Socket,
    session: String,
    next_id: u64,
    sent_at: HashMap<u64, Instant>,
}

impl Driver {
    fn request(&mut self) -> Message {
        self.next_id += 1;
        self.sent_at.insert(self.next_id, Instant::now());
        Message::text(format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"session.tools.call","params":{{"session":"{}","name":"echo","arguments":{{"text":"hello"}}}}}}"#,
            self.next_id, self.session
        ))
    }

    /// One answer: its latency, whether it failed.
    fn settle(&mut self, message: &Message) -> Result<(Duration, bool), String> {
        let Message::Text(text) = message else {
            return Err(format!("unexpected frame {message:?}"));
        };
        let answer: Answer = serde_json::from_str(text.as_str())
            .map_err(|err| format!("answer {text} is not a JSON-RPC response: {err}"))?;
        let sent = self
            .sent_at
            .remove(&answer.id)
            .ok_or_else(|| format!("answer to unknown id {}", answer.id))?;
        Ok((sent.elapsed(), answer.error.is_some()))
    }

    async fn run(
        &mut self,
        in_flight: usize,
        warmup: Duration,
        measured: Duration,
        pids: (Option<u32>, Option<u32>),
    ) -> Result<serde_json::Value, String> {
        let cpu_now = || CpuTimes::now(pids.0, pids.1);
        let mut latency =
            Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|err| err.to_string())?;
        let (mut calls, mut errors) = (0u64, 0u64);
        for _ in 0..in_flight {
            let request = self.request();
            self.socket.feed(request).await.map_err(|e| e.to_string())?;
        }
        self.socket.flush().await.map_err(|e| e.to_string())?;
        let begin = Instant::now();
        let measure_from = begin + warmup;
        let measure_until = measure_from + measured;
        let mut window: Option<(Instant, CpuTimes)> = None;
        let mut finished_at = None;
        while !self.sent_at.is_empty() {
            let mut frame = self.socket.next().await;
            loop {
                let message = match frame {
                    Some(Ok(message)) => message,
                    Some(Err(err)) => return Err(format!("read failed: {err}")),
                    None => return Err("the daemon closed the connection".into()),
                };
                if matches!(message, Message::Ping(_) | Message::Pong(_)) {
                    frame = match self.socket.next().now_or_never() {
                        Some(next) => next,
                        None => break,
                    };
                    continue;
                }
                let (took, failed) = self.settle(&message)?;
                let now = Instant::now();
                if window.is_none() && now >= measure_from {
                    window = Some((now, cpu_now()));
                }
                if window.is_some() && finished_at.is_none() {
                    if now >= measure_until {
                        finished_at = Some((now, cpu_now()));
                    } else if failed {
                        errors += 1;
                    } else {
                        calls += 1;
                        let _ = latency.record(took.as_micros().try_into().unwrap_or(u64::MAX));
                    }
                }
                if finished_at.is_none() {
                    let request = self.request();
                    self.socket.feed(request).await.map_err(|e| e.to_string())?;
                }
                frame = match self.socket.next().now_or_never() {
                    Some(next) => next,
                    None => break,
                };
            }
            self.socket.flush().await.map_err(|e| e.to_string())?;
        }
        let (Some((start, cpu_start)), Some((end, cpu_end))) = (window, finished_at) else {
            return Err("the run ended before its measured window".into());
        };
        let seconds = end.duration_since(start).as_secs_f64();
        let [daemon_cpu, provider_cpu, caller_cpu] = cpu_end.per_call_since(&cpu_start, calls);
        Ok(serde_json::json!({
            "calls": calls,
            "seconds": seconds,
            "callsPerSec": calls as f64 / seconds,
            "p50Us": latency.value_at_quantile(0.5),
            "p99Us": latency.value_at_quantile(0.99),
            "cpuUsPerCall": daemon_cpu,
            "providerCpuUsPerCall": provider_cpu,
            "callerCpuUsPerCall": caller_cpu,
            "errors": errors,
        }))
    }
}

async fn connect(options: &Options) -> Result<Socket, String> {
    let mut request = options
        .url
        .as_str()
        .into_client_request()
        .map_err(|err| format!("{}: {err}", options.url))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", options.token))
        .map_err(|err| format!("the token is not a header value: {err}"))?;
    request.headers_mut().insert("authorization", bearer);
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(|err| format!("connecting to {}: {err}", options.url))?;
    if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream.set_nodelay(true).map_err(|err| err.to_string())?;
    }
    Ok(socket)
}

fn parse_run(line: &str) -> Result<(usize, Duration, Duration), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [_, in_flight, warmup, measured] = words[..] else {
        return Err(format!(
            "expected `run <in-flight> <warm-up s> <measured s>`, got {line:?}"
        ));
    };
    let seconds = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{text:?} is not a number of seconds"))
    };
    let in_flight = in_flight
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{in_flight:?} is not a positive count"))?;
    Ok((in_flight, seconds(warmup)?, seconds(measured)?))
}

/// One line on stdout, flushed: the script waits for it.
fn say(line: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|err| format!("cannot write to stdout: {err}"))
}

async fn serve(options: Options) -> Result<(), String> {
    let socket = connect(&options).await?;
    let mut driver = Driver {
        socket,
        session: options.session.clone(),
        next_id: 0,
        sent_at: HashMap::new(),
    };
    say("ready")?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|err| err.to_string())?;
        match line.split_whitespace().next() {
            Some("run") => {
                let (in_flight, warmup, measured) = parse_run(&line)?;
                let report = driver
                    .run(
                        in_flight,
                        warmup,
                        measured,
                        (options.cpu_pid, options.provider_pid),
                    )
                    .await?;
                say(&report.to_string())?;
            }
            Some("quit") | None => break,
            Some(other) => return Err(format!("unknown command {other}")),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("rpc-load: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("rpc-load: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("rpc-load: {err}");
            ExitCode::FAILURE
        }
    }
}
