//! `chat -p PROMPT`: one turn, printed as it happens — the answer on
//! stdout (streamed text, then whatever of the whole answer did not
//! stream), each tool call and its decision on stderr, asks waiting for a
//! person said on stderr with where to answer them. Ctrl-C stops the turn.
//! Exit 0 when the turn completed, 1 otherwise.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use super::Conversation;
use crate::exit::{self, Failure};

/// How long one wait for events lasts.
const WAIT_MS: u64 = 25_000;

pub(super) async fn answer(
    conversation: &Conversation,
    prompt: &str,
    model: Option<&str>,
    runner: Option<&str>,
) -> Result<ExitCode, Failure> {
    // Events already in the transcript (a resumed session's) are not this turn's.
    let mut since = conversation.newest().await?;
    conversation.prompt(prompt, model, runner).await?;
    let mut streamed = String::new();
    let mut interrupted = false;
    loop {
        let batch = tokio::select! {
            batch = conversation.events(since, WAIT_MS) => batch?,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                conversation.abort().await?;
                continue;
            }
        };
        since = batch["next"].as_u64().unwrap_or(since);
        for event in batch["events"].as_array().into_iter().flatten() {
            if let Some(code) = show(event, &mut streamed)? {
                return Ok(code);
            }
        }
    }
}

/// Prints one event; the exit code once the turn ended.
fn show(event: &Value, streamed: &mut String) -> Result<Option<ExitCode>, Failure> {
    let text = |key: &str| event[key].as_str().unwrap_or_default();
    match text("type") {
        "assistant.message_delta" => {
            streamed.push_str(text("delta"));
            out(text("delta"))?;
        }
        "assistant.message" => {
            let content = text("content");
            // What the stream did not already show (it can lag the whole).
            let rest = content.strip_prefix(streamed.as_str()).unwrap_or(content);
            if streamed.is_empty() || !rest.is_empty() {
                out(rest)?;
            }
            if !content.is_empty() && !content.ends_with('\n') {
                out("\n")?;
            }
            streamed.clear();
        }
        "tool.execution_complete" => {
            let decision = &event["decision"];
            let verdict = match decision["decision"].as_str() {
                Some("deny") => format!(
                    "denied: {}",
                    decision["reason"].as_str().unwrap_or("by the policy")
                ),
                _ if event["result"]["type"] == "failure" => format!(
                    "failed: {}",
                    bridge_policy::redact::preview(&event["result"]["output"].to_string(), 200)
                ),
                _ => "done".to_owned(),
            };
            eprintln!(
                "· {} {} — {verdict}",
                text("tool"),
                bridge_policy::redact::preview(&event["arguments"].to_string(), 160)
            );
        }
        "model.error" | "session.error" => eprintln!("error: {}", text("message")),
        "turn.end" => {
            return Ok(Some(match text("status") {
                "completed" => ExitCode::SUCCESS,
                status => {
                    let why = event["error"].as_str().unwrap_or(status);
                    eprintln!("copilot-bridge: the turn ended {status}: {why}");
                    ExitCode::from(exit::FAILED)
                }
            }));
        }
        _ => {}
    }
    Ok(None)
}

fn out(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Failure::internal(format!("cannot write the answer: {err}")))
}
