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
//! directories. As in `.gitignore`, a pattern without a `/` matches at any
//! depth, one with a `/` is anchored to the workspace root.
//!
//! Whatever the file says, a tool never writes the policy file itself nor
//! anything under a `.git` directory.

mod globs;

use std::io::{ErrorKind, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use bridge_protocol::Decision;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::PolicyError;
pub(crate) use globs::{FileNames, GlobList};

pub const POLICY_FILE_NAME: &str = ".agent-policy.yaml";

/// Git's own directory (or, in worktrees and submodules, the file pointing
/// to it): `core.fsmonitor`, `core.pager`, hooks and friends in there run
/// commands at the next `git status`, so writing it is running code.
pub const GIT_DIR_NAME: &str = ".git";

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

#[derive(Debug, Clone)]
pub struct WorkspacePolicy {
    origin: Option<String>,
    file_names: FileNames,
    write_allow: GlobList,
    write_deny: GlobList,
    shell_allow: Vec<String>,
}

impl Default for WorkspacePolicy {
    fn default() -> Self {
        Self {
            origin: None,
            file_names: FileNames::HOST,
            write_allow: GlobList::default(),
            write_deny: GlobList::default(),
            shell_allow: Vec::new(),
        }
    }
}

impl WorkspacePolicy {
    /// Loads the policy file of `root`; a missing file is the empty policy.
    pub fn load(root: &Path) -> Result<Self, PolicyError> {
        let path = root.join(POLICY_FILE_NAME);
        let origin = path.display().to_string();
        // Non-blocking, so a FIFO planted under the name fails instead of
        // hanging whoever loads the workspace.
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
        {
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
        if !metadata.is_file() {
            return Err(PolicyError::InvalidPolicyFile {
                path: origin,
                reason: "is not a regular file".to_owned(),
            });
        }
        // The file can loosen the rules (write globs, shell allow list): it
        // counts only if the user running the bridge controls it, never if
        // another user planted it (a workspace in /tmp) or anyone may edit it.
        let me = rustix::process::geteuid().as_raw();
        if metadata.uid() != me {
            return Err(PolicyError::InvalidPolicyFile {
                path: origin,
                reason: format!(
                    "is owned by uid {}, not by the user running copilot-bridge (uid {me}); a policy file another user controls is not trusted",
                    metadata.uid()
                ),
            });
        }
        if metadata.mode() & 0o002 != 0 {
            return Err(PolicyError::InvalidPolicyFile {
                path: origin,
                reason: "is writable by every user; a policy anyone can edit is not trusted (chmod o-w it)".to_owned(),
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
        Self::from_yaml_for(text, origin, FileNames::HOST)
    }

    /// [`Self::from_yaml`] for a filesystem that compares names by
    /// `file_names`, so that tests can check every platform's rules.
    pub(crate) fn from_yaml_for(
        text: &str,
        origin: &str,
        file_names: FileNames,
    ) -> Result<Self, PolicyError> {
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
        // Deny globs follow the filesystem's case rules, or `SECRET/x` would
        // walk around `secret`. Allow globs stay exact: a spelling they miss
        // is refused, which is the safe way to be wrong.
        let case_insensitive = file_names.case_insensitive();
        Ok(Self {
            origin: Some(origin.to_owned()),
            file_names,
            write_allow: GlobList::compile(writes.allow, "writes.allow", origin, false)?,
            write_deny: GlobList::compile(writes.deny, "writes.deny", origin, case_insensitive)?,
            shell_allow,
        })
    }

    /// May the workspace-relative path `relative` (`/`-separated, as
    /// [`crate::WorkspaceRoot::relative`] spells it) be written?
    ///
    /// A non-empty `writes.allow` is the user's consent to write those paths,
    /// so it also lifts read-only mode for them. Nothing lifts the refusal
    /// of the policy file and of `.git`.
    pub fn write_decision(&self, relative: &str, read_only: bool) -> Decision {
        if let Some(refused) = self.never_writable(relative) {
            return refused;
        }
        let path = self.file_names.normalize(relative);
        if let Some(pattern) = self.write_deny.first_match_with_parents(&path) {
            return Decision::deny(format!(
                "writing {relative} is denied: it matches writes.deny pattern {pattern:?} in {POLICY_FILE_NAME}"
            ));
        }
        if !self.write_allow.is_empty() {
            if self.write_allow.first_match(&path).is_some() {
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

    /// The refusal of the policy file itself and of anything in `.git`,
    /// which no setting lifts.
    pub fn never_writable(&self, relative: &str) -> Option<Decision> {
        let path = self.file_names.normalize(relative);
        if self.file_names.same_name(&path, POLICY_FILE_NAME) {
            return Some(Decision::deny(format!(
                "{POLICY_FILE_NAME} cannot be written by a tool: the agent may not change its own policy"
            )));
        }
        if path
            .split('/')
            .any(|component| self.file_names.same_name(component, GIT_DIR_NAME))
        {
            return Some(Decision::deny(format!(
                "writing {relative} is denied: writes to {GIT_DIR_NAME}/ are never allowed (git config and hooks can execute code)"
            )));
        }
        None
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

#[cfg(test)]
mod tests;
