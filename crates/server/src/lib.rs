//! The copilot-bridge daemon: one axum application on one loopback port.
//!
//! Routes (see `docs/rpc.md`):
//! - `/` — the provider gateway's WebSocket endpoint (Provider Interface v2;
//!   providers authenticate in-protocol, so any `Origin` is accepted: browser
//!   tabs are providers);
//! - `/rpc` — JSON-RPC 2.0 over WebSocket and HTTP `POST`, behind the bearer
//!   token of `gateway.json`: sessions, their tools, the gateway;
//! - `/healthz` — liveness and counts, no secrets.
//!
//! Every request must name a loopback `Host` (DNS-rebinding defence); `/rpc`
//! and `/healthz` also refuse a non-loopback `Origin`. [`daemon`] owns the
//! process: it builds the session registry and the gateway from
//! [`bridge_config::BridgeConfig`], binds the port, writes `gateway.json`
//! (mode 0600) and shuts down on a signal, on `gateway.shutdown`, or — when
//! detached — once the last session has been gone for the idle grace.
//! [`client`] finds a running daemon and calls it, for the CLI.
//!
//! This crate must not implement tools, policy or the provider protocol: it
//! composes the engine and the gateway and adapts them to HTTP. It must never
//! log or return a secret outside the state file and the methods that exist to
//! hand one out (`gateway.providerToken`), and never serve a request it has
//! not checked (`Host`, `Origin`, token).
//!
//! Adding methods (e.g. the tool bus's `mcp.*`): write handlers with the
//! signature of [`rpc::Handler`] and add them to the table built in
//! [`rpc::methods::builtin`] (or pass an extended [`rpc::MethodTable`] to
//! [`app::router`]); parsing, batches, notifications, auth and transports
//! are shared.

pub mod app;
pub mod chat;
pub mod client;
pub mod config_watch;
pub mod daemon;
pub mod facade;
mod guard;
mod health;
pub mod http;
mod lifecycle;
mod mcp_code;
mod mcp_http;
pub mod openclaw;
pub mod orchestrations;
mod otlp;
pub mod process;
pub mod rpc;
pub mod state_file;
mod telemetry;
pub mod transcripts;
pub mod ui;
pub mod vscode;

pub use app::{ServerContext, router};
pub use client::{GatewayClient, RpcCallError, find_running};
pub use daemon::{Daemon, DaemonError, DaemonOptions};
pub use http::ConnectionLimits;
pub use state_file::GatewayFile;

/// The version every surface reports (`/healthz`, `gateway.status`, `gateway.json`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
