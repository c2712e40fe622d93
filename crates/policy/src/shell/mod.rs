//! Shell command analysis on tree-sitter-bash: is a command line known to
//! only read, does it need a human's approval, or is it dangerous enough to
//! refuse outright?
//!
//! The analysis is static and fails closed: anything it cannot see through
//! (substitutions, expansions, unparseable input) needs at least approval,
//! and anything that could destroy data outside the workspace, leak
//! credentials or run downloaded code is dangerous.

mod access;
mod args;
mod cd;
mod commands;
mod deletion;
mod find;
mod git;
mod glob;
mod location;
mod options;
mod readonly;
mod repository;
mod scripts;
mod sed;
mod walker;
mod words;
mod writes;

use std::path::Path;

use serde::Serialize;

use crate::protected::ProtectedFiles;

use location::{Cwd, Resolver};
use repository::Repositories;

/// Ordered: the worst verdict over all the commands of a line wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellVerdict {
    Safe,
    NeedsApproval,
    Dangerous,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShellAnalysis {
    pub verdict: ShellVerdict,
    /// Why the verdict is what it is: the reasons at the verdict's level,
    /// without duplicates, in the order found. Empty for [`ShellVerdict::Safe`].
    pub reasons: Vec<String>,
    /// For [`ShellVerdict::NeedsApproval`]: the commands that need it, each
    /// as its program and subcommand will run (`cargo test`), sorted; a
    /// person's grant for these keys lets the line run. `None` when some
    /// reason belongs to no one command (a computed command name, a
    /// variable set for the command, an expansion): such a line can only be
    /// allowed once.
    pub approval_keys: Option<Vec<String>>,
}

impl ShellAnalysis {
    pub fn is_safe(&self) -> bool {
        self.verdict == ShellVerdict::Safe
    }

    pub fn is_dangerous(&self) -> bool {
        self.verdict == ShellVerdict::Dangerous
    }
}

/// Longer input is refused rather than analysed: no legitimate command line
/// is this long, and a human could not review it either.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// How deep `bash -c '...'`, `eval '...'` and friends are followed.
const MAX_NESTED_SCRIPTS: usize = 8;

/// Analyses `command` as bash would run it in `workspace`, with `home` as
/// the home directory (`~`, `$HOME`); without `home`, paths under it count as
/// outside the workspace.
pub fn analyze(command: &str, workspace: &Path, home: Option<&Path>) -> ShellAnalysis {
    analyze_in(command, workspace, Path::new("."), home)
}

/// Like [`analyze`], for a command that starts in `cwd` (absolute, or
/// relative to `workspace`) rather than at the workspace root.
pub fn analyze_in(
    command: &str,
    workspace: &Path,
    cwd: &Path,
    home: Option<&Path>,
) -> ShellAnalysis {
    analyze_with(command, workspace, cwd, home, &ProtectedFiles::default())
}

/// Like [`analyze_in`], with the protected files of the configuration
/// (the built-in ones and `[permissions] protected_files`): writing,
/// moving or deleting one is dangerous.
pub fn analyze_with(
    command: &str,
    workspace: &Path,
    cwd: &Path,
    home: Option<&Path>,
    protected: &ProtectedFiles,
) -> ShellAnalysis {
    let mut context = Context::new(workspace, cwd, home, protected.clone());
    if command.len() > MAX_COMMAND_BYTES {
        context.flag(
            ShellVerdict::Dangerous,
            format!(
                "command is {} bytes long, more than the {MAX_COMMAND_BYTES} bytes that are analysed",
                command.len()
            ),
        );
    } else if command.trim().is_empty() {
        context.flag(ShellVerdict::NeedsApproval, "empty command".to_owned());
    } else {
        context.analyze_script(command);
        if context.commands_seen == 0 && context.findings.is_empty() {
            context.flag(ShellVerdict::NeedsApproval, "no command to run".to_owned());
        }
    }
    context.findings.into_analysis()
}

#[derive(Debug, Default)]
struct Findings {
    /// Verdict, reason, and the key of the command it was found in.
    entries: Vec<(ShellVerdict, String, Option<String>)>,
}

impl Findings {
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn into_analysis(self) -> ShellAnalysis {
        let verdict = self
            .entries
            .iter()
            .map(|(verdict, _, _)| *verdict)
            .max()
            .unwrap_or(ShellVerdict::Safe);
        let approval_keys = (verdict == ShellVerdict::NeedsApproval)
            .then(|| {
                let mut keys = self
                    .entries
                    .iter()
                    .map(|(_, _, key)| key.clone())
                    .collect::<Option<Vec<String>>>()?;
                keys.sort();
                keys.dedup();
                Some(keys)
            })
            .flatten();
        let reasons = self
            .entries
            .into_iter()
            .filter(|(level, _, _)| *level == verdict && verdict != ShellVerdict::Safe)
            .map(|(_, reason, _)| reason)
            .collect();
        ShellAnalysis {
            verdict,
            reasons,
            approval_keys,
        }
    }
}

/// State shared by everything analysed for one command line, nested
/// scripts included.
struct Context {
    resolver: Resolver,
    /// What no command may write, move or delete.
    protected: ProtectedFiles,
    /// Which git repository each directory belongs to, found once.
    repositories: Repositories,
    findings: Findings,
    cwd: Cwd,
    /// How many `bash -c` levels deep the current script is.
    script_depth: usize,
    /// Whether a `cd` about to be analysed certainly takes effect for what
    /// follows it (set by the walker from the command's position).
    cd_replaces_cwd: bool,
    commands_seen: usize,
    /// The grant key of the command being checked (see
    /// [`ShellAnalysis::approval_keys`]).
    command_key: Option<String>,
}

impl Context {
    fn new(workspace: &Path, cwd: &Path, home: Option<&Path>, protected: ProtectedFiles) -> Self {
        let mut resolver = Resolver::new(workspace, home);
        let cwd = resolver.cwd_at(cwd);
        Self {
            resolver,
            protected,
            repositories: Repositories::default(),
            findings: Findings::default(),
            cwd,
            script_depth: 0,
            cd_replaces_cwd: false,
            commands_seen: 0,
            command_key: None,
        }
    }

    fn flag(&mut self, verdict: ShellVerdict, reason: String) {
        let key = self.command_key.clone();
        let duplicate = self
            .findings
            .entries
            .iter()
            .any(|(level, known, known_key)| {
                *level == verdict && *known == reason && *known_key == key
            });
        if !duplicate {
            self.findings.entries.push((verdict, reason, key));
        }
    }

    fn needs_approval(&mut self, reason: impl Into<String>) {
        self.flag(ShellVerdict::NeedsApproval, reason.into());
    }

    fn dangerous(&mut self, reason: impl Into<String>) {
        self.flag(ShellVerdict::Dangerous, reason.into());
    }

    /// Analyses a script: the command line itself or a nested one (`bash -c`).
    /// A nested script runs in a child process, so its `cd`s do not leak out.
    fn analyze_script(&mut self, script: &str) {
        if self.script_depth > MAX_NESTED_SCRIPTS {
            self.dangerous(format!(
                "shell scripts nested more than {MAX_NESTED_SCRIPTS} levels deep are not analysed"
            ));
            return;
        }
        let saved_cwd = self.cwd.clone();
        self.script_depth += 1;
        walker::walk(self, script);
        self.script_depth -= 1;
        self.cwd = saved_cwd;
    }
}
