//! How a daemon stops: on SIGINT or SIGTERM, or — detached — once its last
//! session has ended and the idle grace has passed (crate::daemon).

use std::sync::Arc;
use std::time::Duration;

use bridge_engine::{Session, SessionListener, SessionRegistry};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::daemon::DaemonError;

/// Bumps a counter on every session start and end, for the idle watcher.
pub(crate) struct SessionChanges(pub(crate) watch::Sender<u64>);

impl SessionListener for SessionChanges {
    fn session_started(&self, _session: &Arc<Session>) {
        self.0.send_modify(|n| *n += 1);
    }

    fn session_ended(&self, _session: &Arc<Session>) {
        self.0.send_modify(|n| *n += 1);
    }
}

pub(crate) type Signals = (tokio::signal::unix::Signal, tokio::signal::unix::Signal);

pub(crate) fn listen_for_signals() -> Result<Signals, DaemonError> {
    use tokio::signal::unix::{SignalKind, signal};
    let failed = |err: std::io::Error| DaemonError::Signals(err.to_string());
    Ok((
        signal(SignalKind::interrupt()).map_err(failed)?,
        signal(SignalKind::terminate()).map_err(failed)?,
    ))
}

pub(crate) async fn stop_on_signals(
    (mut interrupt, mut terminate): Signals,
    shutdown: CancellationToken,
) {
    tokio::select! {
        _ = interrupt.recv() => tracing::info!("SIGINT received"),
        _ = terminate.recv() => tracing::info!("SIGTERM received"),
        () = shutdown.cancelled() => return,
    }
    shutdown.cancel();
}

/// A detached daemon lives while it has sessions, and `grace` longer.
pub(crate) async fn exit_when_idle(
    registry: SessionRegistry,
    mut changes: watch::Receiver<u64>,
    grace: Duration,
    shutdown: CancellationToken,
) {
    loop {
        while !registry.is_empty() {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = shutdown.cancelled() => return,
            }
        }
        tracing::info!(
            "no sessions left; exiting in {} s unless one starts",
            grace.as_secs_f32()
        );
        tokio::select! {
            () = tokio::time::sleep(grace) => {
                if registry.is_empty() {
                    tracing::info!("idle grace over; exiting");
                    shutdown.cancel();
                    return;
                }
            }
            changed = changes.changed() => if changed.is_err() { return },
            () = shutdown.cancelled() => return,
        }
    }
}
