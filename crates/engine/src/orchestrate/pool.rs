//! The session pool: at most N sub-tasks at once (acquire / release), idle
//! sessions of a directory reused by the next sub-task there, a session
//! whose sub-task failed ("tainted") ended instead of reused, and `drain`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::registry::{SessionRegistry, SessionSpec};
use crate::session::Session;

/// Sessions for sub-tasks, at most `max` in use.
pub struct SessionPool {
    registry: SessionRegistry,
    permits: Arc<Semaphore>,
    max: u32,
    /// Sessions free for reuse: (directory, read-only, session).
    idle: Mutex<Vec<(PathBuf, bool, Arc<Session>)>>,
    label: String,
}

/// A session held by one sub-task; give it back with
/// [`SessionPool::release`].
pub struct Lease {
    pub session: Arc<Session>,
    read_only: bool,
    _permit: OwnedSemaphorePermit,
}

impl SessionPool {
    pub fn new(registry: SessionRegistry, max: usize, label: &str) -> Self {
        let max = u32::try_from(max.clamp(1, 1024)).unwrap_or(1024);
        Self {
            registry,
            permits: Arc::new(Semaphore::new(max as usize)),
            max,
            idle: Mutex::new(Vec::new()),
            label: label.to_owned(),
        }
    }

    /// Sub-tasks running now.
    pub fn in_use(&self) -> usize {
        self.max as usize - self.permits.available_permits()
    }

    /// Waits for a free place, then hands out an idle session of `cwd`
    /// (read-only or not, as asked) or a new one.
    pub async fn acquire(&self, cwd: &Path, read_only: bool) -> Result<Lease, String> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| "the session pool is closed".to_owned())?;
        let reused = {
            let mut idle = bridge_util::sync::lock(&self.idle);
            idle.iter()
                .position(|(dir, ro, _)| dir == cwd && *ro == read_only)
                .map(|at| idle.swap_remove(at).2)
        };
        let session = match reused {
            Some(session) => session,
            None => {
                let spec = SessionSpec {
                    id: None,
                    label: self.label.clone(),
                    cwd: cwd.to_path_buf(),
                    foreground: false,
                    door: crate::Door::Orchestrator,
                };
                let created = if read_only {
                    self.registry.create_read_only(spec)
                } else {
                    self.registry.create(spec)
                };
                created.map_err(|err| err.to_string())?
            }
        };
        Ok(Lease {
            session,
            read_only,
            _permit: permit,
        })
    }

    /// Gives a session back: kept for reuse unless `tainted` (its sub-task
    /// failed) or `keep` is false (its directory goes away).
    pub async fn release(&self, lease: Lease, tainted: bool, keep: bool) {
        if tainted || !keep {
            self.end(&lease.session).await;
            return;
        }
        let cwd = lease.session.cwd().to_path_buf();
        bridge_util::sync::lock(&self.idle).push((cwd, lease.read_only, lease.session));
    }

    /// Waits until no sub-task holds a session, then ends the idle ones.
    pub async fn drain(&self) {
        let all = self.permits.acquire_many(self.max).await;
        let idle: Vec<_> = std::mem::take(&mut *bridge_util::sync::lock(&self.idle));
        for (_, _, session) in idle {
            self.end(&session).await;
        }
        drop(all);
    }

    async fn end(&self, session: &Session) {
        if let Err(err) = self.registry.end(session.id(), None).await {
            tracing::debug!(session = session.id(), error = %err, "a pooled session was already gone");
        }
    }
}
