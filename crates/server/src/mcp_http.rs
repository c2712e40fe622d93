//! Our MCP servers over streamable HTTP: `/mcp/code`, `/mcp/memory` and
//! `/mcp/session`, behind the daemon's bearer token, with bad input
//! answered as JSON-RPC errors ([`errors`]).

mod errors;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::app::ServerContext;

/// The MCP routes, behind the token check.
pub(crate) fn routes(ctx: ServerContext) -> Router {
    // Each server adds its `.nest_service(path, service)` line here; the
    // layers must follow them (axum refuses a route layer on no routes).
    // The last layer runs first: no body is read before the token passed.
    Router::new()
        .nest_service("/mcp/code", crate::mcp_code::service(ctx.clone()))
        .nest_service("/mcp/session", session_service(ctx.clone()))
        .nest_service("/mcp/memory", memory_service(&ctx))
        .route_layer(middleware::from_fn(errors::json_rpc_errors))
        .route_layer(middleware::from_fn_with_state(ctx, require_token))
}

async fn require_token(State(ctx): State<ServerContext>, request: Request, next: Next) -> Response {
    let valid = crate::guard::presented_token(request.headers(), None)
        .is_some_and(|token| bridge_util::ids::constant_time_eq(token, &ctx.token));
    if valid {
        next.run(request).await
    } else {
        crate::guard::unauthorized()
    }
}

/// `/mcp/session[?session=ID]`: a session's provider tools. No `session`
/// means the daemon's default session, with `/rpc`'s `default` alias rules.
fn session_service(
    ctx: ServerContext,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    bridge_mcp::session::SessionServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    let stop = ctx.shutdown.child_token();
    // Claude Code's permission prompts wait in the approval queue.
    let prompts = bridge_mcp::session::PermissionPrompts::new(std::sync::Arc::new(
        bridge_engine::approvals::QueueApprover::new(ctx.approvals.clone(), ctx.approval_timeout),
    ));
    let lookup: bridge_mcp::session::SessionLookup = std::sync::Arc::new(move |requested| {
        let id = requested.unwrap_or(crate::app::DEFAULT_ALIAS);
        ctx.session(id).ok_or_else(|| match requested {
            Some(id) => format!(
                "no session '{id}' in the daemon (`copilot-bridge sessions list` shows them)"
            ),
            None => {
                "the daemon's default session has ended; name a session with ?session=ID".to_owned()
            }
        })
    });
    bridge_mcp::session::http_service(lookup, stop, Some(prompts))
}

/// `/mcp/memory`: OpenClaw's memory, read-only, laid out as the
/// configuration said when the daemon started (`OPENCLAW_WORKSPACE`, else
/// detected under `OPENCLAW_STATE_DIR` or `~/.openclaw`).
fn memory_service(
    ctx: &ServerContext,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    bridge_mcp::memory::MemoryServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    let memory = ctx.openclaw_memory.server().clone();
    // With a gateway, its tools on /mcp/memory run as the sessions' do.
    let memory = if ctx.openclaw.is_some() {
        memory.with_session_tools(crate::mcp_code::sessions(ctx.clone()))
    } else {
        memory
    };
    memory.into_http_service()
}
