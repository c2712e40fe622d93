//! A scripted stand-in for `copilot --server --stdio`: speaks the Copilot
//! SDK protocol (JSON-RPC 2.0, `Content-Length` framing) on stdio and plays
//! one script per run, chosen by `FAKE_COPILOT_SCRIPT`:
//!
//! - `task` (default): answers the handshake, creates the session, and on
//!   `session.send` emits a turn, asks the client's `preToolUse` hook about
//!   a `view` (or the tool named by `FAKE_COPILOT_TOOL_NAME`) of
//!   `FAKE_COPILOT_TOOL_ARGS` (JSON, default `{"path":"README.md"}`), records
//!   the hook's answer (method `_hook_answer`),
//!   raises a permission prompt for the same read, runs or skips the tool
//!   as told, reports usage and a final message, and goes idle.
//! - `signed_out`: like `task`, but `auth.getStatus` says signed out.
//! - `die`: exits with status 3 in the middle of the task.
//! - `garbage`: prints a banner instead of the protocol.
//! - `hang`: accepts the task and never finishes it.
//! - `old_protocol`: reports protocol version 99.
//!
//! Every message received is appended (one JSON per line) to
//! `FAKE_COPILOT_RECORD` when set, for tests to inspect; on `connect` the
//! names of the variables in its environment are recorded too, as a
//! message of method `_environment`.

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let script = std::env::var("FAKE_COPILOT_SCRIPT").unwrap_or_else(|_| "task".to_owned());
    if script == "garbage" {
        println!("Welcome to GitHub Copilot CLI! Type /help to begin.");
        std::thread::sleep(Duration::from_secs(30));
        return;
    }
    let mut peer = Peer {
        input: BufReader::new(std::io::stdin()),
        record: std::env::var("FAKE_COPILOT_RECORD").ok(),
        next_id: 1000,
    };
    let protocol = if script == "old_protocol" { 99 } else { 3 };
    let mut session_id = String::new();
    while let Some(message) = peer.read() {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            continue;
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "connect" => {
                let names: Vec<String> = std::env::vars_os()
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                peer.record(&json!({"method": "_environment", "params": {"names": names}}));
                peer.reply(id, json!({"ok": true, "protocolVersion": protocol, "version": "fake-1.0"}));
            }
            "ping" => {
                let text = params.get("message").and_then(Value::as_str).unwrap_or("");
                peer.reply(id, json!({"message": format!("pong: {text}"), "protocolVersion": protocol}));
            }
            "status.get" => peer.reply(id, json!({"version": "fake-1.0", "protocolVersion": protocol})),
            "auth.getStatus" if script == "signed_out" => {
                peer.reply(id, json!({"isAuthenticated": false, "statusMessage": "Not authenticated"}))
            }
            "auth.getStatus" => peer.reply(
                id,
                json!({"isAuthenticated": true, "authType": "user", "login": "octocat", "host": "https://github.com"}),
            ),
            "session.create" => {
                session_id = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("fake-session")
                    .to_owned();
                peer.reply(id, json!({"sessionId": session_id}));
            }
            "session.send" => {
                peer.reply(id, json!({"messageId": "m-1"}));
                play_task(&mut peer, &script, &session_id);
            }
            "session.abort" | "session.destroy" => peer.reply(id, json!({})),
            _ => peer.error(id, -32601, &format!("fake CLI: unknown method {method}")),
        }
    }
}

fn play_task(peer: &mut Peer, script: &str, session: &str) {
    peer.event(session, "assistant.turn_start", json!({"turnId": "t-1"}));
    peer.event(
        session,
        "assistant.message",
        json!({"messageId": "a-1", "content": "Let me look at the file."}),
    );
    if script == "die" {
        eprintln!("fake crash: the model process ran out of memory");
        std::process::exit(3);
    }
    if script == "hang" {
        return;
    }
    let args: Value = std::env::var("FAKE_COPILOT_TOOL_ARGS")
        .ok()
        .and_then(|raw| serde_json::from_str(&raw).ok())
        .unwrap_or_else(|| json!({"path": "README.md"}));
    let tool = std::env::var("FAKE_COPILOT_TOOL_NAME").unwrap_or_else(|_| "view".to_owned());
    let hook_input = json!({
        "sessionId": session, "timestamp": 1.0, "cwd": ".", "toolName": tool, "toolArgs": args,
    });
    let hook = peer.request(
        "hooks.invoke",
        json!({"sessionId": session, "hookType": "preToolUse", "input": hook_input}),
    );
    peer.record(&json!({"method": "_hook_answer", "params": hook}));
    let allowed = hook
        .pointer("/output/permissionDecision")
        .and_then(Value::as_str)
        == Some("allow");
    let reason = hook
        .pointer("/output/permissionDecisionReason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // The runtime's own prompt for the same read, answered by a call.
    let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
    peer.event(
        session,
        "permission.requested",
        json!({"requestId": "p-1", "permissionRequest": {"kind": "read", "toolCallId": "tc-1", "path": path}}),
    );
    let decision = peer.wait_for("session.permissions.handlePendingPermissionRequest");
    let approved = decision
        .pointer("/params/result/kind")
        .and_then(Value::as_str)
        == Some("approve-once");
    peer.reply(
        decision.get("id").cloned().unwrap_or(Value::Null),
        json!({"success": true}),
    );
    peer.event(
        session,
        "tool.execution_start",
        json!({"toolCallId": "tc-1", "toolName": "view", "arguments": args}),
    );
    if allowed && approved {
        peer.event(
            session,
            "tool.execution_complete",
            json!({"toolCallId": "tc-1", "success": true, "result": {"content": "# Hello"}}),
        );
    } else {
        peer.event(
            session,
            "tool.execution_complete",
            json!({"toolCallId": "tc-1", "success": false, "error": {"message": format!("Denied: {reason}")}}),
        );
    }
    peer.event(
        session,
        "assistant.usage",
        json!({"model": "fake-model", "inputTokens": 120, "outputTokens": 30}),
    );
    let text = if allowed {
        "The README says hello."
    } else {
        "I was not allowed to read that file."
    };
    peer.event(
        session,
        "assistant.message",
        json!({"messageId": "a-2", "content": text}),
    );
    peer.event(session, "session.idle", json!({}));
}

struct Peer {
    input: BufReader<std::io::Stdin>,
    record: Option<String>,
    next_id: u64,
}

impl Peer {
    fn read(&mut self) -> Option<Value> {
        let mut length = None;
        loop {
            let mut line = String::new();
            if self.input.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length:") {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length?];
        self.input.read_exact(&mut body).ok()?;
        let message: Value = serde_json::from_slice(&body).ok()?;
        self.record(&message);
        Some(message)
    }

    /// Appends `message` to the record file, when there is one.
    fn record(&self, message: &Value) {
        if let Some(path) = &self.record
            && let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(file, "{message}");
        }
    }

    fn write(&mut self, message: &Value) {
        let body = message.to_string();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
        let _ = out.flush();
    }

    fn reply(&mut self, id: Value, result: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&mut self, id: Value, code: i64, message: &str) {
        self.write(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn event(&mut self, session: &str, kind: &str, data: Value) {
        let event = json!({"id": format!("e-{kind}"), "timestamp": "2026-01-01T00:00:00Z", "type": kind, "data": data});
        self.write(&json!({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": session, "event": event}}));
    }

    /// Calls the client and waits for its answer's result.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        while let Some(message) = self.read() {
            if message.get("id").and_then(Value::as_u64) == Some(id)
                && message.get("method").is_none()
            {
                return message.get("result").cloned().unwrap_or(Value::Null);
            }
        }
        std::process::exit(0);
    }

    /// Waits for the client to call `method`.
    fn wait_for(&mut self, method: &str) -> Value {
        while let Some(message) = self.read() {
            if message.get("method").and_then(Value::as_str) == Some(method) {
                return message;
            }
        }
        std::process::exit(0);
    }
}
