//! The daemon under attack, over real sockets and real processes: a web page
//! rebinding DNS or posting cross-origin, a local process flooding it with
//! half-sent requests or planting files in its state directory, a stale
//! `gateway.json` whose pid and port now belong to strangers, and careless
//! callers (`default` after the default session ended, odd JSON-RPC).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bridge_testkit::TempWorkspace;
use serde_json::{Value, json};

use crate::cli_serve::{
    ChildGuard, PATIENCE, Served, raw_get, read_gateway_json, try_raw_get, wait_until,
};
use crate::support::Bridge;

/// One raw HTTP/1.1 request exactly as given (`head` without the blank
/// line); the status and the body.
fn raw_request(port: u16, head: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// `POST /rpc` with the daemon's token and `extra` header lines.
fn post_rpc(served: &Served, extra: &str, body: &str) -> (u16, String) {
    let head = format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json{extra}",
        served.port, served.token
    );
    raw_request(served.port, &head, body)
}

fn healthy(served: &Served) -> bool {
    let host = format!("127.0.0.1:{}", served.port);
    try_raw_get(served.port, "/healthz", &[("Host", &host)]).is_ok_and(|(status, _)| status == 200)
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// The daemon's descriptors once its start-up work (the workspace's root
/// handle, the policy file watcher, the first backend probes) is done: the
/// count no longer changes for a while.
fn settled_descriptors(pid: u32) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = open_descriptors(pid);
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = open_descriptors(pid);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

#[test]
fn odd_host_forms_are_refused_and_loopback_spellings_accepted() {
    let served = Served::start();
    let port = served.port;
    for host in [
        "evil.example",
        "127.0.0.1.evil.example",
        "localhost.evil.example",
        "[::ffff:127.0.0.1]",
        "127.1",
        "2130706433",
        "localhost:80@evil.example",
    ] {
        let (status, body) = raw_get(port, "/rpc", &[("Host", host)]);
        assert_eq!(status, 403, "{host}: {body}");
        assert!(body.contains("forbidden_host"), "{host}: {body}");
    }
    for host in ["LOCALHOST", "localhost:1", "[::1]", "127.0.0.1:65535"] {
        assert_eq!(
            raw_get(port, "/healthz", &[("Host", host)]).0,
            200,
            "{host}"
        );
    }
    // Two Host headers: whichever comes first, the request is refused.
    for pair in [["localhost", "evil.example"], ["evil.example", "localhost"]] {
        let (status, body) = raw_get(port, "/healthz", &[("Host", pair[0]), ("Host", pair[1])]);
        assert_eq!(status, 400, "{pair:?}: {body}");
    }
    // An absolute-form target names the host too, and wins over the header.
    let (status, body) = raw_get(
        port,
        "http://evil.example/healthz",
        &[("Host", "localhost")],
    );
    assert_eq!(status, 403, "{body}");
    assert!(healthy(&served));
}

#[test]
fn browser_origins_cannot_use_rpc_even_with_the_token() {
    let served = Served::start();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"session.list"}"#;
    for origin in [
        "null",
        "file://",
        "http://localhost.evil.example",
        "http://localhost:80@evil.example",
        "http://localhost:3000/",
        "chrome-extension://abcdef",
    ] {
        let (status, body) = post_rpc(&served, &format!("\r\nOrigin: {origin}"), list);
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(body.contains("forbidden_origin"), "{origin}: {body}");
    }
    let (status, body) = post_rpc(
        &served,
        "\r\nOrigin: http://localhost:3000\r\nOrigin: http://evil.example",
        list,
    );
    assert_eq!(status, 403, "a second, foreign Origin: {body}");
    // The WebSocket door with the token in the query, from a foreign page.
    let (status, _) = raw_get(
        served.port,
        &format!("/rpc?token={}", served.token),
        &[
            ("Host", "localhost"),
            ("Origin", "http://evil.example"),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13"),
        ],
    );
    assert_eq!(status, 403);
    let (status, body) = post_rpc(&served, "\r\nOrigin: http://localhost:5173", list);
    assert_eq!(status, 200, "a loopback page with the token: {body}");
}

#[test]
fn shutdown_needs_the_token_in_the_header() {
    let served = Served::start();
    let shutdown = r#"{"jsonrpc":"2.0","id":1,"method":"gateway.shutdown"}"#;
    let port = served.port;
    let attempts = [
        format!("POST /rpc HTTP/1.1\r\nHost: localhost:{port}"),
        format!("POST /rpc HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Bearer wrong"),
        format!(
            "POST /rpc HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Bearer {}x",
            served.token
        ),
        format!(
            "POST /rpc HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Basic {}",
            served.token
        ),
        // The query token is for WebSocket upgrades only.
        format!(
            "POST /rpc?token={} HTTP/1.1\r\nHost: localhost:{port}",
            served.token
        ),
    ];
    for head in &attempts {
        let (status, body) = raw_request(port, head, shutdown);
        assert_eq!(status, 401, "{head}: {body}");
        assert!(!body.contains(&served.token), "{body}");
    }
    assert!(healthy(&served), "the daemon is still up");
}

#[test]
fn half_sent_requests_cannot_exhaust_the_daemon() {
    let env = [
        ("COPILOT_BRIDGE_MAX_CONNECTIONS", "16"),
        ("COPILOT_BRIDGE_HEADER_TIMEOUT_MS", "400"),
    ];
    let served = Served::start_in(Bridge::new(), TempWorkspace::new(), &env);
    let pid = served.child.id();
    assert!(healthy(&served));
    let before = settled_descriptors(pid);
    let mut attackers: Vec<TcpStream> = (0..60)
        .map(|i| {
            let mut stream = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
            // Half of them never send a byte.
            if i % 2 == 0 {
                stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: loc")
                    .unwrap();
            }
            stream
        })
        .collect();
    let held = open_descriptors(pid);
    assert!(
        held <= before + 16 + 2,
        "{held} descriptors open (was {before}, cap 16)"
    );
    // Every one of them is cut off: at the cap, or when its head is late.
    for stream in &mut attackers {
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut buf = [0u8; 256];
        let started = Instant::now();
        let n = stream.read(&mut buf).unwrap_or(0);
        let answered = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(n == 0 || answered.starts_with("HTTP/1.1 408"), "{answered}");
        assert!(started.elapsed() < PATIENCE);
    }
    wait_until("the daemon serves again", || healthy(&served));
    let after = settled_descriptors(pid);
    assert!(
        after <= before + 2,
        "{after} descriptors open, {before} before the attack"
    );
}

fn victim() -> ChildGuard {
    ChildGuard(
        Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// A program on a local port that answers every GET with `health` and
/// every POST with 500, like many dev servers' health checks.
fn impostor(health: Value) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let body = health.to_string();
            let status = if buf[..n].starts_with(b"GET") {
                "200 OK"
            } else {
                "500 Internal Server Error"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn plant_gateway_json(state: &Path, port: u16, pid: u32) {
    let file = json!({
        "port": port, "pid": pid, "host": "127.0.0.1", "token": "btk-stale",
        "providerToken": "ptk-stale", "defaultSession": "s-stale",
        "startedAt": "2026-01-01T00:00:00Z", "version": "0.0.0",
    });
    let path = state.join("gateway.json");
    std::fs::write(&path, file.to_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn daemon_stop_never_signals_a_process_that_reused_the_pid() {
    let mut victim = victim();
    let victim_pid = victim.id();
    for health in [json!({"ok": true}), json!({"ok": true, "pid": victim_pid})] {
        let bridge = Bridge::new();
        plant_gateway_json(bridge.state.path(), impostor(health.clone()), victim_pid);
        let output = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{health}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "no gateway is running\n",
            "{health}"
        );
        let output = bridge.cmd().args(["daemon", "status"]).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{health}");
        assert!(
            victim.try_wait().unwrap().is_none(),
            "an unrelated process was signalled ({health})"
        );
    }
}

#[test]
fn a_fifo_at_gateway_json_hangs_nothing_and_a_symlink_is_not_followed() {
    let bridge = Bridge::new();
    let state = bridge.state.path();
    let fifo = state.join("gateway.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let output = bridge
        .cmd()
        .args(["daemon", "status"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "must not block on the FIFO");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "not running\n");

    // A symlink to a daemon that is really running (another state
    // directory's) is not this directory's daemon.
    std::fs::remove_file(&fifo).unwrap();
    let other = Served::start();
    std::os::unix::fs::symlink(other.state().join("gateway.json"), &fifo).unwrap();
    let output = bridge
        .cmd()
        .args(["daemon", "status"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));

    // `serve` replaces the planted link instead of writing through it.
    let target_before = std::fs::read(other.state().join("gateway.json")).unwrap();
    let served = Served::start_in(bridge, TempWorkspace::new(), &[]);
    let path = served.state().join("gateway.json");
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(
        std::fs::read(other.state().join("gateway.json")).unwrap(),
        target_before
    );
}

#[test]
fn a_state_directory_writable_by_everyone_is_refused() {
    let bridge = Bridge::new();
    let state = bridge.state.path();
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ws = TempWorkspace::new();
    let output = bridge
        .cmd()
        .current_dir(ws.path())
        .args(["serve", "--port", "0"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("writable by every user"), "{stderr}");
    assert!(read_gateway_json(state).is_none());
    assert_eq!(
        std::fs::metadata(state).unwrap().permissions().mode() & 0o7777,
        0o777,
        "a shared directory is not chmod-ed behind its owner's back"
    );
    // Merely readable by others: tightened, and the daemon starts.
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let served = Served::start_in(bridge, ws, &[]);
    assert_eq!(
        std::fs::metadata(served.state())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
}

#[tokio::test]
async fn default_stays_with_its_workspace_after_the_default_session_ends() {
    let served = Served::start();
    let other = TempWorkspace::new();
    other.write("victim.txt", "keep me\n");
    let created = served
        .rpc("session.create", json!({"cwd": other.path()}))
        .await;
    assert_eq!(created["default"], false);
    served
        .rpc("session.end", json!({"session": "default"}))
        .await;

    let output = served
        .cli()
        .args(["tool", "read_file", "--session", "default", "--args"])
        .arg(json!({"path": "victim.txt"}).to_string())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("has ended"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("keep me"), "{stdout}");

    let status = served.rpc("gateway.status", json!({})).await;
    assert_eq!(status["defaultSession"], Value::Null);
    assert_eq!(status["sessions"][0]["default"], false);
    let minted = served.rpc_raw("gateway.providerToken", json!({})).await;
    assert_eq!(minted["error"]["code"], -32004, "{minted}");
    // The other session is still reachable by its id.
    let id = created["id"].as_str().unwrap();
    let read = served
        .rpc(
            "session.tools.call",
            json!({"session": id, "name": "read_file", "arguments": {"path": "victim.txt"}}),
        )
        .await;
    assert_eq!(read["result"]["content"], "keep me\n");
}

#[test]
fn hostile_json_rpc_payloads_get_errors_and_the_daemon_lives() {
    let served = Served::start();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (status, body) = post_rpc(&served, "", &deep);
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32700
    );

    let batch: Vec<Value> = (0..10_000)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "session.list"}))
        .collect();
    let (status, body) = post_rpc(&served, "", &Value::from(batch).to_string());
    assert_eq!(status, 200);
    let answers: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(answers.len(), 10_000);
    assert!(answers.iter().all(|a| a["result"].is_array()));

    for (request, code) in [
        (
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"session.list"}"#,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"session.list"}"#,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"session.list"}"#,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"session.list","params":[1]}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"gateway.shutdown","params":[]}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"session.end","params":["default"]}"#,
            -32602,
        ),
    ] {
        let (status, body) = post_rpc(&served, "", request);
        assert_eq!(status, 200, "{request}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["error"]["code"], code, "{request}: {answer}");
    }
    assert!(healthy(&served), "positional params did not shut it down");
}

#[tokio::test]
async fn session_create_takes_only_absolute_existing_directories() {
    let served = Served::start();
    let scratch = TempWorkspace::new();
    scratch.write("file.txt", "x");
    let fifo = scratch.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let dangling = scratch.path().join("dangling");
    std::os::unix::fs::symlink(scratch.path().join("missing"), &dangling).unwrap();
    let dir_link = scratch.path().join("link");
    std::os::unix::fs::symlink(served.workspace.path(), &dir_link).unwrap();
    for cwd in [
        json!(fifo),
        json!(scratch.path().join("file.txt")),
        json!(dangling),
        json!("relative/dir"),
        json!(""),
        json!(7),
    ] {
        let answer = served.rpc_raw("session.create", json!({"cwd": cwd})).await;
        assert_eq!(answer["error"]["code"], -32602, "{cwd}: {answer}");
        assert_eq!(answer["error"]["data"]["field"], "cwd");
    }
    // A link to a directory opens the directory it points to.
    let created = served.rpc("session.create", json!({"cwd": dir_link})).await;
    let real = std::fs::canonicalize(served.workspace.path()).unwrap();
    assert_eq!(created["cwd"], json!(real));
}

#[test]
fn tokens_stay_out_of_debug_logs_and_status() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("RUST_LOG", "debug")],
    );
    // The token in a WebSocket URL, a wrong token, a failed call.
    let _ = raw_get(
        served.port,
        &format!("/rpc?token={}", served.token),
        &[("Host", "localhost")],
    );
    let _ = raw_get(
        served.port,
        "/rpc?token=btk-guess",
        &[("Host", "localhost")],
    );
    let (status, _) = post_rpc(
        &served,
        "",
        r#"{"jsonrpc":"2.0","id":1,"method":"session.tools.call","params":{"session":"nope","name":"x"}}"#,
    );
    assert_eq!(status, 200);
    for args in [
        &["daemon", "status"][..],
        &["daemon", "status", "--json"][..],
    ] {
        let output = served
            .bridge
            .cmd()
            .args(args)
            .env("RUST_LOG", "debug")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        for stream in [&output.stdout, &output.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains(&served.token), "{args:?}: {text}");
            assert!(!text.contains(&served.provider_token()), "{args:?}: {text}");
        }
    }
    let log = served.log();
    assert!(log.contains("DEBUG") || log.contains("INFO"), "{log}");
    assert!(!log.contains(&served.token), "{log}");
    assert!(!log.contains(&served.provider_token()), "{log}");
    assert!(!log.contains("btk-guess"), "{log}");
}

#[test]
fn daemon_start_replaces_a_stale_file_and_stop_stops_only_its_daemon() {
    let bridge = Bridge::new();
    let mut victim = victim();
    plant_gateway_json(
        bridge.state.path(),
        impostor(json!({"ok": true})),
        victim.id(),
    );
    let ws = TempWorkspace::new();
    let output = bridge
        .cmd()
        .current_dir(ws.path())
        .args(["--port", "0", "daemon", "start"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let file = read_gateway_json(bridge.state.path()).unwrap();
    let pid = file["pid"].as_u64().unwrap() as u32;
    let _guard = crate::cli_serve::KillOnDrop(pid);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(pid, victim.id());
    let output = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("(pid {pid})")));
    assert!(victim.try_wait().unwrap().is_none());
}
