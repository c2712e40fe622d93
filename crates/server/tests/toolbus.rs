//! The tool bus (`mcp.*` on `/rpc`) driven by a real WebSocket JSON-RPC
//! client: search, read, patch (applied and conflicting), format, the
//! policy's refusals, tasks, shell commands, batches and notifications.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::support::{Setup, TestDaemon};

/// Longest wait for one answer; a healthy daemon answers in milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub const POLICY_DENIED: i64 = -32002;

/// A JSON-RPC client on `/rpc` over WebSocket, authenticated by header.
pub struct Bus {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: i64,
}

impl Bus {
    pub async fn connect(daemon: &TestDaemon) -> Self {
        Self::connect_with(daemon, &daemon.token).await
    }

    /// A connection presenting `token`.
    pub async fn connect_with(daemon: &TestDaemon, token: &str) -> Self {
        let mut request = daemon.ws_url("/rpc").into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        Self { ws, next_id: 0 }
    }

    pub async fn send_text(&mut self, text: String) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// Several requests written together, with one flush.
    pub async fn send_all(&mut self, texts: impl IntoIterator<Item = String>) {
        for text in texts {
            self.ws.feed(Message::text(text)).await.unwrap();
        }
        self.ws.flush().await.unwrap();
    }

    /// Closes the connection (the close handshake, then the socket).
    pub async fn close(mut self) {
        self.ws.close(None).await.unwrap();
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::binary(bytes)).await.unwrap();
    }

    /// The next text frame, parsed.
    pub async fn recv(&mut self) -> Value {
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.ws.next())
                .await
                .expect("no answer on the /rpc websocket")
                .expect("the /rpc websocket closed")
                .unwrap();
            if let Message::Text(text) = frame {
                return serde_json::from_str(text.as_str()).unwrap();
            }
        }
    }

    /// One request; the whole response object.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_text(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )
        .await;
        let answer = self.recv().await;
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// The result of a request that must succeed.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params).await;
        assert!(answer.get("error").is_none(), "{method} failed: {answer}");
        answer["result"].clone()
    }

    /// The error object of a request that must fail.
    pub async fn error(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params).await;
        assert!(
            answer.get("result").is_none(),
            "{method} succeeded: {answer}"
        );
        answer["error"].clone()
    }
}

const CLIENT_TS: &str = "export class PaymentClient {\n  retries = 3;\n  backoffMs = 100;\n}\n";

const PATCH_TS: &str = "--- a/src/payment/client.ts\n+++ b/src/payment/client.ts\n@@ -1,4 +1,4 @@\n export class PaymentClient {\n-  retries = 3;\n+  retries = 5;\n   backoffMs = 100;\n }\n";

/// A patch whose context no longer matches the file (it expects
/// `retries = 4`).
const STALE_PATCH_TS: &str = "--- a/src/payment/client.ts\n+++ b/src/payment/client.ts\n@@ -1,4 +1,4 @@\n export class PaymentClient {\n-  retries = 4;\n+  retries = 6;\n   backoffMs = 100;\n }\n";

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn on_disk(daemon: &TestDaemon, relative: &str) -> Vec<u8> {
    std::fs::read(daemon.workspace.path().join(relative)).unwrap()
}

fn writable() -> Setup {
    Setup::default().config_toml("read_only = false\n")
}

#[tokio::test]
async fn search_read_list_and_symbols_over_websocket() {
    let daemon = TestDaemon::with(
        Setup::default()
            .file("src/payment/client.ts", CLIENT_TS)
            .file(
                "src/lib.rs",
                "pub struct Ledger;\n\nimpl Ledger {\n    pub fn total(&self) -> u64 { 0 }\n}\n",
            )
            .file("docs/notes.md", "PaymentClient is documented here\n"),
    )
    .await;
    let mut bus = Bus::connect(&daemon).await;

    let found = bus
        .call(
            "mcp.search.code",
            json!({"query": "class PaymentClient", "glob": "src/**/*.ts", "maxResults": 200}),
        )
        .await;
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert_eq!(hits[0]["file"], "src/payment/client.ts");
    assert_eq!(hits[0]["line"], 1);
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("class PaymentClient")
    );

    let read = bus
        .call("mcp.fs.read", json!({"path": "src/payment/client.ts"}))
        .await;
    assert_eq!(read["content"], CLIENT_TS);
    assert_eq!(read["sha256"], sha256_hex(CLIENT_TS.as_bytes()));
    assert_eq!(read["totalLines"], 4, "the tool's own fields are kept");

    let listed = bus
        .call("mcp.fs.list", json!({"glob": "src/**", "limit": 10}))
        .await;
    assert_eq!(
        listed["files"],
        json!(["src/lib.rs", "src/payment/client.ts"])
    );

    let outline = bus
        .call("mcp.symbols.list", json!({"path": "src/lib.rs"}))
        .await;
    let names: Vec<&str> = outline["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|symbol| symbol["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Ledger") && names.contains(&"total"),
        "{outline}"
    );

    // The daemon's default session is the default; naming it works too,
    // and a session that does not exist is -32004.
    let named = bus
        .call(
            "mcp.fs.read",
            json!({"path": "docs/notes.md", "session": daemon.ctx.facts.default_session}),
        )
        .await;
    assert_eq!(named["content"], "PaymentClient is documented here\n");
    let missing = bus
        .error(
            "mcp.fs.read",
            json!({"path": "docs/notes.md", "session": "s-nope"}),
        )
        .await;
    assert_eq!(missing["code"], -32004);
    daemon.stop().await;
}

#[tokio::test]
async fn apply_patch_writes_when_writable_and_leaves_the_file_alone_on_conflict() {
    let daemon = TestDaemon::with(writable().file("src/payment/client.ts", CLIENT_TS)).await;
    let mut bus = Bus::connect(&daemon).await;

    let applied = bus
        .call("mcp.edit.applyPatch", json!({"unifiedDiff": PATCH_TS}))
        .await;
    assert_eq!(applied["ok"], true, "{applied}");
    assert_eq!(applied["conflicts"], json!([]));
    assert_eq!(applied["files"][0]["path"], "src/payment/client.ts");
    assert_eq!(applied["files"][0]["status"], "modified");
    let patched = CLIENT_TS.replace("retries = 3", "retries = 5");
    assert_eq!(
        on_disk(&daemon, "src/payment/client.ts"),
        patched.as_bytes()
    );

    // Preimage verification is on by default: the stale hunk conflicts and
    // nothing is written.
    let stale = bus
        .call(
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": STALE_PATCH_TS}),
        )
        .await;
    assert_eq!(stale["ok"], false, "{stale}");
    let conflicts = stale["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{stale}");
    assert_eq!(conflicts[0]["file"], "src/payment/client.ts");
    assert_eq!(conflicts[0]["hunk"], 1);
    assert_eq!(
        on_disk(&daemon, "src/payment/client.ts"),
        patched.as_bytes()
    );

    // The new content's hash is what mcp.fs.read reports.
    let read = bus
        .call("mcp.fs.read", json!({"path": "src/payment/client.ts"}))
        .await;
    assert_eq!(read["sha256"], sha256_hex(patched.as_bytes()));

    // A diff that is not a diff is a bad param, not a tool crash.
    let malformed = bus
        .error(
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": "--- a/x\n@@ nonsense @@\n"}),
        )
        .await;
    assert_eq!(malformed["code"], -32602, "{malformed}");
    assert_eq!(malformed["data"]["code"], "invalid_arguments");
    daemon.stop().await;
}

#[tokio::test]
async fn writes_are_policy_errors_in_read_only_mode_and_under_a_deny_glob() {
    // Read-only is the default.
    let daemon = TestDaemon::with(Setup::default().file("src/payment/client.ts", CLIENT_TS)).await;
    let mut bus = Bus::connect(&daemon).await;
    let denied = bus
        .error("mcp.edit.applyPatch", json!({"unifiedDiff": PATCH_TS}))
        .await;
    assert_eq!(denied["code"], POLICY_DENIED, "{denied}");
    assert_eq!(denied["data"]["code"], "policy_denied");
    let reason = denied["message"].as_str().unwrap();
    assert!(reason.contains("read-only"), "{reason}");
    assert!(reason.contains("read_only = false"), "{reason}");
    assert_eq!(
        on_disk(&daemon, "src/payment/client.ts"),
        CLIENT_TS.as_bytes()
    );
    let format = bus
        .error("mcp.format.apply", json!({"path": "src/payment/client.ts"}))
        .await;
    assert_eq!(format["code"], POLICY_DENIED, "{format}");
    daemon.stop().await;

    // Writable, but .agent-policy.yaml denies dist/; src/ stays writable.
    let daemon = TestDaemon::with(
        writable()
            .file(".agent-policy.yaml", "writes:\n  deny: [\"dist/**\"]\n")
            .file("dist/bundle.js", "var x = 1;\n")
            .file("src/payment/client.ts", CLIENT_TS),
    )
    .await;
    let mut bus = Bus::connect(&daemon).await;
    let bundle_patch =
        "--- a/dist/bundle.js\n+++ b/dist/bundle.js\n@@ -1 +1 @@\n-var x = 1;\n+var x = 2;\n";
    let denied = bus
        .error("mcp.edit.applyPatch", json!({"unifiedDiff": bundle_patch}))
        .await;
    assert_eq!(denied["code"], POLICY_DENIED, "{denied}");
    let reason = denied["data"]["message"].as_str().unwrap();
    assert!(reason.contains("dist/bundle.js"), "{reason}");
    assert!(reason.contains("dist/**"), "{reason}");
    assert_eq!(on_disk(&daemon, "dist/bundle.js"), b"var x = 1;\n");
    // All or nothing: a patch touching an allowed and a denied file writes
    // neither.
    let both = format!("{PATCH_TS}{bundle_patch}");
    let denied = bus
        .error("mcp.edit.applyPatch", json!({"unifiedDiff": both}))
        .await;
    assert_eq!(denied["code"], POLICY_DENIED);
    assert_eq!(
        on_disk(&daemon, "src/payment/client.ts"),
        CLIENT_TS.as_bytes()
    );
    let applied = bus
        .call("mcp.edit.applyPatch", json!({"unifiedDiff": PATCH_TS}))
        .await;
    assert_eq!(applied["ok"], true);
    daemon.stop().await;

    // Read-only, but writes.allow is consent for the paths it names.
    let daemon = TestDaemon::with(
        Setup::default()
            .file(
                ".agent-policy.yaml",
                "writes:\n  allow: [\"src/**/*.ts\"]\n",
            )
            .file("src/payment/client.ts", CLIENT_TS),
    )
    .await;
    let mut bus = Bus::connect(&daemon).await;
    let applied = bus
        .call("mcp.edit.applyPatch", json!({"unifiedDiff": PATCH_TS}))
        .await;
    assert_eq!(applied["ok"], true, "{applied}");
    daemon.stop().await;
}

/// A formatter every POSIX machine has: squeezes runs of spaces (the file
/// path is appended as `$1`).
const SQUEEZE_SPACES: &str =
    r#"["sh", "-c", "tr -s ' ' < \"$1\" > \"$1.fmt\" && mv \"$1.fmt\" \"$1\"", "squeeze"]"#;

#[tokio::test]
async fn format_apply_and_patch_then_format() {
    let config = format!("read_only = false\n\n[tools.formatters]\ntxt = {SQUEEZE_SPACES}\n");
    let daemon = TestDaemon::with(
        Setup::default()
            .config_toml(config)
            .file("notes.txt", "one   two    three\n")
            .file("todo.txt", "first\n"),
    )
    .await;
    let mut bus = Bus::connect(&daemon).await;

    let formatted = bus
        .call("mcp.format.apply", json!({"path": "notes.txt"}))
        .await;
    assert_eq!(formatted["ok"], true, "{formatted}");
    assert_eq!(formatted["changed"], true);
    assert_eq!(on_disk(&daemon, "notes.txt"), b"one two three\n");
    let again = bus
        .call("mcp.format.apply", json!({"path": "notes.txt"}))
        .await;
    assert_eq!(again["changed"], false);

    let patch = "--- a/todo.txt\n+++ b/todo.txt\n@@ -1 +1,2 @@\n first\n+second    item\n";
    let applied = bus
        .call(
            "mcp.edit.applyPatch",
            json!({"unifiedDiff": patch, "format": true, "organizeImports": true}),
        )
        .await;
    assert_eq!(applied["ok"], true, "{applied}");
    assert_eq!(
        applied["formatted"],
        json!([{"path": "todo.txt", "ok": true, "changed": true, "command": applied["formatted"][0]["command"]}])
    );
    // No import organizer for .txt: reported, and the patch stays applied.
    assert_eq!(applied["importsOrganized"][0]["ok"], false);
    assert_eq!(
        applied["importsOrganized"][0]["error"]["code"],
        "not_configured"
    );
    assert_eq!(on_disk(&daemon, "todo.txt"), b"first\nsecond item\n");

    let organize = bus
        .error("mcp.imports.organize", json!({"path": "todo.txt"}))
        .await;
    assert_eq!(organize["code"], -32001, "{organize}");
    assert_eq!(organize["data"]["code"], "not_configured");
    daemon.stop().await;
}

#[tokio::test]
async fn shell_and_tasks_follow_the_policy() {
    let config = "[tools.tasks.hello]\ncommand = \"echo task ran\"\n";
    let daemon = TestDaemon::with(Setup::default().config_toml(config).file(
        ".agent-policy.yaml",
        "shell:\n  allow: [\"touch made-by-shell\"]\n",
    ))
    .await;
    let mut bus = Bus::connect(&daemon).await;

    let dangerous = bus.error("mcp.shell.run", json!({"cmd": "rm -rf /"})).await;
    assert_eq!(dangerous["code"], POLICY_DENIED, "{dangerous}");
    assert_eq!(dangerous["data"]["code"], "policy_denied");
    assert!(!dangerous["data"]["message"].as_str().unwrap().is_empty());

    let unlisted = bus
        .error("mcp.shell.run", json!({"cmd": "touch not-allowed"}))
        .await;
    assert_eq!(unlisted["code"], POLICY_DENIED, "{unlisted}");
    assert!(
        unlisted["message"]
            .as_str()
            .unwrap()
            .contains("shell.allow"),
        "the reason says how to allow it: {unlisted}"
    );
    assert!(!daemon.workspace.path().join("not-allowed").exists());

    let allowed = bus
        .call("mcp.shell.run", json!({"cmd": "touch made-by-shell"}))
        .await;
    assert_eq!(allowed["exitCode"], 0, "{allowed}");
    assert!(daemon.workspace.path().join("made-by-shell").exists());

    // Read-only commands need no entry.
    let echoed = bus
        .call(
            "mcp.shell.run",
            json!({"cmd": "echo hello", "timeoutSecs": 5}),
        )
        .await;
    assert_eq!(echoed["stdout"], "hello\n");

    let task = bus.call("mcp.task.run", json!({"name": "hello"})).await;
    assert_eq!(task["stdout"], "task ran\n");
    assert_eq!(task["task"], "hello");
    let unknown = bus.error("mcp.task.run", json!({"name": "deploy"})).await;
    assert_eq!(unknown["code"], -32602, "{unknown}");
    assert!(unknown["message"].as_str().unwrap().contains("hello"));
    daemon.stop().await;
}

#[tokio::test]
async fn batches_are_answered_in_one_array_and_notifications_not_at_all() {
    let daemon = TestDaemon::with(Setup::default().file("a.txt", "alpha\n")).await;
    let mut bus = Bus::connect(&daemon).await;

    bus.send_text(
        json!([
            {"jsonrpc": "2.0", "id": "read", "method": "mcp.fs.read", "params": {"path": "a.txt"}},
            {"jsonrpc": "2.0", "id": "search", "method": "mcp.search.code", "params": {"query": "alpha"}},
            {"jsonrpc": "2.0", "method": "mcp.fs.list", "params": {}},
            {"jsonrpc": "2.0", "id": "denied", "method": "mcp.shell.run", "params": {"cmd": "rm -rf /"}},
            {"jsonrpc": "2.0", "id": "typo", "method": "mcp.fs.raed", "params": {"path": "a.txt"}}
        ])
        .to_string(),
    )
    .await;
    let answers = bus.recv().await;
    let answers = answers.as_array().expect("a batch is answered by an array");
    assert_eq!(
        answers.len(),
        4,
        "the notification is not answered: {answers:?}"
    );
    let by_id = |id: &str| {
        answers
            .iter()
            .find(|answer| answer["id"] == id)
            .unwrap_or_else(|| panic!("no answer for {id}"))
            .clone()
    };
    assert_eq!(by_id("read")["result"]["content"], "alpha\n");
    assert_eq!(by_id("search")["result"]["hits"][0]["file"], "a.txt");
    assert_eq!(by_id("denied")["error"]["code"], POLICY_DENIED);
    assert_eq!(by_id("typo")["error"]["code"], -32601);

    // A lone notification gets nothing back: the next frame answers the
    // request sent after it.
    bus.send_text(
        json!({"jsonrpc": "2.0", "method": "mcp.fs.read", "params": {"path": "a.txt"}}).to_string(),
    )
    .await;
    let answer = bus.request("mcp.fs.list", json!({})).await;
    assert_eq!(answer["result"]["files"], json!(["a.txt"]));

    // Over HTTP, a body of notifications only is 204 with no body.
    let response = daemon
        .post_json(
            "/rpc",
            &json!([{"jsonrpc": "2.0", "method": "mcp.fs.list"}]),
        )
        .await;
    assert_eq!(response.status(), 204);
    assert_eq!(response.text().await.unwrap(), "");
    daemon.stop().await;
}

#[tokio::test]
async fn the_python_websockets_example_runs_against_the_daemon() {
    let Some(python) = crate::support::python() else {
        return;
    };
    let script = crate::support::repo_root().join("tests/peers/python/toolbus_client.py");
    let daemon = TestDaemon::with(Setup::default().file("src/payment/client.ts", CLIENT_TS)).await;
    let stdout = crate::support::run_peer(
        tokio::process::Command::new(python)
            .arg(script)
            .env("BRIDGE_RPC_URL", daemon.ws_url("/rpc"))
            .env("BRIDGE_TOKEN", &daemon.token),
    )
    .await;
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["hits"][0]["file"], "src/payment/client.ts");
    assert_eq!(report["sha256"], sha256_hex(CLIENT_TS.as_bytes()));
    assert_eq!(report["deniedCode"], POLICY_DENIED);
    daemon.stop().await;
}
