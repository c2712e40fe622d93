//! The Copilot Bridge extension (extensions/vscode/, installed by
//! `copilot-bridge vscode install`) in real VS Code: code-server 4.139.1
//! with headless Chromium (scripts/install-test-deps.sh), offline, with a
//! fake chat model extension (tests/peers/vscode-fake-model/) standing in
//! for Copilot. Agents reach its models through the daemon's facade and its
//! workspace through the session's tools; the editor's files change.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bridge_testkit::vscode::{CodeServer, CodeServerOptions};
use bridge_testkit::{MockLlm, TempWorkspace, repo_root};
use serde_json::{Value, json};

use super::serve_with;
use crate::cli_serve::Served;

/// How long the editor may take to activate the extension and connect
/// (measured: 7–11 s after launch on a 2-core machine).
pub(super) const EDITOR_PATIENCE: Duration = Duration::from_secs(90);

const APP_JS: &str = "function  add(a,b){return a+b}\nconsole.log( add(1,2) )\n";

/// Where this run of test `name` keeps the editor's files and the
/// screenshots, kept after the test so a person can look.
pub(super) fn output_dir(name: &str) -> PathBuf {
    // target/tmp: cargo's folder for what integration tests leave behind.
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // Only the last run's files are kept.
    let prefix = format!("vscode-{name}-");
    for old in std::fs::read_dir(base).into_iter().flatten().flatten() {
        if old.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The extension's own account of itself (`COPILOT_BRIDGE_VSCODE_STATUS_FILE`)
/// once `ready` says so.
pub(super) async fn status_when(file: &Path, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + EDITOR_PATIENCE;
    loop {
        let status: Value = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        if ready(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the extension never reported {what}; last status: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn status_on(file: &Path, daemon_port: u16) -> Value {
    let port = format!(":{daemon_port}");
    status_when(file, "on with chat ok", |s| {
        s["state"] == "on"
            && s["chat"] == "ok"
            && s["daemonUrl"].as_str().is_some_and(|u| u.contains(&port))
    })
    .await
}

/// A streamed chat completion: status and the text of its deltas.
async fn openai_text(served: &Served, model: &str, text: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .json(&json!({"model": model, "stream": true, "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    if status != 200 {
        return (status, body);
    }
    let text = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|chunk| {
            chunk
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    (status, text)
}

async fn anthropic_text(served: &Served, model: &str, text: &str) -> String {
    let body = reqwest::Client::new()
        .post(served.url("/v1/messages"))
        .bearer_auth(&served.token)
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": model, "stream": true, "max_tokens": 200,
                      "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| event["type"] == "content_block_delta")
        .filter_map(|event| event["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// `session.tools.call` in the default session (the editor's folder is the
/// daemon's workspace): the whole JSON-RPC response.
async fn tool(served: &Served, name: &str, arguments: Value) -> Value {
    served
        .rpc_raw(
            "session.tools.call",
            json!({"session": "default", "name": name, "arguments": arguments}),
        )
        .await
}

async fn vscode_tools(served: &Served) -> Vec<String> {
    let listed = served
        .rpc("session.tools.list", json!({"session": "default"}))
        .await;
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|name| name.starts_with("vscode_"))
        .map(str::to_owned)
        .collect()
}

fn on_disk(served: &Served, path: &str) -> String {
    std::fs::read_to_string(served.workspace.path().join(path)).unwrap()
}

/// Waits until the extension's output channel says `needle`.
async fn wait_for_output(editor: &CodeServer, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !editor.output_channel("Copilot Bridge").contains(needle) {
        assert!(
            Instant::now() < deadline,
            "the extension never said {needle:?}:\n{}",
            editor.output_channel("Copilot Bridge")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn fake_model_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

async fn wait_for_log_event(path: &Path, event: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = fake_model_log(path);
        if log.iter().any(|e| e["event"] == event) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "the fake model never logged {event}: {log:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vscode_brings_its_chat_models_and_its_workspace_to_the_hub() {
    let mock = MockLlm::start(Vec::new()).await;
    let workspace = TempWorkspace::new();
    workspace.write("src/app.js", APP_JS);
    workspace.write("README.md", "# demo\n");
    workspace.write(".agent-policy.yaml", "writes:\n  allow: [\"src/**\"]\n");
    let served = serve_with(&mock, workspace);
    let out = output_dir("hub");
    eprintln!("VS Code run directory and screenshots: {}", out.display());
    let status_file = out.join("bridge-status.json");
    let model_log = out.join("fake-model.jsonl");

    // Installed the way a user installs it.
    let extensions = out.join("editor/ext");
    let installed = served
        .cli()
        .args(["vscode", "install", "--extensions-dir"])
        .arg(&extensions)
        .output()
        .await
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let said = String::from_utf8_lossy(&installed.stdout);
    assert!(
        said.contains("Installed the Copilot Bridge extension"),
        "{said}"
    );

    let editor = CodeServer::start(
        &out.join("editor"),
        CodeServerOptions {
            workspace: served.workspace.path().to_path_buf(),
            extensions: vec![repo_root().join("tests/peers/vscode-fake-model")],
            settings: json!({"bridge.chat.vendor": "fake"}),
            env: vec![
                (
                    "COPILOT_BRIDGE_VSCODE_STATUS_FILE".to_owned(),
                    status_file.display().to_string(),
                ),
                ("FAKE_MODEL_LOG".to_owned(), model_log.display().to_string()),
            ],
            proposed_api: vec!["copilot-bridge.copilot-bridge".to_owned()],
        },
    )
    .await
    .unwrap();
    // Found through config.json (`vscode install` wrote the daemon's home
    // there): no setting, no environment.
    let status = status_on(&status_file, served.port).await;
    assert_eq!(status["statusText"], "Bridge: ON · Chat: OK", "{status}");
    assert_eq!(status["readOnly"], true, "{status}");
    assert!(
        status["models"]
            .as_array()
            .unwrap()
            .contains(&json!("fake-large")),
        "{status}"
    );
    // Give the status bar a moment to paint, then keep a picture of it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let screenshot = out.join("workbench.png");
    editor.screenshot(&screenshot).await.unwrap();
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    eprintln!("screenshot: {}", screenshot.display());

    // The commands, run from the command palette as a user does.
    editor.run_command("Copilot Bridge: Status").await.unwrap();
    wait_for_output(&editor, "status: Bridge: ON · Chat: OK").await;
    editor.run_command("Copilot Bridge: Disable").await.unwrap();
    let off = status_when(&status_file, "off by the command", |s| s["state"] == "off").await;
    assert_eq!(off["statusText"], "Bridge: OFF", "{off}");
    assert!(vscode_tools(&served).await.is_empty());
    editor.run_command("Copilot Bridge: Enable").await.unwrap();
    status_on(&status_file, served.port).await;

    // What the editor has open reaches agents as ambient context: Claude
    // Code's prompt hook in this session gets it.
    let folder = served
        .workspace
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let hook = served
            .rpc(
                "agent.hook",
                json!({"agent": "claude-code", "agentSession": "s1", "session": "default",
                       "cwd": served.workspace.path(), "event": "user-prompt-submit",
                       "prompt": "what do I have open?"}),
            )
            .await;
        let needle = format!("VS Code, workspace folder \"{folder}\"");
        let blocks = hook["context"].as_array().cloned().unwrap_or_default();
        if blocks
            .iter()
            .filter_map(Value::as_str)
            .any(|block| block.contains(&needle))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no editor context in {hook}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Copilot Chat's place: the fake model answers through the daemon.
    let (code, text) = openai_text(&served, "vscode/fake-large", "hello there").await;
    assert_eq!(code, 200, "{text}");
    assert!(text.starts_with("FAKE(fake-large): "), "{text}");
    assert!(text.contains("hello there"), "{text}");
    let log = fake_model_log(&model_log);
    let request = log.iter().find(|e| e["event"] == "request").unwrap();
    // vscode.lm has no system role: the system text leads the user message.
    assert_eq!(request["messages"][0]["role"], "user", "{request}");
    let first = request["messages"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(
        first.contains("Answer briefly.") && first.contains("hello there"),
        "{request}"
    );
    let text = anthropic_text(&served, "vscode/fake-small", "bonjour").await;
    assert!(text.starts_with("FAKE(fake-small): bonjour"), "{text}");
    // Tools the client offers reach the model; its call comes back as the
    // client's tool call.
    let called: Value = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .json(&json!({"model": "vscode/fake-large", "messages": [
            {"role": "user", "content": "CALLTOOL now"}],
            "tools": [{"type": "function", "function": {"name": "read_file",
                "description": "Read a file", "parameters": {"type": "object",
                "properties": {"path": {"type": "string"}}}}}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let call = &called["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "read_file", "{called}");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"path": "README.md"}));
    assert_eq!(
        called["choices"][0]["finish_reason"], "tool_calls",
        "{called}"
    );
    let health: Value = reqwest::get(served.url("/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["vscode"]["chat"], "ok", "{health}");
    assert_eq!(health["backends"]["vscode"], "ok", "{health}");

    // A client that hangs up cancels the model request in the editor.
    let mut slow = reqwest::Client::new()
        .post(served.url("/v1/chat/completions"))
        .bearer_auth(&served.token)
        .json(&json!({"model": "vscode/fake-large", "stream": true,
                      "messages": [{"role": "user", "content": "SLOW please"}]}))
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("tick") {
        let chunk = slow.chunk().await.unwrap().expect("ticks stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(slow);
    wait_for_log_event(&model_log, "cancelled").await;

    // The editor's workspace as the session's tools.
    let found = tool(&served, "vscode_search", json!({"query": "return a+b"})).await;
    let hits = found["result"]["result"]["hits"].as_array().cloned();
    assert!(
        hits.is_some_and(|hits| hits
            .iter()
            .any(|h| h["path"] == "src/app.js" && h["line"] == 1)),
        "{found}"
    );
    let read = tool(&served, "vscode_read", json!({"path": "src/app.js"})).await;
    assert_eq!(read["result"]["result"]["content"], APP_JS, "{read}");

    // bridge.readOnly (the default) refuses every edit in the editor.
    let diff = "--- a/src/app.js\n+++ b/src/app.js\n@@ -2,1 +2,1 @@\n-console.log( add(1,2) )\n+console.log(add(2, 3))\n";
    let refused = tool(&served, "vscode_apply_diff", json!({"unifiedDiff": diff})).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("read-only"), "{refused}");
    assert_eq!(on_disk(&served, "src/app.js"), APP_JS);

    // A repository cannot turn writes on: `false` counts only from the
    // user's own settings …
    editor
        .write_workspace_settings(json!({"bridge.readOnly": false}))
        .unwrap();
    wait_for_output(&editor, "which is ignored").await;
    let still = tool(&served, "vscode_apply_diff", json!({"unifiedDiff": diff})).await;
    assert!(still["error"].is_object(), "{still}");
    assert_eq!(on_disk(&served, "src/app.js"), APP_JS);
    // … which apply when the window loads again.
    editor
        .write_settings(json!({"bridge.chat.vendor": "fake", "bridge.readOnly": false}))
        .unwrap();
    editor.reload_window().await.unwrap();
    let port = format!(":{}", served.port);
    status_when(&status_file, "writable and on again", |s| {
        s["readOnly"] == false
            && s["state"] == "on"
            && s["daemonUrl"].as_str().is_some_and(|u| u.contains(&port))
    })
    .await;
    // Writable: a stale preimage is a conflict and writes nothing …
    let stale = "--- a/src/app.js\n+++ b/src/app.js\n@@ -2,1 +2,1 @@\n-console.log(add(9,9))\n+console.log(add(2, 3))\n";
    let conflict = tool(&served, "vscode_apply_diff", json!({"unifiedDiff": stale})).await;
    let result = &conflict["result"]["result"];
    assert_eq!(result["ok"], false, "{conflict}");
    assert_eq!(result["conflicts"][0]["file"], "src/app.js", "{conflict}");
    assert_eq!(on_disk(&served, "src/app.js"), APP_JS);
    // … a matching one is applied by the editor and saved …
    let applied = tool(&served, "vscode_apply_diff", json!({"unifiedDiff": diff})).await;
    assert_eq!(applied["result"]["result"]["ok"], true, "{applied}");
    assert_eq!(
        on_disk(&served, "src/app.js"),
        "function  add(a,b){return a+b}\nconsole.log(add(2, 3))\n"
    );
    // … and the hub's policy still decides: README.md is outside writes.allow.
    let readme = "--- a/README.md\n+++ b/README.md\n@@ -1,1 +1,1 @@\n-# demo\n+# mine\n";
    let denied = tool(&served, "vscode_apply_diff", json!({"unifiedDiff": readme})).await;
    assert!(denied["error"].is_object(), "{denied}");
    assert_eq!(on_disk(&served, "README.md"), "# demo\n");

    // The editor's own formatter (the built-in JavaScript one).
    let formatted = tool(&served, "vscode_format", json!({"path": "src/app.js"})).await;
    assert_eq!(
        formatted["result"]["result"]["changed"], true,
        "{formatted}"
    );
    let after = on_disk(&served, "src/app.js");
    assert!(after.starts_with("function add(a, b) {"), "{after}");

    // What the editor shows: its diagnostics and its open editors.
    let diagnostics = tool(&served, "vscode_diagnostics", json!({})).await;
    assert!(
        diagnostics["result"]["result"]["diagnostics"].is_array(),
        "{diagnostics}"
    );
    let editors = tool(&served, "vscode_open_editors", json!({})).await;
    assert!(editors["result"]["result"]["open"].is_array(), "{editors}");

    // Disabled: the backend and the tools go; enabled: they come back.
    editor
        .write_workspace_settings(json!({"bridge.enabled": false}))
        .unwrap();
    let off = status_when(&status_file, "off", |s| s["state"] == "off").await;
    assert_eq!(off["statusText"], "Bridge: OFF", "{off}");
    let (code, body) = openai_text(&served, "vscode/fake-large", "hi").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("copilot_unavailable"), "{body}");
    assert!(vscode_tools(&served).await.is_empty());
    editor
        .screenshot(&out.join("workbench-off.png"))
        .await
        .unwrap();
    editor
        .write_workspace_settings(json!({"bridge.enabled": true}))
        .unwrap();
    status_on(&status_file, served.port).await;
    assert!(
        vscode_tools(&served)
            .await
            .contains(&"vscode_read".to_owned())
    );
    let (code, text) = openai_text(&served, "vscode/fake-large", "again").await;
    assert_eq!(code, 200, "{text}");

    // The daemon restarts (new port, new tokens): the extension finds it.
    let Served {
        child,
        bridge,
        workspace,
        ..
    } = served;
    drop(child);
    let served = super::serve_in(&mock, bridge, workspace, &[]);
    let status = status_on(&status_file, served.port).await;
    assert_eq!(status["state"], "on", "{status}");
    let (code, text) = openai_text(&served, "vscode/fake-large", "after restart").await;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("after restart"), "{text}");
    editor.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_daemon_running_the_extension_starts_the_one_that_installed_it() {
    let state = tempfile::tempdir().unwrap();
    let _stop = super::StopDaemon(state.path());
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "remember the milk\n");
    let out = output_dir("start");
    let status_file = out.join("bridge-status.json");
    let extensions = out.join("editor/ext");
    let installed = super::bridge_command(state.path(), state.path())
        .args(["vscode", "install", "--extensions-dir"])
        .arg(&extensions)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    assert!(!state.path().join("gateway.json").exists());

    let editor = CodeServer::start(
        &out.join("editor"),
        CodeServerOptions {
            workspace: workspace.path().to_path_buf(),
            settings: json!({"bridge.chat.enabled": false}),
            env: vec![
                (
                    "COPILOT_BRIDGE_VSCODE_STATUS_FILE".to_owned(),
                    status_file.display().to_string(),
                ),
                // What the daemon it starts must not wait for.
                ("COPILOT_BRIDGE_NO_GH".to_owned(), "1".to_owned()),
                ("OLLAMA_HOST".to_owned(), "http://127.0.0.1:9".to_owned()),
            ],
            ..CodeServerOptions::default()
        },
    )
    .await
    .unwrap();
    let status = status_when(&status_file, "on", |s| s["state"] == "on").await;
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(state.path().join("gateway.json")).unwrap())
            .unwrap();
    let url = format!("http://127.0.0.1:{}", file["port"]);
    assert_eq!(status["daemonUrl"], url.as_str(), "{status}");
    // Started outside the repository: a `.env` there configures nothing.
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", file["pid"])).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(state.path()).unwrap());
    // The folder's session serves the editor's tools.
    let call = reqwest::Client::new()
        .post(format!("{url}/rpc"))
        .bearer_auth(file["token"].as_str().unwrap())
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call", "params": {
            "session": status["session"], "name": "vscode_read",
            "arguments": {"path": "notes.txt"}}}),
        )
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        call["result"]["result"]["content"], "remember the milk\n",
        "{call}"
    );
    editor.stop().await;
}
