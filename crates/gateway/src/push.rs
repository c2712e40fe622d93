//! `push`, EventStreams and `stream.query`: levels, filters, budgets.

use bridge_protocol::provider::{ErrorCode, Push, StreamQuery};

use crate::connection::{Connection, Flow};

/// EventStreams per session.
#[derive(Default)]
pub(crate) struct Streams {}

pub(crate) fn on_push(conn: &Connection, _push: Push) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "push is not implemented yet",
        "push",
    )
}

pub(crate) fn on_stream_query(conn: &Connection, _query: StreamQuery) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "stream.query is not implemented yet",
        "stream.query",
    )
}

use std::sync::Arc;

use bridge_engine::Session;

use crate::provider::ProviderHandle;
use crate::state::GatewayInner;

impl Streams {
    pub(crate) fn drop_session(&self, session_id: &str) {
        let _ = session_id;
    }
}

/// Forgets budgets and queued injects of (provider, session).
pub(crate) fn forget(gw: &Arc<GatewayInner>, handle: &Arc<ProviderHandle>, session_id: &str) {
    let _ = (gw, handle, session_id);
}

/// The session went idle: deliver the next held inject, if any.
pub(crate) fn on_session_idle(gw: &Arc<GatewayInner>, session: &Arc<Session>) {
    let _ = (gw, session);
}
