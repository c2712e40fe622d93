//! Project providers from `tap.config.json`: spawned only when trusted, with
//! a session-scoped token, a minimal environment and captured output;
//! bound to their session, stopped (with their whole process group) when
//! it ends or the gateway shuts down; malformed or escaping configs refused.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_engine::{CallOrigin, RegistrySettings, Session, SessionEvent};
use bridge_gateway::GatewaySettings;
use serde_json::json;

use crate::support::{TestGateway, fast_registry_settings, fast_settings};

use bridge_testkit::python as venv_python;

async fn trusted_gateway(settings: GatewaySettings, registry: RegistrySettings) -> TestGateway {
    let gw = TestGateway::start_with(settings, registry).await;
    gw.gateway.set_public_url(gw.url.clone());
    gw.gateway.trust_project_providers(true);
    gw
}

/// The workspace directory `create_session(id)` will use, with `files`.
fn prepare_workspace(gw: &TestGateway, id: &str, files: &[(&str, &str)]) -> PathBuf {
    for (name, contents) in files {
        gw.workspace.write(&format!("ws-{id}/{name}"), contents);
    }
    let dir = gw.workspace.path().join(format!("ws-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits (event-driven) for a timeline line containing `needle`.
async fn timeline_line(session: &Session, needle: &str) -> String {
    let mut events = session.subscribe();
    let found = |session: &Session| {
        session
            .timeline(1000)
            .into_iter()
            .find(|entry| entry.text.contains(needle))
            .map(|entry| entry.text)
    };
    let wait = async {
        loop {
            if let Some(text) = found(session) {
                return text;
            }
            match events.recv().await {
                Ok(SessionEvent::Log { .. }) | Err(_) => {}
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(15), wait)
        .await
        .unwrap_or_else(|_| {
            let lines: Vec<String> = session.timeline(100).into_iter().map(|e| e.text).collect();
            panic!("no timeline line contains {needle:?}; timeline: {lines:#?}")
        })
}

/// Polls until `check` holds (a process's effect on disk or in the table
/// cannot be awaited as an event).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
    })
}

/// Pids a script wrote (space-separated) to `file`.
async fn pids(dir: &Path, file: &str) -> Vec<u32> {
    let path = dir.join(file);
    eventually(&format!("{} to be written", path.display()), || {
        std::fs::read_to_string(&path).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    std::fs::read_to_string(&path)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Captures the log output of the whole test binary: one global subscriber,
/// installed once. (A thread-local `set_default` subscriber loses events
/// when tests on other threads change tracing's global callsite interest.)
/// Tests find their own lines by a marker only they log.
#[derive(Clone, Default)]
struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    fn global() -> Self {
        static CAPTURE: std::sync::OnceLock<LogCapture> = std::sync::OnceLock::new();
        CAPTURE
            .get_or_init(|| {
                let capture = LogCapture::default();
                let subscriber = tracing_subscriber::fmt()
                    .with_writer(capture.clone())
                    .with_ansi(false)
                    .with_max_level(tracing::Level::INFO)
                    .finish();
                // Another test binary module may have set one first; then
                // this capture stays empty and the test says so.
                let _ = tracing::subscriber::set_global_default(subscriber);
                capture
            })
            .clone()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

const SECRET: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";

/// A provider on the real `websockets` package: serves `env_report`,
/// starts a grandchild, prints a secret-bearing line, and answers
/// `shutdown.pending` with `shutdown.ready` after leaving a marker.
const PY_PROVIDER: &str = r#"
import asyncio, json, os, subprocess, sys, websockets

async def main():
    child = subprocess.Popen(["sleep", "300"])
    with open("pids", "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    print("provider says hi, token=" + sys.argv[1], flush=True)
    async with websockets.connect(os.environ["TAP_GATEWAY_URL"]) as ws:
        await ws.send(json.dumps({"type": "auth", "token": os.environ["TAP_PROVIDER_TOKEN"]}))
        async for raw in ws:
            msg = json.loads(raw)
            if msg["type"] == "sessions":
                await ws.send(json.dumps({
                    "type": "hello", "name": "py-test", "protocolVersion": 2,
                    "session": os.environ["TAP_SESSION_ID"],
                    "tools": [{"name": "env_report", "description": "What the provider was given",
                               "parameters": {"type": "object", "properties": {}}}],
                }))
            elif msg["type"] == "hello.ack":
                # A repository's provider must not be able to take the
                # hub's chat prompts.
                await ws.send(json.dumps({"type": "chat.models", "available": True,
                                          "models": [{"id": "gpt-4o"}]}))
            elif msg["type"] == "error" and msg.get("replyTo") == "chat.models":
                with open("chat-refusal", "w") as f:
                    f.write(msg["code"] + ": " + msg["message"])
            elif msg["type"] == "tool.call":
                await ws.send(json.dumps({"type": "tool.result", "id": msg["id"], "data": {
                    "names": sorted(os.environ),
                    "session": os.environ["TAP_SESSION_ID"],
                    "url": os.environ["TAP_GATEWAY_URL"],
                    "project_prefix": os.environ["TAP_PROVIDER_TOKEN"].startswith("ptk-"),
                    "greeting": os.environ.get("GREETING"),
                    "cwd": os.getcwd(),
                    "stdin": os.path.realpath("/proc/self/fd/0"),
                }}))
            elif msg["type"] == "session.lifecycle" and msg["state"] == "shutdown.pending":
                with open("shutdown-pending", "w") as f:
                    f.write(str(msg.get("deadline")))
                await ws.send(json.dumps({"type": "shutdown.ready", "sessionId": msg["sessionId"]}))

asyncio.run(main())
"#;

fn py_config(python: &Path) -> String {
    json!({"providers": [{
        "name": "py-test",
        "command": python,
        "args": ["../provider.py", SECRET],
        "cwd": "sub",
        "env": {"GREETING": "hi"}
    }]})
    .to_string()
}

#[tokio::test]
async fn a_trusted_project_provider_is_spawned_binds_to_its_session_and_serves_tools() {
    let Some(python) = venv_python() else { return };
    let logs = LogCapture::global();
    let gw = trusted_gateway(fast_settings(), fast_registry_settings()).await;
    let dir = prepare_workspace(
        &gw,
        "proj",
        &[
            ("provider.py", PY_PROVIDER),
            ("tap.config.json", &py_config(&python)),
        ],
    );
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let session = gw.create_session("proj");

    eventually("env_report to be registered", || {
        session.tool("env_report").is_some()
    })
    .await;
    let refusal = dir.join("sub/chat-refusal");
    eventually("the chat offer to be refused", || refusal.exists()).await;
    let refusal = std::fs::read_to_string(refusal).unwrap();
    assert!(refusal.starts_with("UNAUTHORIZED: "), "{refusal}");
    assert!(refusal.contains("tap.config.json"), "{refusal}");
    let outcome = session
        .call_tool("env_report", json!({}), CallOrigin::Rpc)
        .await;
    let report = outcome.result.unwrap();
    assert_eq!(report["session"], "proj");
    assert_eq!(report["url"], gw.url.as_str());
    assert_eq!(report["project_prefix"], true, "a project token: {report}");
    assert_eq!(report["greeting"], "hi", "spec env is passed");
    assert_eq!(report["cwd"], dir.join("sub").display().to_string());
    assert_eq!(report["stdin"], "/dev/null");
    let allowed = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TERM",
        "TZ",
        "TMPDIR",
        "GREETING",
        "TAP_PROVIDER_TOKEN",
        "TAP_GATEWAY_URL",
        "TAP_SESSION_ID",
    ];
    let names: Vec<&str> = report["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in &names {
        assert!(
            allowed.contains(name),
            "{name} leaked into the provider's environment"
        );
    }

    // Bound to the spawning session only, at project trust.
    let status = gw.gateway.status();
    let info = status
        .providers
        .iter()
        .find(|p| p.name == "py-test")
        .unwrap();
    assert_eq!(info.trust, "project");
    assert_eq!(info.sessions, vec!["proj".to_owned()]);
    assert!(gw.session("default").tool("env_report").is_none());

    // Its output reached the daemon log, under its name, redacted.
    eventually("the provider's output in the log", || {
        logs.text().contains("provider says hi")
    })
    .await;
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("provider says hi"))
        .unwrap_or_else(|| panic!("provider output not logged:\n{text}"));
    assert!(
        line.contains("py-test") && line.contains("stdout"),
        "{line}"
    );
    assert!(!text.contains(SECRET), "a secret reached the daemon log");
    assert!(line.contains("[REDACTED]"), "{line}");
    timeline_line(&session, "project provider 'py-test' started (pid").await;
}

#[tokio::test]
async fn ending_the_session_sends_shutdown_pending_then_stops_the_whole_process_group() {
    let Some(python) = venv_python() else { return };
    let registry = RegistrySettings {
        shutdown_deadline: Duration::from_secs(3),
        ..fast_registry_settings()
    };
    let settings = GatewaySettings {
        project_stop_grace: Duration::from_millis(300),
        ..fast_settings()
    };
    let gw = trusted_gateway(settings, registry).await;
    let dir = prepare_workspace(
        &gw,
        "proj",
        &[
            ("provider.py", PY_PROVIDER),
            ("tap.config.json", &py_config(&python)),
        ],
    );
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let session = gw.create_session("proj");
    let pids = pids(&dir.join("sub"), "pids").await;
    eventually("env_report to be registered", || {
        session.tool("env_report").is_some()
    })
    .await;
    assert!(pids.iter().all(|pid| alive(*pid)));

    let started = Instant::now();
    gw.gateway.registry().end("proj", None).await.unwrap();
    let took = started.elapsed();

    let pending = std::fs::read_to_string(dir.join("sub/shutdown-pending"))
        .expect("the provider heard shutdown.pending before being stopped");
    assert_eq!(pending, "3000");
    // It answered shutdown.ready, so it was stopped then, not at the
    // deadline (SIGTERM would otherwise come at 2.7 s).
    assert!(took < Duration::from_secs(2), "ending took {took:?}");
    assert!(
        !alive(pids[0]),
        "the provider was reaped before teardown ended"
    );
    eventually("the provider's child to be gone too", || !alive(pids[1])).await;
    assert!(gw.gateway.status().providers.is_empty());
    timeline_line(&session, "project provider 'py-test' stopped").await;
}

/// A provider that ignores SIGTERM, with a background child; it writes
/// both pids.
const STUBBORN: &str = "trap '' TERM; sleep 300 & printf '%s %s\\n' $$ $! > pids; wait; wait";

#[tokio::test]
async fn gateway_shutdown_kills_providers_that_ignore_sigterm_after_the_grace() {
    let settings = GatewaySettings {
        project_stop_grace: Duration::from_millis(200),
        ..fast_settings()
    };
    let gw = trusted_gateway(settings, fast_registry_settings()).await;
    let config =
        json!({"providers": [{"name": "stubborn", "command": "sh", "args": ["-c", STUBBORN]}]});
    let dir = prepare_workspace(&gw, "proj", &[("tap.config.json", &config.to_string())]);
    let _session = gw.create_session("proj");
    let pids = pids(&dir, "pids").await;
    assert!(pids.iter().all(|pid| alive(*pid)));

    let started = Instant::now();
    gw.gateway.shutdown().await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "SIGKILL came before the grace: {took:?}"
    );
    assert!(took < Duration::from_secs(2), "shutdown took {took:?}");
    assert!(!alive(pids[0]));
    eventually("the background child to be killed", || !alive(pids[1])).await;
}

#[tokio::test]
async fn a_crashing_provider_is_restarted_a_bounded_number_of_times_and_a_clean_exit_is_not() {
    let settings = GatewaySettings {
        project_restart_limit: 2,
        project_restart_backoff: Duration::from_millis(10),
        ..fast_settings()
    };
    let gw = trusted_gateway(settings, fast_registry_settings()).await;
    let config = json!({"providers": [
        {"name": "crasher", "command": "sh", "args": ["-c", "echo run >> crashes; exit 3"]},
        {"name": "oneshot", "command": "sh", "args": ["-c", "echo run >> clean"]}
    ]});
    let dir = prepare_workspace(&gw, "proj", &[("tap.config.json", &config.to_string())]);
    let session = gw.create_session("proj");

    timeline_line(
        &session,
        "'crasher' exited with status 3; restarting it in 10 ms (restart 1 of 2)",
    )
    .await;
    timeline_line(
        &session,
        "'crasher' exited with status 3; restarting it in 20 ms (restart 2 of 2)",
    )
    .await;
    timeline_line(
        &session,
        "'crasher' exited with status 3; giving up after 2 restart(s)",
    )
    .await;
    timeline_line(
        &session,
        "'oneshot' exited with status 0; not restarting it",
    )
    .await;
    let runs = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(runs("crashes"), 3, "one start and two restarts");
    assert_eq!(runs("clean"), 1);
}

#[tokio::test]
async fn untrusted_project_providers_are_not_spawned_and_the_timeline_says_how_to_enable_them() {
    let gw = TestGateway::start().await;
    gw.gateway.set_public_url(gw.url.clone());
    let config =
        json!({"providers": [{"name": "a", "command": "sh", "args": ["-c", "touch spawned"]}]});
    let dir = prepare_workspace(&gw, "proj", &[("tap.config.json", &config.to_string())]);
    let session = gw.create_session("proj");
    let line = timeline_line(&session, "tap.config.json declares project providers").await;
    assert!(line.contains("--trust-project-providers"), "{line}");
    // The refusal path ends there; give a wrongly started process time to
    // show itself.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!dir.join("spawned").exists());
}

#[tokio::test]
async fn malformed_configs_are_refused_whole_with_a_clear_error() {
    let gw = trusted_gateway(fast_settings(), fast_registry_settings()).await;
    let spawn =
        |name: &str| json!({"name": name, "command": "sh", "args": ["-c", "touch spawned"]});
    let cases: Vec<(&str, String, &str)> = vec![
        ("json", "{\"providers\": [".to_owned(), "EOF while parsing"),
        (
            "unknown",
            json!({"providers": [{"name": "a", "comand": "sh"}]}).to_string(),
            "unknown field `comand`",
        ),
        (
            "toplevel",
            json!({"providers": [], "extra": true}).to_string(),
            "unknown field `extra`",
        ),
        (
            "dup",
            json!({"providers": [spawn("a"), spawn("a")]}).to_string(),
            "the name \"a\" is declared twice",
        ),
        (
            "reserved",
            json!({"providers": [{"name": "a", "command": "sh", "args": ["-c", "touch spawned"],
                "env": {"TAP_PROVIDER_TOKEN": "x"}}]})
            .to_string(),
            "TAP_PROVIDER_TOKEN is set by the gateway and cannot be overridden",
        ),
        (
            "name",
            json!({"providers": [spawn("ok"), spawn("bad name")]}).to_string(),
            "providers[1].name",
        ),
        (
            "huge",
            format!("{{\"providers\": [], \"pad\": \"{}\"}}", "x".repeat(70_000)),
            "larger than 65536 bytes",
        ),
    ];
    let mut sessions = Vec::new();
    for (id, config, _) in &cases {
        let dir = prepare_workspace(&gw, id, &[("tap.config.json", config)]);
        sessions.push((gw.create_session(id), dir));
    }
    for ((session, dir), (id, _, expected)) in sessions.iter().zip(&cases) {
        let line = timeline_line(session, "no project provider was started").await;
        assert!(line.contains("tap.config.json"), "{id}: {line}");
        assert!(
            line.contains(expected),
            "{id}: expected {expected:?} in {line:?}"
        );
        assert!(!dir.join("spawned").exists(), "{id}: something was spawned");
    }
}

#[tokio::test]
async fn a_fifo_in_place_of_the_config_is_refused_without_hanging() {
    let gw = trusted_gateway(fast_settings(), fast_registry_settings()).await;
    let dir = prepare_workspace(&gw, "proj", &[]);
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("tap.config.json"))
        .status()
        .unwrap();
    assert!(status.success());
    let session = gw.create_session("proj");
    let line = timeline_line(&session, "no project provider was started").await;
    assert!(line.contains("not a regular file"), "{line}");
}

#[tokio::test]
async fn a_working_directory_outside_the_workspace_is_refused() {
    let gw = trusted_gateway(fast_settings(), fast_registry_settings()).await;
    let outside = tempfile::tempdir().unwrap();
    let provider = |cwd: &str| {
        json!({"providers": [
            {"name": "inside", "command": "sh", "args": ["-c", "touch spawned"]},
            {"name": "escape", "command": "sh", "args": ["-c", "touch spawned"], "cwd": cwd}
        ]})
        .to_string()
    };
    let cases = [
        ("dotdot", provider(".."), "leads outside the workspace"),
        (
            "absolute",
            provider("/tmp"),
            "must be relative to the workspace",
        ),
        ("symlink", provider("link"), "leads outside the workspace"),
        ("missing", provider("nope"), "cannot be resolved"),
    ];
    let mut sessions = Vec::new();
    for (id, config, _) in &cases {
        let dir = prepare_workspace(&gw, id, &[("tap.config.json", config)]);
        std::os::unix::fs::symlink(outside.path(), dir.join("link")).unwrap();
        sessions.push((gw.create_session(id), dir));
    }
    for ((session, dir), (id, _, expected)) in sessions.iter().zip(&cases) {
        let line = timeline_line(session, "no project provider was started").await;
        assert!(line.contains("provider \"escape\": cwd"), "{id}: {line}");
        assert!(
            line.contains(expected),
            "{id}: expected {expected:?} in {line:?}"
        );
        assert!(!dir.join("spawned").exists(), "{id}: something was spawned");
    }
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[tokio::test]
async fn a_command_that_cannot_start_is_reported_and_others_still_run() {
    let gw = trusted_gateway(fast_settings(), fast_registry_settings()).await;
    let config = json!({"providers": [
        {"name": "ghost", "command": "no-such-program-for-bridge-tests"},
        {"name": "real", "command": "sh", "args": ["-c", "touch spawned; exec sleep 300"]}
    ]});
    let dir = prepare_workspace(&gw, "proj", &[("tap.config.json", &config.to_string())]);
    let session = gw.create_session("proj");
    let line = timeline_line(&session, "project provider 'ghost' could not be started").await;
    assert!(line.contains("no-such-program-for-bridge-tests"), "{line}");
    eventually("the other provider to run", || dir.join("spawned").exists()).await;
    gw.gateway.shutdown().await;
}

#[tokio::test]
async fn without_a_known_gateway_url_providers_are_not_started() {
    let gw = TestGateway::start().await;
    gw.gateway.trust_project_providers(true);
    let config =
        json!({"providers": [{"name": "a", "command": "sh", "args": ["-c", "touch spawned"]}]});
    let dir = prepare_workspace(&gw, "proj", &[("tap.config.json", &config.to_string())]);
    let session = gw.create_session("proj");
    timeline_line(
        &session,
        "'a' not started: the gateway's URL is not known yet",
    )
    .await;
    assert!(!dir.join("spawned").exists());
}
