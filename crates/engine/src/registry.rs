//! The session registry: create, list and end sessions, and tell listeners
//! (the gateway) when sessions come, go idle and end.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bridge_policy::{Approver, DenyAll, RuleStore};
use bridge_policy::{
    AuditLog, Guard, LivePermission, PermissionPolicy, WorkspacePolicy, WorkspaceRoot,
};
use bridge_protocol::ToolSpec;
use bridge_tools::{ToolContext, ToolRegistry, ToolSettings};
use tokio::sync::oneshot;

use crate::session::{Session, SessionInfo, SessionParts, lock};
use crate::tools::{ToolEntry, ToolOwner, read_lock, write_lock};
use crate::workspace::WorkspaceTool;
use bridge_util::ids;

/// Timeouts the sessions apply.
#[derive(Debug, Clone)]
pub struct RegistrySettings {
    /// How long a gate may think before the call is denied (spec: 5 s).
    pub gate_timeout: Duration,
    /// How long a transform callback may take (spec: 2 s).
    pub transform_timeout: Duration,
    /// Cleanup time providers get when a session ends.
    pub shutdown_deadline: Duration,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            gate_timeout: Duration::from_secs(5),
            transform_timeout: Duration::from_secs(2),
            shutdown_deadline: Duration::from_secs(10),
        }
    }
}

/// What every new session's workspace tools are built from.
#[derive(Clone)]
pub struct SessionDefaults {
    /// The permission rules at first; the registry keeps them in a
    /// [`LivePermission`] that a daemon replaces when config.toml changes
    /// ([`SessionRegistry::live_permission`]).
    pub permission: PermissionPolicy,
    pub read_only: bool,
    pub tool_settings: Arc<ToolSettings>,
    pub audit: Option<AuditLog>,
    pub approver: Arc<dyn Approver>,
    /// Rules people kept per workspace (see `bridge_policy::RuleStore`);
    /// `None`: no rules, every grant lasts a session at most.
    pub rules: Option<Arc<RuleStore>>,
    /// Home directory for shell analysis; `None` keeps the process's.
    pub home: Option<Option<PathBuf>>,
}

impl SessionDefaults {
    /// Read-only, default permissions, no audit, every "ask" denied.
    pub fn restrictive() -> Result<Self, bridge_policy::PolicyError> {
        Ok(Self {
            permission: PermissionPolicy::compile(&bridge_policy::PermissionRules::default())?,
            read_only: true,
            tool_settings: Arc::new(ToolSettings::default()),
            audit: None,
            approver: Arc::new(DenyAll),
            rules: None,
            home: None,
        })
    }
}

/// How to create a session.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// Chosen by the registry when `None`.
    pub id: Option<String>,
    pub label: String,
    pub cwd: PathBuf,
    pub foreground: bool,
    /// Which way its client came in.
    pub door: crate::Door,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("session {0} does not exist")]
    NotFound(String),
    #[error("session {0} already exists")]
    Duplicate(String),
    #[error("session {0} is ending")]
    Ending(String),
    #[error("cannot open the workspace of a new session at {path}: {reason}")]
    Workspace { path: PathBuf, reason: String },
    /// The workspace's `.agent-policy.yaml` is invalid: a configuration
    /// error of its owner, not of the request.
    #[error("workspace policy error: {0}")]
    WorkspacePolicy(bridge_policy::PolicyError),
}

/// Completes when a participant lets an ending session go.
pub type ShutdownWaiter = oneshot::Receiver<()>;

/// Hears about sessions. Calls are synchronous and made outside the
/// registry's locks; they must not block.
pub trait SessionListener: Send + Sync {
    fn session_started(&self, _session: &Arc<Session>) {}
    fn session_idle(&self, _session: &Arc<Session>) {}
    /// The session is ending; each returned waiter holds teardown until it
    /// completes or the deadline passes.
    fn session_ending(&self, _session: &Arc<Session>, _deadline: Duration) -> Vec<ShutdownWaiter> {
        Vec::new()
    }
    fn session_ended(&self, _session: &Arc<Session>) {}
}

#[derive(Default)]
pub(crate) struct Listeners {
    list: RwLock<Vec<Arc<dyn SessionListener>>>,
}

impl Listeners {
    fn snapshot(&self) -> Vec<Arc<dyn SessionListener>> {
        read_lock(&self.list).clone()
    }

    pub(crate) fn idle(&self, session: &Arc<Session>) {
        for listener in self.snapshot() {
            listener.session_idle(session);
        }
    }
}

struct Inner {
    sessions: Mutex<Vec<Arc<Session>>>,
    default_id: Mutex<Option<String>>,
    defaults: SessionDefaults,
    /// The permission rules every session's guard follows, new or old.
    permission: Arc<LivePermission>,
    settings: Arc<RegistrySettings>,
    listeners: Arc<Listeners>,
}

/// The sessions of one daemon. Cheap to clone.
#[derive(Clone)]
pub struct SessionRegistry {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SessionRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRegistry")
            .field("sessions", &self.list().len())
            .finish_non_exhaustive()
    }
}

impl SessionRegistry {
    pub fn new(defaults: SessionDefaults, settings: RegistrySettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                sessions: Mutex::new(Vec::new()),
                default_id: Mutex::new(None),
                permission: Arc::new(LivePermission::new(defaults.permission.clone())),
                defaults,
                settings: Arc::new(settings),
                listeners: Arc::new(Listeners::default()),
            }),
        }
    }

    pub fn settings(&self) -> &RegistrySettings {
        &self.inner.settings
    }

    /// The permission rules in force for every session of this registry:
    /// what is set here applies to each one's next call.
    pub fn live_permission(&self) -> &Arc<LivePermission> {
        &self.inner.permission
    }

    /// The rules approvals keep per workspace (`None`: grants last a
    /// session at most).
    pub fn approval_rules(&self) -> Option<&Arc<RuleStore>> {
        self.inner.defaults.rules.as_ref()
    }

    pub fn add_listener(&self, listener: Arc<dyn SessionListener>) {
        write_lock(&self.inner.listeners.list).push(listener);
    }

    /// Creates a session with the built-in workspace tools of `spec.cwd`.
    pub fn create(&self, spec: SessionSpec) -> Result<Arc<Session>, RegistryError> {
        self.create_with_approver(spec, self.inner.defaults.approver.clone())
    }

    /// [`create`](Self::create), with this session's "ask"s going to
    /// `approver` instead of the registry's (an agent's session, whose
    /// questions its own user answers).
    pub fn create_with_approver(
        &self,
        spec: SessionSpec,
        approver: Arc<dyn bridge_policy::Approver>,
    ) -> Result<Arc<Session>, RegistryError> {
        let read_only = self.inner.defaults.read_only;
        self.create_session(spec, approver, read_only)
    }

    /// [`create`](Self::create), read-only whatever the defaults say (an
    /// orchestrated sub-task that only reads a shared workspace).
    pub fn create_read_only(&self, spec: SessionSpec) -> Result<Arc<Session>, RegistryError> {
        self.create_session(spec, self.inner.defaults.approver.clone(), true)
    }

    /// Whether new sessions are read-only by default.
    pub fn read_only_by_default(&self) -> bool {
        self.inner.defaults.read_only
    }

    fn create_session(
        &self,
        spec: SessionSpec,
        approver: Arc<dyn bridge_policy::Approver>,
        read_only: bool,
    ) -> Result<Arc<Session>, RegistryError> {
        let id = spec.id.clone().unwrap_or_else(|| ids::unique_id("s"));
        let workspace_error = |reason: String| RegistryError::Workspace {
            path: spec.cwd.clone(),
            reason,
        };
        let root = WorkspaceRoot::new(&spec.cwd).map_err(|err| workspace_error(err.to_string()))?;
        let policy = WorkspacePolicy::load(root.path()).map_err(RegistryError::WorkspacePolicy)?;
        let cwd = root.path().to_path_buf();
        let defaults = &self.inner.defaults;
        let (_, permission) = self.inner.permission.current();
        let mut guard = Guard::new(root, (*permission).clone(), policy, read_only);
        if let Some(home) = &defaults.home {
            guard = guard.with_home(home.clone());
        }
        let guard = Arc::new(bridge_policy::LiveGuard::following(
            Arc::new(guard),
            self.inner.permission.clone(),
        ));
        let session = Arc::new(Session::new(SessionParts {
            info: SessionInfo {
                id: id.clone(),
                label: spec.label,
                cwd,
                foreground: spec.foreground,
                door: spec.door,
                created_at: bridge_util::time::now_timestamp(),
            },
            guard: guard.clone(),
            approver,
            rules: defaults.rules.clone(),
            audit: defaults.audit.clone(),
            settings: self.inner.settings.clone(),
            listeners: self.inner.listeners.clone(),
        }));
        let ctx = ToolContext::new(guard, defaults.tool_settings.clone());
        let registry = ToolRegistry::builtin();
        let entries: Vec<ToolEntry> = registry
            .names()
            .filter_map(|name| registry.get(name))
            .map(|tool| ToolEntry {
                spec: tool.spec(),
                owner: ToolOwner::Workspace,
                handler: Arc::new(WorkspaceTool::new(tool.clone(), ctx.clone())),
            })
            .collect();
        // A fresh table has no other owner: this cannot conflict.
        let _ = session.register_tools(&ToolOwner::Workspace, entries);
        {
            let mut sessions = lock(&self.inner.sessions);
            if sessions.iter().any(|s| s.id() == id) {
                return Err(RegistryError::Duplicate(id));
            }
            sessions.push(session.clone());
        }
        {
            let mut default_id = lock(&self.inner.default_id);
            if default_id.is_none() {
                *default_id = Some(id.clone());
            }
        }
        for listener in self.inner.listeners.snapshot() {
            listener.session_started(&session);
        }
        Ok(session)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.inner.sessions)
            .iter()
            .find(|s| s.id() == id)
            .cloned()
    }

    /// Live sessions (ending ones included until they are gone), oldest
    /// first.
    pub fn list(&self) -> Vec<Arc<Session>> {
        lock(&self.inner.sessions).clone()
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.inner.sessions).is_empty()
    }

    /// The session providers bind to when they name none: the first one
    /// created, unless it ended.
    pub fn default_session(&self) -> Option<Arc<Session>> {
        let id = lock(&self.inner.default_id).clone()?;
        self.get(&id)
    }

    /// The foreground session most recently created, else the default.
    pub fn foreground_session(&self) -> Option<Arc<Session>> {
        let sessions = lock(&self.inner.sessions);
        sessions
            .iter()
            .rev()
            .find(|s| s.info().foreground && s.state() != crate::SessionState::Ending)
            .cloned()
            .or_else(|| sessions.first().cloned())
    }

    /// Ends a session: listeners get `deadline` (default: the registry's) to
    /// let it go, then it is removed and they hear it ended.
    pub async fn end(&self, id: &str, deadline: Option<Duration>) -> Result<(), RegistryError> {
        let session = self
            .get(id)
            .ok_or_else(|| RegistryError::NotFound(id.to_owned()))?;
        if session.state() == crate::SessionState::Ending {
            return Err(RegistryError::Ending(id.to_owned()));
        }
        session.set_ending();
        let deadline = deadline.unwrap_or(self.inner.settings.shutdown_deadline);
        let mut waiters = Vec::new();
        for listener in self.inner.listeners.snapshot() {
            waiters.extend(listener.session_ending(&session, deadline));
        }
        let all_ready = futures_join_all(waiters);
        if tokio::time::timeout(deadline, all_ready).await.is_err() {
            tracing::info!(session = %id, "shutdown deadline passed; tearing down");
        }
        lock(&self.inner.sessions).retain(|s| s.id() != id);
        {
            let mut default_id = lock(&self.inner.default_id);
            if default_id.as_deref() == Some(id) {
                *default_id = lock(&self.inner.sessions)
                    .first()
                    .map(|s| s.id().to_owned());
            }
        }
        for listener in self.inner.listeners.snapshot() {
            listener.session_ended(&session);
        }
        Ok(())
    }

    /// Specs of a session's tools, for listings.
    pub fn tool_specs(&self, id: &str) -> Result<Vec<(ToolSpec, ToolOwner)>, RegistryError> {
        let session = self
            .get(id)
            .ok_or_else(|| RegistryError::NotFound(id.to_owned()))?;
        Ok(session
            .tools()
            .iter()
            .map(|entry| (entry.spec.clone(), entry.owner.clone()))
            .collect())
    }
}

/// Waits for every waiter; a dropped sender counts as ready.
async fn futures_join_all(waiters: Vec<ShutdownWaiter>) {
    for waiter in waiters {
        let _ = waiter.await;
    }
}
