//! Which git repository a git command would use: git looks for `.git` in
//! the directory it runs in and then in every parent, so a workspace inside
//! a larger repository (a home directory under git) would let `git log -p`
//! read far outside it. A repository counts as the workspace's own when its
//! git directory, shared directory and object stores are all inside.
//!
//! The repository's own configuration can make a reading git run programs
//! (a textconv or filter driver named in `.gitattributes`) or read outside
//! (`core.worktree`); it lives in the workspace, where the agent may write,
//! so it is checked as well.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::location::Resolver;

mod config;

/// Bytes of a `.git` file or `commondir` file that are read.
const MAX_POINTER_BYTES: u64 = 4096;

#[derive(Debug, Default)]
pub(crate) struct Repositories {
    /// By starting directory: why its repository is not the workspace's own.
    verdicts: HashMap<PathBuf, Option<String>>,
}

impl Repositories {
    /// Why git run in `start` (absolute, symlinks followed) would read a
    /// repository that is not inside the workspace; `None` when it is inside,
    /// or when there is none (git then fails, or compares plain files).
    pub(crate) fn outside_reason(
        &mut self,
        resolver: &mut Resolver,
        start: &Path,
    ) -> Option<String> {
        if let Some(known) = self.verdicts.get(start) {
            return known.clone();
        }
        let verdict = find(resolver, start);
        self.verdicts.insert(start.to_path_buf(), verdict.clone());
        verdict
    }
}

fn find(resolver: &mut Resolver, start: &Path) -> Option<String> {
    let mut directory = start.to_path_buf();
    loop {
        let dot_git = directory.join(".git");
        if let Ok(metadata) = std::fs::symlink_metadata(&dot_git) {
            let git_dir = if metadata.is_file() {
                match read_pointer(&dot_git, "gitdir:") {
                    Some(target) => resolver.canonical(&directory.join(target)),
                    None => {
                        return Some(format!(
                            "cannot read the git directory named by {}",
                            dot_git.display()
                        ));
                    }
                }
            } else {
                resolver.canonical(&dot_git)
            };
            return check_git_dir(resolver, &git_dir);
        }
        if is_bare_repository(&directory) {
            return check_git_dir(resolver, &directory);
        }
        if !directory.pop() {
            return None;
        }
    }
}

fn check_git_dir(resolver: &mut Resolver, git_dir: &Path) -> Option<String> {
    if !resolver.is_inside(git_dir) {
        return Some(format!(
            "git would use the repository at {}, outside the workspace",
            git_dir.display()
        ));
    }
    let mut common_dir = git_dir.to_path_buf();
    let common = git_dir.join("commondir");
    if common.exists() {
        let Some(target) = read_pointer(&common, "") else {
            return Some(format!("cannot read {}", common.display()));
        };
        common_dir = resolver.canonical(&git_dir.join(target));
        if !resolver.is_inside(&common_dir) {
            return Some(format!(
                "the git worktree shares the repository at {}, outside the workspace",
                common_dir.display()
            ));
        }
    }
    let alternates = common_dir.join("objects/info/alternates");
    if std::fs::metadata(&alternates).is_ok_and(|metadata| metadata.len() > 0) {
        return Some(format!(
            "the git repository borrows objects from other repositories ({})",
            alternates.display()
        ));
    }
    let mut configs = vec![common_dir.join("config"), git_dir.join("config.worktree")];
    // `git status` and `git diff` also run git in submodules, with theirs.
    if !collect_module_configs(&common_dir.join("modules"), 0, &mut configs) {
        return Some(format!(
            "too many nested git submodules to check under {}",
            common_dir.display()
        ));
    }
    configs.iter().find_map(|config| config::reason(config))
}

/// Adds the configs of the submodule git directories under `directory`
/// (they nest, `modules/a/modules/b`, and a name with a slash groups them,
/// `modules/libs/a`); false when there are too many to check.
fn collect_module_configs(directory: &Path, depth: usize, configs: &mut Vec<PathBuf>) -> bool {
    const MAX_DEPTH: usize = 8;
    const MAX_CONFIGS: usize = 256;
    let Ok(entries) = std::fs::read_dir(directory) else {
        return true;
    };
    if depth >= MAX_DEPTH {
        return false;
    }
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if configs.len() >= MAX_CONFIGS {
            return false;
        }
        let nested = if path.join("HEAD").is_file() {
            configs.push(path.join("config"));
            path.join("modules")
        } else {
            path
        };
        if !collect_module_configs(&nested, depth + 1, configs) {
            return false;
        }
    }
    true
}

/// The first line of a small pointer file, after `prefix`.
fn read_pointer(path: &Path, prefix: &str) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_POINTER_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.trim();
    let target = line.strip_prefix(prefix)?.trim();
    (!target.is_empty()).then(|| target.to_owned())
}

/// git also takes a directory that itself looks like a git directory.
fn is_bare_repository(directory: &Path) -> bool {
    directory.join("HEAD").is_file()
        && directory.join("objects").is_dir()
        && directory.join("refs").is_dir()
}
