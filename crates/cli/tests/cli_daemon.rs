//! `copilot-bridge daemon start|stop|status`, the idle exit of a detached
//! daemon, and what providers see across a daemon restart.

use std::os::unix::fs::PermissionsExt;

use bridge_testkit::{ProviderClient, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_serve::{KillOnDrop, Served, pid_alive, read_gateway_json, wait_until};
use crate::support::Bridge;

/// `daemon start` in `ws`; returns the daemon's pid, guarded.
pub(crate) fn daemon_start(
    bridge: &Bridge,
    ws: &TempWorkspace,
    env: &[(&str, &str)],
) -> (u32, u16, KillOnDrop) {
    let mut cmd = bridge.cmd();
    cmd.current_dir(ws.path())
        .args(["--port", "0", "daemon", "start"]);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let output = cmd
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    // Whatever happens next, the daemon goes.
    let file = read_gateway_json(bridge.state.path());
    let guard = KillOnDrop(
        file.as_ref()
            .map_or(0, |f| f["pid"].as_u64().unwrap() as u32),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = file.unwrap();
    let pid = file["pid"].as_u64().unwrap() as u32;
    let port = file["port"].as_u64().unwrap() as u16;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "started the gateway on 127.0.0.1:{port} (pid {pid})"
        )),
        "{stdout}"
    );
    (pid, port, guard)
}

#[test]
fn daemon_start_status_stop_round_trip() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let (pid, port, _guard) = daemon_start(&bridge, &ws, &[]);
    assert!(pid_alive(pid));

    let output = bridge.cmd().args(["daemon", "status"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!("running: pid {pid}, 127.0.0.1:{port}")),
        "{text}"
    );
    assert!(
        text.contains("sessions: 1") && text.contains("providers: 0"),
        "{text}"
    );
    let output = bridge
        .cmd()
        .args(["daemon", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["running"], true);
    assert_eq!(status["port"], port);
    assert_eq!(
        status["sessions"][0]["cwd"].as_str().unwrap(),
        ws.path().to_str().unwrap()
    );

    let log = bridge.state.path().join("daemon.log");
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let output = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains(&format!("stopped the gateway (pid {pid})"))
    );
    assert!(!pid_alive(pid), "stop waits for the exit");
    assert!(read_gateway_json(bridge.state.path()).is_none());

    let output = bridge.cmd().args(["daemon", "status"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "not running\n");
    let output = bridge.cmd().args(["daemon", "stop"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stopping nothing is fine");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "no gateway is running\n"
    );
}

#[test]
fn commands_that_need_a_daemon_say_how_to_start_one() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    for args in [
        vec!["provider-token"],
        vec!["pair"],
        vec!["tool", "read_file", "--session", "default", "--args", "{}"],
    ] {
        let output = bridge
            .cmd()
            .current_dir(ws.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("no gateway is running; start one with `copilot-bridge serve`"),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_detached_daemon_exits_after_its_last_session_ends() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let (pid, port, _guard) = daemon_start(&bridge, &ws, &[("COPILOT_BRIDGE_IDLE_EXIT_SECS", "1")]);
    let token = read_gateway_json(bridge.state.path()).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let ended: Value = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/rpc"))
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "session.end", "params": {"session": "default"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(ended["result"]["ended"].is_string(), "{ended}");
    // Still up during the grace...
    assert!(pid_alive(pid));
    // ...and gone after it, its state file with it.
    wait_until("the idle daemon exits", || !pid_alive(pid));
    assert!(read_gateway_json(bridge.state.path()).is_none());
    let log = std::fs::read_to_string(bridge.state.path().join("daemon.log")).unwrap();
    assert!(log.contains("no sessions left"), "{log}");
}

#[tokio::test]
async fn after_a_restart_providers_reauthenticate_with_the_new_token() {
    let bridge = Bridge::new();
    let ws = TempWorkspace::new();
    let first = Served::start_in(bridge, ws, &[]);
    let old_token = first.provider_token();
    let tool = json!({"name": "greet", "description": "Greets", "parameters": {"type": "object"}});
    let (mut provider, ack) = ProviderClient::register(
        &first.ws_url(),
        &old_token,
        "greeter",
        json!({"tools": [tool.clone()]}),
    )
    .await
    .unwrap();
    let reconnect = ack["reconnectToken"].as_str().unwrap().to_owned();
    let old_id = ack["providerId"].clone();

    // Stop the first daemon; the provider sees its connection go.
    let Served {
        mut child,
        bridge,
        workspace,
        ..
    } = first;
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let _ = provider.expect_close().await.unwrap();
    assert!(child.wait().unwrap().success());
    assert!(read_gateway_json(bridge.state.path()).is_none());
    let second = Served::start_in(bridge, workspace, &[]);
    assert_ne!(second.provider_token(), old_token);

    // The old token means nothing to the new daemon.
    let mut stale = ProviderClient::connect(&second.ws_url()).await.unwrap();
    stale
        .send(json!({"type": "auth", "token": old_token}))
        .await
        .unwrap();
    let error = stale.expect("error").await.unwrap();
    assert_eq!(error["code"], "AUTH_FAILED", "{error}");

    // Following the reconnect flow (the old reconnectToken, nothing
    // declared) restores nothing, and says so instead of registering a
    // provider without tools.
    let mut provider = ProviderClient::connect(&second.ws_url()).await.unwrap();
    provider
        .authenticate(&second.provider_token())
        .await
        .unwrap();
    provider
        .send(json!({"type": "hello", "name": "greeter", "protocolVersion": 2, "reconnectToken": reconnect}))
        .await
        .unwrap();
    let error = provider.expect("error").await.unwrap();
    assert_eq!(error["code"], "RECONNECT_EXPIRED", "{error}");

    // A fresh registration on the same connection, even quoting the old
    // reconnectToken, starts clean.
    let ack = provider
        .hello(
            "greeter",
            json!({"tools": [tool], "reconnectToken": reconnect}),
        )
        .await
        .unwrap();
    assert_ne!(
        ack["providerId"], old_id,
        "nothing of the old daemon is restored"
    );

    let call = second
        .cli()
        .args(["tool", "greet", "--session", "default", "--compact"])
        .output();
    let answer = async {
        let request = provider.expect("tool.call").await.unwrap();
        provider
            .send(json!({"type": "tool.result", "id": request["id"], "data": "hello again"}))
            .await
            .unwrap();
    };
    let (output, ()) = tokio::join!(call, answer);
    let output = output.unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "\"hello again\""
    );
}
