//! The interactive chat: `bridge_chat::App` (the screen's state and
//! drawing) in a real terminal, fed by the daemon. One loop owns the app;
//! the terminal's keys (a reader thread), the session's events and the
//! approval queue (long polls on `/rpc`) come to it as messages, and what
//! the app asks for (`Action`s) is done here. It draws only when the app
//! says something changed; idle, it waits and costs nothing.
//!
//! Full screen by default (the alternate screen: the transcript scrolls
//! inside it and is re-wrapped on resize; on exit the whole conversation
//! is printed to the terminal's scrollback, once). With `--no-alt-screen`
//! it draws inline: each finished line of the transcript goes into the
//! scrollback as it is committed, exactly once, and only the live part
//! (the line being streamed, an approval, the composer, the status) is
//! redrawn below it.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use bridge_chat::{Action, App, SessionChoice, StatusInfo};
use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::{execute, terminal};
use ratatui::prelude::{CrosstermBackend, Terminal};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{TerminalOptions, Viewport};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::info::{git_diff, models_of, policy_lines, status_lines, workspace_paths};
use super::{Conversation, call};
use crate::exit::Failure;

/// Rows the inline mode draws below the scrollback.
const INLINE_ROWS: u16 = 12;
/// How long one wait on the daemon lasts.
const WAIT_MS: u64 = 25_000;
/// The spinner's step while a turn runs.
const TICK: Duration = Duration::from_millis(120);
/// How long the key reader waits before letting others read the terminal.
const KEY_POLL: Duration = Duration::from_millis(100);

/// What reaches the loop.
enum Input {
    Terminal(Event),
    Events { session: String, batch: Value },
    Approval(Value),
    Failed(String),
}

type Screen = Terminal<CrosstermBackend<std::io::Stdout>>;

/// Puts the terminal back however the chat ends.
struct Restore {
    alternate: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = execute!(out, event::DisableBracketedPaste);
        if self.alternate {
            let _ = execute!(out, terminal::LeaveAlternateScreen);
        }
        let _ = terminal::disable_raw_mode();
        let _ = execute!(out, ratatui::crossterm::cursor::Show);
    }
}

/// The model and runner the chat starts with.
pub(super) struct Chosen {
    pub model: Option<String>,
    pub runner: Option<String>,
}

pub(super) async fn run(
    mut conversation: Conversation,
    chosen: Chosen,
    alternate: bool,
    cwd: std::path::PathBuf,
) -> Result<ExitCode, Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "the chat screen needs a terminal: give a prompt with -p PROMPT for one answer",
        ));
    }
    // The terminal's own convention (no-color.org), not our configuration.
    let color = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let mut app = App::new(color);
    let failure =
        |err: std::io::Error| Failure::internal(format!("cannot use the terminal: {err}"));
    terminal::enable_raw_mode().map_err(failure)?;
    let restore = Restore { alternate };
    let mut out = std::io::stdout();
    execute!(out, event::EnableBracketedPaste).map_err(failure)?;
    if alternate {
        execute!(out, terminal::EnterAlternateScreen).map_err(failure)?;
    }
    let viewport = if alternate {
        Viewport::Fullscreen
    } else {
        Viewport::Inline(INLINE_ROWS)
    };
    let mut screen =
        Terminal::with_options(CrosstermBackend::new(out), TerminalOptions { viewport })
            .map_err(failure)?;
    let size = screen.size().map_err(failure)?;
    app.resize(size.width, size.height);

    let (tx, mut rx) = mpsc::unbounded_channel();
    read_keys(tx.clone());
    // A resumed conversation's history comes from its log; its transcript's
    // earlier events (the daemon still holds them) are not shown again.
    let since = conversation.newest().await?;
    let mut following = follow_events(&conversation, since, tx.clone());
    follow_approvals(&conversation, tx.clone());
    let mut state = State {
        model: chosen.model,
        queued: None,
        runner: chosen.runner,
        backend: String::new(),
        busy: false,
        color,
        size: (size.width, size.height),
    };
    for event in std::mem::take(&mut conversation.history) {
        app.apply_event(&event);
    }
    state.status(&mut app, &conversation);
    app.set_paths(workspace_paths(&cwd));
    draw(&mut screen, &mut app, alternate).map_err(failure)?;

    let mut ticks = tokio::time::interval(TICK);
    loop {
        let input = tokio::select! {
            input = rx.recv() => input,
            _ = ticks.tick(), if state.busy => {
                app.tick();
                draw(&mut screen, &mut app, alternate).map_err(failure)?;
                continue;
            }
        };
        let Some(input) = input else { break };
        let mut actions = Vec::new();
        match input {
            Input::Terminal(Event::Key(key)) => actions = app.handle_key(key),
            Input::Terminal(Event::Paste(text)) => app.handle_paste(text),
            Input::Terminal(Event::Resize(width, height)) => {
                state.size = (width, height);
                app.resize(width, height);
                if !alternate {
                    screen.autoresize().map_err(failure)?;
                }
            }
            Input::Terminal(_) => {}
            Input::Events { session, batch } => {
                if session == conversation.session {
                    for event in batch["events"].as_array().into_iter().flatten() {
                        app.apply_event(event);
                        // The daemon takes the next prompt once the turn
                        // has ended (its idle event comes just before).
                        if event["type"] == "turn.end" {
                            state.busy = false;
                            app.set_busy(false);
                            if let Some(prompt) = state.queued.take() {
                                actions.push(Action::Submit(prompt));
                            }
                        }
                    }
                }
            }
            Input::Approval(event) => match event["type"].as_str() {
                Some("requested") => {
                    app.ask(&event["ask"]);
                }
                Some("resolved") => app.ask_resolved(event["id"].as_str().unwrap_or_default()),
                _ => {}
            },
            Input::Failed(why) => app.show_info("The daemon", vec![why]),
        }
        for action in actions {
            match state.act(action, &mut app, &mut conversation, &cwd).await {
                Step::Go => {}
                Step::Quit => {
                    finish(&mut screen, &mut app, alternate, restore).map_err(failure)?;
                    return Ok(ExitCode::SUCCESS);
                }
                Step::Moved => {
                    following.abort();
                    let since = conversation.newest().await.unwrap_or(0);
                    following = follow_events(&conversation, since, tx.clone());
                }
            }
        }
        if app.needs_redraw() {
            draw(&mut screen, &mut app, alternate).map_err(failure)?;
        }
    }
    finish(&mut screen, &mut app, alternate, restore).map_err(failure)?;
    Ok(ExitCode::SUCCESS)
}

/// What the loop knows beyond the app.
struct State {
    model: Option<String>,
    /// A prompt sent while a turn was still ending.
    queued: Option<String>,
    /// `native` or `copilot`: the runner of the next prompts (`None`: the
    /// session's).
    runner: Option<String>,
    backend: String,
    busy: bool,
    color: bool,
    /// The terminal's size, for a new screen.
    size: (u16, u16),
}

/// What an action did to the loop.
enum Step {
    Go,
    Quit,
    /// The chat is in another session now: follow its events.
    Moved,
}

impl State {
    /// A new screen for another session, its history drawn.
    fn fresh(&self, conversation: &mut Conversation) -> App {
        let mut app = App::new(self.color);
        app.resize(self.size.0, self.size.1);
        for event in std::mem::take(&mut conversation.history) {
            app.apply_event(&event);
        }
        app
    }

    fn status(&self, app: &mut App, conversation: &Conversation) {
        app.set_status(StatusInfo {
            model: self
                .model
                .clone()
                .unwrap_or_else(|| "default model".to_owned()),
            backend: self.backend.clone(),
            session: conversation.session.clone(),
            runner: self.runner.clone().unwrap_or_else(|| "native".to_owned()),
        });
    }

    async fn act(
        &mut self,
        action: Action,
        app: &mut App,
        conversation: &mut Conversation,
        cwd: &std::path::Path,
    ) -> Step {
        let done = match action {
            Action::Quit => return Step::Quit,
            Action::Submit(prompt) if self.busy => {
                // Sent as soon as the running turn ends.
                self.queued = Some(prompt);
                Ok(())
            }
            Action::Submit(prompt) => {
                match conversation
                    .prompt(&prompt, self.model.as_deref(), self.runner.as_deref())
                    .await
                {
                    Ok(started) => {
                        self.busy = true;
                        app.set_busy(true);
                        if let Some(backend) = started["backend"].as_str() {
                            self.backend = backend.to_owned();
                        }
                        if self.model.is_none() {
                            self.model = started["model"].as_str().map(str::to_owned);
                        }
                        self.status(app, conversation);
                        Ok(())
                    }
                    Err(err) => Err(("Not sent", err.message)),
                }
            }
            Action::Abort => conversation
                .abort()
                .await
                .map(drop)
                .map_err(|err| ("Not stopped", err.message)),
            Action::Answer {
                id,
                decision,
                scope,
                reason,
            } => {
                let mut params = json!({"id": id, "decision": decision.as_str(), "scope": scope.as_str(), "surface": "chat"});
                if let Some(reason) = reason.filter(|r| !r.is_empty()) {
                    params["reason"] = json!(reason);
                }
                call(&conversation.client, "approvals.answer", params)
                    .await
                    .map(drop)
                    .map_err(|err| ("Not answered", err.message))
            }
            Action::SwitchModel(model) => {
                self.model = Some(model);
                self.status(app, conversation);
                Ok(())
            }
            Action::SwitchRunner(runner) => Err((
                "Runner",
                format!(
                    "the chat runs the native runner; {} is not offered here yet",
                    runner.as_str()
                ),
            )),
            Action::ListModels => {
                match call(&conversation.client, "bridge.status", json!({})).await {
                    Ok(status) => {
                        app.set_models(models_of(&status));
                        Ok(())
                    }
                    Err(err) => Err(("Models", err.message)),
                }
            }
            Action::ListSessions => {
                match call(&conversation.client, "session.transcripts", json!({})).await {
                    Ok(listed) => {
                        app.set_sessions(
                            listed["logs"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|log| SessionChoice {
                                    id: log["id"].as_str().unwrap_or_default().to_owned(),
                                    note: log["firstPrompt"]
                                        .as_str()
                                        .unwrap_or_default()
                                        .to_owned(),
                                })
                                .collect(),
                        );
                        Ok(())
                    }
                    Err(err) => Err(("Sessions", err.message)),
                }
            }
            Action::Resume(id) => {
                match call(&conversation.client, "session.resume", json!({"id": id})).await {
                    Ok(resumed) => {
                        conversation.session =
                            resumed["session"]["id"].as_str().unwrap_or(&id).to_owned();
                        *app = self.fresh(conversation);
                        self.model = resumed["model"].as_str().map(str::to_owned);
                        self.runner = resumed["runner"].as_str().map(str::to_owned);
                        self.status(app, conversation);
                        return Step::Moved;
                    }
                    Err(err) => Err(("Not resumed", err.message)),
                }
            }
            Action::NewSession => match conversation.new_session(cwd).await {
                Ok(()) => {
                    *app = self.fresh(conversation);
                    self.status(app, conversation);
                    return Step::Moved;
                }
                Err(err) => Err(("No new session", err.message)),
            },
            Action::ShowPolicy | Action::ShowStatus => {
                let policy = matches!(action, Action::ShowPolicy);
                match call(&conversation.client, "bridge.status", json!({})).await {
                    Ok(status) => {
                        let (title, lines) = if policy {
                            policy_lines(&status, cwd)
                        } else {
                            status_lines(&status, conversation, self.model.as_deref())
                        };
                        app.show_info(title, lines);
                        Ok(())
                    }
                    Err(err) => Err(("Status", err.message)),
                }
            }
            Action::ShowDiff => {
                app.show_info("Changes in the workspace", git_diff(cwd).await);
                Ok(())
            }
        };
        if let Err((title, why)) = done {
            app.show_info(title, vec![why]);
        }
        Step::Go
    }
}

fn draw(screen: &mut Screen, app: &mut App, alternate: bool) -> std::io::Result<()> {
    if alternate {
        screen.draw(|frame| app.render(frame))?;
        return Ok(());
    }
    let width = screen.size()?.width;
    let committed = app.take_committed(width);
    insert_lines(screen, committed)?;
    screen.draw(|frame| app.render_inline(frame))?;
    Ok(())
}

/// `lines` into the terminal's scrollback above the inline part.
fn insert_lines(screen: &mut Screen, lines: Vec<Line<'static>>) -> std::io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    screen.insert_before(height, |buffer| {
        Paragraph::new(lines).render(buffer.area, buffer);
    })
}

/// Leaves the screen with the whole conversation in the scrollback.
fn finish(
    screen: &mut Screen,
    app: &mut App,
    alternate: bool,
    restore: Restore,
) -> std::io::Result<()> {
    let width = screen.size()?.width;
    if alternate {
        drop(restore);
        let mut out = std::io::stdout().lock();
        for line in app.transcript_lines(width) {
            let text: String = line
                .spans
                .iter()
                .map(|span| span.content.as_ref())
                .collect();
            writeln!(out, "{}", text.trim_end())?;
        }
        return out.flush();
    }
    let committed = app.take_committed(width);
    insert_lines(screen, committed)?;
    screen.clear()?;
    drop(restore);
    Ok(())
}

/// The terminal's events, read on a thread of their own. It polls rather
/// than blocking in `read`, so the inline screen can ask the terminal
/// where its cursor is (the answer comes on the same input) in between.
fn read_keys(tx: mpsc::UnboundedSender<Input>) {
    std::thread::spawn(move || {
        loop {
            match event::poll(KEY_POLL) {
                Ok(true) => match event::read() {
                    Ok(event) => {
                        if tx.send(Input::Terminal(event)).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                },
                Ok(false) => {
                    if tx.is_closed() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    });
}

/// The session's events after `since`, as they come.
fn follow_events(
    conversation: &Conversation,
    since: u64,
    tx: mpsc::UnboundedSender<Input>,
) -> tokio::task::JoinHandle<()> {
    let client = conversation.client.clone();
    let session = conversation.session.clone();
    tokio::spawn(async move {
        let mut since = since;
        loop {
            let asked = json!({"session": session, "since": since, "waitMs": WAIT_MS});
            match client.call("session.events", asked).await {
                Ok(batch) => {
                    since = batch["next"].as_u64().unwrap_or(since);
                    let session = session.clone();
                    if tx.send(Input::Events { session, batch }).is_err() {
                        return;
                    }
                }
                Err(err) => {
                    let _ = tx.send(Input::Failed(format!("session.events: {err}")));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    })
}

/// Every ask of the hub and its answer, as they come.
fn follow_approvals(conversation: &Conversation, tx: mpsc::UnboundedSender<Input>) {
    let client = conversation.client.clone();
    tokio::spawn(async move {
        let mut since = 0;
        loop {
            match client
                .call(
                    "approvals.watch",
                    json!({"since": since, "waitMs": WAIT_MS}),
                )
                .await
            {
                Ok(batch) => {
                    since = batch["next"].as_u64().unwrap_or(since);
                    for event in batch["events"].as_array().into_iter().flatten() {
                        if tx.send(Input::Approval(event.clone())).is_err() {
                            return;
                        }
                    }
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    });
}
