//! The Copilot Bridge extension in real VS Code (code-server in headless
//! Chromium, as crates/cli/tests/agents/vscode.rs runs it) answering an ask
//! of its folder's session from a notification (docs/approvals.md).

use std::time::{Duration, Instant};

use bridge_testkit::vscode::{CodeServer, CodeServerOptions};
use bridge_testkit::{MockLlm, TempWorkspace};
use serde_json::{Value, json};

use super::vscode::{EDITOR_PATIENCE, output_dir, status_when};

#[tokio::test]
async fn an_ask_of_the_windows_session_is_answered_from_its_notification() {
    if !CodeServer::available() {
        return;
    }
    let mock = MockLlm::start(Vec::new()).await;
    let served = super::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "90")],
    );
    let out = output_dir("approvals");
    eprintln!("VS Code run directory and screenshots: {}", out.display());
    let status_file = out.join("bridge-status.json");
    let extensions = out.join("editor/ext");
    let installed = served
        .cli()
        .args(["vscode", "install", "--extensions-dir"])
        .arg(&extensions)
        .output()
        .await
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let editor = CodeServer::start(
        &out.join("editor"),
        CodeServerOptions {
            workspace: served.workspace.path().to_path_buf(),
            settings: json!({"bridge.chat.enabled": false}),
            env: vec![(
                "COPILOT_BRIDGE_VSCODE_STATUS_FILE".to_owned(),
                status_file.display().to_string(),
            )],
            ..CodeServerOptions::default()
        },
    )
    .await
    .unwrap();
    let status = status_when(&status_file, "on", |s| s["state"] == "on").await;
    let session = status["session"].as_str().unwrap().to_owned();

    // A call of the window's session that the policy asks about.
    let command = "python3 -c 'print(6*7)'";
    let call = tokio::spawn({
        let request = reqwest::Client::new()
            .post(served.url("/rpc"))
            .bearer_auth(&served.token)
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call",
                          "params": {"session": session, "name": "shell",
                                     "arguments": {"command": command}}}),
            );
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    });
    let deadline = Instant::now() + EDITOR_PATIENCE;
    while !editor
        .shows_notification_button("Allow for session")
        .await
        .unwrap()
    {
        assert!(
            Instant::now() < deadline,
            "no notification offered to allow the call"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // A picture of the notification, kept for a person to look at.
    let screenshot = out.join("approval-notification.png");
    editor.screenshot(&screenshot).await.unwrap();
    eprintln!("screenshot: {}", screenshot.display());
    assert!(!call.is_finished(), "the call waits for the answer");
    assert!(
        editor
            .click_notification_button("Allow for session")
            .await
            .unwrap()
    );
    let ran = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ran["result"]["result"]["stdout"], "42\n", "{ran}");
    // Answered from VS Code, for the session: the same command runs again unasked.
    let answered = |audit: &str| {
        audit.contains(r#""surface":"vscode""#) && audit.contains(r#""scope":"session""#)
    };
    let mut audit = String::new();
    for _ in 0..100 {
        audit = std::fs::read_dir(served.state().join("audit"))
            .unwrap()
            .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
            .collect();
        if answered(&audit) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered(&audit), "{audit}");
    let again = served
        .rpc(
            "session.tools.call",
            json!({"session": session, "name": "shell", "arguments": {"command": command}}),
        )
        .await;
    assert_eq!(again["result"]["stdout"], "42\n", "{again}");
    editor.stop().await;
}
