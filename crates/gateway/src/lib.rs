//! The Provider Interface v2 server (the protocol as copilot-bridge speaks
//! it: docs/providers.md).
//!
//! Providers connect over WebSocket (or in-process, through
//! [`LocalProvider`]), authenticate at one of three trust levels, bind to
//! sessions and serve tools, gates, transforms, pushes and streams. The
//! gateway reaches sessions only through `bridge-engine`'s registry: provider
//! tools become [`bridge_engine::ToolHandler`]s in a session's table, rules
//! become its hook chain, so every door's call meets them.
//!
//! This crate must hold no durable state: after a restart providers
//! re-authenticate and re-register. It must never let one provider's
//! traffic stall another's, and never trust a provider's input: every frame
//! is bounded, parsed once, and answered in the protocol's own `error` shape.

// Protocol errors travel as `ErrorMessage` values (the wire shape) on cold
// paths; boxing them would only add noise.
#![allow(clippy::result_large_err)]

mod auth;
mod chat;
mod connection;
mod dispatch;
mod gates;
mod hello;
mod project;
mod provider;
mod push;
mod sessions;
mod settings;
mod state;
pub mod transport;
mod updates;

use std::path::PathBuf;
use std::sync::Arc;

use bridge_engine::SessionRegistry;
use serde::Serialize;

pub use chat::{
    ChatExchange, ChatOffer, ChatReply, ChatUnavailable, DISCONNECTED as CHAT_DISCONNECTED,
};
pub use project::{PROJECT_CONFIG_FILE, ProjectProviderConfig, ProjectProviderSpec};
pub use settings::GatewaySettings;
pub use state::{PairingInfo, ProviderInfo, Trust};
pub use transport::local::LocalProvider;

use crate::state::GatewayInner;

/// Why a gateway operation requested by the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("session {0} does not exist")]
    NoSuchSession(String),
    #[error("{0}")]
    Io(String),
}

/// What `status` reports.
#[derive(Debug, Clone, Serialize)]
pub struct GatewayStatus {
    pub connections: usize,
    pub providers: Vec<ProviderInfo>,
    pub pending_pairings: usize,
}

/// The gateway. Cheap to clone; all clones are the same gateway.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<GatewayInner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over `registry`. `state_dir` holds each provider's
    /// `persistDir` (`providers/<name>/`).
    pub fn new(registry: SessionRegistry, settings: GatewaySettings, state_dir: PathBuf) -> Self {
        let inner = GatewayInner::new(registry.clone(), settings, state_dir);
        registry.add_listener(Arc::new(sessions::GatewayListener::new(&inner)));
        Self { inner }
    }

    pub fn registry(&self) -> &SessionRegistry {
        &self.inner.registry
    }

    pub fn settings(&self) -> &GatewaySettings {
        &self.inner.settings
    }

    /// The WebSocket endpoint, to mount at `/`.
    pub fn router(&self) -> axum::Router {
        transport::ws::router(self.inner.clone())
    }

    /// An in-process provider at the internal trust level: no auth, same
    /// message shapes, no serialization.
    pub fn connect_local(&self) -> LocalProvider {
        transport::local::connect(self.inner.clone())
    }

    /// Mints a project-level provider token scoped to `session_id` (what a
    /// spawned provider gets in `TAP_PROVIDER_TOKEN`). Valid while the
    /// session lives.
    pub fn issue_project_token(&self, session_id: &str) -> Result<String, GatewayError> {
        auth::issue_project_token(&self.inner, session_id, false)
    }

    /// Pairing codes waiting for a provider to confirm them.
    pub fn pending_pairings(&self) -> Vec<PairingInfo> {
        auth::pending_pairings(&self.inner)
    }

    pub fn status(&self) -> GatewayStatus {
        self.inner.status()
    }

    /// Sets the WebSocket URL spawned project providers are given (known once
    /// the daemon has bound its port).
    pub fn set_public_url(&self, url: String) {
        self.inner.set_public_url(url);
    }

    /// Lets project providers declared in a session's `tap.config.json`
    /// be spawned (off by default: the file is the repository's, and
    /// spawning runs its commands).
    pub fn trust_project_providers(&self, trusted: bool) {
        self.inner.set_trust_project_providers(trusted);
    }

    /// The chat models providers offer (docs/providers.md, "Chat models").
    pub fn chat_offers(&self) -> Vec<ChatOffer> {
        self.inner.chat.offers()
    }

    /// Sends a model request to the most recently active provider offering
    /// `request.model` (the request's `id` is assigned here). Dropping the
    /// exchange before its end cancels the request at the provider.
    pub fn chat(
        &self,
        request: bridge_protocol::provider::chat::ChatRequestMessage,
    ) -> Result<ChatExchange, ChatUnavailable> {
        self.inner.chat.send(request)
    }

    /// Stops every spawned provider and closes every connection.
    pub async fn shutdown(&self) {
        self.inner.shutdown().await;
    }
}
