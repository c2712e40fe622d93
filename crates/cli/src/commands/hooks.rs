//! `copilot-bridge hooks install|uninstall|status --agent claude|copilot
//! [--scope project|user] [--dir DIR]` (see docs/hooks.md).
//!
//! Installing puts one wrapper per event in the agent's hook configuration:
//! `copilot-bridge hook EVENT --agent AGENT --chain FILE`, which runs our
//! hook and the user's own hooks of that event and answers once for both
//! (`hook/chain.rs`). The user's hooks move into the chain file, with where
//! they came from, so `uninstall` puts them back. Every file is backed up
//! before it changes, edited in place (other settings, comments and
//! formatting kept) and written atomically; running it twice changes
//! nothing the second time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use serde_json::{Map, Value, json};

use super::json_edit::{self, back_up, read_if_present, write_atomically};
use super::tool::write_stdout;
use crate::args::{HooksArgs, HooksCommand};
use crate::exit::Failure;

/// Claude Code's events we install for, with our names.
pub(crate) const CLAUDE_EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreToolUse", "pre-tool-use"),
    ("PostToolUse", "post-tool-use"),
    ("SessionEnd", "session-end"),
];
/// The Copilot CLI's.
pub(crate) const COPILOT_EVENTS: &[(&str, &str)] = &[
    ("sessionStart", "session-start"),
    ("userPromptSubmitted", "user-prompt-submit"),
    ("preToolUse", "pre-tool-use"),
    ("postToolUse", "post-tool-use"),
    ("sessionEnd", "session-end"),
];
/// Our own hook file in a Copilot CLI hooks directory.
const COPILOT_FILE: &str = "copilot-bridge.json";
/// The chain file's name, beside the agent's configuration.
const CHAIN_FILE: &str = "copilot-bridge-hooks.json";

/// Where one agent keeps its hooks in one scope.
struct Layout {
    agent: &'static str,
    events: &'static [(&'static str, &'static str)],
    /// Claude: its settings.json. Copilot: the hooks directory.
    config: PathBuf,
    chain: PathBuf,
}

impl Layout {
    fn new(args: &HooksArgs) -> Result<Self, Failure> {
        let home = || {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| Failure::usage("HOME is not set; use --scope project"))
        };
        let project = || -> Result<PathBuf, Failure> {
            match &args.dir {
                Some(dir) => Ok(dir.clone()),
                None => std::env::current_dir().map_err(|err| {
                    Failure::usage(format!("cannot read the current directory: {err}"))
                }),
            }
        };
        let user = args.scope == "user";
        Ok(match args.agent.as_str() {
            "claude" => {
                let dir = if user {
                    match std::env::var_os("CLAUDE_CONFIG_DIR") {
                        Some(dir) => PathBuf::from(dir),
                        None => home()?.join(".claude"),
                    }
                } else {
                    project()?.join(".claude")
                };
                Self {
                    agent: "claude",
                    events: CLAUDE_EVENTS,
                    config: dir.join("settings.json"),
                    chain: dir.join(CHAIN_FILE),
                }
            }
            _ => {
                let dir = if user {
                    match std::env::var_os("COPILOT_HOME") {
                        Some(dir) => PathBuf::from(dir),
                        None => home()?.join(".copilot"),
                    }
                } else {
                    project()?.join(".github")
                };
                Self {
                    agent: "copilot",
                    events: COPILOT_EVENTS,
                    config: dir.join("hooks"),
                    chain: dir.join(CHAIN_FILE),
                }
            }
        })
    }

    fn is_claude(&self) -> bool {
        self.agent == "claude"
    }

    /// The wrapper's command line for our `event`.
    fn command(&self, config: &BridgeConfig, event: &str) -> Result<String, Failure> {
        hook_command(config, self.agent, event, Some(&self.chain))
    }

    /// Our entry for `event`, as the agent's configuration holds it.
    fn entry(&self, config: &BridgeConfig, event: &str) -> Result<Value, Failure> {
        let command = self.command(config, event)?;
        Ok(if self.is_claude() {
            json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 90}]})
        } else {
            json!({"type": "command", "bash": command, "timeoutSec": 90})
        })
    }
}

/// The command line of our hook for `agent`'s `event` (our name): this
/// very binary, the state directory when it is not the default one (so the
/// hook finds the same daemon and audit log), and the chain file if any.
pub(crate) fn hook_command(
    config: &BridgeConfig,
    agent: &str,
    event: &str,
    chain: Option<&Path>,
) -> Result<String, Failure> {
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?;
    let mut command = format!("{} ", quote(&exe.display().to_string()));
    if super::is_configured(config, bridge_config::keys::HOME) {
        let _ = write!(
            command,
            "--home {} ",
            quote(&config.home.display().to_string())
        );
    }
    let _ = write!(command, "hook {event} --agent {agent}");
    if let Some(chain) = chain {
        let _ = write!(command, " --chain {}", quote(&chain.display().to_string()));
    }
    Ok(command)
}

/// `text` in single quotes for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Whether a hook entry is one of our wrappers.
fn is_ours(entry: &Value) -> bool {
    let mentions = |command: &str| command.contains(" hook ") && command.contains(" --chain ");
    let commands = entry
        .get("hooks")
        .and_then(Value::as_array)
        .map(|group| {
            group
                .iter()
                .filter_map(|hook| hook["command"].as_str())
                .collect()
        })
        .unwrap_or_else(|| entry["bash"].as_str().into_iter().collect::<Vec<_>>());
    commands.into_iter().any(mentions)
}

pub fn run(config: &BridgeConfig, command: HooksCommand) -> Result<ExitCode, Failure> {
    match command {
        HooksCommand::Install(args) => install(config, &Layout::new(&args)?),
        HooksCommand::Uninstall(args) => uninstall(&Layout::new(&args)?),
        HooksCommand::Status(args) => status(config, &Layout::new(&args)?),
    }
}

/// The chain file: `{version, hooks: {EVENT: [...]}, restore: {FILE: {EVENT: [...]}}}`.
fn read_chain(layout: &Layout) -> Result<Value, Failure> {
    match std::fs::read_to_string(&layout.chain) {
        Ok(text) => serde_json::from_str(&text).map_err(|err| {
            Failure::internal(format!(
                "{} is not JSON ({err}); fix or remove it first, nothing was changed",
                layout.chain.display()
            ))
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Ok(json!({"version": 1, "hooks": {}, "restore": {}}))
        }
        Err(err) => Err(Failure::internal(format!(
            "cannot read {}: {err}",
            layout.chain.display()
        ))),
    }
}

fn edit_failure(file: &Path, err: &json_edit::EditError) -> Failure {
    Failure::internal(format!("cannot change {}: {err}", file.display()))
}

/// Takes the user's entries of `event` out of `file`'s text (into `chain`)
/// and returns the text with ours, or theirs left out (`ours: None`).
fn take_over(
    file: &Path,
    text: &str,
    event: &str,
    ours: Option<&Value>,
    chain: &mut Value,
) -> Result<Option<String>, Failure> {
    let document = json_edit::parse(text).map_err(|err| edit_failure(file, &err))?;
    let entries: Vec<Value> = json_edit::get_at(&document, &["hooks", event])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if entries.iter().any(is_ours) {
        return Ok(None);
    }
    let theirs: Vec<Value> = entries
        .into_iter()
        .filter(|entry| !is_ours(entry))
        .collect();
    if !theirs.is_empty() {
        push_all(&mut chain["hooks"], event, &theirs);
        let key = file.display().to_string();
        push_all(&mut chain["restore"][key.as_str()], event, &theirs);
    }
    let edited = match ours {
        Some(ours) => json_edit::set_at(text, &["hooks", event], &json!([ours])),
        None if theirs.is_empty() => Ok(None),
        None => json_edit::remove_at(text, &["hooks", event]),
    };
    edited.map_err(|err| edit_failure(file, &err))
}

fn push_all(target: &mut Value, event: &str, entries: &[Value]) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let list = &mut target[event];
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        list.extend(entries.iter().cloned());
    }
}

/// Writes `text` to `file`, backing up what was there; the backup's path.
fn replace_file(file: &Path, old: Option<&str>, text: &str) -> Result<Option<PathBuf>, Failure> {
    let backup = old.map(|old| back_up(file, old)).transpose()?;
    write_atomically(file, text)?;
    Ok(backup)
}

fn install(config: &BridgeConfig, layout: &Layout) -> Result<ExitCode, Failure> {
    let mut chain = read_chain(layout)?;
    let before = chain.clone();
    // (file, old text, new text) to write once everything is decided.
    let mut writes: Vec<(PathBuf, Option<String>, String)> = Vec::new();
    if layout.is_claude() {
        let old = read_if_present(&layout.config)?;
        let mut text = old.clone().unwrap_or_default();
        for (event, ours) in layout.events {
            let entry = layout.entry(config, ours)?;
            if let Some(edited) = take_over(&layout.config, &text, event, Some(&entry), &mut chain)?
            {
                text = edited;
            }
        }
        if old.as_deref() != Some(text.as_str()) {
            writes.push((layout.config.clone(), old, text));
        }
    } else {
        for file in other_hook_files(layout)? {
            let Some(old) = read_if_present(&file)? else {
                continue;
            };
            let mut text = old.clone();
            for (event, _) in layout.events {
                if let Some(edited) = take_over(&file, &text, event, None, &mut chain)? {
                    text = edited;
                }
            }
            if text != old {
                writes.push((file, Some(old), text));
            }
        }
        let mut hooks = Map::new();
        for (event, ours) in layout.events {
            hooks.insert((*event).to_owned(), json!([layout.entry(config, ours)?]));
        }
        let ours = layout.config.join(COPILOT_FILE);
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&json!({"version": 1, "hooks": hooks}))
                .unwrap_or_default()
        );
        let old = read_if_present(&ours)?;
        if old.as_deref() != Some(text.as_str()) {
            writes.push((ours, old, text));
        }
    }
    if writes.is_empty() && chain == before {
        write_stdout(&format!(
            "copilot-bridge's hooks are already installed for {} ({}).\n",
            layout.agent,
            layout.config.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    // The user's hooks are kept before they leave their files.
    if chain != before {
        let old = read_if_present(&layout.chain)?;
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&chain).unwrap_or_default()
        );
        replace_file(&layout.chain, old.as_deref(), &text)?;
    }
    let mut report = String::new();
    for (file, old, text) in &writes {
        let backup = replace_file(file, old.as_deref(), text)?;
        let _ = writeln!(report, "Wrote {}.", file.display());
        if let Some(backup) = backup {
            let _ = writeln!(report, "Backup of the previous file: {}", backup.display());
        }
    }
    let chained: usize = chain["hooks"].as_object().map_or(0, |events| {
        events
            .values()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .sum()
    });
    let _ = writeln!(
        report,
        "copilot-bridge now answers {}'s hooks; {chained} hook(s) of yours run through it ({}).",
        layout.agent,
        layout.chain.display()
    );
    write_stdout(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// The Copilot CLI hook files of the directory other than ours.
fn other_hook_files(layout: &Layout) -> Result<Vec<PathBuf>, Failure> {
    let entries = match std::fs::read_dir(&layout.config) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(Failure::internal(format!(
                "cannot list {}: {err}",
                layout.config.display()
            )));
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .filter(|path| path.file_name().is_some_and(|name| name != COPILOT_FILE))
        .collect();
    files.sort();
    Ok(files)
}

fn uninstall(layout: &Layout) -> Result<ExitCode, Failure> {
    let chain = read_chain(layout)?;
    let restore = chain["restore"].as_object().cloned().unwrap_or_default();
    let mut report = String::new();
    let mut touched = layout
        .is_claude()
        .then(|| layout.config.clone())
        .into_iter()
        .collect::<Vec<_>>();
    touched.extend(restore.keys().map(PathBuf::from));
    touched.sort();
    touched.dedup();
    for file in touched {
        let Some(old) = read_if_present(&file)? else {
            continue;
        };
        let mut text = old.clone();
        let document = json_edit::parse(&text).map_err(|err| edit_failure(&file, &err))?;
        for (event, _) in layout.events {
            let current: Vec<Value> = json_edit::get_at(&document, &["hooks", event])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let kept: Vec<Value> = current
                .iter()
                .filter(|entry| !is_ours(entry))
                .cloned()
                .collect();
            let mut restored = kept.clone();
            if let Some(theirs) = restore
                .get(&file.display().to_string())
                .and_then(|events| events.get(*event))
                .and_then(Value::as_array)
            {
                restored.extend(theirs.iter().cloned());
            }
            let edited = if restored.is_empty() && !current.is_empty() {
                json_edit::remove_at(&text, &["hooks", event])
            } else if restored != current {
                json_edit::set_at(&text, &["hooks", event], &Value::Array(restored))
            } else {
                Ok(None)
            };
            if let Some(edited) = edited.map_err(|err| edit_failure(&file, &err))? {
                text = edited;
            }
        }
        if text != old {
            let backup = replace_file(&file, Some(&old), &text)?;
            let _ = writeln!(report, "Restored {}.", file.display());
            if let Some(backup) = backup {
                let _ = writeln!(report, "Backup of the previous file: {}", backup.display());
            }
        }
    }
    if !layout.is_claude() {
        remove_if_present(&layout.config.join(COPILOT_FILE), &mut report)?;
    }
    remove_if_present(&layout.chain, &mut report)?;
    if report.is_empty() {
        report = format!(
            "copilot-bridge's hooks are not installed for {}.\n",
            layout.agent
        );
    }
    write_stdout(&report)?;
    Ok(ExitCode::SUCCESS)
}

fn remove_if_present(file: &Path, report: &mut String) -> Result<(), Failure> {
    match std::fs::remove_file(file) {
        Ok(()) => {
            let _ = writeln!(report, "Removed {}.", file.display());
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Failure::internal(format!(
            "cannot remove {}: {err}",
            file.display()
        ))),
    }
}

fn status(config: &BridgeConfig, layout: &Layout) -> Result<ExitCode, Failure> {
    let chain = read_chain(layout)?;
    let file = if layout.is_claude() {
        layout.config.clone()
    } else {
        layout.config.join(COPILOT_FILE)
    };
    let document = match read_if_present(&file)? {
        Some(text) => json_edit::parse(&text).map_err(|err| edit_failure(&file, &err))?,
        None => json!({}),
    };
    let mut report = format!("{} hooks in {}:\n", layout.agent, file.display());
    for (event, ours) in layout.events {
        let installed = json_edit::get_at(&document, &["hooks", event])
            .and_then(Value::as_array)
            .is_some_and(|entries| entries.iter().any(is_ours));
        let chained = chain["hooks"][*event].as_array().map_or(0, Vec::len);
        let _ = writeln!(
            report,
            "  {event:20} {:14} {chained} of yours chained ({ours})",
            if installed {
                "installed"
            } else {
                "not installed"
            }
        );
    }
    let _ = writeln!(report, "state directory: {}", config.home.display());
    write_stdout(&report)?;
    Ok(ExitCode::SUCCESS)
}
