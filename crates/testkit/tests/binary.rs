//! The standalone `mock-llm` binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use bridge_testkit::TempWorkspace;
use serde_json::json;

use crate::http_client::post_json;

/// Kills the server when the test ends, pass or fail.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> (Server, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mock-llm"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mock-llm");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read banner");
    let address = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected banner {line:?}"))
        .parse()
        .expect("address");
    (server, address)
}

fn request() -> serde_json::Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "ping pong"}]})
}

#[tokio::test]
async fn serves_a_script_file_then_echoes() {
    let workspace = TempWorkspace::new();
    let script = workspace.write(
        "script.json",
        r#"[{"type": "text", "chunks": ["scripted"]}]"#,
    );
    let (_server, address) = spawn(&["--port", "0", "--script", script.to_str().expect("utf8")]);
    let first = post_json(address, "/v1/chat/completions", &request())
        .await
        .json();
    assert_eq!(first["choices"][0]["message"]["content"], "scripted");
    let second = post_json(address, "/v1/chat/completions", &request())
        .await
        .json();
    assert_eq!(second["choices"][0]["message"]["content"], "ping pong");
}

#[tokio::test]
async fn echo_flag_echoes() {
    let (_server, address) = spawn(&["--echo"]);
    let reply = post_json(address, "/v1/messages", &request()).await.json();
    assert_eq!(reply["content"][0]["text"], "ping pong");
}

#[test]
fn invalid_script_fails_with_the_file_named() {
    let workspace = TempWorkspace::new();
    let script = workspace.write("bad.json", r#"[{"type": "nope"}]"#);
    let output = Command::new(env!("CARGO_BIN_EXE_mock-llm"))
        .args(["--script", script.to_str().expect("utf8")])
        .output()
        .expect("run mock-llm");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.json") && stderr.contains("nope"),
        "{stderr}"
    );
}

#[test]
fn bad_arguments_are_rejected() {
    for args in [
        &["--port", "huge"][..],
        &["--frobnicate"][..],
        &["--script"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_mock-llm"))
            .args(args)
            .output()
            .expect("run mock-llm");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
}
