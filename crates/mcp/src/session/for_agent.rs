//! A session's own service tools (OpenClaw's memory) for an agent CLI the
//! hub runs, as the design has it: an MCP server configured in the session
//! the runner creates. The CLI is another process, so the server listens
//! on a loopback port of this process for the length of one run, behind a
//! bearer token made for that run; no process is started for it. Every call
//! is the session's `Session::call_tool` (decision, audit, redaction),
//! through the same [`SessionServer`] as `/mcp/session`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use bridge_engine::Session;
use bridge_engine::runner::served_tools::{ServedTools, SessionToolServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::SessionServer;
use super::tools::{ToolScope, scoped_tools};

/// Serves the tools one service (`ToolOwner::Service`) put in a session.
#[derive(Debug, Clone)]
pub struct ServiceToolsForAgent {
    service: String,
    name: String,
}

impl ServiceToolsForAgent {
    /// The tools of `service`, named `name` in the agent's configuration.
    pub fn new(service: &str, name: &str) -> Self {
        Self {
            service: service.to_owned(),
            name: name.to_owned(),
        }
    }
}

#[async_trait]
impl SessionToolServer for ServiceToolsForAgent {
    async fn serve(&self, session: &Arc<Session>) -> Result<Option<ServedTools>, String> {
        let scope = ToolScope::Service(self.service.clone());
        if scoped_tools(session, &scope).is_empty() {
            return Ok(None);
        }
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|err| format!("cannot listen on 127.0.0.1 for {}: {err}", self.name))?;
        let address = listener
            .local_addr()
            .map_err(|err| format!("cannot read the address of {}: {err}", self.name))?;
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        let served = session.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(SessionServer::for_session(served.clone()).with_scope(scope.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let token: Arc<str> = Arc::from(bridge_util::ids::token("run"));
        let expected = token.clone();
        let app = axum::Router::new()
            .nest_service("/mcp", mcp)
            .layer(middleware::from_fn(move |request, next| {
                bearer_only(expected.clone(), request, next)
            }));
        let shutdown = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::warn!(error = %err, "the session tools' server for an agent failed");
            }
        });
        let headers = BTreeMap::from([(
            header::AUTHORIZATION.as_str().to_owned(),
            format!("Bearer {token}"),
        )]);
        Ok(Some(ServedTools::new(
            &self.name,
            format!("http://{address}/mcp"),
            headers,
            stop,
        )))
    }
}

/// Only the agent holding this run's token reaches the session.
async fn bearer_only(token: Arc<str>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match presented {
        Some(presented) if bridge_util::ids::constant_time_eq(presented, &token) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            "this MCP server answers only the agent run it was started for (bearer token)",
        )
            .into_response(),
    }
}
