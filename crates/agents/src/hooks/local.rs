//! This machine's part of a project-scope install: the binary the shared
//! wrapper runs (`COPILOT_BRIDGE_BIN`) and a configured state directory or
//! port, where the agent keeps settings that are not committed. Claude
//! Code: the `env` of `.claude/settings.local.json`, which it gives every
//! process it starts, hooks included; the file is kept out of git through
//! `.git/info/exclude` (this clone's own list, itself never committed).
//! The Copilot CLI has no such file: `install` says what to export.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{BINARY_VARIABLE, Layout};
use crate::error::AgentsError;
use crate::json_edit::{self, read_if_present};
use crate::program::Program;

/// Claude Code's settings of this machine for a project.
pub const CLAUDE_LOCAL_FILE: &str = "settings.local.json";

/// The variables this machine's hooks need, with their values.
fn machine_env(program: &Program) -> Vec<(&'static str, String)> {
    let mut env = vec![(BINARY_VARIABLE, program.path_text())];
    env.extend(program.daemon_env());
    env
}

/// Project scope, Claude Code: its settings of this machine.
pub(super) fn local_file(layout: &Layout) -> Option<PathBuf> {
    layout.project.as_ref()?;
    let settings_dir = layout.config.parent()?;
    layout
        .is_claude()
        .then(|| settings_dir.join(CLAUDE_LOCAL_FILE))
}

/// `text` of the local settings with our variables in `env`; the names
/// set that were not there before are added to `added` (so uninstall
/// takes out only those).
pub(super) fn with_machine_env(
    program: &Program,
    file: &Path,
    text: &str,
    added: &mut Vec<String>,
) -> Result<Option<String>, AgentsError> {
    let document = json_edit::parse(text).map_err(super::edit_failure(file))?;
    let mut text = text.to_owned();
    let mut changed = false;
    for (name, value) in machine_env(program) {
        if json_edit::get_at(&document, &["env", name]).is_none() {
            added.push(name.to_owned());
        }
        if let Some(edited) = json_edit::set_at(&text, &["env", name], &json!(value))
            .map_err(super::edit_failure(file))?
        {
            text = edited;
            changed = true;
        }
    }
    Ok(changed.then_some(text))
}

/// `text` without the variables install added (`added`), and without an
/// `env` left empty.
pub(super) fn without_machine_env(
    file: &Path,
    text: &str,
    added: &[String],
) -> Result<Option<String>, AgentsError> {
    let mut current = text.to_owned();
    for name in added {
        if let Some(edited) =
            json_edit::remove_at(&current, &["env", name]).map_err(super::edit_failure(file))?
        {
            current = edited;
        }
    }
    let document = json_edit::parse(&current).map_err(super::edit_failure(file))?;
    if json_edit::get_at(&document, &["env"]).is_some_and(|env| env == &json!({}))
        && let Some(edited) =
            json_edit::remove_at(&current, &["env"]).map_err(super::edit_failure(file))?
    {
        current = edited;
    }
    Ok((current != text).then_some(current))
}

/// Whether `text` of `file` holds no setting at all.
pub(super) fn is_empty(file: &Path, text: &str) -> Result<bool, AgentsError> {
    let document = json_edit::parse(text).map_err(super::edit_failure(file))?;
    Ok(document == json!({}))
}

/// Keeps `file` (inside the project) out of git in this clone only: a
/// line in `.git/info/exclude`. What was done, for the report.
pub(super) fn exclude_from_git(project: &Path, file: &Path) -> Result<String, AgentsError> {
    let git = project.join(".git");
    let Ok(relative) = file.strip_prefix(project) else {
        return Ok(String::new());
    };
    if !git.is_dir() {
        return Ok(String::new());
    }
    let exclude = git.join("info").join("exclude");
    let line = format!("/{}", relative.display());
    let old = read_if_present(&exclude)?.unwrap_or_default();
    if old.lines().any(|existing| existing.trim() == line) {
        return Ok(String::new());
    }
    let mut text = old;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = writeln!(text, "{line}");
    if let Some(dir) = exclude.parent() {
        std::fs::create_dir_all(dir).map_err(|source| AgentsError::Write {
            path: exclude.clone(),
            source,
        })?;
    }
    json_edit::write_atomically(&exclude, &text)?;
    Ok(format!(
        "{} is this machine's, kept out of git by {}.\n",
        relative.display(),
        exclude.display()
    ))
}

/// Project scope, an agent without local settings (the Copilot CLI): what
/// the user must export where the agent runs, if anything.
pub(super) fn advice(program: &Program, layout: &Layout) -> String {
    if layout.project.is_none() || local_file(layout).is_some() {
        return String::new();
    }
    // Unset, the hook runs the `copilot-bridge` on PATH: maybe another.
    let needed = machine_env(program);
    let mut text = format!(
        "The hook files name no path of this machine; in the shell that runs {}:\n",
        layout.agent_name()
    );
    for (name, value) in needed {
        let _ = writeln!(text, "  export {name}={}", super::command::quote(&value));
    }
    text
}

/// The `added` list kept in the chain file.
pub(super) fn added_names(chain: &Value) -> Vec<String> {
    chain["localEnv"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
