//! `copilot-bridge mcp session` and the daemon's `/mcp/session`, end to
//! end: a real `serve`, a real WebSocket provider, and the official MCP
//! Python SDK as the agent (tests/peers/python/mcp_probe.py and
//! mcp_watch.py), over streamable HTTP and over stdio.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bridge_testkit::{ProviderClient, Received};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::cli_serve::{KillOnDrop, PATIENCE, Served, pid_alive, read_gateway_json};
use crate::support::{Bridge, python, repo_root};

fn script(name: &str) -> PathBuf {
    repo_root().join("tests/peers/python").join(name)
}

fn bridge_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("copilot-bridge")
}

/// How an agent reaches the session server.
enum Door<'a> {
    Http(&'a Served),
    /// `copilot-bridge mcp session` with this state directory.
    Stdio(&'a Path),
}

impl Door<'_> {
    /// `python SCRIPT <transport args>` with a clean environment (the stdio
    /// server inherits it: the same COPILOT_BRIDGE_HOME as the daemon).
    fn command(&self, python: &Path, script_name: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(python);
        cmd.arg(script(script_name))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        match self {
            Door::Http(served) => {
                cmd.env("HOME", served.state()).args([
                    "http",
                    &served.url("/mcp/session"),
                    "--token",
                    &served.token,
                ]);
            }
            Door::Stdio(state) => {
                cmd.env("HOME", state)
                    .env("COPILOT_BRIDGE_HOME", state)
                    .args(["stdio", "--"])
                    .arg(bridge_bin())
                    .args(["mcp", "session"]);
            }
        }
        cmd.kill_on_drop(true);
        cmd
    }

    /// mcp_probe.py with `steps`: its results.
    async fn probe(&self, python: &Path, steps: Value) -> Vec<Value> {
        let mut child = self
            .command(python, "mcp_probe.py")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(steps.to_string().as_bytes()).await.unwrap();
        drop(stdin);
        let output = tokio::time::timeout(PATIENCE * 3, child.wait_with_output())
            .await
            .expect("the probe did not finish")
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "probe failed: {stderr}");
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("probe output is not JSON ({err}); stderr: {stderr}"))
    }
}

/// A provider named `weather` of the daemon's default session, run in the
/// background: it answers every `tool.call` with `"<tool>: <city>"` and
/// sends what the test hands it.
struct Provider {
    outbox: mpsc::UnboundedSender<Value>,
    task: tokio::task::JoinHandle<()>,
}

impl Provider {
    async fn start(served: &Served, tools: Value) -> Self {
        let (mut client, _) = ProviderClient::register(
            &served.ws_url(),
            &served.provider_token(),
            "weather",
            json!({"tools": tools}),
        )
        .await
        .unwrap();
        let (outbox, mut inbox) = mpsc::unbounded_channel::<Value>();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = inbox.recv() => match message {
                        Some(message) => client.send(message).await.unwrap(),
                        None => return client.close().await,
                    },
                    received = client.recv_within(Duration::from_secs(3600)) => {
                        let Ok(Received::Json(message)) = received else { return };
                        if message["type"] == "tool.call" {
                            let data = format!("{}: {}", message["tool"].as_str().unwrap(), message["args"]["city"]);
                            client
                                .send(json!({"type": "tool.result", "id": message["id"], "data": data}))
                                .await
                                .unwrap();
                        }
                    }
                }
            }
        });
        Self { outbox, task }
    }

    fn send(&self, message: Value) {
        self.outbox.send(message).unwrap();
    }
}

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("{name} for a city"),
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    })
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a user relies on, through one door: the tool is listed with
/// `_depth`, calls run at the provider, bad input is an MCP error and the
/// server goes on.
async fn lists_and_calls(python: &Path, door: Door<'_>) {
    let steps = json!([
        {"list": true},
        {"call": "forecast", "args": {"city": "Oslo"}},
        {"call": "forecast", "args": {"city": "Oslo", "_depth": 3}},
        {"call": "forecast", "args": {"city": "Oslo", "_depth": "one"}},
        {"call": "nowcast", "args": {"city": "Oslo"}},
        {"call": "forecast", "args": {"city": 5}},
        {"call": "forecast", "args": {"city": "Rome"}}
    ]);
    let results = door.probe(python, steps).await;
    let tools = results[0]["tools"].as_array().unwrap();
    // The daemon's permission-prompt tool first (docs/approvals.md), then
    // the provider's.
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(tools[0]["name"], "approve");
    let tools = &tools[1..];
    assert_eq!(tools[0]["name"], "forecast");
    assert_eq!(tools[0]["description"], "forecast for a city");
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["_depth"]["type"],
        "integer"
    );
    assert_eq!(results[1]["isError"], false, "{}", results[1]);
    assert_eq!(text(&results[1]), "forecast: \"Oslo\"");
    assert_eq!(results[2]["isError"], true);
    assert!(
        text(&results[2]).contains("call depth 3 reaches the limit"),
        "{}",
        results[2]
    );
    for (index, expected) in [
        (3, "`_depth` must be a non-negative integer"),
        (4, "unknown tool 'nowcast'"),
        (5, "argument `city` must be string, not integer"),
    ] {
        let error = &results[index]["error"];
        assert_eq!(error["code"], -32602, "step {index}: {}", results[index]);
        assert!(
            error["message"].as_str().unwrap().contains(expected),
            "{error}"
        );
    }
    assert_eq!(text(&results[6]), "forecast: \"Rome\"");
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_provider_tools_over_http_and_stdio() {
    let Some(python) = python() else { return };
    let served = Served::start();
    let provider = Provider::start(&served, json!([tool("forecast")])).await;
    lists_and_calls(&python, Door::Http(&served)).await;
    lists_and_calls(&python, Door::Stdio(served.state())).await;
    drop(provider.outbox);
    provider.task.await.unwrap();
}

#[tokio::test]
async fn the_http_door_needs_the_token() {
    let served = Served::start();
    let response = reqwest::Client::new()
        .post(served.url("/mcp/session"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

/// mcp_watch.py: connected, then driven line by line.
struct Watch {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Watch {
    async fn start(python: &Path, door: Door<'_>) -> (Self, Value) {
        let mut child = door
            .command(python, "mcp_watch.py")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut watch = Self {
            child,
            stdin,
            lines,
        };
        let ready = watch.line().await;
        assert_eq!(ready["ready"], true, "{ready}");
        (watch, ready)
    }

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE * 2, self.lines.next_line())
            .await
            .expect("mcp_watch.py did not answer")
            .unwrap()
            .expect("mcp_watch.py exited");
        serde_json::from_str(&line).unwrap()
    }

    async fn ask(&mut self, command: &str) -> Value {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .unwrap();
        self.line().await
    }

    async fn finish(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success());
    }
}

async fn sees_tools_come_and_go(python: &Path, door: Door<'_>, provider: &Provider) {
    let (mut watch, ready) = Watch::start(python, door).await;
    assert_eq!(ready["tools"], json!(["approve", "forecast"]));
    provider.send(json!({"type": "tools.update", "requestId": "add", "tools": [tool("radar")]}));
    assert_eq!(watch.ask("wait 10").await, json!({"changed": true}));
    assert_eq!(
        watch.ask("list").await["tools"],
        json!(["approve", "forecast", "radar"])
    );
    provider.send(json!({"type": "tools.update", "requestId": "remove", "remove": ["radar"]}));
    assert_eq!(watch.ask("wait 10").await, json!({"changed": true}));
    assert_eq!(
        watch.ask("list").await["tools"],
        json!(["approve", "forecast"])
    );
    watch.finish().await;
}

#[tokio::test]
async fn a_tool_appearing_and_disappearing_is_announced_over_http_and_stdio() {
    let Some(python) = python() else { return };
    let served = Served::start();
    let provider = Provider::start(&served, json!([tool("forecast")])).await;
    sees_tools_come_and_go(&python, Door::Http(&served), &provider).await;
    sees_tools_come_and_go(&python, Door::Stdio(served.state()), &provider).await;
}

#[tokio::test]
async fn mcp_session_starts_the_daemon_when_none_runs() {
    let Some(python) = python() else { return };
    let bridge = Bridge::new();
    let state = bridge.state.path();
    assert!(read_gateway_json(state).is_none());
    let results = Door::Stdio(state)
        .probe(&python, json!([{"list": true}]))
        .await;
    let names: Vec<&Value> = results[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(
        names,
        [&json!("approve")],
        "a fresh daemon has no providers, only the permission prompt"
    );
    let file = read_gateway_json(state).expect("the daemon was started");
    let pid = u32::try_from(file["pid"].as_u64().unwrap()).unwrap();
    let _kill = KillOnDrop(pid);
    assert!(pid_alive(pid), "the daemon outlives the MCP server");
}
