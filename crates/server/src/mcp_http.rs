//! Our MCP servers over streamable HTTP: `/mcp/code`, `/mcp/memory` and
//! `/mcp/session`, behind the daemon's bearer token.

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::app::ServerContext;

/// The MCP routes, behind the token check.
pub(crate) fn routes(ctx: ServerContext) -> Router {
    // Each server adds its `.nest_service(path, service)` line here; the
    // token check must follow them (axum refuses a route layer on no routes).
    let _ = middleware::from_fn_with_state::<_, _, ()>(ctx, require_token);
    Router::new()
}

async fn require_token(State(ctx): State<ServerContext>, request: Request, next: Next) -> Response {
    let valid = crate::guard::presented_token(request.headers(), None)
        .is_some_and(|token| bridge_engine::ids::constant_time_eq(token, &ctx.token));
    if valid {
        next.run(request).await
    } else {
        crate::guard::unauthorized()
    }
}
