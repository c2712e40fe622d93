//! Every limit and timeout of the protocol, with the spec's values as
//! defaults. Tests shorten the timeouts; nothing else should need to.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Largest `tool.result` frame (spec: 5 MB).
    pub tool_result_max_bytes: usize,
    /// Largest frame of any other type (spec: 2 MB).
    pub message_max_bytes: usize,
    /// Frames above this are not read at all; the connection is closed with
    /// 1009 (between the per-type limits and this, `PAYLOAD_TOO_LARGE`
    /// answers and the connection stays).
    pub frame_hard_max_bytes: usize,
    /// Authenticated WebSocket connections (spec: 50). Connections still
    /// authenticating do not count: they have their own budget.
    pub max_connections: usize,
    /// WebSocket connections not yet authenticated, in all: a web page that
    /// opens many cannot lock providers out.
    pub max_unauthenticated: usize,
    /// WebSocket connections not yet authenticated from one `Origin` (a
    /// browser cannot lie about its origin; local clients without one share
    /// one budget).
    pub max_unauthenticated_per_origin: usize,
    /// A connection must send its `auth` message within this (pairing then
    /// has `auth_timeout`).
    pub handshake_timeout: Duration,
    pub max_tools_per_provider: usize,
    pub max_hook_rules_per_provider: usize,
    pub max_streams_per_provider: usize,
    /// Events kept per stream (spec: 200).
    pub stream_retention: usize,
    /// Bytes kept per stream (ours: 200 events of up to 2 MB each must not
    /// pin 400 MB); the oldest events go first, the newest always stays.
    pub stream_max_bytes: usize,
    /// Bytes kept in every stream of every session together: past it, the
    /// oldest events of whoever holds the most go first, so a flood of
    /// providers shortens its own history, not the daemon's memory.
    pub stream_store_max_bytes: usize,
    /// Largest `last` of `stream.query` (spec: 100).
    pub stream_query_max: usize,
    /// Bytes of events in one `stream.history` answer (ours): the newest
    /// that fit, `truncated` when any were left out. Equal to the outbound
    /// queue's bound, so an answer never outgrows what a connection may
    /// have waiting.
    pub stream_answer_max_bytes: usize,
    /// Pairing attempts per minute, gateway-wide (spec: 5).
    pub pairing_attempts_per_minute: usize,
    /// How long a shown pairing code stays valid.
    pub pairing_code_ttl: Duration,
    /// `hello` rebinds per connection per minute (spec: 10).
    pub rebinds_per_minute: usize,
    /// How long a reconnect token outlives its connection (spec: 30 s).
    pub reconnect_token_ttl: Duration,
    /// Default per-tool timeout when the provider declares none.
    pub default_tool_timeout: Duration,
    /// Calls queued behind a concurrency limit before `RATE_LIMITED` (spec: 10).
    pub concurrency_queue_limit: usize,
    /// Pushes per second per (provider, session) (spec: 10).
    pub pushes_per_second: u32,
    /// Consecutive inject → idle → inject cycles before injects pause (spec: 3).
    pub inject_cycle_limit: u32,
    /// Injects held while the session is busy, per (provider, session).
    pub inject_queue_limit: usize,
    /// A connection must authenticate (or finish pairing) within this.
    pub auth_timeout: Duration,
    /// WebSocket pings; a peer silent for two intervals is dropped.
    pub ping_interval: Duration,
    /// Messages buffered to one provider before it is considered stuck and
    /// disconnected.
    pub outbound_queue: usize,
    /// Bytes of messages buffered to one WebSocket provider before it is
    /// considered stuck and disconnected (`RATE_LIMITED`, close 1013). A
    /// single message larger than this still goes out when nothing else
    /// waits.
    pub outbound_queue_bytes: usize,
    /// Grace before a detached gateway exits after its last session (spec: 30 s).
    pub idle_exit_grace: Duration,
    /// Restarts of a crashing project provider before the gateway gives up
    /// (the budget renews after a minute of stable running).
    pub project_restart_limit: u32,
    /// Wait before the first restart of a crashed project provider; doubles
    /// with each further restart.
    pub project_restart_backoff: Duration,
    /// Time between SIGTERM and SIGKILL when a project provider is stopped.
    pub project_stop_grace: Duration,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        const MIB: usize = 1024 * 1024;
        Self {
            tool_result_max_bytes: 5 * MIB,
            message_max_bytes: 2 * MIB,
            frame_hard_max_bytes: 8 * MIB,
            max_connections: 50,
            max_unauthenticated: 64,
            max_unauthenticated_per_origin: 8,
            handshake_timeout: Duration::from_secs(3),
            max_tools_per_provider: 100,
            max_hook_rules_per_provider: 50,
            max_streams_per_provider: 20,
            stream_retention: 200,
            stream_max_bytes: 4 * MIB,
            stream_store_max_bytes: 32 * MIB,
            stream_query_max: 100,
            stream_answer_max_bytes: MIB,
            pairing_attempts_per_minute: 5,
            pairing_code_ttl: Duration::from_secs(300),
            rebinds_per_minute: 10,
            reconnect_token_ttl: Duration::from_secs(30),
            default_tool_timeout: Duration::from_secs(120),
            concurrency_queue_limit: 10,
            pushes_per_second: 10,
            inject_cycle_limit: 3,
            inject_queue_limit: 10,
            auth_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(15),
            outbound_queue: 4096,
            outbound_queue_bytes: MIB,
            idle_exit_grace: Duration::from_secs(30),
            project_restart_limit: 3,
            project_restart_backoff: Duration::from_secs(1),
            project_stop_grace: Duration::from_secs(2),
        }
    }
}
