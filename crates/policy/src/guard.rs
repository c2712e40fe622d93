//! [`Guard`]: the one object a door asks before a tool touches the workspace.
//! It composes the permission rules, path containment, the workspace policy
//! file, read-only mode and shell analysis into allow / deny / ask.

use std::path::{Path, PathBuf};

use bridge_protocol::Decision;
use serde_json::Value;

use crate::access::Access;
use crate::approval::GrantKey;
use crate::paths::WorkspaceRoot;
use crate::permission::PermissionPolicy;
use crate::shell::{self, ShellVerdict};
use crate::workspace_policy::WorkspacePolicy;

#[derive(Debug, Clone)]
pub struct Guard {
    root: WorkspaceRoot,
    permission: PermissionPolicy,
    workspace: WorkspacePolicy,
    read_only: bool,
    home: Option<PathBuf>,
}

impl Guard {
    pub fn new(
        root: WorkspaceRoot,
        permission: PermissionPolicy,
        workspace: WorkspacePolicy,
        read_only: bool,
    ) -> Self {
        Self {
            root,
            permission,
            workspace,
            read_only,
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// Overrides the home directory used by shell analysis (tests, sandboxes).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    pub fn root(&self) -> &WorkspaceRoot {
        &self.root
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    pub fn workspace_policy(&self) -> &WorkspacePolicy {
        &self.workspace
    }

    /// The same guard with `policy` as the workspace's policy (its file
    /// was edited: crate::live_guard).
    pub fn with_workspace_policy(&self, policy: WorkspacePolicy) -> Self {
        Self {
            workspace: policy,
            ..self.clone()
        }
    }

    /// The same guard with `permission` as the machine's permission rules
    /// (config.toml was edited: crate::live_permission).
    pub fn with_permission(&self, permission: PermissionPolicy) -> Self {
        Self {
            permission,
            ..self.clone()
        }
    }

    /// Whether the machine's rules block `tool` whatever its arguments
    /// (`permissions.blocked_tools`).
    pub fn blocks_tool(&self, tool: &str) -> bool {
        self.permission.blocks_tool(tool)
    }

    /// Before any call runs: the permission rules, then containment of every
    /// path-like argument. A deny from either wins; paths are checked even
    /// when the rules say "ask", so approval never lifts containment.
    pub fn check_call(&self, tool: &str, args: &Value) -> Decision {
        let verdict = self.permission.evaluate(tool, args);
        if verdict.is_deny() {
            return verdict;
        }
        match self.root.check_arguments(args) {
            Ok(()) => verdict,
            Err(err) => Decision::deny(err.to_string()),
        }
    }

    /// The permission rules alone, for tools that do not touch the
    /// workspace (provider and MCP tools): their arguments are not paths of
    /// this workspace, so containment does not apply to them.
    pub fn check_permission(&self, tool: &str, args: &Value) -> Decision {
        self.permission.evaluate(tool, args)
    }

    /// Resolves a path the tool will read.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, Decision> {
        self.root
            .resolve(path)
            .map_err(|err| Decision::deny(err.to_string()))
    }

    /// Resolves a path the tool will write: containment, then the workspace
    /// policy's write globs and read-only mode.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, Decision> {
        let resolved = self.resolve_read(path)?;
        let relative = self.root.relative(&resolved);
        // Before the workspace policy's globs: nothing it says lifts these.
        if let Some(refused) = self.workspace.never_writable(&relative) {
            return Err(refused);
        }
        if let Some(reason) = self.permission.protected_files().reason(&relative) {
            return Err(Decision::deny(reason));
        }
        let verdict = self.workspace.write_decision(&relative, self.read_only);
        if verdict.is_allow() {
            Ok(resolved)
        } else {
            Err(verdict)
        }
    }

    /// Checks everything a call declared it will do (see [`Access`]); the
    /// strictest verdict wins, and every "ask" reason is kept.
    pub fn check_accesses(&self, accesses: &[Access]) -> Decision {
        accesses
            .iter()
            .map(|access| self.check_access(access))
            .fold(Decision::allow(), Decision::stricter)
    }

    fn check_access(&self, access: &Access) -> Decision {
        match access {
            Access::Read(path) => match self.resolve_read(path) {
                Ok(_) => Decision::allow(),
                Err(denied) => denied,
            },
            Access::Write(path) => match self.resolve_write(path) {
                Ok(_) => Decision::allow(),
                Err(denied) => denied,
            },
            Access::WriteUnnamed { tool } if self.read_only => Decision::deny(format!(
                "{tool} changes files and the workspace is read-only"
            )),
            Access::WriteUnnamed { .. } => Decision::allow(),
            Access::Run { command, cwd } => match self.run_cwd(cwd.as_deref()) {
                Ok(cwd) => self.check_shell(command, &cwd),
                Err(denied) => denied,
            },
        }
    }

    /// Where a command runs: its `cwd` resolved, or the workspace root.
    fn run_cwd(&self, cwd: Option<&str>) -> Result<PathBuf, Decision> {
        match cwd {
            Some(dir) => self.resolve_read(dir),
            None => Ok(self.root.path().to_path_buf()),
        }
    }

    fn analyze_shell(&self, command: &str, cwd: &Path) -> shell::ShellAnalysis {
        shell::analyze_with(
            command,
            self.root.path(),
            cwd,
            self.home.as_deref(),
            self.permission.protected_files(),
        )
    }

    /// What a person's grant of a call that asks would be given for: the
    /// tool, when the permission rules ask for it (`rules_ask`), and the
    /// grant key of every command of its accesses that asks (see
    /// [`shell::ShellAnalysis::approval_keys`]). `None` when some part of
    /// the question has no key: the call can then only be allowed once.
    pub fn grant_keys(
        &self,
        tool: &str,
        rules_ask: bool,
        accesses: &[Access],
    ) -> Option<Vec<GrantKey>> {
        let mut keys = Vec::new();
        if rules_ask {
            // A file tool is granted per file it touches, as containment
            // resolved it; a tool that names no file, as a whole.
            let files: Vec<GrantKey> = accesses
                .iter()
                .filter_map(|access| match access {
                    Access::Read(path) | Access::Write(path) => self.resolve_read(path).ok(),
                    _ => None,
                })
                .map(|resolved| GrantKey::File {
                    tool: tool.to_owned(),
                    path: self.root.relative(&resolved),
                })
                .collect();
            if files.is_empty() {
                keys.push(GrantKey::Tool {
                    tool: tool.to_owned(),
                });
            } else {
                keys.extend(files);
            }
        }
        for access in accesses {
            let Access::Run { command, cwd } = access else {
                continue;
            };
            let cwd = self.run_cwd(cwd.as_deref()).ok()?;
            let analysis = self.analyze_shell(command, &cwd);
            if analysis.verdict == ShellVerdict::NeedsApproval
                && !self.workspace.shell_allowed(command)
            {
                keys.extend(
                    analysis
                        .approval_keys?
                        .into_iter()
                        .map(|command| GrantKey::Run { command }),
                );
            }
        }
        keys.sort();
        keys.dedup();
        (!keys.is_empty()).then_some(keys)
    }

    /// May `command` run in `cwd`? Dangerous commands are denied outright;
    /// known-safe read-only commands are allowed; anything else needs the
    /// workspace policy's shell allow list, or else approval.
    pub fn check_shell(&self, command: &str, cwd: &Path) -> Decision {
        let analysis = self.analyze_shell(command, cwd);
        let reasons = analysis.reasons.join("; ");
        match analysis.verdict {
            ShellVerdict::Dangerous => Decision::deny(format!("dangerous command: {reasons}")),
            ShellVerdict::Safe => Decision::allow(),
            ShellVerdict::NeedsApproval if self.workspace.shell_allowed(command) => {
                Decision::allow()
            }
            ShellVerdict::NeedsApproval => Decision::ask(format!(
                "command needs approval ({reasons}); add it to shell.allow in .agent-policy.yaml to allow it without asking"
            )),
        }
    }
}
