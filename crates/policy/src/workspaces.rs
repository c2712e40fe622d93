//! Which directories may be a workspace when a client names one (`/rpc`
//! `session.create`, `agent.hook`, `orchestrate.start`, `/mcp/code
//! ?workspace=`, a task's `workingDir`, an agent's hook, the daemon's own
//! working directory): a workspace's policy lets an agent write there, so
//! naming `/`, `/etc` or another user's home must not make it one.
//! docs/policy.md, "Which directories may be a workspace".
//!
//! Without `[workspaces] roots`: a directory of this user, not `/`, not in
//! the system's trees (whoever runs the daemon, root included), not the
//! state directory or inside it, not an ancestor of the user's home. With
//! roots: only those directories and what is below them, whoever owns them
//! (the root, the state directory and ancestors of home stay refused).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Top-level directories of the system, never a workspace (nor anything in
/// them) unless a configured root says so. `/lib*` covers `lib32`, `lib64`,
/// `libx32`.
const SYSTEM_TREES: &[&str] = &[
    "etc", "usr", "bin", "sbin", "boot", "dev", "proc", "sys", "run", "var",
];

/// The rule, from the configuration.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceChoice {
    roots: Vec<PathBuf>,
    state_dir: Option<PathBuf>,
    home: Option<PathBuf>,
}

impl WorkspaceChoice {
    /// `roots`: `[workspaces] roots` (empty: the default rule); `state_dir`:
    /// copilot-bridge's state directory; `home`: the user's home.
    pub fn new(roots: &[PathBuf], state_dir: &Path, home: Option<&Path>) -> Self {
        Self {
            roots: roots.iter().map(|root| canonical_or_same(root)).collect(),
            state_dir: Some(canonical_or_same(state_dir)),
            home: home.map(canonical_or_same),
        }
    }

    /// The directory `asked` as a workspace (its canonical path), or why it
    /// cannot be one.
    pub fn check(&self, asked: &Path) -> Result<PathBuf, String> {
        let shown = asked.display();
        if !asked.is_absolute() {
            return Err(format!("the workspace {shown} is not an absolute path"));
        }
        let dir = std::fs::canonicalize(asked)
            .map_err(|err| format!("cannot open the workspace {shown}: {err}"))?;
        let meta = std::fs::metadata(&dir)
            .map_err(|err| format!("cannot open the workspace {shown}: {err}"))?;
        if !meta.is_dir() {
            return Err(format!("the workspace {shown} is not a directory"));
        }
        let refused = |why: String| Err(format!("{shown} cannot be a workspace: {why}"));
        if dir.parent().is_none() {
            return refused("it is the filesystem root".to_owned());
        }
        if let Some(state) = &self.state_dir
            && dir.starts_with(state)
        {
            return refused(format!(
                "it is copilot-bridge's state directory {} or inside it",
                state.display()
            ));
        }
        if let Some(home) = &self.home
            && home.starts_with(&dir)
            && *home != dir
        {
            return refused(format!(
                "it holds the home directory {}; name the project's own directory",
                home.display()
            ));
        }
        if !self.roots.is_empty() {
            if self.roots.iter().any(|root| dir.starts_with(root)) {
                return Ok(dir);
            }
            let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
            return refused(format!(
                "it is not under a configured workspace root ([workspaces] roots: {})",
                roots.join(", ")
            ));
        }
        if let Some(tree) = system_tree(&dir) {
            return refused(format!(
                "it is in the system's {tree} tree; add it to [workspaces] roots in config.toml to allow it"
            ));
        }
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return refused(format!(
                "it belongs to uid {}, not to this user (uid {me}); add it to [workspaces] roots in config.toml to allow it",
                meta.uid()
            ));
        }
        Ok(dir)
    }

    /// The home directory, the daemon's fallback when its own working
    /// directory cannot be a workspace.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }
}

/// The system tree (`/etc`, `/usr`, `/lib64`, …) `dir` is in.
fn system_tree(dir: &Path) -> Option<String> {
    let first = dir.components().nth(1)?.as_os_str().to_str()?;
    (SYSTEM_TREES.contains(&first) || first.starts_with("lib")).then(|| format!("/{first}"))
}

fn canonical_or_same(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
