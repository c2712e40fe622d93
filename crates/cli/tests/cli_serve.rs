//! `copilot-bridge serve`: the state file, health, the Host/Origin checks,
//! one daemon per state directory, a taken port, signals. Also the harness
//! the daemon tests share: a real `serve` process on a free port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::support::Bridge;

/// How long a daemon gets to come up or go away before a test fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The binary with the clean environment of [`Bridge::cmd`], as a
/// `std::process::Command` (for processes that outlive one call).
pub fn command(state: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("copilot-bridge"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", state)
        .env("COPILOT_BRIDGE_HOME", state)
        // Asks are denied at once, as before approvals, unless a test
        // waits for a person (docs/approvals.md).
        .env("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "0")
        .stdin(Stdio::null());
    cmd
}

/// Waits until `done` holds, failing the test after [`PATIENCE`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read_gateway_json(state: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(state.join("gateway.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Running (a zombie left by a non-reaping container init is not).
pub fn pid_alive(pid: u32) -> bool {
    let raw = rustix::process::Pid::from_raw(pid as i32).unwrap();
    if rustix::process::test_kill_process(raw).is_err() {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    state != Some("Z")
}

/// Kills a daemon this test started in the background, whatever happens.
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// A child process killed (and reaped) when dropped.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for ChildGuard {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// A `copilot-bridge serve --port 0` process in a temp workspace with a
/// temp state directory; killed when dropped.
pub struct Served {
    // Declared first: the process dies before its directories go.
    pub child: ChildGuard,
    pub bridge: Bridge,
    pub workspace: TempWorkspace,
    /// gateway.json as the daemon wrote it.
    pub file: Value,
    pub port: u16,
    pub token: String,
}

impl Served {
    pub fn start() -> Self {
        Self::start_in(Bridge::new(), TempWorkspace::new(), &[])
    }

    /// `serve` with `env` added, in `workspace`, with `bridge`'s state dir.
    pub fn start_in(bridge: Bridge, workspace: TempWorkspace, env: &[(&str, &str)]) -> Self {
        let child = ChildGuard(spawn_serve(bridge.state.path(), workspace.path(), env));
        let pid = child.id();
        let mut served = Self {
            bridge,
            workspace,
            child,
            file: Value::Null,
            port: 0,
            token: String::new(),
        };
        let state = served.bridge.state.path().to_path_buf();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(file) = read_gateway_json(&state).filter(|f| f["pid"] == pid) {
                served.port = u16::try_from(file["port"].as_u64().unwrap()).unwrap();
                served.token = file["token"].as_str().unwrap().to_owned();
                served.file = file;
                return served;
            }
            if let Some(status) = served.child.try_wait().unwrap() {
                panic!("serve exited early ({status}): {}", served.log());
            }
            assert!(
                Instant::now() < deadline,
                "serve did not start: {}",
                served.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn state(&self) -> &Path {
        self.bridge.state.path()
    }

    /// What the daemon logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.state().join("serve.log")).unwrap_or_default()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    pub fn provider_token(&self) -> String {
        self.file["providerToken"].as_str().unwrap().to_owned()
    }

    /// A project token minted for `session` (`gateway.providerToken`).
    pub async fn provider_token_for(&self, session: &str) -> String {
        self.rpc("gateway.providerToken", json!({"session": session}))
            .await["token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// One `/rpc` call with the approver token (`approver-token` in the
    /// state directory); the whole response.
    pub async fn approver_rpc(&self, method: &str, params: Value) -> Value {
        let token = std::fs::read_to_string(self.state().join("approver-token")).unwrap();
        self.rpc_with(token.trim(), method, params).await
    }

    /// POST `body` to `path` with the daemon's token: the answer's JSON.
    pub async fn post_json(&self, path: &str, body: Value) -> Value {
        self.post_json_with(&self.token, path, body).await
    }

    /// POST `body` to `path` with `token`: the answer's JSON.
    async fn post_json_with(&self, token: &str, path: &str, body: Value) -> Value {
        reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// One JSON-RPC call over POST /rpc; the whole response body.
    pub async fn rpc_raw(&self, method: &str, params: Value) -> Value {
        self.rpc_with(&self.token, method, params).await
    }

    /// One JSON-RPC call over POST /rpc with `token`; the whole response.
    async fn rpc_with(&self, token: &str, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.post_json_with(token, "/rpc", request).await
    }

    /// The result of a call that must succeed.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let response = self.rpc_raw(method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// The CLI against this daemon, run without blocking the test's runtime.
    pub fn cli(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::from(command(self.state()));
        cmd.current_dir(self.workspace.path());
        cmd
    }
}

pub fn spawn_serve(state: &Path, cwd: &Path, env: &[(&str, &str)]) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state.join("serve.log"))
        .unwrap();
    let mut cmd = command(state);
    cmd.current_dir(cwd)
        .args(["serve", "--port", "0"])
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log));
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.spawn().unwrap()
}

/// A raw HTTP/1.1 GET with exactly these headers (clients fill in Host on
/// their own; this test needs to lie about it).
pub fn raw_get(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    try_raw_get(port, path, headers).unwrap()
}

/// [`raw_get`] that reports a refused or reset connection instead of
/// panicking: a daemon at its connection cap resets the ones it turns away.
pub fn try_raw_get(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {response:?}")))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn serve_publishes_a_private_gateway_json_and_answers_healthz() {
    let served = Served::start();
    let path: PathBuf = served.state().join("gateway.json");
    assert_eq!(mode(&path), 0o600, "gateway.json holds tokens");
    assert_eq!(mode(served.state()), 0o700);
    let file = &served.file;
    assert_eq!(file["pid"], served.child.id());
    assert!(file["token"].as_str().unwrap().len() >= 32);
    assert!(file["providerToken"].as_str().unwrap().starts_with("ptk-"));
    assert_ne!(file["token"], file["providerToken"]);
    assert!(
        file["defaultSession"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(file["startedAt"].as_str().is_some_and(|s| s.len() >= 20));
    assert_eq!(file["version"], env!("CARGO_PKG_VERSION"));

    let host = format!("127.0.0.1:{}", served.port);
    let (status, body) = raw_get(served.port, "/healthz", &[("Host", &host)]);
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["ok"], true);
    assert_eq!(health["sessions"], 1);
    assert_eq!(health["providers"], 0);
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    assert!(!body.contains(served.token.as_str()) && !body.contains("ptk-"));

    // Logs say where things are, never the tokens.
    let log = served.log();
    assert!(log.contains(&format!("127.0.0.1:{}", served.port)), "{log}");
    assert!(log.contains("gateway.json"), "{log}");
    assert!(!log.contains(served.token.as_str()), "{log}");
    assert!(!log.contains(&served.provider_token()), "{log}");
}

#[test]
fn requests_naming_a_foreign_host_or_origin_are_refused() {
    let served = Served::start();
    let port = served.port;
    let loopback = format!("localhost:{port}");
    for path in ["/healthz", "/", "/rpc"] {
        let (status, body) = raw_get(port, path, &[("Host", "evil.example")]);
        assert_eq!(status, 403, "{path}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "forbidden_host");
    }
    let (status, _) = raw_get(port, "/healthz", &[]);
    assert_eq!(status, 403, "HTTP/1.1 without Host is refused");
    let (status, body) = raw_get(
        port,
        "/healthz",
        &[("Host", &loopback), ("Origin", "http://evil.example")],
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("forbidden_origin"));
    let (status, _) = raw_get(
        port,
        "/healthz",
        &[("Host", &loopback), ("Origin", "http://localhost:5173")],
    );
    assert_eq!(status, 200);
    let (status, _) = raw_get(port, "/healthz", &[("Host", &format!("[::1]:{port}"))]);
    assert_eq!(status, 200);
}

#[tokio::test]
async fn browser_origins_may_reach_the_provider_route() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let served = Served::start();
    let mut request = served.ws_url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Origin", "https://app.example.com".parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    use futures::{SinkExt, StreamExt};
    let auth = json!({"type": "auth", "token": served.provider_token()});
    ws.send(tokio_tungstenite::tungstenite::Message::text(
        auth.to_string(),
    ))
    .await
    .unwrap();
    let reply = tokio::time::timeout(PATIENCE, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!(reply["type"], "sessions", "{reply}");
}

#[test]
fn a_second_serve_finds_the_running_one() {
    let served = Served::start();
    let pid = served.child.id();
    let expected = format!(
        "a gateway is already running on 127.0.0.1:{} (pid {pid})",
        served.port
    );
    let output = served
        .bridge
        .cmd()
        .current_dir(served.workspace.path())
        .args(["serve", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&expected), "{stderr}");

    let output = served
        .bridge
        .cmd()
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "daemon start is idempotent");
    assert!(String::from_utf8_lossy(&output.stdout).contains(&expected));
    // Still the first daemon's file.
    assert_eq!(read_gateway_json(served.state()).unwrap()["pid"], pid);
}

#[test]
fn a_port_taken_by_another_program_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let output = bridge
        .cmd()
        .current_dir(ws.path())
        .args(["serve", "--port", &port.to_string()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("port {port} on 127.0.0.1 is already in use")),
        "{stderr}"
    );
    assert!(read_gateway_json(bridge.state.path()).is_none());
}

/// Sends SIGTERM to `served` and waits for it to exit.
fn sigterm(served: &mut Served) -> std::process::ExitStatus {
    let pid = rustix::process::Pid::from_raw(served.child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "serve ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_stops_serve_and_removes_gateway_json() {
    let mut served = Served::start();
    let status = sigterm(&mut served);
    assert!(status.success(), "{status}: {}", served.log());
    assert!(read_gateway_json(served.state()).is_none());
    assert!(std::net::TcpStream::connect(("127.0.0.1", served.port)).is_err());
}

/// A SIGTERM is a normal stop: exit 0 and no ERROR line. The HTTP loop and
/// the daemon see the stop at the same moment; the daemon used to take the
/// loop's end for a crash when it saw that first, which one worker thread
/// makes likely (about one stop in three), so several daemons are stopped.
#[test]
fn sigterm_is_a_clean_stop_without_an_error_line() {
    for _ in 0..20 {
        let mut served = Served::start_in(
            Bridge::new(),
            TempWorkspace::new(),
            &[("TOKIO_WORKER_THREADS", "1")],
        );
        let status = sigterm(&mut served);
        let log = served.log();
        assert!(status.success(), "{status}: {log}");
        assert!(log.contains("SIGTERM received"), "{log}");
        let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
        assert!(errors.is_empty(), "a clean stop logged errors: {errors:#?}");
    }
}

#[test]
fn a_daemon_started_in_the_filesystem_root_says_so_and_works_in_home() {
    let bridge = Bridge::new();
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().display().to_string();
    let mut child = ChildGuard(spawn_serve(
        bridge.state.path(),
        Path::new("/"),
        &[("HOME", home_dir.as_str())],
    ));
    let state = bridge.state.path().to_path_buf();
    wait_until("serve writes gateway.json", || {
        read_gateway_json(&state).is_some() || child.try_wait().unwrap().is_some()
    });
    let log = std::fs::read_to_string(state.join("serve.log")).unwrap();
    assert!(
        log.contains("/ cannot be a workspace: it is the filesystem root")
            && log.contains("the default session works in the home directory"),
        "{log}"
    );
    let status = command(&state)
        .env("HOME", &home_dir)
        .args(["daemon", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let home_canonical = home.path().canonicalize().unwrap();
    assert_eq!(
        status["sessions"][0]["cwd"].as_str().unwrap(),
        home_canonical.to_str().unwrap(),
        "{status}"
    );
}
