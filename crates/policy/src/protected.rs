//! Workspace files that make an agent or a tool run commands: whoever
//! writes one decides what the next session, the next `git commit` or the
//! next `cd` runs. They are protected like `.git/` and the policy file: no
//! door writes or deletes them — not a workspace tool, not an agent's own
//! edit seen by its hook, not a shell command — and nobody is asked; the
//! refusal says `protected file`. docs/policy.md lists them.
//!
//! The built-in list is checked without compiling anything (a hook
//! command's process pays for it on every tool call); the configuration
//! can add gitignore-style patterns (`[permissions] protected_files`), a
//! repository cannot take any away.

use std::sync::Arc;

use crate::PolicyError;
use crate::workspace_policy::{FileNames, GlobList};

/// One built-in protected place.
struct Entry {
    /// `/`-separated components of the file or directory.
    path: &'static str,
    /// A directory: everything in it is protected too.
    dir: bool,
    /// Only at the workspace root (else at any depth: a project in a
    /// subdirectory is a workspace of its own to the next agent).
    anchored: bool,
    /// What it is and why writing it runs code.
    what: &'static str,
}

const fn file(path: &'static str, what: &'static str) -> Entry {
    Entry {
        path,
        dir: false,
        anchored: false,
        what,
    }
}

const fn dir(path: &'static str, what: &'static str) -> Entry {
    Entry {
        path,
        dir: true,
        anchored: false,
        what,
    }
}

const BUILT_IN: &[Entry] = &[
    dir(
        ".git",
        "git's configuration and hooks run commands at the next git command",
    ),
    Entry {
        path: ".agent-policy.yaml",
        dir: false,
        anchored: true,
        what: "copilot-bridge's policy of this workspace",
    },
    file(
        "copilot-bridge-hooks.json",
        "the chain of the user's own agent hooks",
    ),
    file(
        ".claude/settings.json",
        "Claude Code's project settings: its hooks and permissions",
    ),
    file(
        ".claude/settings.local.json",
        "Claude Code's local settings: its hooks and permissions",
    ),
    dir(".claude/hooks", "Claude Code's hook scripts"),
    file(".mcp.json", "the MCP servers agents start"),
    dir(".github/hooks", "the Copilot CLI's hooks"),
    dir(".github/extensions", "the Copilot CLI's extensions"),
    file(
        ".github/copilot/settings.json",
        "the Copilot CLI's repository settings: its hooks",
    ),
    file(
        ".github/copilot/settings.local.json",
        "the Copilot CLI's local repository settings: its hooks",
    ),
    file(
        ".codex/config.toml",
        "Codex's project configuration: its MCP servers and hooks",
    ),
    file(".codex/hooks.json", "Codex's hooks"),
    file(".vscode/tasks.json", "VS Code's tasks"),
    file(".vscode/launch.json", "VS Code's launch configurations"),
    file(
        ".vscode/settings.json",
        "VS Code's workspace settings: terminal profiles and tool paths",
    ),
    file(
        ".vscode/mcp.json",
        "the MCP servers VS Code and the Copilot CLI start",
    ),
    file(".envrc", "direnv runs it when a shell enters the directory"),
    dir(".husky", "git hooks installed by husky"),
];

/// The protected files of every workspace: the built-in list and the
/// configured patterns. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ProtectedFiles {
    configured: Option<Arc<GlobList>>,
}

impl ProtectedFiles {
    /// The built-in list and `patterns` (gitignore-style, from
    /// `[permissions] protected_files`).
    pub fn compile(patterns: &[String]) -> Result<Self, PolicyError> {
        if patterns.is_empty() {
            return Ok(Self::default());
        }
        let globs = GlobList::compile(
            patterns.to_vec(),
            "permissions.protected_files",
            "config.toml",
            FileNames::HOST.case_insensitive(),
        )?;
        Ok(Self {
            configured: Some(Arc::new(globs)),
        })
    }

    /// Why the workspace-relative path `relative` (`/`-separated) may not
    /// be written or deleted, if it is protected.
    pub fn reason(&self, relative: &str) -> Option<String> {
        let names = FileNames::HOST;
        let path = names.normalize(relative);
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        if let Some(entry) = BUILT_IN
            .iter()
            .find(|entry| covers(entry, &components, names))
        {
            return Some(format!(
                "writing {relative} is denied: protected file ({}); only you can change it, outside any agent",
                entry.what
            ));
        }
        let pattern = self.configured.as_ref()?.first_match_with_parents(&path)?;
        Some(format!(
            "writing {relative} is denied: protected file (permissions.protected_files entry {pattern:?})"
        ))
    }

    /// Why deleting or moving away the directory `relative` is refused: it
    /// holds a protected place (`rm -rf .claude` takes the settings with
    /// it).
    pub fn reason_for_tree(&self, relative: &str) -> Option<String> {
        if let Some(reason) = self.reason(relative) {
            return Some(reason);
        }
        let names = FileNames::HOST;
        let path = names.normalize(relative);
        let removed: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let entry = BUILT_IN.iter().find(|entry| {
            let protected: Vec<&str> = entry.path.split('/').collect();
            removed.is_empty()
                || (removed.len() < protected.len()
                    && removed
                        .iter()
                        .zip(&protected)
                        .all(|(a, b)| names.same_name(a, b)))
        })?;
        Some(format!(
            "removing {relative} is denied: it holds a protected file ({}: {})",
            entry.path, entry.what
        ))
    }
}

/// Whether `entry` covers the file `components`.
fn covers(entry: &Entry, components: &[&str], names: FileNames) -> bool {
    let protected: Vec<&str> = entry.path.split('/').collect();
    let matches_at = |start: usize| {
        let rest = &components[start..];
        let long_enough = if entry.dir {
            rest.len() >= protected.len()
        } else {
            rest.len() == protected.len()
        };
        long_enough
            && rest
                .iter()
                .zip(&protected)
                .all(|(a, b)| names.same_name(a, b))
    };
    if entry.anchored {
        return matches_at(0);
    }
    (0..components.len()).any(matches_at)
}
