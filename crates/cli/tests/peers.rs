//! Cross-language peers: the spec's own Node.js and Python provider examples
//! (tests/peers/, installed by scripts/install-test-deps.sh), run unchanged
//! but for the URL against a real `copilot-bridge serve`, their tools called
//! with `copilot-bridge tool NAME --session default`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::repo_root;
use tempfile::TempDir;

/// Starting the daemon, a peer's interpreter and its first registration.
const PATIENCE: Duration = Duration::from_secs(30);

/// The interpreter and script of a peer, when installed; without them the
/// test is skipped loudly (and fails in CI, which installs them first).
fn peer(program: PathBuf, script: &str, installed: &Path) -> Option<(PathBuf, PathBuf)> {
    let script = repo_root().join(script);
    if installed.exists() {
        return Some((program, script));
    }
    let message = format!(
        "{} is missing: run scripts/install-test-deps.sh to install the peers",
        installed.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}

fn node_peer() -> Option<(PathBuf, PathBuf)> {
    let modules = repo_root().join("tests/peers/node/node_modules/ws/package.json");
    peer("node".into(), "tests/peers/node/provider.mjs", &modules)
}

fn python_peer() -> Option<(PathBuf, PathBuf)> {
    let python = repo_root().join(".peers/venv/bin/python");
    peer(python.clone(), "tests/peers/python/provider.py", &python)
}

/// A child process killed (and reaped) when dropped, whatever the test did.
struct Killed {
    child: Child,
    log: PathBuf,
    what: &'static str,
}

impl Killed {
    fn spawn(mut command: Command, log: PathBuf, what: &'static str) -> Self {
        let out = File::create(&log).unwrap();
        command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = command
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {what}: {err}"));
        Self { child, log, what }
    }

    /// Fails the test, with the process's output, if it has exited.
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("{} exited ({status}):\n{}", self.what, self.output());
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `copilot-bridge serve --port 0` with a temp home and a temp workspace.
struct Daemon {
    home: TempDir,
    _workspace: TempDir,
    process: Killed,
    file: Value,
}

impl Daemon {
    fn start() -> Self {
        Self::start_with(TempDir::new().unwrap(), &[])
    }

    /// `serve` in `workspace`, with extra `flags`.
    fn start_with(workspace: TempDir, flags: &[&str]) -> Self {
        let home = TempDir::new().unwrap();
        let mut command = bridge(home.path());
        command
            .args(["serve", "--port", "0", "--home"])
            .arg(home.path())
            .args(flags)
            .current_dir(workspace.path());
        let log = home.path().join("serve.log");
        let mut process = Killed::spawn(command, log, "copilot-bridge serve");
        let pid = u64::from(process.child.id());
        let started = Instant::now();
        let file = loop {
            let file = std::fs::read_to_string(home.path().join("gateway.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .filter(|file| file["pid"] == pid);
            if let Some(file) = file {
                break file;
            }
            process.assert_running();
            assert!(
                started.elapsed() < PATIENCE,
                "serve wrote no gateway.json:\n{}",
                process.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        for field in ["port", "providerToken", "token", "defaultSession"] {
            assert!(!file[field].is_null(), "gateway.json has no {field}");
        }
        Self {
            home,
            _workspace: workspace,
            process,
            file,
        }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.file["port"])
    }

    /// Runs a peer as a project provider of the default session.
    fn run_peer(&self, (program, script): (PathBuf, PathBuf), what: &'static str) -> Killed {
        let mut command = Command::new(program);
        command
            .arg(script)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env(
                "TAP_PROVIDER_TOKEN",
                self.file["providerToken"].as_str().unwrap(),
            )
            .env("TAP_GATEWAY_URL", self.url());
        let log = self.home.path().join(format!("{what}.log"));
        Killed::spawn(command, log, what)
    }

    /// `copilot-bridge tool NAME --session default --args ARGS --compact`.
    fn tool(&self, name: &str, args: &str) -> Output {
        bridge(self.home.path())
            .args([
                "tool",
                name,
                "--session",
                "default",
                "--compact",
                "--args",
                args,
                "--home",
            ])
            .arg(self.home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Calls the tool until its provider has registered it.
    fn call_when_registered(&mut self, peer: &mut Killed, name: &str, args: &str) -> Output {
        let started = Instant::now();
        loop {
            let output = self.tool(name, args);
            if output.status.success() {
                return output;
            }
            peer.assert_running();
            self.process.assert_running();
            assert!(
                started.elapsed() < PATIENCE,
                "{name} never became callable; last attempt: {}\n{}\npeer output:\n{}\ndaemon log:\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr),
                peer.output(),
                self.process.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The binary with a clean environment and the daemon's home.
fn bridge(home: &Path) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("copilot-bridge"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_BRIDGE_HOME", home);
    command
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn the_spec_node_provider_serves_say_hello_through_the_daemon() {
    let Some(node) = node_peer() else { return };
    let mut daemon = Daemon::start();
    let mut peer = daemon.run_peer(node, "node provider");
    let output = daemon.call_when_registered(&mut peer, "say_hello", r#"{"name":"x"}"#);
    assert_eq!(stdout_json(&output), "Hello, x!");
    // A second call on the same connection works as well.
    let output = daemon.tool("say_hello", r#"{"name":"Ada"}"#);
    assert!(output.status.success());
    assert_eq!(stdout_json(&output), "Hello, Ada!");
    assert!(
        !peer.output().contains("Gateway error"),
        "the gateway refused something the spec example sent:\n{}",
        peer.output()
    );
}

#[test]
fn the_spec_python_provider_serves_compute_through_the_daemon() {
    let Some(python) = python_peer() else { return };
    let mut daemon = Daemon::start();
    let mut peer = daemon.run_peer(python, "python provider");
    let output = daemon.call_when_registered(&mut peer, "compute", r#"{"expr":"6*7"}"#);
    assert_eq!(stdout_json(&output), 42);
}

#[test]
fn node_and_python_peers_serve_the_same_session_side_by_side() {
    let (Some(node), Some(python)) = (node_peer(), python_peer()) else {
        return;
    };
    let mut daemon = Daemon::start();
    let mut node = daemon.run_peer(node, "node provider");
    let mut python = daemon.run_peer(python, "python provider");
    let hello = daemon.call_when_registered(&mut node, "say_hello", r#"{"name":"y"}"#);
    let computed = daemon.call_when_registered(&mut python, "compute", r#"{"expr":"2**10"}"#);
    assert_eq!(stdout_json(&hello), "Hello, y!");
    assert_eq!(stdout_json(&computed), 1024);
    // Ending one peer takes its tool away and leaves the other's working.
    drop(node);
    let started = Instant::now();
    while daemon.tool("say_hello", r#"{"name":"z"}"#).status.success() {
        assert!(
            started.elapsed() < PATIENCE,
            "say_hello outlived its provider"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = daemon.tool("compute", r#"{"expr":"1+1"}"#);
    assert!(output.status.success());
    assert_eq!(stdout_json(&output), 2);
}

/// Children of `parent` (from /proc) whose command line contains `needle`.
fn children_running(parent: u32, needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if fields.get(1) == Some(&parent.to_string().as_str())
            && String::from_utf8_lossy(&cmdline).contains(needle)
        {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
    })
}

#[test]
fn a_trusting_daemon_spawns_the_spec_node_provider_from_tap_config_json_and_stops_it() {
    let Some((node, script)) = node_peer() else {
        return;
    };
    let workspace = TempDir::new().unwrap();
    let config = serde_json::json!({"providers": [
        {"name": "hello", "command": node, "args": [script.canonicalize().unwrap()]}
    ]});
    std::fs::write(workspace.path().join("tap.config.json"), config.to_string()).unwrap();
    let mut daemon = Daemon::start_with(workspace, &["--trust-project-providers"]);
    let daemon_pid = daemon.process.child.id();

    // The daemon spawned it with TAP_PROVIDER_TOKEN and TAP_GATEWAY_URL;
    // nothing else tells the example where to connect.
    let started = Instant::now();
    let output = loop {
        let output = daemon.tool("say_hello", r#"{"name":"x"}"#);
        if output.status.success() {
            break output;
        }
        daemon.process.assert_running();
        assert!(
            started.elapsed() < PATIENCE,
            "the project provider never registered:\n{}",
            daemon.process.output()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(stdout_json(&output), "Hello, x!");
    let providers = children_running(daemon_pid, "provider.mjs");
    assert_eq!(providers.len(), 1, "one spawned provider process");

    // SIGTERM to the daemon: it shuts down and takes the provider with it.
    let pid = rustix::process::Pid::from_raw(daemon_pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let started = Instant::now();
    while daemon.process.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < PATIENCE,
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(providers[0]),
        "the project provider outlived the daemon:\n{}",
        daemon.process.output()
    );
}
