//! What the chat screen costs per streamed chunk and per resize with a
//! long conversation: one delta applied and the frame drawn (the work
//! between a chunk arriving from the daemon and the terminal's update,
//! against one frame, 16 ms), a 5,000-line transcript re-wrapped for a new
//! width, and an idle frame. docs/benchmarks.md, "The terminal chat".

#![allow(clippy::unwrap_used)]

use bridge_chat::App;
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

/// A screen 120×40 holding a 5,000-line conversation.
fn long_conversation() -> App {
    let mut app = App::new(true);
    app.resize(120, 40);
    app.apply_event(&json!({"seq": 1, "type": "user.message", "content": "Write a long answer"}));
    let text: String = (0..5_000)
        .map(|n| {
            format!(
                "line {n}: some words of the answer, long enough to look like prose in a chat\n"
            )
        })
        .collect();
    app.apply_event(&json!({"seq": 2, "type": "assistant.message", "content": text}));
    app.apply_event(&json!({"seq": 3, "type": "session.idle"}));
    app
}

fn screen(c: &mut Criterion) {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let mut app = long_conversation();
    terminal.draw(|frame| app.render(frame)).unwrap();
    let mut seq = 10;
    c.bench_function(
        "a streamed chunk applied and the frame drawn (5,000 lines above)",
        |b| {
            b.iter(|| {
                seq += 1;
                let delta = if seq % 8 == 0 {
                    "words and a newline\n"
                } else {
                    "some words "
                };
                app.apply_event(
                    &json!({"seq": seq, "type": "assistant.message_delta", "delta": delta}),
                );
                terminal.draw(|frame| app.render(frame)).unwrap();
            });
        },
    );
    let mut app = long_conversation();
    let mut wide = true;
    c.bench_function("a 5,000-line transcript resized and drawn", |b| {
        b.iter(|| {
            wide = !wide;
            let width = if wide { 120 } else { 80 };
            app.resize(width, 40);
            terminal
                .resize(ratatui::layout::Rect::new(0, 0, width, 40))
                .unwrap();
            terminal.draw(|frame| app.render(frame)).unwrap();
        });
    });
    let app = long_conversation();
    c.bench_function("idle: is a redraw needed", |b| {
        b.iter(|| std::hint::black_box(app.needs_redraw()));
    });
}

criterion_group!(benches, screen);
criterion_main!(benches);
