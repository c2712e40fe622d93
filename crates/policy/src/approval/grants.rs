//! What an "allow" beyond this call reaches: [`GrantKey`]s, the keys a
//! call asks on (a command's program and subcommand as the shell analysis
//! sees them run, a tool the permission rules ask for); a session's grants
//! ([`SessionGrants`]); and rules kept per workspace in the state directory
//! ([`RuleStore`]), with an optional expiry.
//!
//! A grant only ever answers a question the policy would have asked: a
//! blocked tool, a dangerous command or a path outside the workspace is
//! denied before anyone is asked, so no grant can reach it.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::Surface;
use crate::PolicyError;

/// One thing a call needs granted to run without asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GrantKey {
    /// A command's program (as written: `./gradlew` is not `gradlew`) and
    /// subcommand, as it will run: `cargo test`, `python3 -m pytest`,
    /// `npm run build`. A line of several commands needs each one's.
    Run { command: String },
    /// A tool the permission rules ask for (`permissions.ask_tools`),
    /// whatever its arguments (a tool that names no file: a provider's).
    Tool { tool: String },
    /// A file tool the permission rules ask for, on one file: the path
    /// relative to the workspace root as the containment check resolved it
    /// (`src/lib.rs`, whatever `./src/../src/lib.rs` the call spelled).
    File { tool: String, path: String },
}

impl GrantKey {
    /// The rule's text, as it is shown before it is kept, listed and
    /// revoked: `run cargo test`, `tool github__create_issue`.
    pub fn rule_text(&self) -> String {
        match self {
            Self::Run { command } => format!("run {command}"),
            Self::Tool { tool } => format!("tool {tool}"),
            Self::File { tool, path } => format!("tool {tool} on {path}"),
        }
    }

    /// Reads a rule's text back.
    pub fn from_rule_text(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Some((tool, path)) = text
            .strip_prefix("tool ")
            .and_then(|rest| rest.split_once(" on "))
        {
            let (tool, path) = (tool.trim(), path.trim());
            return (!tool.is_empty() && !tool.contains(' ') && !path.is_empty()).then(|| {
                Self::File {
                    tool: tool.to_owned(),
                    path: path.to_owned(),
                }
            });
        }
        let (kind, rest) = text.split_once(' ')?;
        let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
        if rest.is_empty() {
            return None;
        }
        match kind {
            "run" => Some(Self::Run { command: rest }),
            "tool" if !rest.contains(' ') => Some(Self::Tool { tool: rest }),
            _ => None,
        }
    }
}

/// What a session's people allowed for the rest of it.
#[derive(Debug, Default)]
pub struct SessionGrants {
    keys: Mutex<HashSet<GrantKey>>,
}

impl SessionGrants {
    pub fn grant(&self, keys: &[GrantKey]) {
        bridge_util::sync::lock(&self.keys).extend(keys.iter().cloned());
    }

    pub fn has(&self, key: &GrantKey) -> bool {
        bridge_util::sync::lock(&self.keys).contains(key)
    }

    /// Sorted.
    pub fn list(&self) -> Vec<GrantKey> {
        let mut keys: Vec<GrantKey> = bridge_util::sync::lock(&self.keys)
            .iter()
            .cloned()
            .collect();
        keys.sort();
        keys
    }
}

/// A grant kept for a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub workspace: PathBuf,
    /// [`GrantKey::rule_text`] of `key`.
    pub rule: String,
    pub key: GrantKey,
    /// Unix seconds.
    pub created_at: u64,
    /// Unix seconds; `None`: until revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    pub by: Surface,
}

impl Rule {
    pub fn is_live(&self, now: u64) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RuleFile {
    rules: Vec<Rule>,
}

/// Largest rule file read.
const MAX_RULE_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most rules kept in all (the oldest go first).
pub const MAX_RULES: usize = 1000;

/// Rules kept per workspace, in one owner-only JSON file of the state
/// directory (or in memory). The file is read again when another process
/// changed it, so a rule kept by one process reaches the others.
#[derive(Debug)]
pub struct RuleStore {
    path: Option<PathBuf>,
    state: Mutex<Loaded>,
}

#[derive(Debug, Default)]
struct Loaded {
    rules: Vec<Rule>,
    /// The file's modification time when read.
    seen: Option<SystemTime>,
}

/// Now, in Unix seconds.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

impl RuleStore {
    /// Rules that live as long as the process.
    pub fn in_memory() -> Self {
        Self {
            path: None,
            state: Mutex::new(Loaded::default()),
        }
    }

    /// The rules of `path` (none yet if it does not exist). A file that is
    /// not ours (a symlink, another user's) or not readable as rules is an
    /// error: nothing is granted from it.
    pub fn open(path: &Path) -> Result<Self, PolicyError> {
        let store = Self {
            path: Some(path.to_path_buf()),
            state: Mutex::new(Loaded::default()),
        };
        {
            let mut state = bridge_util::sync::lock(&store.state);
            store.refresh(&mut state)?;
        }
        Ok(store)
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn io_error(&self, source: io::Error) -> PolicyError {
        PolicyError::Io {
            path: self.path.as_ref().map_or_else(
                || "(rules in memory)".to_owned(),
                |p| p.display().to_string(),
            ),
            source,
        }
    }

    /// Reads the file again if it changed since it was read.
    fn refresh(&self, state: &mut Loaded) -> Result<(), PolicyError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let modified = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta.modified().ok(),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                state.rules.clear();
                state.seen = None;
                return Ok(());
            }
            Err(err) => return Err(self.io_error(err)),
        };
        if modified.is_some() && modified == state.seen {
            return Ok(());
        }
        let bytes = bridge_util::owner_only::read(path, MAX_RULE_FILE_BYTES)
            .map_err(|e| self.io_error(e))?;
        let file: RuleFile =
            serde_json::from_slice(&bytes).map_err(|err| PolicyError::InvalidPolicyFile {
                path: path.display().to_string(),
                reason: err.to_string(),
            })?;
        state.rules = file.rules;
        state.seen = modified;
        Ok(())
    }

    fn save(&self, state: &mut Loaded) -> Result<(), PolicyError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let file = RuleFile {
            rules: state.rules.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        bridge_util::owner_only::write_atomically(
            path,
            text.as_bytes(),
            bridge_util::owner_only::Replace::Private,
        )
        .map_err(|err| self.io_error(err))?;
        state.seen = std::fs::symlink_metadata(path)
            .ok()
            .and_then(|meta| meta.modified().ok());
        Ok(())
    }

    /// Whether a live rule of `workspace` grants `key`. A file that cannot
    /// be read grants nothing (and says so once in the log).
    pub fn grants(&self, workspace: &Path, key: &GrantKey) -> bool {
        let mut state = bridge_util::sync::lock(&self.state);
        if let Err(err) = self.refresh(&mut state) {
            tracing::warn!(error = %err, "approval rules unreadable: none apply");
            return false;
        }
        let now = unix_now();
        state
            .rules
            .iter()
            .any(|rule| rule.is_live(now) && rule.key == *key && rule.workspace == workspace)
    }

    /// Keeps a rule per key for `workspace` (an existing rule for the same
    /// key is replaced, so its expiry is the new one); expired rules are
    /// dropped, and the oldest past [`MAX_RULES`]. Returns the rules kept.
    pub fn add(
        &self,
        workspace: &Path,
        keys: &[GrantKey],
        expires_at: Option<u64>,
        by: Surface,
    ) -> Result<Vec<Rule>, PolicyError> {
        let mut state = bridge_util::sync::lock(&self.state);
        self.refresh(&mut state)?;
        let now = unix_now();
        state.rules.retain(|rule| {
            rule.is_live(now) && !(rule.workspace == workspace && keys.contains(&rule.key))
        });
        let added: Vec<Rule> = keys
            .iter()
            .map(|key| Rule {
                workspace: workspace.to_path_buf(),
                rule: key.rule_text(),
                key: key.clone(),
                created_at: now,
                expires_at,
                by,
            })
            .collect();
        state.rules.extend(added.iter().cloned());
        let excess = state.rules.len().saturating_sub(MAX_RULES);
        state.rules.drain(..excess);
        self.save(&mut state)?;
        Ok(added)
    }

    /// The live rules, for `workspace` only when given.
    pub fn list(&self, workspace: Option<&Path>) -> Result<Vec<Rule>, PolicyError> {
        let mut state = bridge_util::sync::lock(&self.state);
        self.refresh(&mut state)?;
        let now = unix_now();
        Ok(state
            .rules
            .iter()
            .filter(|rule| rule.is_live(now) && workspace.is_none_or(|w| rule.workspace == w))
            .cloned()
            .collect())
    }

    /// Removes the rules whose text is `text` (in `workspace` only, when
    /// given). Returns what was removed.
    pub fn revoke(&self, text: &str, workspace: Option<&Path>) -> Result<Vec<Rule>, PolicyError> {
        let Some(key) = GrantKey::from_rule_text(text) else {
            return Ok(Vec::new());
        };
        let mut state = bridge_util::sync::lock(&self.state);
        self.refresh(&mut state)?;
        let (removed, kept): (Vec<Rule>, Vec<Rule>) = std::mem::take(&mut state.rules)
            .into_iter()
            .partition(|rule| rule.key == key && workspace.is_none_or(|w| rule.workspace == w));
        state.rules = kept;
        if !removed.is_empty() {
            self.save(&mut state)?;
        }
        Ok(removed)
    }
}
