//! A workspace's [`Guard`] that follows edits of its `.agent-policy.yaml`
//! (docs/policy.md): a long-lived session (the daemon's) sees an edit on
//! its next call, at most [`RECHECK_EVERY`] later, without a restart.
//!
//! The file is looked at (one `stat`) at most every [`RECHECK_EVERY`], and
//! read again only when its size, modification time or inode changed. An
//! edit that cannot be used (invalid YAML, a file others may write) keeps
//! the last good policy in force and is reported: logged at `error`, kept
//! as [`LiveGuard::problem`] for `status` and for the reason of a refused
//! call, until a good edit replaces it.
//!
//! A guard made with [`LiveGuard::following`] also follows the machine's
//! permission rules ([`LivePermission`], config.toml's `[permissions]`):
//! when they are replaced, the next call rebuilds the guard with them,
//! keeping the workspace's policy as it is.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bridge_util::file_stamp::FileStamp;
use bridge_util::sync::{lock, read, write};

use crate::workspace_policy::POLICY_FILE_NAME;
use crate::{Guard, LivePermission, WorkspacePolicy, WorkspaceRoot};

/// How often the policy file is looked at, at most.
pub const RECHECK_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug)]
struct Watch {
    checked: Instant,
    /// `None`: no file.
    stamp: Option<FileStamp>,
    problem: Option<String>,
    loaded_at: String,
}

/// The guard in force, and the file it follows.
#[derive(Debug)]
pub struct LiveGuard {
    root: WorkspaceRoot,
    file: PathBuf,
    current: RwLock<Arc<Guard>>,
    watch: Mutex<Watch>,
    /// The machine's rules followed, and the generation `current` has.
    permission: Option<(Arc<LivePermission>, AtomicU64)>,
}

impl LiveGuard {
    /// Follows the policy file of `guard`'s workspace from now on; `guard`
    /// holds the policy loaded from it.
    pub fn new(guard: Arc<Guard>) -> Self {
        let root = guard.root().clone();
        let file = root.path().join(POLICY_FILE_NAME);
        let stamp = FileStamp::of_path(&file);
        Self {
            root,
            file,
            current: RwLock::new(guard),
            watch: Mutex::new(Watch {
                checked: Instant::now(),
                stamp,
                problem: None,
                loaded_at: bridge_util::time::now_timestamp(),
            }),
            permission: None,
        }
    }

    /// [`Self::new`], following `permission` too: `guard` is rebuilt with
    /// its rules whenever they are replaced.
    pub fn following(guard: Arc<Guard>, permission: Arc<LivePermission>) -> Self {
        let (generation, rules) = permission.current();
        let guard = Arc::new(guard.with_permission((*rules).clone()));
        Self {
            permission: Some((permission, AtomicU64::new(generation))),
            ..Self::new(guard)
        }
    }

    /// The workspace root (never changes).
    pub fn root(&self) -> &WorkspaceRoot {
        &self.root
    }

    /// The guard in force, the policy file read again first if it changed.
    pub fn current(&self) -> Arc<Guard> {
        {
            let mut watch = lock(&self.watch);
            if watch.checked.elapsed() >= RECHECK_EVERY {
                watch.checked = Instant::now();
                let stamp = FileStamp::of_path(&self.file);
                if stamp != watch.stamp {
                    watch.stamp = stamp;
                    self.reload(&mut watch);
                }
            }
        }
        if let Some((live, seen)) = &self.permission
            && live.generation() != seen.load(Ordering::Acquire)
        {
            let mut current = write(&self.current);
            // Read under the lock: two calls racing rebuild once, with
            // the same (newest) rules.
            let (generation, rules) = live.current();
            if generation != seen.load(Ordering::Acquire) {
                *current = Arc::new(current.with_permission((*rules).clone()));
                seen.store(generation, Ordering::Release);
            }
        }
        read(&self.current).clone()
    }

    fn reload(&self, watch: &mut Watch) {
        let shown = self.file.display();
        match WorkspacePolicy::load(self.root.path()) {
            Ok(policy) => {
                let next = read(&self.current).with_workspace_policy(policy);
                *write(&self.current) = Arc::new(next);
                watch.problem = None;
                watch.loaded_at = bridge_util::time::now_timestamp();
                tracing::info!("{shown} changed: its policy applies from the next call");
            }
            Err(err) => {
                let problem =
                    format!("{err}; the last good policy of this workspace stays in force");
                tracing::error!("{problem}");
                watch.problem = Some(problem);
            }
        }
    }

    /// Why the policy file's last edit is not in force, if it is not.
    pub fn problem(&self) -> Option<String> {
        lock(&self.watch).problem.clone()
    }

    /// Why the last edit of the machine's configuration (config.toml) is
    /// not in force, if it is not and this guard follows it.
    pub fn config_problem(&self) -> Option<String> {
        self.permission
            .as_ref()
            .and_then(|(live, _)| live.problem())
    }

    /// When the policy in force was loaded (RFC 3339).
    pub fn loaded_at(&self) -> String {
        lock(&self.watch).loaded_at.clone()
    }
}
