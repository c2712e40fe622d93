//! Codex's hook trust, established the way Codex's own UI does it: Codex
//! runs a hook that is not managed only once `hooks.state."KEY".
//! trusted_hash` in its config.toml matches the hook's current hash, and
//! its `codex app-server` (JSON-RPC over stdio) lists each hook's key and
//! hash (`hooks/list`) and writes the trust (`config/batchWrite`). We never
//! compute Codex's hash ourselves: we ask, write what it said for our own
//! hooks only, and list again to verify (docs/hooks.md, "Codex").
//!
//! Also the hooks a launched Codex gets for one run: `-c hooks.EVENT=…`
//! flags, which Codex lists under the key `/<session-flags>/config.toml:…`
//! and which need the same trust.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use bridge_policy::agent_tools::Agent;
use serde_json::{Value, json};

use crate::env::AgentEnv;
use crate::error::AgentsError;
use crate::hooks::{self, entry, hook_command};
use crate::program::Program;

/// How long `codex app-server` gets for everything trust needs.
const APP_SERVER_PATIENCE: Duration = Duration::from_secs(30);

/// One hook as `hooks/list` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexHook {
    pub key: String,
    pub command: String,
    pub current_hash: String,
    pub trusted: bool,
}

/// What trusting our hooks came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    /// Our hooks Codex lists, all trusted now.
    pub ours: Vec<CodexHook>,
    /// How many were trusted by this call (the others already were).
    pub newly: usize,
}

/// The `codex` that `env`'s `PATH` finds.
pub fn find_codex(env: &AgentEnv) -> Option<PathBuf> {
    env.find_program("codex")
}

/// The `-c` flags that give one Codex run our hook for each of its
/// events (no chain: a launched run has no hooks of the user's to merge).
pub fn session_flag_hooks(program: &Program) -> Vec<String> {
    let mut args = Vec::new();
    for (event, ours) in hooks::events(Agent::Codex) {
        let command = hook_command(program, Agent::Codex, ours, None);
        let hook = entry(Agent::Codex, &command, program.hook_timeout_secs());
        args.push("-c".to_owned());
        args.push(format!("hooks.{event}=[{}]", toml_inline(&hook)));
    }
    args
}

/// `value` as an inline TOML value (JSON strings are TOML basic strings).
pub fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(key, value)| format!("{key}={}", toml_inline(value)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(toml_inline).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

/// Trusts the hooks Codex lists for `cwd` that `is_ours` says are ours
/// (and only those), then lists again to verify each is trusted. `flags`
/// are Codex options the listing must see (a launch's `-c` hooks).
pub fn trust_ours(
    codex: &Path,
    env: &AgentEnv,
    flags: &[String],
    cwd: &Path,
    is_ours: impl Fn(&CodexHook) -> bool,
) -> Result<Trust, AgentsError> {
    let mut server = AppServer::start(codex, env, flags)?;
    server.call(
        "initialize",
        json!({"clientInfo": {"name": "copilot-bridge", "version": env!("CARGO_PKG_VERSION")}}),
    )?;
    server.notify("initialized")?;
    let listed: Vec<CodexHook> = server.hooks(cwd)?.into_iter().filter(&is_ours).collect();
    let edits: Vec<Value> = listed
        .iter()
        .filter(|hook| !hook.trusted)
        .map(|hook| {
            json!({
                "keyPath": format!("hooks.state.{}.trusted_hash", toml_key(&hook.key)),
                "mergeStrategy": "upsert",
                "value": hook.current_hash,
            })
        })
        .collect();
    let newly = edits.len();
    if newly > 0 {
        server.call("config/batchWrite", json!({"edits": edits}))?;
    }
    let ours: Vec<CodexHook> = server.hooks(cwd)?.into_iter().filter(is_ours).collect();
    if let Some(untrusted) = ours.iter().find(|hook| !hook.trusted) {
        return Err(AgentsError::CodexTrust(format!(
            "Codex still lists {} as untrusted after the trust was written",
            untrusted.key
        )));
    }
    Ok(Trust { ours, newly })
}

/// Codex's hooks for `cwd`, trusted or not, that `is_ours` says are ours.
pub fn list_ours(
    codex: &Path,
    env: &AgentEnv,
    cwd: &Path,
    is_ours: impl Fn(&CodexHook) -> bool,
) -> Result<Vec<CodexHook>, AgentsError> {
    let mut server = AppServer::start(codex, env, &[])?;
    server.call(
        "initialize",
        json!({"clientInfo": {"name": "copilot-bridge", "version": env!("CARGO_PKG_VERSION")}}),
    )?;
    server.notify("initialized")?;
    Ok(server.hooks(cwd)?.into_iter().filter(is_ours).collect())
}

/// After `hooks install --agent codex`: trusts our wrappers as Codex
/// lists them for `cwd` and says so, or says exactly what the user must do
/// in Codex instead. `true` when every one of ours is trusted.
pub fn trust_installed(layout: &hooks::Layout, env: &AgentEnv, cwd: &Path) -> (String, bool) {
    let ours = |hook: &CodexHook| hooks::is_our_wrapper(&hook.command);
    let Some(codex) = find_codex(env) else {
        return (
            untrusted_steps(layout, cwd, "`codex` is not on PATH"),
            false,
        );
    };
    match trust_ours(&codex, env, &[], cwd, ours) {
        Ok(trust) if trust.ours.len() == layout.events().len() => (
            format!(
                "Codex trusts copilot-bridge's {} hooks ({} newly, through `codex app-server`).\n",
                trust.ours.len(),
                trust.newly
            ),
            true,
        ),
        Ok(trust) => (
            untrusted_steps(
                layout,
                cwd,
                &format!(
                    "Codex lists {} of our {} hooks for {}",
                    trust.ours.len(),
                    layout.events().len(),
                    cwd.display()
                ),
            ),
            false,
        ),
        Err(err) => (untrusted_steps(layout, cwd, &err.to_string()), false),
    }
}

/// For `hooks status --agent codex`: whether Codex runs each of our hooks.
pub fn trust_status(env: &AgentEnv, cwd: &Path) -> String {
    let Some(codex) = find_codex(env) else {
        return "Codex's trust: unknown (`codex` is not on PATH)\n".to_owned();
    };
    match list_ours(&codex, env, cwd, |hook| {
        hooks::is_our_wrapper(&hook.command)
    }) {
        Ok(ours) if ours.is_empty() => format!(
            "Codex's trust: Codex lists none of our hooks for {}\n",
            cwd.display()
        ),
        Ok(ours) => {
            let mut text = String::from("Codex's trust:\n");
            for hook in ours {
                text.push_str(&format!(
                    "  {:60} {}\n",
                    hook.key,
                    if hook.trusted {
                        "trusted"
                    } else {
                        "untrusted: Codex skips it"
                    }
                ));
            }
            text
        }
        Err(err) => format!("Codex's trust: unknown ({err})\n"),
    }
}

/// What the user must do in Codex when we could not trust our hooks.
fn untrusted_steps(layout: &hooks::Layout, cwd: &Path, why: &str) -> String {
    let mut text = format!(
        "Codex runs a hook only once it is trusted, and copilot-bridge could not trust its hooks: {why}.\n"
    );
    if let Some(project) = &layout.project {
        text.push_str(&format!(
            "Codex reads {} only in a project it trusts: trust {} when Codex asks, \
             or set `[projects.{}] trust_level = \"trusted\"` in Codex's config.toml.\n",
            layout.config.display(),
            project.display(),
            toml_key(&project.display().to_string())
        ));
    }
    text.push_str(&format!(
        "Then trust the hooks: start `codex` in {}, type /hooks and trust the copilot-bridge hooks \
         (or run `copilot-bridge hooks install --agent codex` again).\n",
        cwd.display()
    ));
    text
}

/// `key` quoted as one TOML key (a hook's key has `/`, `.` and `:`).
fn toml_key(key: &str) -> String {
    Value::String(key.to_owned()).to_string()
}

/// A running `codex app-server`, killed when dropped.
struct AppServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    deadline: Instant,
    next_id: u64,
}

impl AppServer {
    /// Starts it with only what it needs of the environment: where the
    /// user's Codex configuration is, and how to find programs.
    fn start(codex: &Path, env: &AgentEnv, flags: &[String]) -> Result<Self, AgentsError> {
        let mut command = Command::new(codex);
        command
            .args(flags)
            .arg("app-server")
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut pass = |name: &str, value: Option<OsString>| {
            if let Some(value) = value {
                command.env(name, value);
            }
        };
        pass("PATH", env.search_path().map(OsString::from));
        pass("HOME", env.home().map(OsString::from));
        pass("CODEX_HOME", env.codex_home().map(OsString::from));
        let mut child = command.spawn().map_err(|source| AgentsError::CodexStart {
            path: codex.to_owned(),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(AgentsError::CodexTrust(
                "codex app-server has no stdin or stdout".to_owned(),
            ));
        };
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
            deadline: Instant::now() + APP_SERVER_PATIENCE,
            next_id: 1,
        })
    }

    fn send(&mut self, message: &Value) -> Result<(), AgentsError> {
        writeln!(self.stdin, "{message}")
            .and_then(|()| self.stdin.flush())
            .map_err(|err| {
                AgentsError::CodexTrust(format!("cannot write to codex app-server: {err}"))
            })
    }

    fn notify(&mut self, method: &str) -> Result<(), AgentsError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    /// One request and its result; an error answer is an error.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, AgentsError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(AgentsError::CodexTrust(format!(
                        "codex app-server did not answer {method} within {APP_SERVER_PATIENCE:?}"
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(AgentsError::CodexTrust(format!(
                        "codex app-server exited before answering {method}"
                    )));
                }
            };
            // Notifications and other chatter are not ours.
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] != json!(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(AgentsError::CodexTrust(format!(
                    "codex app-server refused {method}: {error}"
                )));
            }
            return Ok(message["result"].clone());
        }
    }

    fn hooks(&mut self, cwd: &Path) -> Result<Vec<CodexHook>, AgentsError> {
        let listed = self.call("hooks/list", json!({"cwds": [cwd]}))?;
        let hooks = listed["data"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|entry| entry["hooks"].as_array().cloned().unwrap_or_default())
            .filter_map(|hook| {
                Some(CodexHook {
                    key: hook["key"].as_str()?.to_owned(),
                    command: hook["command"].as_str().unwrap_or_default().to_owned(),
                    current_hash: hook["currentHash"].as_str()?.to_owned(),
                    trusted: hook["trustStatus"] == "trusted",
                })
            })
            .collect();
        Ok(hooks)
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launchs_hooks_are_inline_toml_with_our_command() {
        let program = Program {
            path: PathBuf::from("/opt/copilot-bridge"),
            home: PathBuf::from("/state"),
            home_configured: false,
            port: None,
            approval_timeout_secs: 0,
        };
        let args = session_flag_hooks(&program);
        assert_eq!(args[0], "-c");
        assert_eq!(
            args[1],
            r#"hooks.SessionStart=[{hooks=[{command="'/opt/copilot-bridge' hook session-start --agent codex",timeout=90,type="command"}],matcher="*"}]"#
        );
        assert_eq!(args.len(), 2 * hooks::CODEX_EVENTS.len());
        assert_eq!(
            toml_key("/a/hooks.json:pre_tool_use:0:0"),
            r#""/a/hooks.json:pre_tool_use:0:0""#
        );
    }
}
