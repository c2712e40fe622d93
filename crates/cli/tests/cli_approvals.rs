//! `copilot-bridge approvals` against a running `serve`: the asks of the
//! daemon's doors listed and answered from another terminal, and a
//! `copilot_code` task that runs `cargo test` once a person allowed it
//! (docs/approvals.md).

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use bridge_testkit::{MockLlm, MockReply, MockToolCall, TempWorkspace};
use serde_json::{Value, json};

use crate::cli_mcp_code::{first_text, mock_env, probe, writable_bridge};
use crate::cli_serve::Served;
use crate::support::{Bridge, python, stdout_json};

/// `copilot-bridge approvals ARGS` against `served`.
pub(crate) fn approvals(served: &Served, args: &[&str]) -> Output {
    let mut cmd = crate::cli_serve::command(served.state());
    cmd.arg("approvals").args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The id of the ask whose command is `command`, once `approvals list`
/// shows it.
pub(crate) async fn ask_id(served: &Served, command: &str) -> String {
    for _ in 0..600 {
        let listed = approvals(served, &["list", "--json"]);
        assert!(listed.status.success(), "{}", stderr(&listed));
        let asks = stdout_json(&listed);
        if let Some(ask) = asks
            .as_array()
            .unwrap()
            .iter()
            .find(|ask| ask["arguments"]["command"] == command)
        {
            return ask["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no ask for {command:?} was listed");
}

/// `shell` with `command` in the default session, from a task of its own.
pub(crate) fn shell_call(served: &Served, command: &str) -> tokio::task::JoinHandle<Value> {
    let request = reqwest::Client::new()
        .post(served.url("/rpc"))
        .bearer_auth(&served.token)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "session.tools.call",
                      "params": {"session": "default", "name": "shell",
                                 "arguments": {"command": command}}}),
        );
    tokio::spawn(async move { request.send().await.unwrap().json().await.unwrap() })
}

pub(crate) async fn answered(call: tokio::task::JoinHandle<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call answers")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_are_listed_allowed_and_denied_from_the_cli_and_the_first_answer_wins() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let nothing = approvals(&served, &[]);
    assert!(nothing.status.success(), "{}", stderr(&nothing));
    assert_eq!(stdout(&nothing), "no tool call is waiting for approval\n");

    let command = "python3 -c 'print(6*7)'";
    let call = shell_call(&served, command);
    let id = ask_id(&served, command).await;
    let table = stdout(&approvals(&served, &[]));
    assert!(table.contains(&id) && table.contains(command), "{table}");
    assert!(table.contains("needs approval"), "{table}");

    let allowed = approvals(&served, &["allow", &id]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    assert_eq!(stdout(&allowed), format!("allowed {id} (once)\n"));
    let ran = answered(call).await;
    assert_eq!(ran["result"]["result"]["stdout"], "42\n", "{ran}");

    // A second answer loses, and says who won.
    let late = approvals(&served, &["deny", &id]);
    assert_eq!(late.status.code(), Some(1), "{}", stdout(&late));
    assert!(
        stderr(&late).contains("already answered: allow by cli"),
        "{}",
        stderr(&late)
    );
    let unknown = approvals(&served, &["allow", "ask-00000000000000000000000000000000"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("no such ask"),
        "{}",
        stderr(&unknown)
    );

    let call = shell_call(&served, command);
    let id = ask_id(&served, command).await;
    let denied = approvals(&served, &["deny", &id, "--reason", "run the linter first"]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    let refused = answered(call).await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("denied by cli: run the linter first"),
        "{message}"
    );

    // Rules: none, then one kept for a day, listed and revoked.
    assert_eq!(
        stdout(&approvals(&served, &["rules"])),
        "no rules are kept\n"
    );
    let call = shell_call(&served, "cargo --version");
    let id = ask_id(&served, "cargo --version").await;
    let kept = approvals(&served, &["allow", &id, "--rule", "--for", "1d"]);
    assert!(kept.status.success(), "{}", stderr(&kept));
    answered(call).await;
    let rules = stdout_json(&approvals(&served, &["rules", "--json"]));
    assert_eq!(rules[0]["rule"], "run cargo --version", "{rules}");
    let left =
        rules[0]["expiresAt"].as_u64().unwrap() - bridge_policy::approval::grants::unix_now();
    assert!((86_000..=86_400).contains(&left), "{rules}");
    let revoked = approvals(&served, &["revoke", "run cargo --version"]);
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    let again = approvals(&served, &["revoke", "run cargo --version"]);
    assert_eq!(again.status.code(), Some(1));

    // Bad input is a usage error.
    for args in [
        vec!["allow", &id, "--for", "1d"],
        vec!["allow", &id, "--rule", "--for", "soon"],
        vec!["allow", &id, "--session", "--rule"],
        vec!["sideways"],
    ] {
        let refused = approvals(&served, &args);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&refused)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_token_is_not_the_approvers() {
    let served = Served::start();
    // gateway.json's token is what agents get; approvals need the other.
    let refused = served.rpc_raw("approvals.list", json!({})).await;
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    let file = served.state().join("approver-token");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let approver = std::fs::read_to_string(&file).unwrap();
    assert_ne!(approver.trim(), served.token);
    assert!(
        !std::fs::read_to_string(served.state().join("gateway.json"))
            .unwrap()
            .contains(approver.trim())
    );
}

/// Where the developer's toolchain lives, for a `cargo` run under the
/// test's private HOME.
fn toolchain_env() -> Vec<(&'static str, String)> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let dir = |variable: &str, under_home: &str| {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(under_home))
            .display()
            .to_string()
    };
    vec![
        ("RUSTUP_HOME", dir("RUSTUP_HOME", ".rustup")),
        ("CARGO_HOME", dir("CARGO_HOME", ".cargo")),
    ]
}

fn rust_workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write(
        "Cargo.toml",
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    ws.write(
        "src/lib.rs",
        "pub fn add(a: u32, b: u32) -> u32 { a + b }\n\n#[test]\nfn adds() { assert_eq!(add(2, 2), 4); }\n",
    );
    ws
}

/// A task the mock answers by running `cargo test`, then reporting.
fn cargo_test_task(mock: &MockLlm) {
    mock.push(MockReply::ToolCalls {
        text: None,
        calls: vec![MockToolCall::new(
            "call_test",
            "shell",
            r#"{"command": "cargo test"}"#,
        )],
    });
    mock.push(MockReply::text("The tests pass."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_code_task_runs_cargo_test_once_allowed_for_the_session() {
    let Some(python) = python() else { return };
    let mock = MockLlm::start(Vec::new()).await;
    let mut env = mock_env(&mock);
    env.extend(toolchain_env());
    env.push(("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "120".to_owned()));
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let served = Served::start_in(writable_bridge(), rust_workspace(), &env_refs);
    let task = |served: &Served| {
        let url = served.url("/mcp/code");
        let token = served.token.clone();
        let python = python.clone();
        tokio::task::spawn_blocking(move || {
            let mode = ["http", url.as_str(), "--token", token.as_str()];
            probe(
                &python,
                &mode,
                &[],
                &Bridge::new(),
                json!([{"call": "copilot_code_task", "args": {"prompt": "Run the tests."}}]),
            )
        })
    };

    cargo_test_task(&mock);
    let first = task(&served);
    let id = ask_id(&served, "cargo test").await;
    let allowed = approvals(&served, &["allow", &id, "--session"]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    let results = first.await.unwrap();
    assert_eq!(first_text(&results[0]), "The tests pass.", "{results:?}");

    // The next task in that session is not asked.
    cargo_test_task(&mock);
    let results = task(&served).await.unwrap();
    assert_eq!(first_text(&results[0]), "The tests pass.", "{results:?}");
    let listed = stdout_json(&approvals(&served, &["list", "--json"]));
    assert_eq!(listed, json!([]));

    // Both runs of cargo test ran and passed, as the model was told.
    let told: Vec<String> = mock
        .requests()
        .iter()
        .map(|request| request.body["messages"].to_string())
        .filter(|messages| messages.contains("call_test"))
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    for messages in &told {
        assert!(messages.contains("test result: ok. 1 passed"), "{messages}");
    }
}

/// `copilot-bridge hook preToolUse --agent copilot` with the Copilot CLI's
/// payload for `bash` running `command` in `served`'s workspace, from a
/// task of its own: its exit code, stdout and stderr.
fn copilot_hook(
    served: &Served,
    command: &str,
) -> tokio::task::JoinHandle<(Option<i32>, Value, String)> {
    let payload = json!({
        "sessionId": "5be0e1d2",
        "timestamp": 1_795_466_516_059_u64,
        "cwd": served.workspace.path(),
        "toolName": "bash",
        "toolArgs": json!({"command": command}).to_string(),
    });
    let mut cmd = tokio::process::Command::from(crate::cli_serve::command(served.state()));
    cmd.args(["hook", "preToolUse", "--agent", "copilot"])
        .current_dir(served.workspace.path())
        .kill_on_drop(true)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt as _;
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(payload.to_string().as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let output = child.wait_with_output().await.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        (
            output.status.code(),
            serde_json::from_str(stdout.trim())
                .unwrap_or_else(|err| panic!("not JSON ({err}): {stdout}")),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copilot_clis_hook_waits_past_its_daemon_patience_for_a_person() {
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let command = "python3 -c 'print(6*7)'";
    let hooked = copilot_hook(&served, command);
    let id = ask_id(&served, command).await;
    // Longer than the 5 s a daemon has to answer a hook.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(!hooked.is_finished(), "the hook waits for the answer");
    let allowed = approvals(&served, &["allow", &id]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    let (code, answer, said) = tokio::time::timeout(Duration::from_secs(30), hooked)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, Some(0));
    assert_eq!(
        answer["permissionDecision"],
        Value::Null,
        "allowed: {answer}"
    );
    assert!(
        said.contains(&id) && said.contains("copilot-bridge approvals"),
        "{said}"
    );

    let hooked = copilot_hook(&served, command);
    let id = ask_id(&served, command).await;
    let denied = approvals(&served, &["deny", &id, "--reason", "use the task runner"]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    let (_, answer, _) = hooked.await.unwrap();
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    let reason = answer["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("denied by cli: use the task runner"),
        "{reason}"
    );

    // A hook killed while it waits withdraws its ask.
    let hooked = copilot_hook(&served, "python3 -c 'print(1)'");
    let id = ask_id(&served, "python3 -c 'print(1)'").await;
    hooked.abort();
    let _ = hooked.await;
    let mut gone = false;
    for _ in 0..100 {
        let listed = stdout_json(&approvals(&served, &["list", "--json"]));
        if !listed.to_string().contains(&id) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "{id} is still listed after its hook went away");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_approvals_offers_only_the_permission_prompt_over_stdio() {
    let Some(python) = python() else { return };
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let binary = assert_cmd::cargo::cargo_bin("copilot-bridge")
        .display()
        .to_string();
    let state = served.state().to_path_buf();
    let asking = tokio::task::spawn_blocking(move || {
        let mode = ["stdio", "--", binary.as_str(), "mcp", "approvals"];
        crate::support::mcp_probe(
            &python,
            &mode,
            &[],
            &state,
            json!([
                {"list": true},
                {"call": "approve", "args": {"tool_name": "Bash",
                                             "input": {"command": "make lint"},
                                             "tool_use_id": "toolu_1"}},
            ]),
        )
    });
    let id = ask_id(&served, "make lint").await;
    let allowed = approvals(&served, &["allow", &id]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    let results = asking.await.unwrap();
    let names: Vec<&Value> = results[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(names, [&json!("approve")], "{results:?}");
    let answer: Value = serde_json::from_str(first_text(&results[1])).unwrap();
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "make lint"}})
    );
}

/// A tmux server of its own, killed with the test.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `command` running in a fresh 160×40 terminal.
    fn start(command: &str) -> Self {
        let socket = format!("cb-approvals-{}", std::process::id());
        let started = std::process::Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
                command,
            ])
            .status()
            .unwrap();
        assert!(started.success());
        Self { socket }
    }

    fn screen(&self) -> String {
        let output = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let status = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    async fn wait_for(&self, text: &str) -> String {
        for _ in 0..200 {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the terminal never showed {text:?}:\n{}", self.screen());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_watch_answers_inline_in_a_real_terminal() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux: not installed; run scripts/install-test-deps.sh"
        );
        return;
    }
    let served = Served::start_in(
        Bridge::new(),
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let binary = assert_cmd::cargo::cargo_bin("copilot-bridge");
    let state = served.state().display().to_string();
    let terminal = Tmux::start(&format!(
        "env -i PATH=/usr/bin:/bin HOME={state} COPILOT_BRIDGE_HOME={state} TERM=xterm {} approvals watch --no-notify",
        shell_quote(&binary.display().to_string()),
        state = shell_quote(&state),
    ));
    terminal
        .wait_for("watching for approvals (0 waiting)")
        .await;

    let command = "python3 -c 'print(6*7)'";
    let call = shell_call(&served, command);
    let screen = terminal.wait_for("Allow? [y] once").await;
    assert!(screen.contains(command), "{screen}");
    assert!(
        screen.contains("[s] this session (shared with other clients)"),
        "{screen}"
    );
    terminal.keys(&["s", "Enter"]);
    let ran = answered(call).await;
    assert_eq!(ran["result"]["result"]["stdout"], "42\n", "{ran}");
    let screen = terminal.wait_for("allow by cli").await;
    // What the terminal showed, kept for a person to look at.
    let capture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("approvals-watch.txt");
    std::fs::write(&capture, &screen).unwrap();
    eprintln!("terminal capture: {}", capture.display());

    // Answered elsewhere while the prompt waits: the late answer is not
    // taken, and the watcher says who answered.
    let call = shell_call(&served, "make -v");
    terminal.wait_for("make -v").await;
    let id = ask_id(&served, "make -v").await;
    let denied = approvals(&served, &["deny", &id, "--reason", "not now"]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    answered(call).await;
    terminal.keys(&["y", "Enter"]);
    let screen = terminal.wait_for(&format!("{id} deny by cli")).await;
    assert!(screen.contains("not taken"), "{screen}");
    assert!(screen.contains("already answered: deny by cli"), "{screen}");
}
