//! The gateway's in-memory state. Nothing here outlives the process: the
//! gateway is a relay, not a store.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bridge_engine::SessionRegistry;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::GatewayStatus;
use crate::dispatch::{InstanceGroups, Limiters};
use crate::project::SpawnedProviders;
use crate::provider::{DetachedProvider, Outbound, ProviderHandle};
use crate::push::Streams;
use crate::settings::GatewaySettings;

/// How far a provider is trusted (spec: "Authentication and trust levels").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "level", rename_all = "lowercase")]
pub enum Trust {
    /// In-process: every capability, any session.
    Internal,
    /// Spawned from a project config (or holding a token minted for a
    /// session): bound to that session.
    Project {
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// Self-connecting, user-paired: tools, pushes and static appends, in
    /// the paired session only.
    External {
        #[serde(rename = "sessionId")]
        session_id: String,
    },
}

impl Trust {
    pub fn level(&self) -> &'static str {
        match self {
            Self::Internal => "internal",
            Self::Project { .. } => "project",
            Self::External { .. } => "external",
        }
    }

    /// The one session a non-internal provider may use.
    pub fn scoped_session(&self) -> Option<&str> {
        match self {
            Self::Internal => None,
            Self::Project { session_id } | Self::External { session_id } => Some(session_id),
        }
    }

    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Internal)
    }

    pub fn is_external(&self) -> bool {
        matches!(self, Self::External { .. })
    }

    /// May this provider act on `session_id`?
    pub fn allows_session(&self, session_id: &str) -> bool {
        self.scoped_session()
            .is_none_or(|scoped| scoped == session_id)
    }
}

/// A connected, registered provider, for `status`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub provider_id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    pub trust: String,
    pub sessions: Vec<String>,
    pub all_sessions: bool,
    pub tools: Vec<String>,
}

/// A pairing code waiting for its provider (never sent to the provider).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingInfo {
    pub code: String,
    pub session_id: String,
    /// Who asked (the `name` of the `auth`, if it gave one) and from where.
    pub requested_by: String,
    pub age_secs: u64,
}

pub(crate) struct PendingPairing {
    pub code: String,
    pub session_id: String,
    pub requested_by: String,
    pub created: Instant,
}

pub(crate) struct ProjectToken {
    pub session_id: String,
    /// Minted for a provider a repository's `tap.config.json` declared:
    /// the repository's code, which may not offer chat models.
    pub spawned: bool,
}

pub(crate) struct ExternalToken {
    pub session_id: String,
}

/// Everything behind the gateway's one lock. Critical sections are short
/// and never await; the hot path of a tool call does not take this lock.
#[derive(Default)]
pub(crate) struct GatewayState {
    /// Registered providers by provider id.
    pub providers: HashMap<String, Arc<ProviderHandle>>,
    /// (name, instance) → provider id of the live registration, or of a
    /// `hello` still registering (so two connections cannot both claim it).
    pub identities: HashMap<(String, String), String>,
    /// Reconnect token → what a reconnect restores, for providers whose
    /// connection dropped (live providers hold their token themselves);
    /// kept for the token's TTL.
    pub reconnect: HashMap<String, DetachedProvider>,
    pub project_tokens: HashMap<String, ProjectToken>,
    pub external_tokens: HashMap<String, ExternalToken>,
    /// Connection id → its pairing.
    pub pairings: HashMap<u64, PendingPairing>,
    /// When recent pairing attempts (`auth` with mode `pair`) were made,
    /// gateway-wide.
    pub pairing_attempts: VecDeque<Instant>,
    /// Authenticated connections (they hear `sessions.updated`).
    pub authenticated: HashMap<u64, (Outbound, Trust)>,
    /// (provider id, session id) → completes when the provider sends
    /// `shutdown.ready`.
    pub shutdown_waiters: HashMap<(String, String), oneshot::Sender<()>>,
    pub public_url: Option<String>,
    pub trust_project_providers: bool,
}

pub(crate) struct GatewayInner {
    pub registry: SessionRegistry,
    pub settings: GatewaySettings,
    pub state_dir: PathBuf,
    pub state: Mutex<GatewayState>,
    /// Authenticated WebSocket connections.
    pub connections: AtomicUsize,
    /// Connections still authenticating, by `Origin` ("" without one).
    pub unauthenticated: Mutex<HashMap<String, usize>>,
    next_connection: AtomicU64,
    activity: AtomicU64,
    /// Provider instances per (session, provider name), for routing.
    pub groups: InstanceGroups,
    /// Concurrency limits by scope.
    pub limiters: Limiters,
    /// Which transform sections each provider instance holds per session.
    pub hooks: crate::gates::HookState,
    /// EventStreams per session.
    pub streams: Streams,
    /// In-flight state updates and their apply locks.
    pub updates: crate::updates::UpdateSlots,
    pub spawned: SpawnedProviders,
    /// Chat models offered by connections and the requests they serve.
    pub chat: Arc<crate::chat::ChatHub>,
    /// Cancelled when the gateway shuts down: every connection closes.
    pub closing: CancellationToken,
}

impl GatewayInner {
    pub(crate) fn new(
        registry: SessionRegistry,
        settings: GatewaySettings,
        state_dir: PathBuf,
    ) -> Arc<Self> {
        Arc::new(Self {
            registry,
            settings,
            state_dir,
            state: Mutex::new(GatewayState::default()),
            connections: AtomicUsize::new(0),
            unauthenticated: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(1),
            activity: AtomicU64::new(1),
            groups: InstanceGroups::default(),
            limiters: Limiters::default(),
            hooks: crate::gates::HookState::default(),
            streams: Streams::default(),
            updates: Default::default(),
            spawned: SpawnedProviders::default(),
            chat: Arc::default(),
            closing: CancellationToken::new(),
        })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, GatewayState> {
        // Every critical section leaves the state consistent (single inserts
        // and removals), so a panic elsewhere must not wedge the gateway.
        bridge_util::sync::lock(&self.state)
    }

    pub(crate) fn next_connection_id(&self) -> u64 {
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    /// A gateway-wide sequence number: "most recently active" compares these.
    pub(crate) fn tick(&self) -> u64 {
        self.activity.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn set_public_url(&self, url: String) {
        self.lock().public_url = Some(url);
    }

    pub(crate) fn set_trust_project_providers(&self, trusted: bool) {
        self.lock().trust_project_providers = trusted;
    }

    pub(crate) fn status(&self) -> GatewayStatus {
        let (providers, pending_pairings) = {
            let state = self.lock();
            let providers: Vec<Arc<ProviderHandle>> = state.providers.values().cloned().collect();
            let ttl = self.settings.pairing_code_ttl;
            let pending = state
                .pairings
                .values()
                .filter(|p| p.created.elapsed() <= ttl)
                .count();
            (providers, pending)
        };
        let mut providers: Vec<ProviderInfo> = providers.iter().map(|p| p.info()).collect();
        providers.sort_by(|a, b| (&a.name, &a.instance).cmp(&(&b.name, &b.instance)));
        GatewayStatus {
            connections: self.connections.load(Ordering::Relaxed),
            providers,
            pending_pairings,
        }
    }

    pub(crate) async fn shutdown(&self) {
        self.closing.cancel();
        self.spawned.stop_all().await;
    }
}
