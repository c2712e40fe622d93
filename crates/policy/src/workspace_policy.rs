//! `.agent-policy.yaml` in the workspace root: write allow/deny globs and the
//! shell allow list.
//!
//! ```yaml
//! writes:
//!   allow: ["src/**/*.ts", "test/**/*.ts"]
//!   deny:  ["**/node_modules/**", "**/dist/**"]
//! shell:
//!   allow: ["npm test", "dotnet test"]
//! ```
//!
//! Globs use `/` as separator: `*` stays inside one directory, `**` crosses
//! directories.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

use bridge_protocol::Decision;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::PolicyError;

pub const POLICY_FILE_NAME: &str = ".agent-policy.yaml";

/// A policy file is a few lines; anything bigger is a mistake or an attack.
pub const MAX_POLICY_FILE_BYTES: u64 = 1024 * 1024;

/// Characters that let one allowed command prefix smuggle another command
/// (chaining, pipes, substitution, redirection). `&` covers `&&` and `&`.
const SHELL_CHAINING: &[&str] = &[";", "&", "|", "`", "$(", "\n", "\r", ">", "<"];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    writes: Option<WritesSection>,
    shell: Option<ShellSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WritesSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellSection {
    #[serde(default)]
    allow: Vec<String>,
}

/// A list of globs kept with their source text, so a verdict can quote the
/// pattern that fired.
#[derive(Debug, Clone)]
struct GlobList {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Default for GlobList {
    fn default() -> Self {
        Self {
            patterns: Vec::new(),
            set: GlobSet::empty(),
        }
    }
}

impl GlobList {
    fn compile(patterns: Vec<String>, key: &str, origin: &str) -> Result<Self, PolicyError> {
        let mut builder = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let invalid = |reason: String| PolicyError::InvalidPolicyFile {
                path: origin.to_owned(),
                reason: format!("{key}[{index}] {pattern:?}: {reason}"),
            };
            if pattern.trim().is_empty() {
                return Err(invalid("empty pattern".to_owned()));
            }
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|err| invalid(err.kind().to_string()))?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|err| PolicyError::InvalidPolicyFile {
                path: origin.to_owned(),
                reason: format!("{key}: {err}"),
            })?;
        Ok(Self { patterns, set })
    }

    fn first_match(&self, relative: &str) -> Option<&str> {
        self.set
            .matches(relative)
            .first()
            .and_then(|&index| self.patterns.get(index))
            .map(String::as_str)
    }
}

#[derive(Debug, Clone, Default)]
pub struct WorkspacePolicy {
    origin: Option<String>,
    write_allow: GlobList,
    write_deny: GlobList,
    shell_allow: Vec<String>,
}

impl WorkspacePolicy {
    /// Loads the policy file of `root`; a missing file is the empty policy.
    pub fn load(root: &Path) -> Result<Self, PolicyError> {
        let path = root.join(POLICY_FILE_NAME);
        let origin = path.display().to_string();
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(PolicyError::Io {
                    path: origin,
                    source,
                });
            }
        };
        let io_error = |source| PolicyError::Io {
            path: origin.clone(),
            source,
        };
        let too_big = || PolicyError::InvalidPolicyFile {
            path: origin.clone(),
            reason: format!("larger than {MAX_POLICY_FILE_BYTES} bytes"),
        };
        let metadata = file.metadata().map_err(io_error)?;
        if metadata.is_dir() {
            return Err(PolicyError::InvalidPolicyFile {
                path: origin,
                reason: "is a directory, not a file".to_owned(),
            });
        }
        if metadata.len() > MAX_POLICY_FILE_BYTES {
            return Err(too_big());
        }
        // The length can change (or lie, for special files) after the check:
        // the read itself is bounded too.
        let mut bytes = Vec::new();
        file.take(MAX_POLICY_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        if bytes.len() as u64 > MAX_POLICY_FILE_BYTES {
            return Err(too_big());
        }
        let text = String::from_utf8(bytes).map_err(|err| PolicyError::InvalidPolicyFile {
            path: origin.clone(),
            reason: format!("not valid UTF-8 ({err})"),
        })?;
        Self::from_yaml(&text, &origin)
    }

    /// Parses policy text; `origin` names the file in error messages.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, PolicyError> {
        let parsed: Option<PolicyFile> =
            serde_yaml_ng::from_str(text).map_err(|err| PolicyError::InvalidPolicyFile {
                path: origin.to_owned(),
                reason: err.to_string(),
            })?;
        let parsed = parsed.unwrap_or_default();
        let writes = parsed.writes.unwrap_or_default();
        let shell = parsed.shell.unwrap_or_default();
        let mut shell_allow = Vec::with_capacity(shell.allow.len());
        for (index, entry) in shell.allow.iter().enumerate() {
            let normalized = normalize_whitespace(entry);
            if normalized.is_empty() {
                return Err(PolicyError::InvalidPolicyFile {
                    path: origin.to_owned(),
                    reason: format!("shell.allow[{index}] is empty"),
                });
            }
            shell_allow.push(normalized);
        }
        Ok(Self {
            origin: Some(origin.to_owned()),
            write_allow: GlobList::compile(writes.allow, "writes.allow", origin)?,
            write_deny: GlobList::compile(writes.deny, "writes.deny", origin)?,
            shell_allow,
        })
    }

    /// May the workspace-relative path `relative` be written?
    ///
    /// A non-empty `writes.allow` is the user's consent to write those paths,
    /// so it also lifts read-only mode for them.
    pub fn write_decision(&self, relative: &str, read_only: bool) -> Decision {
        if relative == POLICY_FILE_NAME {
            return Decision::deny(format!(
                "{POLICY_FILE_NAME} cannot be written by a tool: the agent may not change its own policy"
            ));
        }
        if let Some(pattern) = self.deny_match(relative) {
            return Decision::deny(format!(
                "writing {relative} is denied: it matches writes.deny pattern {pattern:?} in {POLICY_FILE_NAME}"
            ));
        }
        if !self.write_allow.patterns.is_empty() {
            if self.write_allow.first_match(relative).is_some() {
                return Decision::allow();
            }
            return Decision::deny(format!(
                "writing {relative} is denied: it matches none of the writes.allow patterns {:?} in {POLICY_FILE_NAME}",
                self.write_allow.patterns
            ));
        }
        if read_only {
            return Decision::deny(format!(
                "cannot write {relative}: workspace is read-only; set read_only = false in config.toml or add writes.allow in {POLICY_FILE_NAME}"
            ));
        }
        Decision::allow()
    }

    /// A deny pattern naming a directory protects everything below it, so the
    /// path's ancestors are checked as well as the path itself.
    fn deny_match(&self, relative: &str) -> Option<&str> {
        if let Some(pattern) = self.write_deny.first_match(relative) {
            return Some(pattern);
        }
        relative
            .match_indices('/')
            .find_map(|(slash, _)| self.write_deny.first_match(&relative[..slash]))
    }

    /// Is `command` covered by `shell.allow`? It must equal an entry or extend
    /// it with further arguments, and must not chain another command.
    pub fn shell_allowed(&self, command: &str) -> bool {
        if SHELL_CHAINING.iter().any(|meta| command.contains(meta)) {
            return false;
        }
        let command = normalize_whitespace(command);
        self.shell_allow.iter().any(|entry| {
            command == *entry
                || command
                    .strip_prefix(entry.as_str())
                    .is_some_and(|rest| rest.starts_with(' '))
        })
    }

    /// The policy as JSON, for `config show` and status output.
    pub fn to_summary(&self) -> Value {
        json!({
            "file": self.origin,
            "writes": {
                "allow": self.write_allow.patterns,
                "deny": self.write_deny.patterns,
            },
            "shell": {
                "allow": self.shell_allow,
            },
        })
    }
}

fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
