//! Project providers: declared in a session workspace's `tap.config.json`,
//! spawned (only when the daemon trusts project providers) with a project
//! token in `TAP_PROVIDER_TOKEN`, bound to that session and stopped with it.
//!
//! When the session ends, its providers first hear `shutdown.pending` like
//! any bound provider. Their processes are sent SIGTERM once every provider
//! bound to the session has answered `shutdown.ready` (or when the shutdown
//! deadline is near), then SIGKILL after `project_stop_grace`; teardown
//! waits for them to be gone.

mod config;
mod process;

use std::sync::{Arc, Mutex};

use bridge_engine::{Session, ShutdownWaiter};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::{PROJECT_CONFIG_FILE, ProjectProviderConfig, ProjectProviderSpec};

use crate::state::GatewayInner;
use process::Supervisor;

/// The providers spawned for one session.
struct SessionProviders {
    session_id: String,
    /// Cancelled when they must go.
    stop: CancellationToken,
    /// The config reading and every supervisor; empty once all are gone.
    tracker: TaskTracker,
}

/// Processes spawned for sessions.
#[derive(Default)]
pub(crate) struct SpawnedProviders {
    /// A list, not a map: a session id may come back while the providers of
    /// its previous life are still stopping.
    sessions: Mutex<Vec<Arc<SessionProviders>>>,
}

impl SpawnedProviders {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<SessionProviders>>> {
        bridge_util::sync::lock(&self.sessions)
    }

    fn of_session(&self, session_id: &str) -> Vec<Arc<SessionProviders>> {
        self.lock()
            .iter()
            .filter(|s| s.session_id == session_id)
            .cloned()
            .collect()
    }

    fn remove(&self, entry: &Arc<SessionProviders>) {
        self.lock().retain(|s| !Arc::ptr_eq(s, entry));
    }

    /// Stops every spawned provider and waits until they are gone.
    pub(crate) async fn stop_all(&self) {
        let entries: Vec<_> = self.lock().clone();
        for entry in &entries {
            entry.stop.cancel();
            entry.tracker.close();
        }
        for entry in &entries {
            entry.tracker.wait().await;
        }
    }
}

/// Spawns the project providers of `session`'s workspace, if trusted.
pub(crate) fn spawn_for_session(gw: &Arc<GatewayInner>, session: &Arc<Session>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::error!(session = %session.id(), "project providers not considered: no async runtime");
        return;
    };
    let trusted = gw.lock().trust_project_providers;
    let workspace = session.cwd().to_path_buf();
    if !trusted {
        let session = Arc::downgrade(session);
        runtime.spawn(async move {
            if config::config_present(&workspace).await
                && let Some(session) = session.upgrade()
            {
                session.log(
                    "gateway",
                    &format!(
                        "※ {PROJECT_CONFIG_FILE} declares project providers; they were not started \
                         because this daemon does not trust project providers (they run the \
                         repository's commands). To run them, start the daemon with \
                         `copilot-bridge serve --trust-project-providers`."
                    ),
                );
            }
        });
        return;
    }
    let entry = Arc::new(SessionProviders {
        session_id: session.id().to_owned(),
        stop: CancellationToken::new(),
        tracker: TaskTracker::new(),
    });
    gw.spawned.lock().push(entry.clone());
    let gw_weak = Arc::downgrade(gw);
    let session_weak = Arc::downgrade(session);
    let tracker = entry.tracker.clone();
    let stop = entry.stop.clone();
    let session_id = entry.session_id.clone();
    entry.tracker.spawn_on(
        async move {
            let launches = match load(&workspace).await {
                Ok(launches) => launches,
                Err(error) => {
                    let text = format!(
                        "※ {PROJECT_CONFIG_FILE}: {error}; no project provider was started"
                    );
                    tracing::warn!(session = %session_id, "{text}");
                    if let Some(session) = session_weak.upgrade() {
                        session.log("gateway", &text);
                    }
                    return;
                }
            };
            for launch in launches {
                if stop.is_cancelled() {
                    return;
                }
                let supervisor = Supervisor {
                    gw: gw_weak.clone(),
                    session: session_weak.clone(),
                    session_id: session_id.clone(),
                    launch,
                    stop: stop.clone(),
                };
                tracker.spawn(supervisor.run());
            }
        },
        &runtime,
    );
    // The entry goes once it is stopped and everything in it is gone.
    let spawned = Arc::downgrade(gw);
    runtime.spawn(async move {
        entry.tracker.wait().await;
        if let Some(gw) = spawned.upgrade() {
            gw.spawned.remove(&entry);
        }
    });
}

/// Reads and resolves the workspace's config; an empty list when there is
/// none.
async fn load(workspace: &std::path::Path) -> Result<Vec<config::Launch>, String> {
    match config::read_config(workspace).await? {
        None => Ok(Vec::new()),
        Some(config) => config::resolve(workspace, config).await,
    }
}

/// Waiters that complete when `session_id`'s spawned providers exited.
/// Also arranges their stop: SIGTERM once every provider bound to the
/// session has answered `shutdown.pending` (or `project_stop_grace` before
/// the shutdown deadline), SIGKILL a grace later.
pub(crate) fn stop_waiters(gw: &Arc<GatewayInner>, session_id: &str) -> Vec<ShutdownWaiter> {
    let entries = gw.spawned.of_session(session_id);
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Vec::new();
    };
    if entries.is_empty() {
        return Vec::new();
    }
    let acks = watch_shutdown_acks(gw, session_id, &runtime);
    let deadline = gw.registry.settings().shutdown_deadline;
    let term_after = deadline.saturating_sub(gw.settings.project_stop_grace);
    let mut waiters = Vec::new();
    for entry in &entries {
        entry.tracker.close();
        let (tx, rx) = oneshot::channel();
        let tracker = entry.tracker.clone();
        runtime.spawn(async move {
            tracker.wait().await;
            let _ = tx.send(());
        });
        waiters.push(rx);
    }
    runtime.spawn(async move {
        let all_acked = async {
            for ack in acks {
                let _ = ack.await;
            }
        };
        let stops: Vec<_> = entries.iter().map(|e| e.stop.clone()).collect();
        let any_stopped = async {
            if let Some(first) = stops.first() {
                first.cancelled().await;
            }
        };
        tokio::select! {
            () = all_acked => {}
            () = tokio::time::sleep(term_after) => {}
            () = any_stopped => {}
        }
        for stop in stops {
            stop.cancel();
        }
    });
    waiters
}

/// Receivers that complete as each provider bound to `session_id` answers
/// its `shutdown.pending` (or is dropped from the wait). The gateway's own
/// waiters are kept intact: each `shutdown.ready` is passed on to them.
fn watch_shutdown_acks(
    gw: &GatewayInner,
    session_id: &str,
    runtime: &tokio::runtime::Handle,
) -> Vec<oneshot::Receiver<()>> {
    let mut relays = Vec::new();
    {
        let mut state = gw.lock();
        for ((_, waiting_session), sender) in state.shutdown_waiters.iter_mut() {
            if waiting_session != session_id {
                continue;
            }
            let (relay_tx, relay_rx) = oneshot::channel();
            let original = std::mem::replace(sender, relay_tx);
            relays.push((original, relay_rx));
        }
    }
    relays
        .into_iter()
        .map(|(original, relay_rx)| {
            let (seen_tx, seen_rx) = oneshot::channel();
            runtime.spawn(async move {
                // Ready or dropped: both let the session go, so both pass on.
                let _ = relay_rx.await;
                let _ = original.send(());
                let _ = seen_tx.send(());
            });
            seen_rx
        })
        .collect()
}

/// Stops what is still running for an ended session.
pub(crate) fn stop_for_session(gw: &Arc<GatewayInner>, session_id: &str) {
    for entry in gw.spawned.of_session(session_id) {
        entry.stop.cancel();
        entry.tracker.close();
    }
}
