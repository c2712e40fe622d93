//! config.toml followed while the daemon runs (docs/configuration.md,
//! "Changes while the daemon runs").
//!
//! The file is looked at (a `stat` of the path and of what it names) every
//! [`RECHECK_EVERY`]; when it changed, the whole configuration is loaded
//! again by the loader the daemon started with, so the environment and the
//! command line's flags keep their precedence, and a file is refused for
//! the same reasons as at start (not a regular file, over 1 MiB, invalid).
//! What a good edit changes in `[permissions]` and `[models]` applies from
//! the next call or request, in every session; what else it changes is
//! logged and shown as waiting for a restart. An edit that cannot be used
//! keeps the last good configuration in force and says so: logged at
//! `error`, shown by `status`, and noted in the reason of every call the
//! policy refuses until a good edit replaces it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_compose::Backends;
use bridge_config::{BridgeConfig, ConfigError, ConfigLoader};
use bridge_policy::{LivePermission, PermissionPolicy};
use bridge_util::file_stamp::FileStamp;
use bridge_util::sync::lock;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How often config.toml is looked at.
pub const RECHECK_EVERY: Duration = Duration::from_millis(250);
/// How long a changed file must stay unchanged before it is read: an
/// editor that writes in place is not read half-way.
const SETTLE: Duration = Duration::from_millis(50);
/// The settings a running daemon takes from an edit; every other changed
/// one waits for a restart.
pub const LIVE_KEYS: [&str; 2] = ["permissions", "models"];
/// Characters of a problem kept: it is shown to every refused call.
const PROBLEM_CHARS: usize = 2000;

/// What tells a changed file from the one loaded: the path itself (a
/// symlink put in its place) and the file it names.
type Stamps = (Option<FileStamp>, Option<FileStamp>);

fn stamps_of(path: &Path) -> Stamps {
    (
        FileStamp::of_path(path),
        FileStamp::of(std::fs::metadata(path)),
    )
}

#[derive(Debug)]
struct State {
    /// The configuration whose live settings are in force.
    good: BridgeConfig,
    loaded_at: String,
    problem: Option<String>,
    /// Changed settings that apply only from the next start.
    restart_needed: Vec<&'static str>,
    followed: bool,
    /// The file as it was when the daemon was built: an edit made before
    /// following begins is seen too.
    seen: Stamps,
}

/// The daemon's configuration as it is now, and the parts an edit changes.
#[derive(Debug)]
pub struct ConfigWatch {
    /// The file followed (the one read at start, or where it would be).
    path: PathBuf,
    /// What the daemon started with: what needs a restart is what differs.
    started: BridgeConfig,
    permission: Arc<LivePermission>,
    backends: Arc<Backends>,
    state: Mutex<State>,
}

impl ConfigWatch {
    /// `config` is what the daemon started with; `permission` the rules its
    /// sessions follow and `backends` its chat backends.
    pub fn new(
        config: &BridgeConfig,
        permission: Arc<LivePermission>,
        backends: Arc<Backends>,
    ) -> Self {
        let path = config
            .config_file
            .clone()
            .unwrap_or_else(|| config.home.join("config.toml"));
        let seen = stamps_of(&path);
        Self {
            path,
            started: config.clone(),
            permission,
            backends,
            state: Mutex::new(State {
                good: config.clone(),
                loaded_at: bridge_util::time::now_timestamp(),
                problem: None,
                restart_needed: Vec::new(),
                followed: false,
                seen,
            }),
        }
    }

    /// The file followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The configuration the daemon started with: what it still uses of
    /// the settings an edit changes only after a restart (where it writes
    /// the audit log, say).
    pub fn started(&self) -> &BridgeConfig {
        &self.started
    }

    /// Why the last edit is not in force, if it is not.
    pub fn problem(&self) -> Option<String> {
        lock(&self.state).problem.clone()
    }

    /// What `status` shows (`bridge.status`, `config`).
    pub fn status(&self) -> Value {
        let state = lock(&self.state);
        json!({
            "file": self.path,
            "read": state.good.config_file.is_some(),
            "loadedAt": state.loaded_at,
            "problem": state.problem,
            "restartNeeded": state.restart_needed,
            "followed": state.followed,
        })
    }

    /// The configuration in force as `config show --json` prints it
    /// (secrets redacted), with the file's state beside it.
    pub fn redacted(&self) -> Value {
        let shown = lock(&self.state).good.to_redacted_json();
        json!({"config": shown, "file": self.status()})
    }

    /// Follows the file until `stop`, loading it with `loader` (the one the
    /// daemon's configuration came from) whenever it changed.
    pub async fn follow(self: Arc<Self>, loader: ConfigLoader, stop: CancellationToken) {
        let mut seen = {
            let mut state = lock(&self.state);
            state.followed = true;
            state.seen
        };
        let mut ticks = tokio::time::interval(RECHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let now = stamps_of(&self.path);
            if now == seen {
                continue;
            }
            tokio::time::sleep(SETTLE).await;
            if stamps_of(&self.path) != now {
                // Still being written: read at a later look.
                continue;
            }
            seen = now;
            let loader = loader.clone();
            let loaded = tokio::task::spawn_blocking(move || loader.load())
                .await
                .unwrap_or_else(|err| {
                    Err(ConfigError::File {
                        path: self.path.clone(),
                        message: format!("cannot be read: {err}"),
                    })
                });
            self.apply(loaded);
        }
    }

    /// Puts a new load of the configuration in force, or keeps the last
    /// good one and says why.
    pub fn apply(&self, loaded: Result<BridgeConfig, ConfigError>) {
        let mut state = lock(&self.state);
        let next = loaded.map_err(|err| err.to_string()).and_then(|next| {
            if state.good.config_file.is_some() && next.config_file.is_none() {
                return Err(format!(
                    "config file {}: it is gone (or names nothing); put it back, or restart the daemon to run without it",
                    self.path.display()
                ));
            }
            let rules = PermissionPolicy::compile(&next.permissions)
                .map_err(|err| format!("config file {}: {err}", self.path.display()))?;
            Ok((next, rules))
        });
        let (next, rules) = match next {
            Ok(next) => next,
            Err(reason) => {
                let problem = bridge_policy::redact::shorten(
                    &format!(
                        "{reason}; the last good configuration (loaded {}) stays in force",
                        state.loaded_at
                    ),
                    PROBLEM_CHARS,
                );
                let problem = bridge_policy::redact(&problem).into_owned();
                tracing::error!("{problem}");
                self.permission.set_problem(Some(problem.clone()));
                state.problem = Some(problem);
                return;
            }
        };
        let shown = self.path.display();
        if next.permissions != state.good.permissions {
            self.permission.set(rules);
            tracing::info!(
                "{shown}: [permissions] changed; they apply from every session's next call"
            );
        }
        if next.models != state.good.models {
            self.backends.set_routes(next.models.clone());
            tracing::info!("{shown}: [models] changed; they apply from the next request");
        }
        let restart_needed: Vec<&'static str> = self
            .started
            .changed_keys(&next)
            .into_iter()
            .filter(|key| !LIVE_KEYS.contains(key))
            .collect();
        if !restart_needed.is_empty() && restart_needed != state.restart_needed {
            tracing::warn!(
                "{shown}: {} changed; they take effect after a restart of the daemon",
                restart_needed.join(", ")
            );
        }
        if state.problem.take().is_some() {
            tracing::info!("{shown}: the configuration is good again");
        }
        self.permission.set_problem(None);
        state.restart_needed = restart_needed;
        state.loaded_at = bridge_util::time::now_timestamp();
        state.good = next;
    }
}
