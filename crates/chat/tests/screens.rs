use bridge_chat::{App, StatusInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier};
use serde_json::{Value, json};

const WIDTHS: [u16; 3] = [40, 80, 120];

fn new_app(color: bool) -> App {
    let mut app = App::new(color);
    app.set_status(StatusInfo {
        model: "gpt-4.1".into(),
        backend: "copilot".into(),
        session: "20261128-103957-08b8be".into(),
        runner: "native".into(),
    });
    app
}

fn event(value: Value) -> Value {
    let mut value = value;
    value["seq"] = json!(1);
    value["at"] = json!("2026-11-28T10:00:00Z");
    value
}

/// The screen as text, one row a line, trailing blanks trimmed (a wide
/// char's second cell skipped).
fn text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut row = String::new();
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            skip = unicode_width(symbol).saturating_sub(1);
            row.push_str(symbol);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

fn unicode_width(symbol: &str) -> usize {
    // East Asian wide chars in these screens are none; box drawing and
    // the marks used are one column.
    if symbol
        .chars()
        .any(|c| ('\u{1100}'..='\u{FFEF}').contains(&c) && !('\u{2000}'..='\u{2BFF}').contains(&c))
    {
        2
    } else {
        1
    }
}

fn draw(app: &mut App, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    terminal.backend().buffer().clone()
}

fn snapshot_widths(name: &str, make: impl Fn() -> App, height: u16) {
    for width in WIDTHS {
        let mut app = make();
        let screen = text(&draw(&mut app, width, height));
        insta::assert_snapshot!(format!("{name}_{width}"), screen);
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn streamed(app: &mut App, finished: bool) {
    app.apply_event(&event(
        json!({"type": "user.message", "content": "Show me hello world in Rust"}),
    ));
    app.apply_event(&event(
        json!({"type": "user.message", "content": "(internal)", "source": "model request"}),
    ));
    app.set_busy(true);
    for delta in [
        "Here is a **small** program:\n\n```ru",
        "st\nfn main() {\n    // greet\n    println!(\"hel",
    ] {
        app.apply_event(&event(
            json!({"type": "assistant.message_delta", "delta": delta}),
        ));
    }
    if finished {
        let rest = "lo, world\");\n}\n```\n\nRun it with `cargo run`; see [the book](https://doc.rust-lang.org/book/).";
        app.apply_event(&event(
            json!({"type": "assistant.message_delta", "delta": rest}),
        ));
        let content = "Here is a **small** program:\n\n```rust\nfn main() {\n    // greet\n    println!(\"hello, world\");\n}\n```\n\nRun it with `cargo run`; see [the book](https://doc.rust-lang.org/book/).";
        app.apply_event(&event(
            json!({"type": "assistant.message", "content": content, "toolRequests": []}),
        ));
        app.apply_event(&event(
            json!({"type": "session.usage", "promptTokens": 1234, "completionTokens": 56}),
        ));
        app.apply_event(&event(json!({"type": "session.idle"})));
    }
}

#[test]
fn streaming_answer_mid_stream_shows_the_half_line_live() {
    snapshot_widths(
        "streaming_mid",
        || {
            let mut app = new_app(true);
            streamed(&mut app, false);
            app
        },
        16,
    );
}

#[test]
fn streaming_answer_finished() {
    snapshot_widths(
        "streaming_done",
        || {
            let mut app = new_app(true);
            streamed(&mut app, true);
            app
        },
        20,
    );
}

fn tools(app: &mut App) {
    app.apply_event(&event(
        json!({"type": "user.message", "content": "Rename the greeting"}),
    ));
    app.apply_event(&event(json!({
        "type": "tool.execution_complete", "tool": "edit_file",
        "arguments": {"path": "src/main.rs", "oldString": "    println!(\"hello\");", "newString": "    println!(\"hello, world\");\n    println!(\"bye\");"},
        "result": {"type": "success", "output": "edited src/main.rs (1 replacement)"},
        "durationMs": 4, "decision": {"decision": "allow"}
    })));
    app.apply_event(&event(json!({
        "type": "tool.execution_complete", "tool": "apply_patch",
        "arguments": {"patch": "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,2 @@\n # demo\n-old line\n+new line"},
        "result": {"type": "success", "output": "patched 1 file"},
        "durationMs": 9, "decision": {"decision": "allow", "reason": "rule: tool apply_patch"}
    })));
    app.apply_event(&event(json!({
        "type": "tool.execution_complete", "tool": "run_command",
        "arguments": {"command": "rm -rf target"},
        "result": {"type": "failure", "output": "denied"},
        "durationMs": 0, "decision": {"decision": "deny", "reason": "writes outside the allowed paths"}
    })));
    let output: Vec<String> = (1..=11).map(|n| format!("test case_{n} ... ok")).collect();
    app.apply_event(&event(json!({"type": "tool.execution_start", "toolCallId": "c1", "toolName": "run_command", "arguments": {"command": "cargo test"}})));
    app.apply_event(&event(json!({
        "type": "tool.execution_complete", "toolCallId": "c1", "toolName": "run_command",
        "success": true, "result": {"content": output.join("\n")}
    })));
    app.apply_event(&event(json!({"type": "session.error", "errorType": "backend", "message": "upstream closed the stream"})));
}

#[test]
fn tool_calls_with_diffs_and_decisions() {
    snapshot_widths(
        "tools",
        || {
            let mut app = new_app(true);
            tools(&mut app);
            app
        },
        44,
    );
}

#[test]
fn tool_calls_without_colour_say_it_in_words_and_carry_no_style() {
    let mut app = new_app(false);
    tools(&mut app);
    let buffer = draw(&mut app, 80, 44);
    let screen = text(&buffer);
    insta::assert_snapshot!("tools_no_colour_80", screen);
    assert!(screen.contains("✓ allowed"));
    assert!(screen.contains("✗ denied: writes outside the allowed paths"));
    for cell in buffer.content() {
        assert_eq!(cell.fg, Color::Reset, "no colour at {:?}", cell.symbol());
        assert_eq!(cell.bg, Color::Reset);
        assert_eq!(cell.modifier, Modifier::empty());
    }
    // With colour the same marks are also coloured.
    let mut app = new_app(true);
    tools(&mut app);
    let buffer = draw(&mut app, 80, 44);
    assert!(
        buffer
            .content()
            .iter()
            .any(|c| c.fg == Color::Green && c.symbol() == "+")
    );
    assert!(
        buffer
            .content()
            .iter()
            .any(|c| c.fg == Color::Red && c.symbol() == "-")
    );
}

fn asked() -> App {
    let mut app = new_app(true);
    app.apply_event(&event(
        json!({"type": "user.message", "content": "Run the tests"}),
    ));
    app.set_busy(true);
    app.ask(&json!({
        "id": "ask-1", "tool": "run_command", "arguments": {"command": "cargo test --workspace"},
        "reason": "running commands needs a person", "session": "20261128-103957-08b8be",
        "workspace": "/work/demo", "choices": ["once", "session", "rule"],
        "rules": ["run cargo test"], "askedAt": "2026-11-28T10:00:00Z", "expiresInSecs": 300
    }));
    app.ask(&json!({"id": "ask-2", "tool": "write_file", "arguments": {"path": "a.txt"}, "session": "20261128-103957-08b8be", "choices": ["once"], "rules": []}));
    app
}

#[test]
fn the_approval_overlay() {
    snapshot_widths("approval", asked, 16);
}

#[test]
fn the_approval_overlay_confirming_a_rule_and_typing_a_reason() {
    let mut app = asked();
    app.handle_key(key(KeyCode::Char('r')));
    insta::assert_snapshot!("approval_rule_80", text(&draw(&mut app, 80, 16)));
    app.handle_key(key(KeyCode::Char('n')));
    app.handle_key(key(KeyCode::Char('n')));
    for c in "use nextest".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    insta::assert_snapshot!("approval_reason_80", text(&draw(&mut app, 80, 16)));
}

#[test]
fn the_approval_overlay_without_colour() {
    let mut app = new_app(false);
    app.ask(&json!({"id": "ask-1", "tool": "run_command", "arguments": {"command": "cargo test"}, "reason": "commands need a person", "choices": ["once", "session", "rule"], "rules": ["run cargo test"]}));
    let buffer = draw(&mut app, 80, 12);
    insta::assert_snapshot!("approval_no_colour_80", text(&buffer));
    assert!(
        buffer
            .content()
            .iter()
            .all(|c| c.fg == Color::Reset && c.modifier.is_empty())
    );
}

#[test]
fn the_slash_popup() {
    snapshot_widths(
        "slash_popup",
        || {
            let mut app = new_app(true);
            app.apply_event(&event(json!({"type": "user.message", "content": "hello"})));
            app.handle_key(key(KeyCode::Char('/')));
            app
        },
        16,
    );
    let mut app = new_app(true);
    for c in "/s".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    app.handle_key(key(KeyCode::Down));
    insta::assert_snapshot!("slash_popup_filtered_80", text(&draw(&mut app, 80, 10)));
}

#[test]
fn the_inline_mode_draws_only_the_live_part() {
    let mut app = new_app(false);
    streamed(&mut app, false);
    let committed: Vec<String> = app
        .take_committed(40)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(
        committed,
        [
            "› Show me hello world in Rust",
            "",
            "Here is a small program:",
            "",
            "```rust",
            "fn main() {",
            "    // greet"
        ]
    );
    let mut terminal = Terminal::new(TestBackend::new(40, 6)).unwrap();
    terminal.draw(|f| app.render_inline(f)).unwrap();
    insta::assert_snapshot!("inline_40", text(terminal.backend().buffer()));
    assert!(app.take_committed(40).is_empty());
}

#[test]
fn the_model_picker_and_help() {
    let mut app = new_app(true);
    for c in "/model".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    app.handle_key(key(KeyCode::Enter));
    app.set_models(vec![
        bridge_chat::ModelChoice {
            id: "gpt-4.1".into(),
            backend: "copilot".into(),
            note: "default".into(),
        },
        bridge_chat::ModelChoice {
            id: "claude-sonnet-4".into(),
            backend: "anthropic".into(),
            note: String::new(),
        },
        bridge_chat::ModelChoice {
            id: "llama3.2".into(),
            backend: "ollama".into(),
            note: "local".into(),
        },
    ]);
    app.handle_key(key(KeyCode::Down));
    insta::assert_snapshot!("model_picker_80", text(&draw(&mut app, 80, 12)));
    app.handle_key(key(KeyCode::Esc));
    for c in "/help".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    app.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("help_80", text(&draw(&mut app, 80, 30)));
}
