use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use super::*;
use crate::types::{Decision, Runner, Scope};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        assert!(app.handle_key(key(KeyCode::Char(c))).is_empty());
    }
}

fn app() -> App {
    let mut app = App::new(false);
    app.set_status(StatusInfo {
        model: "gpt-4o".into(),
        backend: "copilot".into(),
        session: "s1".into(),
        runner: "native".into(),
    });
    app
}

fn ask(id: &str, session: &str) -> serde_json::Value {
    json!({
        "id": id, "tool": "run_command", "arguments": {"command": "cargo test"},
        "reason": "commands need a person", "session": session, "workspace": "/w",
        "choices": ["once", "session", "rule"], "rules": ["run cargo test"],
        "askedAt": "2026-11-28T10:00:00Z", "expiresInSecs": 300
    })
}

fn answer(id: &str, decision: Decision, scope: Scope, reason: Option<&str>) -> Vec<Action> {
    vec![Action::Answer {
        id: id.into(),
        decision,
        scope,
        reason: reason.map(str::to_owned),
    }]
}

#[test]
fn a_paste_with_newlines_never_submits() {
    let mut app = app();
    app.handle_paste("line one\r\nline two\n".into());
    assert_eq!(app.composer.text(), "line one\nline two\n");
    assert!(app.handle_key(key(KeyCode::Enter)) == [Action::Submit("line one\nline two\n".into())]);
}

#[test]
fn enter_submits_and_ctrl_j_shift_or_alt_enter_insert_a_newline() {
    let mut app = app();
    typed(&mut app, "a");
    assert!(app.handle_key(ctrl('j')).is_empty());
    typed(&mut app, "b");
    assert!(
        app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT))
            .is_empty()
    );
    assert!(
        app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT))
            .is_empty()
    );
    typed(&mut app, "c");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        [Action::Submit("a\nb\n\nc".into())]
    );
    assert!(app.composer.is_empty());
    // An empty composer sends nothing.
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn up_and_down_walk_the_history_from_the_edges() {
    let mut app = app();
    for prompt in ["first", "second"] {
        typed(&mut app, prompt);
        app.handle_key(key(KeyCode::Enter));
    }
    typed(&mut app, "draft");
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "second");
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "first");
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "first", "the oldest stays");
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Down));
    assert_eq!(app.composer.text(), "draft", "the draft comes back");
    // Within a multi-line text ↑ moves the cursor, not the history.
    app.handle_paste("\nsecond line".into());
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.composer.text(), "draft\nsecond line");
}

#[test]
fn ctrl_c_aborts_a_turn_and_quits_only_when_idle() {
    let mut app = app();
    app.set_busy(true);
    assert_eq!(app.handle_key(ctrl('c')), [Action::Abort]);
    assert_eq!(
        app.handle_key(ctrl('c')),
        [Action::Abort],
        "still running: no quit"
    );
    app.apply_event(&json!({"seq": 9, "at": "t", "type": "session.idle"}));
    assert_eq!(app.handle_key(ctrl('c')), [Action::Quit]);
    // Idle with text: the first clears it, the second quits.
    let mut app = App::new(false);
    typed(&mut app, "half a thought");
    assert!(app.handle_key(ctrl('c')).is_empty());
    assert!(app.composer.is_empty());
    assert_eq!(app.handle_key(ctrl('c')), [Action::Quit]);
}

#[test]
fn ctrl_d_quits_only_on_an_empty_composer() {
    let mut app = app();
    typed(&mut app, "ab");
    app.handle_key(key(KeyCode::Left));
    assert!(app.handle_key(ctrl('d')).is_empty());
    assert_eq!(app.composer.text(), "a");
    app.handle_key(key(KeyCode::Backspace));
    assert_eq!(app.handle_key(ctrl('d')), [Action::Quit]);
}

#[test]
fn approval_keys_answer_with_their_scope() {
    let mut app = app();
    assert!(app.ask(&ask("a1", "s1")));
    assert_eq!(
        app.handle_key(key(KeyCode::Char('y'))),
        answer("a1", Decision::Allow, Scope::Once, None)
    );
    app.ask(&ask("a2", "s1"));
    assert_eq!(
        app.handle_key(key(KeyCode::Char('s'))),
        answer("a2", Decision::Allow, Scope::Session, None)
    );
    app.ask(&ask("a3", "s1"));
    // `r` shows the rule first; `n` goes back, `r` again and `y` keeps it.
    assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
    assert_eq!(app.approvals.mode, crate::overlay::AskMode::ConfirmRule);
    assert!(app.handle_key(key(KeyCode::Char('n'))).is_empty());
    assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
    assert_eq!(
        app.handle_key(key(KeyCode::Char('y'))),
        answer("a3", Decision::Allow, Scope::Rule, None)
    );
    app.ask(&ask("a4", "s1"));
    assert!(app.handle_key(key(KeyCode::Char('n'))).is_empty());
    typed(&mut app, "not now");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        answer("a4", Decision::Deny, Scope::Once, Some("not now"))
    );
    app.ask(&ask("a5", "s1"));
    app.handle_key(key(KeyCode::Char('n')));
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        answer("a5", Decision::Deny, Scope::Once, None),
        "an empty reason is allowed"
    );
    assert!(app.approvals.all().is_empty());
    // Keys go to the composer again.
    typed(&mut app, "y");
    assert_eq!(app.composer.text(), "y");
}

#[test]
fn asks_queue_and_one_resolved_elsewhere_closes_by_itself() {
    let mut app = app();
    app.ask(&ask("a1", "s1"));
    app.ask(&ask("a2", "s1"));
    app.ask(&ask("other", "s2"));
    assert_eq!(app.approvals.count("s1"), 2);
    assert_eq!(
        app.approvals.current("s1").map(|a| a.id.as_str()),
        Some("a1")
    );
    app.handle_key(key(KeyCode::Char('n')));
    app.ask_resolved("a1");
    assert_eq!(
        app.approvals.current("s1").map(|a| a.id.as_str()),
        Some("a2")
    );
    assert_eq!(
        app.approvals.mode,
        crate::overlay::AskMode::Choose,
        "the reason prompt closed with its ask"
    );
    app.ask_resolved("a2");
    assert!(
        app.approvals.current("s1").is_none(),
        "another session's ask opens no overlay"
    );
    // /approvals lists the hub's asks and answers them like the overlay.
    typed(&mut app, "/approvals");
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert_eq!(
        app.handle_key(key(KeyCode::Char('y'))),
        answer("other", Decision::Allow, Scope::Once, None)
    );
}

#[test]
fn an_ask_without_session_or_rule_offers_only_what_it_has() {
    let mut app = app();
    app.ask(&json!({"id": 7, "tool": "write_file", "choices": ["once"], "rules": []}));
    assert!(app.handle_key(key(KeyCode::Char('s'))).is_empty());
    assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
    assert_eq!(
        app.approvals.current("s1").map(|a| a.prompt()),
        Some("Allow? [y] once [n] deny".into())
    );
    // Esc puts it aside: still pending, still counted.
    app.handle_key(key(KeyCode::Esc));
    assert!(app.approvals.current("s1").is_none());
    assert_eq!(app.approvals.count("s1"), 1);
    assert!(!app.ask(&json!({"tool": "no id"})));
}

#[test]
fn the_slash_popup_filters_and_runs() {
    let mut app = app();
    typed(&mut app, "/");
    assert!(
        matches!(app.popup(), Some(Popup::Commands(rows)) if rows.len() == slash::COMMANDS.len())
    );
    typed(&mut app, "s");
    let names: Vec<_> = match app.popup() {
        Some(Popup::Commands(rows)) => rows.iter().map(|r| r.1).collect(),
        _ => Vec::new(),
    };
    assert_eq!(names, ["/sessions", "/status"]);
    app.handle_key(key(KeyCode::Down));
    assert_eq!(app.handle_key(key(KeyCode::Enter)), [Action::ShowStatus]);
    // /model opens a picker that fills when the runtime answers.
    typed(&mut app, "/mod");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.text(), "/model");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), [Action::ListModels]);
    app.set_models(vec![
        ModelChoice {
            id: "gpt-4o".into(),
            backend: "copilot".into(),
            note: String::new(),
        },
        ModelChoice {
            id: "claude-sonnet".into(),
            backend: "anthropic".into(),
            note: String::new(),
        },
    ]);
    typed(&mut app, "claude");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        [Action::SwitchModel("claude-sonnet".into())]
    );
    // Typed with an argument, no picker.
    typed(&mut app, "/runner copilot");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        [Action::SwitchRunner(Runner::Copilot)]
    );
    typed(&mut app, "/resume 2026-abc");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        [Action::Resume("2026-abc".into())]
    );
    typed(&mut app, "/nope");
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(
        app.notice
            .as_deref()
            .is_some_and(|n| n.contains("unknown command"))
    );
    // A path that starts with '/' inside a sentence is a prompt.
    app.composer.clear();
    typed(&mut app, "/etc/hosts says what");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        [Action::Submit("/etc/hosts says what".into())]
    );
}

#[test]
fn at_paths_complete_with_tab() {
    let mut app = app();
    app.set_paths(vec![
        "src/main.rs".into(),
        "src/lib.rs".into(),
        "README.md".into(),
    ]);
    typed(&mut app, "explain @src/");
    assert!(
        matches!(app.popup(), Some(Popup::Paths(rows)) if rows == ["src/main.rs", "src/lib.rs"])
    );
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.composer.text(), "explain @src/lib.rs ");
    assert!(app.popup().is_none());
}

fn prose(app: &mut App) {
    for n in 0..30 {
        app.apply_event(&json!({"type": "user.message", "content": format!("prompt {n}: the quick brown fox jumps over the lazy dog")}));
    }
}

#[test]
fn a_resize_rewraps_the_same_logical_content() {
    let mut app = app();
    prose(&mut app);
    let narrow = app.transcript_lines(40);
    let wide = app.transcript_lines(120);
    assert!(narrow.len() > wide.len());
    assert!(narrow.iter().all(|l| l.width() <= 40));
    let join = |lines: &[Line<'static>]| {
        lines
            .iter()
            .map(|l| l.to_string().trim_start_matches("  ").to_owned())
            .collect::<String>()
    };
    assert_eq!(join(&narrow).replace(' ', ""), join(&wide).replace(' ', ""));
}

#[test]
fn a_long_transcript_is_wrapped_once_not_every_frame() {
    let mut app = app();
    for n in 0..5_000 {
        app.apply_event(&json!({"type": "log", "source": "test", "text": format!("log line {n}")}));
    }
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    for _ in 0..20 {
        terminal.draw(|f| app.render(f)).unwrap();
    }
    assert_eq!(app.transcript.wrap_count, 5_000);
    terminal.backend_mut().resize(120, 30);
    app.resize(120, 30);
    terminal
        .resize(ratatui::layout::Rect::new(0, 0, 120, 30))
        .unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    assert_eq!(app.transcript.wrap_count, 10_000);
}

#[test]
fn idle_asks_for_no_redraw() {
    let mut app = app();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    assert!(!app.needs_redraw());
    app.tick();
    app.apply_event(&json!({"type": "some.future.event"}));
    app.set_busy(false);
    assert!(!app.needs_redraw());
    app.set_busy(true);
    assert!(app.needs_redraw());
    terminal.draw(|f| app.render(f)).unwrap();
    app.tick();
    assert!(app.needs_redraw(), "the spinner moves while busy");
}

#[test]
fn page_up_scrolls_and_new_output_does_not_move_the_view() {
    let mut app = app();
    prose(&mut app);
    let mut terminal = Terminal::new(TestBackend::new(80, 12)).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    app.handle_key(key(KeyCode::PageUp));
    let top = app.scroll;
    assert!(top.is_some());
    app.apply_event(&json!({"type": "user.message", "content": "new"}));
    terminal.draw(|f| app.render(f)).unwrap();
    assert_eq!(app.scroll, top);
    for _ in 0..50 {
        app.handle_key(key(KeyCode::PageDown));
    }
    assert_eq!(app.scroll, None, "back at the end it follows again");
}
