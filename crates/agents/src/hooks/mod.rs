//! What `copilot-bridge hooks install|uninstall|status --agent
//! claude|copilot [--scope project|user]` does (see docs/hooks.md).
//!
//! Installing puts one wrapper per event in the agent's hook configuration:
//! `copilot-bridge hook EVENT --agent AGENT --chain FILE`, which runs our
//! hook and the user's own hooks of that event and answers once for both
//! (`hook/chain.rs`). The user's hooks move into the chain file, with where
//! they came from, so `uninstall` puts them back. Every file is backed up
//! before it changes (into the state directory's `backups/`, never beside
//! a file a repository holds), edited in place (other settings, comments
//! and formatting kept) and written atomically; running it twice changes
//! nothing the second time. `uninstall` puts back the very bytes of each
//! file it finds as `install` left it (`restore.rs`).
//!
//! Project scope writes files a team commits, so they name no path of
//! this machine: the wrapper runs `${COPILOT_BRIDGE_BIN:-copilot-bridge}`
//! and finds the chain file through the project directory the agent
//! exports; this machine's part (the binary, a configured state directory
//! or port) goes where the agent keeps settings that are not committed
//! (`local.rs`).

mod command;
mod local;
mod restore;

pub use command::{
    BINARY_VARIABLE, entry, hook_command, is_our_wrapper, is_ours, portable_hook_command,
};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bridge_policy::agent_tools::Agent;
use serde_json::{Map, Value, json};

use crate::env::{AgentEnv, Scope};
use crate::error::AgentsError;
use crate::hook::flag_name;
use crate::json_edit::{self, read_if_present};
use crate::program::Program;

/// Claude Code's events we install for, with our names.
pub const CLAUDE_EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreToolUse", "pre-tool-use"),
    ("PostToolUse", "post-tool-use"),
    ("SessionEnd", "session-end"),
];
/// Codex's: Claude Code's names, and `PermissionRequest` (its own
/// approval prompt), but no session end (its `Stop` ends a turn).
pub const CODEX_EVENTS: &[(&str, &str)] = &[
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreToolUse", "pre-tool-use"),
    ("PermissionRequest", "permission-request"),
    ("PostToolUse", "post-tool-use"),
];
/// The Copilot CLI's.
pub const COPILOT_EVENTS: &[(&str, &str)] = &[
    ("sessionStart", "session-start"),
    ("userPromptSubmitted", "user-prompt-submit"),
    ("preToolUse", "pre-tool-use"),
    ("postToolUse", "post-tool-use"),
    ("sessionEnd", "session-end"),
];
/// Our own hook file in a Copilot CLI hooks directory.
pub const COPILOT_FILE: &str = "copilot-bridge.json";
/// The chain file's name, beside the agent's configuration.
pub const CHAIN_FILE: &str = "copilot-bridge-hooks.json";

/// The agent's events we install for, with our names.
pub fn events(agent: Agent) -> &'static [(&'static str, &'static str)] {
    match agent {
        Agent::ClaudeCode => CLAUDE_EVENTS,
        Agent::CopilotCli => COPILOT_EVENTS,
        Agent::Codex => CODEX_EVENTS,
    }
}

/// Where one agent keeps its hooks in one scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub agent: Agent,
    /// Claude: its settings.json. Codex: its hooks.json. Copilot: the
    /// hooks directory.
    pub config: PathBuf,
    /// The user's hooks we run through ours, and where they came from.
    pub chain: PathBuf,
    /// Project scope: the project directory. Its files are shared, so
    /// what we write there names no path of this machine.
    pub project: Option<PathBuf>,
}

impl Layout {
    /// `agent`'s hooks of `scope`.
    pub fn new(agent: Agent, scope: Scope<'_>, env: &AgentEnv) -> Result<Self, AgentsError> {
        let dir = match agent {
            Agent::ClaudeCode => env.claude_dir(scope),
            Agent::CopilotCli => env.copilot_dir(scope),
            Agent::Codex => env.codex_dir(scope),
        }
        .ok_or(AgentsError::NoHomeForUserScope)?;
        let config = match agent {
            Agent::ClaudeCode => dir.join("settings.json"),
            Agent::CopilotCli => dir.join("hooks"),
            Agent::Codex => dir.join("hooks.json"),
        };
        let project = match scope {
            Scope::User => None,
            Scope::Project(dir) => Some(dir.to_owned()),
        };
        Ok(Self {
            agent,
            config,
            chain: dir.join(CHAIN_FILE),
            project,
        })
    }

    /// The agent as `--agent` names it, in messages.
    pub fn agent_name(&self) -> &'static str {
        flag_name(self.agent)
    }

    pub fn events(&self) -> &'static [(&'static str, &'static str)] {
        events(self.agent)
    }

    pub fn is_claude(&self) -> bool {
        self.agent == Agent::ClaudeCode
    }

    /// Whether the hooks are one file's `hooks` table (Claude Code's
    /// settings.json, Codex's hooks.json), not a directory of files.
    pub fn is_one_file(&self) -> bool {
        self.agent != Agent::CopilotCli
    }

    /// The file our entries are in: Claude's settings.json, Codex's
    /// hooks.json, or our own file in the Copilot CLI's hooks directory.
    pub fn our_file(&self) -> PathBuf {
        if self.is_one_file() {
            self.config.clone()
        } else {
            self.config.join(COPILOT_FILE)
        }
    }

    /// Our entry for `event` (our name), as the agent's configuration
    /// holds it: the wrapper that also runs the chained hooks.
    pub fn entry(&self, program: &Program, event: &str) -> Value {
        let command = match self.chain_in_project() {
            Some(relative) => portable_hook_command(self.agent, event, &relative),
            None => hook_command(program, self.agent, event, Some(&self.chain)),
        };
        entry(self.agent, &command, program.hook_timeout_secs())
    }

    /// Project scope: the chain file's path inside the project.
    fn chain_in_project(&self) -> Option<String> {
        let project = self.project.as_ref()?;
        let relative = self.chain.strip_prefix(project).ok()?;
        Some(relative.display().to_string())
    }

    /// How the chain file names `file`: inside the project relative to it
    /// (the chain file is shared too), else whole.
    fn key_of(&self, file: &Path) -> String {
        self.project
            .as_ref()
            .and_then(|project| file.strip_prefix(project).ok())
            .unwrap_or(file)
            .display()
            .to_string()
    }

    /// The file a key of [`Self::key_of`] names.
    fn file_of(&self, key: &str) -> PathBuf {
        match &self.project {
            Some(project) => project.join(key),
            None => PathBuf::from(key),
        }
    }
}

/// The chain file: `{version, hooks: {EVENT: [...]}, restore: {FILE: {EVENT: [...]}}}`.
fn read_chain(layout: &Layout) -> Result<Value, AgentsError> {
    match read_if_present(&layout.chain)? {
        Some(text) => serde_json::from_str(&text).map_err(|source| AgentsError::ChainNotJson {
            path: layout.chain.clone(),
            source,
        }),
        None => Ok(json!({"version": 1, "hooks": {}, "restore": {}})),
    }
}

fn edit_failure(file: &Path) -> impl FnOnce(json_edit::EditError) -> AgentsError + '_ {
    |source| AgentsError::EditHooks {
        path: file.to_owned(),
        source,
    }
}

/// Takes the user's entries of `event` out of `file`'s text (into `chain`)
/// and returns the text with ours, or theirs left out (`ours: None`).
fn take_over(
    layout: &Layout,
    file: &Path,
    text: &str,
    event: &str,
    ours: Option<&Value>,
    chain: &mut Value,
) -> Result<Option<String>, AgentsError> {
    let document = json_edit::parse(text).map_err(edit_failure(file))?;
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
        let key = layout.key_of(file);
        push_all(&mut chain["restore"][key.as_str()], event, &theirs);
    }
    let edited = match ours {
        Some(ours) => json_edit::set_at(text, &["hooks", event], &json!([ours])),
        None if theirs.is_empty() => Ok(None),
        None => json_edit::remove_at(text, &["hooks", event]),
    };
    edited.map_err(edit_failure(file))
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

/// Puts our wrapper in front of every event of `layout`, the user's hooks
/// of those events moved into the chain file: what was done, for the user.
pub fn install(program: &Program, layout: &Layout) -> Result<String, AgentsError> {
    let mut chain = read_chain(layout)?;
    let before = chain.clone();
    // (file, old text, new text) to write once everything is decided.
    let mut writes: Vec<(PathBuf, Option<String>, String)> = Vec::new();
    if layout.is_one_file() {
        let old = read_if_present(&layout.config)?;
        let mut text = old.clone().unwrap_or_default();
        for (event, ours) in layout.events() {
            let entry = layout.entry(program, ours);
            if let Some(edited) = take_over(
                layout,
                &layout.config,
                &text,
                event,
                Some(&entry),
                &mut chain,
            )? {
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
            for (event, _) in layout.events() {
                if let Some(edited) = take_over(layout, &file, &text, event, None, &mut chain)? {
                    text = edited;
                }
            }
            if text != old {
                writes.push((file, Some(old), text));
            }
        }
        let mut hooks = Map::new();
        for (event, ours) in layout.events() {
            hooks.insert((*event).to_owned(), json!([layout.entry(program, ours)]));
        }
        let ours = layout.our_file();
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
    if let Some(file) = local::local_file(layout) {
        let old = read_if_present(&file)?;
        let mut added = local::added_names(&chain);
        if let Some(text) =
            local::with_machine_env(program, &file, old.as_deref().unwrap_or(""), &mut added)?
        {
            added.sort();
            added.dedup();
            chain["localEnv"] = json!(added);
            if old.is_none() {
                chain["localCreated"] = json!(true);
            }
            writes.push((file, old, text));
        }
    }
    // Not the local file's texts: they name this machine's paths, and the
    // chain file is shared.
    let local = local::local_file(layout);
    for (file, old, text) in writes
        .iter()
        .filter(|(file, ..)| Some(file) != local.as_ref())
    {
        restore::record(&mut chain, layout, file, old.as_deref(), text);
    }
    // The wrapper names the chain file: it is written even when it chains
    // nothing, since a missing one is refused.
    let chain_missing = read_if_present(&layout.chain)?.is_none();
    if writes.is_empty() && chain == before && !chain_missing {
        return Ok(format!(
            "copilot-bridge's hooks are already installed for {} ({}).\n",
            layout.agent_name(),
            layout.config.display()
        ));
    }
    // The user's hooks are kept before they leave their files.
    if chain != before || chain_missing {
        let old = read_if_present(&layout.chain)?;
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&chain).unwrap_or_default()
        );
        restore::replace_file(&program.home, &layout.chain, old.as_deref(), &text)?;
    }
    let mut report = String::new();
    for (file, old, text) in &writes {
        let backup = restore::replace_file(&program.home, file, old.as_deref(), text)?;
        let _ = writeln!(report, "Wrote {}.", file.display());
        if let Some(backup) = backup {
            let _ = writeln!(report, "Backup of the previous file: {}", backup.display());
        }
    }
    if let (Some(project), Some(file)) = (&layout.project, local::local_file(layout)) {
        report.push_str(&local::exclude_from_git(project, &file)?);
    }
    report.push_str(&local::advice(program, layout));
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
        layout.agent_name(),
        layout.chain.display()
    );
    Ok(report)
}

/// The Copilot CLI hook files of the directory other than ours.
fn other_hook_files(layout: &Layout) -> Result<Vec<PathBuf>, AgentsError> {
    let entries = match std::fs::read_dir(&layout.config) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(AgentsError::List {
                path: layout.config.clone(),
                source,
            });
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

/// Takes our wrappers out of `layout` and puts the user's hooks back where
/// they came from, the backups going into the state directory `home`: what
/// was done, for the user.
pub fn uninstall(layout: &Layout, home: &Path) -> Result<String, AgentsError> {
    let chain = read_chain(layout)?;
    let restore_entries = chain["restore"].as_object().cloned().unwrap_or_default();
    let mut report = String::new();
    let mut touched = layout
        .is_one_file()
        .then(|| layout.config.clone())
        .into_iter()
        .collect::<Vec<_>>();
    touched.extend(restore_entries.keys().map(|key| layout.file_of(key)));
    touched.extend(restore::recorded(&chain, layout));
    touched.extend(local::local_file(layout));
    touched.sort();
    touched.dedup();
    for file in touched {
        let old = read_if_present(&file)?;
        if let Some(original) = restore::original(&chain, layout, &file, old.as_deref()) {
            match original {
                Some(text) => {
                    restore::replace_file(home, &file, old.as_deref(), &text)?;
                    let _ = writeln!(report, "Restored {} as it was.", file.display());
                }
                None => remove_if_present(&file, &mut report)?,
            }
            continue;
        }
        let Some(old) = old else {
            continue;
        };
        let mut text = old.clone();
        if Some(&file) == local::local_file(layout).as_ref() {
            if let Some(edited) =
                local::without_machine_env(&file, &text, &local::added_names(&chain))?
            {
                text = edited;
            }
            if chain["localCreated"] == true && local::is_empty(&file, &text)? {
                remove_if_present(&file, &mut report)?;
                continue;
            }
        } else {
            text = without_our_entries(layout, &file, &text, &restore_entries)?;
        }
        if text != old {
            let backup = restore::replace_file(home, &file, Some(&old), &text)?;
            let _ = writeln!(report, "Restored {}.", file.display());
            if let Some(backup) = backup {
                let _ = writeln!(report, "Backup of the previous file: {}", backup.display());
            }
        }
    }
    if !layout.is_one_file() {
        remove_if_present(&layout.our_file(), &mut report)?;
    }
    remove_if_present(&layout.chain, &mut report)?;
    if report.is_empty() {
        report = format!(
            "copilot-bridge's hooks are not installed for {}.\n",
            layout.agent_name()
        );
    }
    Ok(report)
}

/// `text` of `file` with our wrappers taken out and the user's hooks of
/// each event put back from `restore_entries`.
fn without_our_entries(
    layout: &Layout,
    file: &Path,
    text: &str,
    restore_entries: &Map<String, Value>,
) -> Result<String, AgentsError> {
    let mut text = text.to_owned();
    let document = json_edit::parse(&text).map_err(edit_failure(file))?;
    for (event, _) in layout.events() {
        let current: Vec<Value> = json_edit::get_at(&document, &["hooks", event])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut restored: Vec<Value> = current
            .iter()
            .filter(|entry| !is_ours(entry))
            .cloned()
            .collect();
        if let Some(theirs) = restore_entries
            .get(&layout.key_of(file))
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
        if let Some(edited) = edited.map_err(edit_failure(file))? {
            text = edited;
        }
    }
    Ok(text)
}

fn remove_if_present(file: &Path, report: &mut String) -> Result<(), AgentsError> {
    match std::fs::remove_file(file) {
        Ok(()) => {
            let _ = writeln!(report, "Removed {}.", file.display());
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(AgentsError::Remove {
            path: file.to_owned(),
            source,
        }),
    }
}

/// Which of `layout`'s events our hook answers and how many of the user's
/// hooks run through it; `home` is the state directory, said last.
pub fn status(layout: &Layout, home: &Path) -> Result<String, AgentsError> {
    let chain = read_chain(layout)?;
    let file = layout.our_file();
    let document = match read_if_present(&file)? {
        Some(text) => json_edit::parse(&text).map_err(edit_failure(&file))?,
        None => json!({}),
    };
    let mut report = format!("{} hooks in {}:\n", layout.agent_name(), file.display());
    for (event, ours) in layout.events() {
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
    let _ = writeln!(report, "state directory: {}", home.display());
    Ok(report)
}
