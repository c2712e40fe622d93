//! [`SessionProxy`]: `copilot-bridge mcp session` over stdio. The tools
//! live in the daemon (where the providers connect), so this answers the
//! agent on stdio and forwards every list and call to the daemon's
//! `/mcp/session` over streamable HTTP, and the daemon's
//! `notifications/tools/list_changed` back to the agent.
//!
//! `initialize` is answered at once; the daemon is found (or started)
//! right after, in the background, and at the latest by the first list or
//! call. When the daemon goes away, calls answer an error saying so, and
//! the next call reconnects if it is back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RunningService, ServiceError, SubscriptionContext,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::broadcast;

use super::SESSION_QUERY;
use super::server::server_config;

/// Finds the daemon the proxy forwards to.
#[async_trait]
pub trait DaemonLocator: Send + Sync + 'static {
    /// The running daemon. With `start`, one is started (detached) when
    /// none runs; without, `Err` says none runs. `Err` is for the agent to
    /// read.
    async fn locate(&self, start: bool) -> Result<DaemonEndpoint, String>;
}

/// Where the daemon answers, and its bearer token.
#[derive(Clone)]
pub struct DaemonEndpoint {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    pub token: String,
}

impl std::fmt::Debug for DaemonEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonEndpoint")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The stdio server that forwards to the daemon.
pub struct SessionProxy {
    inner: Arc<Inner>,
    /// Only these of the daemon's tools are offered (`None`: all).
    only: Option<&'static [&'static str]>,
}

struct Inner {
    locator: Box<dyn DaemonLocator>,
    session: Option<String>,
    upstream: tokio::sync::Mutex<Option<RunningService<RoleClient, Forwarder>>>,
    /// The agent, once it has initialized (handshake clients).
    downstream: Mutex<Option<Peer<RoleServer>>>,
    /// List changes for `2026-07-28` agents' listen streams.
    changes: broadcast::Sender<()>,
    /// Whether a connection ever succeeded: only the first attempts start
    /// the daemon; after that a missing daemon was stopped on purpose.
    connected_before: AtomicBool,
}

impl SessionProxy {
    /// Forwards to `session` (`None`: the daemon's default session) of the
    /// daemon `locator` finds.
    pub fn new(locator: Box<dyn DaemonLocator>, session: Option<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                locator,
                session,
                upstream: tokio::sync::Mutex::new(None),
                downstream: Mutex::new(None),
                changes: broadcast::channel(16).0,
                connected_before: AtomicBool::new(false),
            }),
            only: None,
        }
    }

    /// Offers only the daemon's tools named in `tools`
    /// (`copilot-bridge mcp approvals`: `approve`).
    pub fn only(mut self, tools: &'static [&'static str]) -> Self {
        self.only = Some(tools);
        self
    }

    fn offers(&self, tool: &str) -> bool {
        self.only.is_none_or(|tools| tools.contains(&tool))
    }
}

impl Inner {
    /// The live connection to the daemon, made now if there is none.
    async fn connection(self: &Arc<Self>) -> Result<Peer<RoleClient>, String> {
        let mut upstream = self.upstream.lock().await;
        if let Some(running) = upstream.as_ref()
            && !running.is_closed()
        {
            return Ok(running.peer().clone());
        }
        *upstream = None;
        let reconnect = self.connected_before.load(Ordering::Acquire);
        let endpoint = self.locator.locate(!reconnect).await?;
        let url = session_url(&endpoint.base_url, self.session.as_deref());
        let transport = transport(&url, &endpoint.token)?;
        let forwarder = Forwarder {
            inner: Arc::downgrade(self),
        };
        let running = forwarder.serve(transport).await.map_err(|err| {
            format!("cannot open an MCP session with the copilot-bridge daemon at {url}: {err}")
        })?;
        let peer = running.peer().clone();
        *upstream = Some(running);
        self.connected_before.store(true, Ordering::Release);
        drop(upstream);
        if reconnect {
            // The daemon may have other providers now.
            self.announce().await;
        }
        Ok(peer)
    }

    /// Forgets a connection that failed, so the next call makes a new one.
    async fn forget(&self) {
        if let Some(running) = self.upstream.lock().await.take() {
            let _ = running.cancel().await;
        }
    }

    /// Tells the agent that the list changed.
    async fn announce(&self) {
        let _ = self.changes.send(());
        let peer = bridge_util::sync::lock(&self.downstream).clone();
        if let Some(peer) = peer
            && let Err(err) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(error = %err, "cannot forward tools/list_changed to the agent");
        }
    }
}

/// `BASE/mcp/session[?session=ID]`.
fn session_url(base: &str, session: Option<&str>) -> String {
    let base = base.trim_end_matches('/');
    match session {
        Some(id) => format!("{base}/mcp/session?{SESSION_QUERY}={}", percent_encode(id)),
        None => format!("{base}/mcp/session"),
    }
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The streamable HTTP client to the daemon: the token as bearer, and no
/// proxy from the environment (the daemon is on loopback; a proxy must not
/// see the token).
fn transport(
    url: &str,
    token: &str,
) -> Result<StreamableHttpClientTransport<reqwest013::Client>, String> {
    ensure_crypto_provider();
    let client = reqwest013::Client::builder()
        .no_proxy()
        .redirect(reqwest013::redirect::Policy::none())
        // rmcp's own default: no idle pooling (a reused connection whose
        // last body was not fully read stalls on delayed ACKs).
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|err| format!("cannot build an HTTP client for {url}: {err}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = Some(token.to_owned());
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// rmcp's reqwest is built without a TLS crypto provider; ring (already in
/// the build through reqwest 0.12) is installed unless one already is.
fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The client side towards the daemon: passes list changes on to the agent.
#[derive(Clone)]
struct Forwarder {
    inner: Weak<Inner>,
}

impl ClientHandler for Forwarder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(inner) = self.inner.upgrade() {
            inner.announce().await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("copilot-bridge-mcp-session", env!("CARGO_PKG_VERSION")),
        )
    }
}

fn unavailable(reason: &str) -> String {
    format!(
        "the copilot-bridge daemon is not available: {reason}. Start it with `copilot-bridge daemon start`; the next call reconnects."
    )
}

/// A failure that is not the daemon's answer means the connection is bad.
async fn connection_failed(inner: &Inner, err: ServiceError) -> Result<String, ErrorData> {
    match err {
        ServiceError::McpError(error) => Err(error),
        other => {
            inner.forget().await;
            Ok(unavailable(&format!("the connection failed ({other})")))
        }
    }
}

impl ServerHandler for SessionProxy {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let peer = self
            .inner
            .connection()
            .await
            .map_err(|reason| ErrorData::internal_error(unavailable(&reason), None))?;
        match peer.list_tools(request).await {
            Ok(mut listed) => {
                listed.tools.retain(|tool| self.offers(&tool.name));
                Ok(listed)
            }
            Err(err) => {
                let reason = connection_failed(&self.inner, err).await?;
                Err(ErrorData::internal_error(reason, None))
            }
        }
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.offers(&request.name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}': this server offers {:?}",
                    request.name,
                    self.only.unwrap_or_default()
                ),
                None,
            ));
        }
        // The agent's progress token and the like belong to this hop.
        request.meta = None;
        let peer = match self.inner.connection().await {
            Ok(peer) => peer,
            Err(reason) => return Ok(error_result(unavailable(&reason))),
        };
        let call = peer.call_tool_once(request);
        let answer = tokio::select! {
            answer = call => answer,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled by the client", None));
            }
        };
        match answer {
            Ok(response) => Ok(response),
            Err(err) => {
                let reason = connection_failed(&self.inner, err).await?;
                Ok(error_result(reason))
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *bridge_util::sync::lock(&self.inner.downstream) = Some(context.peer.clone());
        // Connect now, so list changes reach the agent before its first call
        // and the first call does not wait for the daemon to start.
        let inner = self.inner.clone();
        tokio::spawn(async move {
            if let Err(reason) = inner.connection().await {
                tracing::warn!("{}", bridge_policy::redact(&unavailable(&reason)));
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        (requested.tools_list_changed == Some(true))
            .then(|| SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.inner.changes.subscribe();
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let _ = inner.connection().await;
        });
        loop {
            tokio::select! {
                changed = changes.recv() => match changed {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
                () = context.cancelled() => return Ok(()),
            }
        }
    }
}

fn error_result(text: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(text)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_goes_in_the_query_encoded() {
        assert_eq!(
            session_url("http://127.0.0.1:9/", None),
            "http://127.0.0.1:9/mcp/session"
        );
        assert_eq!(
            session_url("http://127.0.0.1:9", Some("a b/ü")),
            "http://127.0.0.1:9/mcp/session?session=a%20b%2F%C3%BC"
        );
    }
}
