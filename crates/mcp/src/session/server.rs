//! [`SessionServer`]: the MCP server over a session of this process's
//! engine (in the daemon: at `/mcp/session`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Query;
use bridge_engine::{CallOrigin, Session};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Extensions, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::SESSION_QUERY;
use super::approve::{APPROVE_TOOL, PermissionPrompts};
use super::args::{check_size, check_types};
use super::notify::{Listener, watch_tools};
use super::tools::{ToolScope, call_result, mcp_tool, scoped_tool, scoped_tools};
use crate::depth::{self, DepthError};

/// Finds the session a client asked for: `Some(id)` from `?session=ID`,
/// `None` for the default. `Err` is the reason, for the client.
pub type SessionLookup = Arc<dyn Fn(Option<&str>) -> Result<Arc<Session>, String> + Send + Sync>;

/// One client's server (over HTTP, one per MCP session).
pub struct SessionServer {
    lookup: SessionLookup,
    /// Who answers the `approve` tool's prompts; without, no such tool.
    prompts: Option<PermissionPrompts>,
    /// Which of the session's tools it offers.
    scope: ToolScope,
    /// Cancelled when the client's connection (this value) goes: its
    /// list-changed watchers stop.
    stop: CancellationToken,
}

impl Drop for SessionServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl SessionServer {
    pub fn new(lookup: SessionLookup) -> Self {
        Self {
            lookup,
            prompts: None,
            scope: ToolScope::Providers,
            stop: CancellationToken::new(),
        }
    }

    /// Offers the permission-prompt tool `approve`, relayed to `prompts`.
    pub fn with_permission_prompts(mut self, prompts: Option<PermissionPrompts>) -> Self {
        self.prompts = prompts;
        self
    }

    /// Offers the tools of `scope` instead of the providers'.
    #[must_use]
    pub fn with_scope(mut self, scope: ToolScope) -> Self {
        self.scope = scope;
        self
    }

    /// A server over `session` alone (`?session=` may name it or nothing).
    pub fn for_session(session: Arc<Session>) -> Self {
        Self::new(Arc::new(move |requested: Option<&str>| match requested {
            None => Ok(session.clone()),
            Some(id) if id == session.id() => Ok(session.clone()),
            Some(id) => Err(format!(
                "no session '{id}' here (this server serves '{}')",
                session.id()
            )),
        }))
    }

    /// A `tools/call` of this server: the session's tool, through
    /// `Session::call_tool` (or the `approve` prompt).
    async fn serve_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session(&context.extensions)?;
        let name = request.name.as_ref();
        if let Some(prompts) = self.prompts.as_ref().filter(|_| name == APPROVE_TOOL) {
            let args = request.arguments.unwrap_or_default();
            // A client that hangs up withdraws its prompt from the queue.
            return tokio::select! {
                relayed = prompts.relay(&session, &args) => relayed
                    .map(CallToolResponse::Complete)
                    .map_err(|reason| invalid(format!("{APPROVE_TOOL}: {reason}"))),
                () = context.ct.cancelled() => Err(ErrorData::internal_error(
                    "the permission prompt was cancelled by the client",
                    None,
                )),
            };
        }
        let Some(entry) = scoped_tool(&session, &self.scope, name) else {
            return Err(invalid(format!(
                "unknown tool '{name}': session '{}' has no {} by that name (tools/list shows what it has)",
                session.id(),
                match &self.scope {
                    ToolScope::Providers => "provider tool".to_owned(),
                    ToolScope::Service(service) => format!("{service} tool"),
                }
            )));
        };
        let mut args = request.arguments.unwrap_or_default();
        check_size(name, &args).map_err(invalid)?;
        match depth::take_depth(&mut args) {
            Ok(_) => {}
            Err(DepthError::Invalid(reason)) => return Err(invalid(reason)),
            Err(DepthError::TooDeep(too_deep)) => {
                return Ok(CallToolResponse::Complete(depth::too_deep_result(too_deep)));
            }
        }
        check_types(name, &entry.spec.input_schema, &args).map_err(invalid)?;
        // Dropping the call cancels it at the provider (tool.cancel).
        let outcome = tokio::select! {
            outcome = session.call_tool(name, Value::Object(args), CallOrigin::Mcp) => outcome,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error(format!("the call of {name} was cancelled by the client"), None));
            }
        };
        Ok(CallToolResponse::Complete(call_result(outcome)))
    }

    fn session(&self, extensions: &Extensions) -> Result<Arc<Session>, ErrorData> {
        let requested = requested_session(extensions).map_err(invalid)?;
        (self.lookup)(requested.as_deref()).map_err(invalid)
    }
}

/// `?session=ID` of the HTTP request that carried the message, if any.
fn requested_session(extensions: &Extensions) -> Result<Option<String>, String> {
    let Some(parts) = extensions.get::<axum::http::request::Parts>() else {
        return Ok(None);
    };
    if parts.uri.query().is_none() {
        return Ok(None);
    }
    let Query(query) =
        Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map_err(|err| {
            format!(
                "cannot read the query string of {}: {err}",
                parts.uri.path()
            )
        })?;
    Ok(query
        .get(SESSION_QUERY)
        .filter(|id| !id.is_empty())
        .cloned())
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// What both forms of the server announce: tools, and that their list
/// changes.
pub(crate) fn server_config() -> ServerConfig {
    ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "copilot-bridge-session",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "The tools of the providers connected to a copilot-bridge session. The list changes as providers come and go. A tool with a `target` parameter runs on one of several instances (browser tabs, say): list_<provider>_instances tells which.",
        )
}

impl ServerHandler for SessionServer {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let session = self.session(&context.extensions)?;
        let mut tools: Vec<_> = scoped_tools(&session, &self.scope)
            .iter()
            .filter(|entry| self.prompts.is_none() || entry.spec.name != APPROVE_TOOL)
            .map(|entry| mcp_tool(entry))
            .collect();
        if self.prompts.is_some() {
            tools.insert(0, PermissionPrompts::tool());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let meta = Some(context.meta.clone());
        let extensions = context.extensions.clone();
        crate::telemetry::tools_call(&tool, meta.as_ref(), &extensions, async {
            self.serve_call(request, context).await
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        match self.session(&context.extensions) {
            Ok(session) => {
                let listener = Listener::Handshake(context.peer.clone());
                tokio::spawn(watch_tools(
                    session,
                    self.scope.clone(),
                    listener,
                    self.stop.clone(),
                ));
            }
            // Every list and call will say why; nothing to watch.
            Err(err) => {
                tracing::debug!(reason = %err.message, "session MCP client connected to no session")
            }
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        (requested.tools_list_changed == Some(true))
            .then(|| SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let session = self.session(&context.request_context().extensions)?;
        let stop = self.stop.child_token();
        let listener = Listener::Subscription(context.sink().clone());
        tokio::select! {
            () = watch_tools(session, self.scope.clone(), listener, stop.clone()) => {}
            () = context.cancelled() => {}
        }
        stop.cancel();
        Ok(())
    }
}

/// The streamable HTTP service for the daemon's `/mcp/session`: a fresh
/// [`SessionServer`] per MCP session, each finding its session through
/// `lookup`. `stop` ends every open stream (the daemon is shutting down).
pub fn http_service(
    lookup: SessionLookup,
    stop: CancellationToken,
    prompts: Option<PermissionPrompts>,
) -> StreamableHttpService<SessionServer, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop;
    StreamableHttpService::new(
        move || Ok(SessionServer::new(lookup.clone()).with_permission_prompts(prompts.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
