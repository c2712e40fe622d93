//! bridge-loadgen: the load generator of the facade benchmark
//! (`scripts/bench-facade.sh`).
//!
//! Two ways to load a server with one JSON `POST` over a pool of HTTP/1.1
//! keep-alive connections:
//! - **open loop** ([`run::open_loop`]): requests are due at a fixed rate,
//!   whatever the server does, and each latency is measured from the moment
//!   the request was *due*, so a server that stalls is charged for the
//!   requests it kept waiting (coordinated omission corrected);
//! - **closed loop** ([`run::closed_loop`]): N workers send back to back for
//!   a fixed time, which measures saturation throughput.
//!
//! Every answer's status (and, for streams, the closing `data: [DONE]`) is
//! checked; failures are counted by kind and reported, never dropped.
//!
//! The crate's second binary, `floor-proxy` (`src/bin/floor-proxy.rs`), is
//! the benchmark's floor: a proxy that only forwards bytes, on the bridge's
//! own HTTP stack.
//! The third, `rpc-load` (`src/bin/rpc-load.rs`), is side A of
//! `scripts/bench-gateway.sh`: N provider tool calls in flight on one `/rpc`
//! WebSocket.
//!
//! It is a measuring tool: never a runtime dependency of the bridge, and it
//! only loads servers on this machine (it refuses non-loopback targets).

pub mod client;
pub mod options;
pub mod run;
pub mod schedule;
pub mod stats;

pub use client::{Connection, Exchange, Failure, RequestTemplate, Target};
pub use run::{Phase, closed_loop, open_loop};
pub use schedule::Schedule;
pub use stats::{Recorder, Report};
