//! Running one of our servers: over stdio until stdin closes or a
//! SIGTERM/SIGINT arrives, or as a streamable HTTP service for the daemon.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, Service, ServiceExt};
use tokio_util::sync::CancellationToken;

/// Why a server could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot start the MCP server over stdio: {0}")]
    Start(String),
    #[error("the MCP server stopped with an error: {0}")]
    Failed(String),
    #[error("cannot listen for SIGTERM/SIGINT: {0}")]
    Signals(String),
}

/// Serves `server` on stdin/stdout. Returns when the client closes stdin
/// (a clean end), on SIGTERM or SIGINT, or when `stop` is cancelled.
pub async fn serve_stdio<S>(server: S, stop: CancellationToken) -> Result<(), ServeError>
where
    S: Service<RoleServer> + Send + 'static,
{
    use tokio::signal::unix::{SignalKind, signal};
    let failed = |err: std::io::Error| ServeError::Signals(err.to_string());
    let mut terminate = signal(SignalKind::terminate()).map_err(failed)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(failed)?;
    // A signal or a closed stdin before the handshake is a clean stop too.
    let running = tokio::select! {
        started = server.serve(rmcp::transport::stdio()) => match started {
            Ok(running) => running,
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(err) => return Err(ServeError::Start(err.to_string())),
        },
        _ = terminate.recv() => return Ok(()),
        _ = interrupt.recv() => return Ok(()),
        () = stop.cancelled() => return Ok(()),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        outcome = &mut waiting => {
            return outcome.map(|_| ()).map_err(|err| ServeError::Failed(err.to_string()));
        }
        _ = terminate.recv() => tracing::info!("SIGTERM received; stopping the MCP server"),
        _ = interrupt.recv() => tracing::info!("SIGINT received; stopping the MCP server"),
        () = stop.cancelled() => {}
    }
    cancel.cancel();
    waiting
        .await
        .map(|_| ())
        .map_err(|err| ServeError::Failed(err.to_string()))
}

/// A streamable HTTP service answering with a fresh `S` per MCP session
/// (from `make`), for the daemon to nest at its path.
pub fn http_service<S, F>(make: F) -> StreamableHttpService<S, LocalSessionManager>
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
{
    StreamableHttpService::new(
        make,
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    )
}
