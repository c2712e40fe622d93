//! Permission rules: blocked tools → blocked argument patterns → ask tools →
//! allowlist → default allow. The first rule that fires decides, and the
//! verdict's reason names it.

use std::collections::HashMap;

use bridge_protocol::Decision;
use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::{RegexBuilder, RegexSet, RegexSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::PolicyError;
use crate::protected::ProtectedFiles;

/// Compiled-program bound per blocked pattern: ordinary patterns need a few
/// KiB; a pattern over this is a mistake or an attempt to exhaust memory.
pub const PATTERN_SIZE_LIMIT: usize = 1024 * 1024;
/// Lazy-DFA cache bound per pattern; past it the engine falls back to slower
/// matching instead of growing.
pub const PATTERN_DFA_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// The rules as written in configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "snake_case", deny_unknown_fields)]
pub struct PermissionRules {
    /// Empty means every tool not otherwise blocked is allowed.
    pub allowed_tools: Vec<String>,
    pub blocked_tools: Vec<String>,
    pub ask_tools: Vec<String>,
    /// Regexes matched against the arguments serialized as JSON.
    pub blocked_patterns: Vec<String>,
    /// Workspace files no tool, agent or command may write, besides the
    /// built-in ones (`crate::protected`), gitignore-style.
    pub protected_files: Vec<String>,
}

/// Compiled rules.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    blocked_tools: ToolNames,
    blocked_patterns: BlockedPatterns,
    ask_tools: ToolNames,
    allowed_tools: ToolNames,
    protected: ProtectedFiles,
}

impl PermissionPolicy {
    pub fn compile(rules: &PermissionRules) -> Result<Self, PolicyError> {
        Ok(Self {
            blocked_tools: ToolNames::compile(&rules.blocked_tools, "permissions.blocked_tools")?,
            blocked_patterns: BlockedPatterns::compile(&rules.blocked_patterns)?,
            ask_tools: ToolNames::compile(&rules.ask_tools, "permissions.ask_tools")?,
            allowed_tools: ToolNames::compile(&rules.allowed_tools, "permissions.allowed_tools")?,
            protected: ProtectedFiles::compile(&rules.protected_files)?,
        })
    }

    /// The files no door may write (built in, and configured).
    pub fn protected_files(&self) -> &ProtectedFiles {
        &self.protected
    }

    /// Whether `permissions.blocked_tools` names `tool`: a tool no call of
    /// may run, so a door need not offer it at all.
    pub fn blocks_tool(&self, tool: &str) -> bool {
        self.blocked_tools.first_match(tool).is_some()
    }

    pub fn evaluate(&self, tool: &str, args: &Value) -> Decision {
        if let Some(entry) = self.blocked_tools.first_match(tool) {
            return Decision::deny(format!(
                "tool {tool} is blocked by permissions.blocked_tools entry {entry:?}"
            ));
        }
        if !self.blocked_patterns.is_empty() {
            let Ok(serialized) = serde_json::to_string(args) else {
                return Decision::deny(format!(
                    "arguments of {tool} cannot be serialized to check permissions.blocked_patterns"
                ));
            };
            if let Some((index, pattern)) = self.blocked_patterns.first_match(&serialized) {
                return Decision::deny(format!(
                    "arguments of {tool} match permissions.blocked_patterns[{index}] {pattern:?}"
                ));
            }
        }
        if let Some(entry) = self.ask_tools.first_match(tool) {
            return Decision::ask(format!(
                "tool {tool} needs approval (permissions.ask_tools entry {entry:?})"
            ));
        }
        if !self.allowed_tools.is_empty() && self.allowed_tools.first_match(tool).is_none() {
            return Decision::deny(format!(
                "tool {tool} is not in permissions.allowed_tools {:?}",
                self.allowed_tools.entries
            ));
        }
        Decision::allow()
    }
}

/// Tool name entries: exact names, or globs when they contain `*`, `?`, `[`
/// or `{` (e.g. `github__*`).
#[derive(Debug, Clone)]
struct ToolNames {
    entries: Vec<String>,
    exact: HashMap<String, usize>,
    globs: GlobSet,
    /// For each glob in `globs`, its index in `entries`.
    glob_entries: Vec<usize>,
}

impl ToolNames {
    fn compile(entries: &[String], key: &str) -> Result<Self, PolicyError> {
        let mut exact = HashMap::new();
        let mut builder = GlobSetBuilder::new();
        let mut glob_entries = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let invalid = |reason: String| PolicyError::InvalidPattern {
                key: format!("{key}[{index}]"),
                pattern: entry.clone(),
                reason,
            };
            if entry.trim().is_empty() {
                return Err(invalid("empty tool name".to_owned()));
            }
            if entry.contains(['*', '?', '[', '{']) {
                let glob = Glob::new(entry).map_err(|err| invalid(err.kind().to_string()))?;
                builder.add(glob);
                glob_entries.push(index);
            } else {
                exact.entry(entry.clone()).or_insert(index);
            }
        }
        let globs = builder.build().map_err(|err| PolicyError::InvalidPattern {
            key: key.to_owned(),
            pattern: String::new(),
            reason: err.to_string(),
        })?;
        Ok(Self {
            entries: entries.to_vec(),
            exact,
            globs,
            glob_entries,
        })
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn first_match(&self, tool: &str) -> Option<&str> {
        let exact = self.exact.get(tool).copied();
        let glob = if self.glob_entries.is_empty() {
            None
        } else {
            self.globs
                .matches(tool)
                .first()
                .and_then(|&glob_index| self.glob_entries.get(glob_index).copied())
        };
        let index = match (exact, glob) {
            (Some(a), Some(b)) => a.min(b),
            (one, other) => one.or(other)?,
        };
        self.entries.get(index).map(String::as_str)
    }
}

#[derive(Debug, Clone)]
struct BlockedPatterns {
    patterns: Vec<String>,
    /// One pass over the arguments for all patterns.
    set: RegexSet,
}

impl BlockedPatterns {
    fn compile(patterns: &[String]) -> Result<Self, PolicyError> {
        // Each pattern alone first, so an error names the one at fault.
        for (index, pattern) in patterns.iter().enumerate() {
            RegexBuilder::new(pattern)
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT)
                .build()
                .map_err(|err| PolicyError::InvalidPattern {
                    key: format!("permissions.blocked_patterns[{index}]"),
                    pattern: pattern.clone(),
                    reason: err.to_string(),
                })?;
        }
        let count = patterns.len().max(1);
        let set = RegexSetBuilder::new(patterns)
            .size_limit(PATTERN_SIZE_LIMIT.saturating_mul(count))
            .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT.saturating_mul(count))
            .build()
            .map_err(|err| PolicyError::InvalidPattern {
                key: "permissions.blocked_patterns".to_owned(),
                pattern: patterns.join(" | "),
                reason: err.to_string(),
            })?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    fn first_match(&self, text: &str) -> Option<(usize, &str)> {
        let index = self.set.matches(text).iter().next()?;
        self.patterns
            .get(index)
            .map(|pattern| (index, pattern.as_str()))
    }
}
