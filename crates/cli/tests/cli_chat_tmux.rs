//! `copilot-bridge chat` in a real terminal: the built binary in tmux
//! (installed by scripts/install-test-deps.sh), against `serve` and the
//! mock upstream. Keys are typed with `send-keys`, a paste goes in as a
//! bracketed paste (`paste-buffer -p`), the window is resized with
//! `resize-window`, and what the terminal shows is read with
//! `capture-pane` (the scrollback too, after the chat ends). Captures are
//! kept in target/chat-captures/.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use bridge_testkit::{MockLlm, MockReply, TempWorkspace};
use serde_json::json;

use crate::agents::serve_with_env;
use crate::cli_serve::Served;

const PATIENCE: Duration = Duration::from_secs(30);

/// One chat in a tmux server of its own.
struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// `copilot-bridge chat ARGS` in a `width`×`height` window, talking to
    /// `served`'s daemon; `None` without tmux.
    fn chat(served: &Served, args: &[&str], width: u16, height: u16) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed (scripts/install-test-deps.sh installs it)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let binary = assert_cmd::cargo::cargo_bin("copilot-bridge");
        let mut command = vec![
            "env".to_owned(),
            "-i".to_owned(),
            format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            format!("HOME={}", served.state().display()),
            format!("COPILOT_BRIDGE_HOME={}", served.state().display()),
            "TERM=xterm-256color".to_owned(),
            binary.display().to_string(),
            "chat".to_owned(),
            "--cwd".to_owned(),
            served.workspace.path().display().to_string(),
        ];
        command.extend(args.iter().map(|arg| (*arg).to_owned()));
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "chat"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(["-e", "TERM=xterm-256color"])
            .args(command)
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session");
        // Keep the window after the chat exits, to read its scrollback.
        let tmux = Self { socket, _dir: dir };
        tmux.run(&["set-option", "-t", "chat", "remain-on-exit", "on"]);
        tmux.run(&["set-option", "-t", "chat", "history-limit", "20000"]);
        Some(tmux)
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// What the window shows now.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "chat"])
    }

    /// The scrollback and the screen.
    fn everything(&self) -> String {
        self.run(&["capture-pane", "-p", "-S", "-", "-t", "chat"])
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "chat", "-l", text]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "chat", key]);
    }

    /// `text` as a bracketed paste.
    fn paste(&self, text: &str) {
        self.run(&["set-buffer", "-b", "pasted", text]);
        self.run(&["paste-buffer", "-p", "-b", "pasted", "-t", "chat"]);
    }

    fn resize(&self, width: u16, height: u16) {
        self.run(&[
            "resize-window",
            "-t",
            "chat",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }

    /// Waits until the screen holds `wanted`; the screen.
    fn wait_for(&self, wanted: &str) -> String {
        self.wait_until(wanted, |screen| screen.contains(wanted))
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {what:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the chat has exited.
    fn exited(&self) -> bool {
        self.run(&["display-message", "-p", "-t", "chat", "#{pane_dead}"])
            .trim()
            == "1"
    }

    fn keep(&self, name: &str) {
        let dir = captures();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), self.everything()).unwrap();
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/chat-captures")
}

fn served(mock: &MockLlm, workspace: TempWorkspace) -> Served {
    // Asks wait a minute for the person at the terminal.
    serve_with_env(
        mock,
        workspace,
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    )
}

const ALLOW_LINE: &str = "Allow? [y] once [s] session [r] rule [n] deny";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_its_answer_and_asks_are_answered_in_the_overlay() {
    let command = "python3 -c 'print(6*7)'";
    let asks = || MockReply::tool_call("call_1", "shell", &json!({"command": command}));
    let mock = MockLlm::start(vec![
        asks(),
        MockReply::chunks(["It printed ", "42."]),
        asks(),
        MockReply::text("Again 42."),
        asks(),
        MockReply::text("Third 42, unasked."),
    ])
    .await;
    let served = served(&mock, TempWorkspace::new());
    let Some(tmux) = Tmux::chat(&served, &[], 100, 30) else {
        return;
    };
    tmux.wait_for("/help");
    tmux.type_text("What is six times seven?");
    tmux.key("Enter");
    // The call asks: the overlay, then `y` runs it once.
    let screen = tmux.wait_for(ALLOW_LINE);
    assert!(screen.contains("shell"), "{screen}");
    tmux.type_text("y");
    tmux.wait_for("It printed 42.");
    assert!(!tmux.screen().contains(ALLOW_LINE));
    // `s`: allowed for the rest of the session.
    tmux.type_text("Once more");
    tmux.key("Enter");
    tmux.wait_for(ALLOW_LINE);
    tmux.type_text("s");
    tmux.wait_for("Again 42.");
    tmux.type_text("And a third time");
    tmux.key("Enter");
    tmux.wait_for("Third 42, unasked.");
    let events = served
        .approver_rpc("approvals.watch", json!({"since": 0}))
        .await;
    let asked = events["result"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "requested")
        .count();
    assert_eq!(asked, 2, "the third identical call ran unasked: {events}");
    // The same conversation, as every other surface reads it.
    let session = session_of(&served).await;
    let seen = served
        .approver_rpc("session.events", json!({"session": session}))
        .await
        .to_string();
    assert!(
        seen.contains("What is six times seven?") && seen.contains("Third 42, unasked."),
        "{seen}"
    );
    tmux.keep("approvals.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_long_turn_and_a_paste_is_never_sent() {
    let mock = MockLlm::start(vec![
        MockReply::Slow {
            chunks: vec!["slow ".into(); 10],
            delay_ms: 3_000,
        },
        MockReply::text("Got both lines."),
    ])
    .await;
    let served = served(&mock, TempWorkspace::new());
    let Some(tmux) = Tmux::chat(&served, &[], 100, 30) else {
        return;
    };
    tmux.wait_for("/help");
    tmux.type_text("Take your time");
    tmux.key("Enter");
    tmux.wait_for("slow");
    tmux.key("C-c");
    // The turn ends; the composer takes a prompt again.
    tmux.wait_until("the turn stopped", |screen| {
        screen.contains("cancelled") || screen.contains("stopped")
    });
    tmux.paste("first line\nsecond line\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(asked(&mock).len(), 1, "a paste is not a submit");
    let screen = tmux.screen();
    assert!(
        screen.contains("first line") && screen.contains("second line"),
        "{screen}"
    );
    tmux.key("Enter");
    tmux.wait_for("Got both lines.");
    let sent = &asked(&mock)[1]["messages"];
    let last = sent.as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(last.contains("first line\\nsecond line"), "{last}");
    tmux.keep("ctrl-c-and-paste.txt");
}

/// A slow answer streamed while the window shrinks and grows, then the
/// chat quits: the conversation the terminal keeps (the scrollback, from
/// the chat's last print of its prompt) holds every line of it once.
async fn resize_mid_stream(args: &[&str], capture: &str) {
    let lines: Vec<String> = (1..=12)
        .map(|n| format!("line {n:02} of the answer\n"))
        .collect();
    let mock = MockLlm::start(vec![MockReply::Slow {
        chunks: lines.clone(),
        delay_ms: 150,
    }])
    .await;
    let served = served(&mock, TempWorkspace::new());
    let Some(tmux) = Tmux::chat(&served, args, 100, 20) else {
        return;
    };
    tmux.wait_for("/help");
    tmux.type_text("Write twelve lines");
    tmux.key("Enter");
    tmux.wait_for("line 03");
    tmux.resize(60, 16);
    std::thread::sleep(Duration::from_millis(300));
    tmux.resize(120, 24);
    tmux.wait_for("line 12 of the answer");
    // Ctrl-D on the empty composer quits.
    tmux.key("C-d");
    let deadline = Instant::now() + PATIENCE;
    while !tmux.exited() {
        assert!(Instant::now() < deadline, "the chat did not quit on Ctrl-D");
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keep(capture);
    let everything = tmux.everything();
    // tmux itself keeps, in its history, the top lines of a window it
    // shrinks; the conversation is what the chat printed from its prompt on.
    let printed = everything
        .rfind("› Write twelve lines")
        .map(|at| &everything[at..])
        .unwrap_or_else(|| panic!("the prompt is in the scrollback:\n{everything}"));
    for line in &lines {
        let line = line.trim();
        assert_eq!(
            printed.matches(line).count(),
            1,
            "{line} once:\n{everything}"
        );
    }
    let order: Vec<usize> = lines
        .iter()
        .map(|line| printed.find(line.trim()).unwrap())
        .collect();
    assert!(
        order.windows(2).all(|pair| pair[0] < pair[1]),
        "in order:\n{printed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_mid_stream_leaves_the_conversation_in_the_scrollback_once() {
    resize_mid_stream(&[], "resize.txt").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_a_resize_mid_stream_leaves_the_conversation_in_the_scrollback_once() {
    resize_mid_stream(&["--no-alt-screen"], "resize-inline.txt").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_model_switches_the_model_and_resume_brings_the_history_back() {
    let mock = MockLlm::start(vec![
        MockReply::text("First answer."),
        MockReply::text("Answered by the other model."),
        MockReply::text("I remember."),
    ])
    .await;
    // A `[models]` route the picker offers besides the backend's models.
    let bridge = crate::support::Bridge::new();
    std::fs::write(
        bridge.state.path().join("config.toml"),
        "[models.map]\n\"fast\" = \"openai/mock-fast\"\n",
    )
    .unwrap();
    let served = crate::agents::serve_in(
        &mock,
        bridge,
        TempWorkspace::new(),
        &[("COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS", "60")],
    );
    let Some(tmux) = Tmux::chat(&served, &[], 100, 30) else {
        return;
    };
    tmux.wait_for("/help");
    tmux.type_text("Hello there");
    tmux.key("Enter");
    tmux.wait_for("First answer.");
    assert_eq!(asked(&mock)[0]["model"], "mock-model");
    // `/model`: the picker lists the backend's models and the routes;
    // typing filters it.
    tmux.type_text("/model");
    tmux.key("Enter");
    tmux.wait_for("openai/mock-model");
    tmux.type_text("fast");
    tmux.wait_for("[models] route");
    tmux.key("Enter");
    tmux.wait_for("fast");
    tmux.type_text("Which model?");
    tmux.key("Enter");
    tmux.wait_for("Answered by the other model.");
    assert_eq!(asked(&mock)[1]["model"], "mock-fast");
    let session = session_of(&served).await;
    tmux.key("C-d");
    drop(tmux);

    // A new chat resumes it, history first.
    let Some(tmux) = Tmux::chat(&served, &["--resume", &session], 100, 30) else {
        return;
    };
    let screen = tmux.wait_for("First answer.");
    assert_eq!(
        screen.matches("Hello there").count(),
        1,
        "history once:\n{screen}"
    );
    tmux.type_text("Do you remember?");
    tmux.key("Enter");
    tmux.wait_for("I remember.");
    let said = asked(&mock)[2]["messages"].to_string();
    assert!(
        said.contains("Hello there") && said.contains("First answer."),
        "{said}"
    );
    tmux.keep("resume.txt");
}

/// The bodies of the chat requests the mock received (not its model
/// listings).
fn asked(mock: &MockLlm) -> Vec<serde_json::Value> {
    mock.requests()
        .into_iter()
        .map(|request| request.body)
        .filter(|body| body["messages"].is_array())
        .collect()
}

/// The chat's session (its label starts with `chat · `).
async fn session_of(served: &Served) -> String {
    let sessions = served.rpc("session.list", json!({})).await;
    sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["label"]
                .as_str()
                .unwrap_or_default()
                .starts_with("chat · ")
        })
        .and_then(|s| s["id"].as_str())
        .unwrap()
        .to_owned()
}
