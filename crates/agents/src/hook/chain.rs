//! The user's own hooks, run after ours by the wrapper `hooks install`
//! writes (`copilot-bridge hook EVENT --chain FILE`), and the one answer
//! both stacks give together (docs/hooks.md, "Several hook stacks"):
//!
//! 1. our explicit decision (deny or ask), as we say it;
//! 2. else the first of the user's hooks with an explicit decision
//!    (`permissionDecision` allow, deny or ask), its answer unchanged;
//! 3. else a legacy block (`decision: "block"`, `block: true`, exit code 2),
//!    as a deny;
//! 4. else `{}` (our context, or the first other answer of the user's
//!    hooks for events that are not a tool call).
//!
//! The chain file holds the hooks `hooks install` took over, per event, as
//! the agent had them: Claude's matcher groups, the Copilot CLI's entries.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::answer::{HookAnswer, HookDecision, render};
use super::payload::{Dialect, HookEvent, HookInput};

/// A chained hook's time limit when it sets none (the agents' default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One user hook: its shell command, environment and time limit.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainedHook {
    pub command: String,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

/// What one chained hook said.
#[derive(Debug, Clone, PartialEq)]
enum Said {
    /// An explicit `permissionDecision`: its whole answer, kept as is.
    Decision(Value),
    /// A legacy block, with its reason.
    Block(String),
    /// Some other answer (context, a message).
    Other(Value),
    /// Nothing (`{}`, no output, a non-blocking failure).
    Nothing,
}

/// Why the chain file cannot be used; a tool call is denied for it.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error(
        "the chained hooks {} are missing, so your own hooks cannot run: run `copilot-bridge hooks install` again for this agent (or `copilot-bridge hooks uninstall` to take copilot-bridge's hooks out)",
        path.display()
    )]
    Missing { path: PathBuf },
    #[error("cannot read the chained hooks {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the chained hooks {} are not JSON: {source}", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The hooks of `event` in the chain file `path` that apply to `input`.
pub fn load(
    path: &Path,
    event: HookEvent,
    input: &HookInput,
) -> Result<Vec<ChainedHook>, ChainError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        // `hooks install` always writes it: gone, the user's hooks cannot
        // run, and a deny says how to put them back.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(ChainError::Missing {
                path: path.to_owned(),
            });
        }
        Err(source) => {
            return Err(ChainError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let chain: Value = serde_json::from_str(&text).map_err(|source| ChainError::NotJson {
        path: path.to_owned(),
        source,
    })?;
    let names = match input.dialect {
        Dialect::Claude => [event.claude_name(), event.name()],
        Dialect::Copilot => [copilot_name(event), event.name()],
    };
    let entries = names
        .iter()
        .find_map(|name| chain["hooks"].get(*name))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tool = input.tool.as_ref().map_or("", |call| call.name.as_str());
    let mut hooks = Vec::new();
    for entry in &entries {
        if let Some(group) = entry.get("hooks").and_then(Value::as_array) {
            // Claude's matcher group.
            if !matches(entry.get("matcher").and_then(Value::as_str), tool) {
                continue;
            }
            hooks.extend(
                group
                    .iter()
                    .filter_map(|hook| chained(hook, "command", "timeout")),
            );
        } else {
            // A Copilot CLI entry.
            hooks.extend(chained(entry, "bash", "timeoutSec"));
        }
    }
    Ok(hooks)
}

/// The Copilot CLI's name of `event`.
pub fn copilot_name(event: HookEvent) -> &'static str {
    match event {
        HookEvent::SessionStart => "sessionStart",
        HookEvent::SessionEnd => "sessionEnd",
        HookEvent::UserPromptSubmit => "userPromptSubmitted",
        HookEvent::PreToolUse => "preToolUse",
        // Codex's alone; the Copilot CLI has none.
        HookEvent::PermissionRequest => "permissionRequest",
        HookEvent::PostToolUse => "postToolUse",
        HookEvent::Error => "errorOccurred",
    }
}

fn chained(hook: &Value, command_key: &str, timeout_key: &str) -> Option<ChainedHook> {
    if hook
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("command")
        != "command"
    {
        return None;
    }
    let command = hook.get(command_key).and_then(Value::as_str)?.to_owned();
    let env = hook
        .get("env")
        .and_then(Value::as_object)
        .map(|env| {
            env.iter()
                .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let timeout = hook
        .get(timeout_key)
        .and_then(Value::as_u64)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    Some(ChainedHook {
        command,
        env,
        timeout,
    })
}

/// Claude's matcher: absent, empty or `*` matches every tool; otherwise a
/// regular expression over the whole tool name (`Edit|Write`).
fn matches(matcher: Option<&str>, tool: &str) -> bool {
    match matcher.map(str::trim) {
        None | Some("" | "*") => true,
        Some(pattern) => regex::Regex::new(&format!("^(?:{pattern})$"))
            .map(|regex| regex.is_match(tool))
            // A matcher we cannot read still runs its hook: better an
            // extra check than a skipped one.
            .unwrap_or(true),
    }
}

/// Runs `hook` with `payload` on stdin.
fn run(hook: &ChainedHook, payload: &str) -> Said {
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(&hook.command)
        .envs(hook.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => return Said::Block(format!("cannot run the hook {:?}: {err}", hook.command)),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input may close it early.
        let _ = stdin.write_all(payload.as_bytes());
    }
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() >= hook.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Said::Block(format!(
                    "the hook {:?} did not answer within {:?}",
                    hook.command, hook.timeout
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(err) => return Said::Block(format!("the hook {:?} failed: {err}", hook.command)),
        }
    }
    let Ok(output) = child.wait_with_output() else {
        return Said::Nothing;
    };
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    match output.status.code() {
        Some(0) => {}
        Some(2) => {
            return Said::Block(if stderr.is_empty() {
                format!("blocked by the hook {:?}", hook.command)
            } else {
                stderr
            });
        }
        // Any other failure is non-blocking, as both agents take it.
        _ => return Said::Nothing,
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Ok(answer) = serde_json::from_str::<Value>(stdout.trim()) else {
        return Said::Nothing;
    };
    interpret(answer)
}

fn interpret(answer: Value) -> Said {
    let decision = answer
        .pointer("/hookSpecificOutput/permissionDecision")
        .or_else(|| answer.get("permissionDecision"))
        .and_then(Value::as_str);
    if matches!(decision, Some("allow" | "deny" | "ask")) {
        return Said::Decision(answer);
    }
    let legacy_block = answer.get("decision").and_then(Value::as_str) == Some("block")
        || answer.get("block") == Some(&Value::Bool(true));
    if legacy_block {
        let reason = ["reason", "message", "stopReason"]
            .iter()
            .find_map(|key| answer.get(*key).and_then(Value::as_str))
            .unwrap_or("blocked by a hook");
        return Said::Block(reason.to_owned());
    }
    if answer.as_object().is_some_and(|fields| !fields.is_empty()) {
        Said::Other(answer)
    } else {
        Said::Nothing
    }
}

/// Our decision and the chained hooks' answers as one answer.
pub fn combine(
    dialect: Dialect,
    event: HookEvent,
    ours: &HookDecision,
    context: &[String],
    chained: &[ChainedHook],
    payload: &str,
) -> HookAnswer {
    let said: Vec<Said> = chained.iter().map(|hook| run(hook, payload)).collect();
    if !matches!(ours, HookDecision::Pass) {
        return render(dialect, event, ours, context);
    }
    let explicit = said.iter().find_map(|said| match said {
        Said::Decision(answer) => Some(answer.clone()),
        _ => None,
    });
    if let Some(answer) = explicit {
        return HookAnswer {
            stdout: answer,
            exit_code: 0,
            stderr: None,
        };
    }
    let blocked = said.iter().find_map(|said| match said {
        Said::Block(reason) => Some(reason.clone()),
        _ => None,
    });
    if let Some(reason) = blocked {
        if matches!(event, HookEvent::PreToolUse | HookEvent::PermissionRequest) {
            return render(dialect, event, &HookDecision::Deny(reason), context);
        }
        return HookAnswer {
            stdout: json!({}),
            exit_code: 2,
            stderr: Some(reason),
        };
    }
    let other = said.into_iter().find_map(|said| match said {
        Said::Other(answer) => Some(answer),
        _ => None,
    });
    match other {
        Some(answer) if context.is_empty() => HookAnswer {
            stdout: answer,
            exit_code: 0,
            stderr: None,
        },
        _ => render(dialect, event, ours, context),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_are_whole_name_regular_expressions() {
        assert!(matches(None, "Bash"));
        assert!(matches(Some("*"), "Bash"));
        assert!(matches(Some("Edit|Write"), "Write"));
        assert!(!matches(Some("Edit|Write"), "WriteFile"));
        assert!(!matches(Some("Bash"), "Read"));
    }

    #[test]
    fn answers_are_read_as_decisions_blocks_or_other() {
        assert!(matches!(
            interpret(json!({"hookSpecificOutput": {"permissionDecision": "allow"}})),
            Said::Decision(_)
        ));
        assert!(matches!(
            interpret(json!({"permissionDecision": "deny"})),
            Said::Decision(_)
        ));
        assert_eq!(
            interpret(json!({"block": true, "message": "no"})),
            Said::Block("no".into())
        );
        assert_eq!(
            interpret(json!({"decision": "block", "reason": "r"})),
            Said::Block("r".into())
        );
        assert_eq!(interpret(json!({})), Said::Nothing);
        assert!(matches!(
            interpret(json!({"additionalContext": "x"})),
            Said::Other(_)
        ));
    }
}
