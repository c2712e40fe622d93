//! State updates (`tools.update`, `hooks.update`, `context.update`,
//! `filter.set`): `ack` with a per-(provider, session) revision, one update
//! per type in flight.

use bridge_protocol::provider::{ContextUpdate, ErrorCode, FilterSet, HooksUpdate, ToolsUpdate};

use crate::connection::{Connection, Flow};

pub(crate) fn on_tools_update(conn: &mut Connection, _update: ToolsUpdate) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "tools.update is not implemented yet",
        "tools.update",
    )
}

pub(crate) fn on_hooks_update(conn: &mut Connection, _update: HooksUpdate) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "hooks.update is not implemented yet",
        "hooks.update",
    )
}

pub(crate) fn on_context_update(conn: &mut Connection, _update: ContextUpdate) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "context.update is not implemented yet",
        "context.update",
    )
}

pub(crate) fn on_filter_set(conn: &mut Connection, _filter: FilterSet) -> Flow {
    conn.reject(
        ErrorCode::UnknownType,
        "filter.set is not implemented yet",
        "filter.set",
    )
}
