//! `copilot-bridge chat -p PROMPT` (and a prompt piped on stdin) with the
//! built binary against `serve` and the mock upstream: the answer on
//! stdout, the tool calls on stderr, a session of its own in the daemon,
//! `--resume` continuing the latest conversation, exit codes.

use std::process::Stdio;

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::agents::serve_with;
use crate::cli_serve::Served;

pub(crate) async fn chat(
    served: &Served,
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String, String) {
    let mut command = served.cli();
    command
        .arg("chat")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).await.unwrap();
    }
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("chat ends")
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn said_to_the_model(mock: &MockLlm) -> Vec<String> {
    mock.requests().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_is_answered_on_stdout_and_the_conversation_resumes() {
    let mock = MockLlm::start(vec![
        MockReply::tool_call("call_1", "read_file", &json!({"path": "notes.txt"})),
        MockReply::chunks(["The notes ", "say pineapple."]),
        MockReply::text("You asked what the notes say."),
    ])
    .await;
    let workspace = TempWorkspace::new();
    workspace.write("notes.txt", "pineapple\n");
    let served = serve_with(&mock, workspace);
    let (code, stdout, stderr) = chat(&served, &["-p", "What do the notes say?"], None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "The notes say pineapple.\n");
    assert!(
        stderr.contains("· read_file") && stderr.contains("done"),
        "{stderr}"
    );
    // A session of its own, not the daemon's default one.
    let sessions = served.rpc("session.list", json!({})).await;
    let chats: Vec<&Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["label"].as_str().unwrap().starts_with("chat · "))
        .collect();
    assert_eq!(chats.len(), 1, "{sessions}");
    assert_eq!(chats[0]["default"], false);

    // Piped on stdin, resuming the latest conversation.
    let (code, stdout, stderr) = chat(&served, &["--resume"], Some("What did I ask?")).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "You asked what the notes say.\n");
    let said = said_to_the_model(&mock);
    assert!(
        said.iter().any(|m| m == "What do the notes say?"),
        "{said:?}"
    );
    assert!(
        said.iter().any(|m| m == "The notes say pineapple."),
        "{said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_and_an_empty_prompt_say_so_in_exit_codes() {
    let mock = MockLlm::start(vec![MockReply::error(400, "this model does not exist")]).await;
    let served = serve_with(&mock, TempWorkspace::new());
    let (code, stdout, stderr) = chat(&served, &["-p", "hello"], None).await;
    assert_eq!(code, 1, "{stdout} {stderr}");
    assert!(stderr.contains("the turn ended failed"), "{stderr}");
    let (code, _, stderr) = chat(&served, &["-p", "   "], None).await;
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = chat(
        &served,
        &["--resume", "no-such-conversation", "-p", "hi"],
        None,
    )
    .await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no conversation no-such-conversation"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copilot_runner_answers_through_the_chat() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = bridge_testkit::fake_copilot_cli(dir.path(), None);
    let mock = MockLlm::start(vec![]).await;
    let workspace = TempWorkspace::new();
    workspace.write("README.md", "# Hello\n");
    let path = wrapper.display().to_string();
    let served =
        crate::agents::serve_with_env(&mock, workspace, &[("COPILOT_CLI_PATH", path.as_str())]);
    let (code, stdout, stderr) = chat(
        &served,
        &["--runner", "copilot", "-p", "What does the README say?"],
        None,
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("The README says hello."), "{stdout}");
}

/// The real Copilot CLI 1.0.102 (pinned in scripts/install-test-deps.sh),
/// unmodified, started by the daemon over its SDK protocol, its model the
/// mock (BYOK): a chat's turns answered by it, the second told the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_copilot_cli_answers_a_chat_and_hears_the_conversation_so_far() {
    let Some(copilot) = bridge_testkit::agent_cli("copilot", "copilot") else {
        return;
    };
    let mock = MockLlm::start(vec![
        MockReply::text("Hello from the mock through the Copilot CLI."),
        MockReply::text("You said hello."),
    ])
    .await;
    let path = copilot.display().to_string();
    let served = crate::agents::serve_with_env(
        &mock,
        TempWorkspace::new(),
        &[("COPILOT_CLI_PATH", path.as_str())],
    );
    let (code, stdout, stderr) =
        chat(&served, &["--runner", "copilot", "-p", "Say hello"], None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.trim(),
        "Hello from the mock through the Copilot CLI."
    );
    // The resumed conversation keeps its runner.
    let (code, stdout, stderr) = chat(&served, &["--resume", "-p", "What did I say?"], None).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "You said hello.");
    let said = said_to_the_model(&mock).join("\n");
    assert!(
        said.contains("Say hello") && said.contains("Hello from the mock through the Copilot CLI."),
        "{said}"
    );
}
