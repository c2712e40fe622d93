//! Hook rules and transforms from providers: compiling them into the
//! session's hook chain, and the `gate.check` / `transform.request` round
//! trips.

use bridge_protocol::provider::{GateResult, TransformResult};

use crate::connection::{Connection, Flow};

pub(crate) fn on_gate_result(conn: &Connection, _result: GateResult) -> Flow {
    let _ = conn;
    Flow::Continue
}

pub(crate) fn on_transform_result(conn: &Connection, _result: TransformResult) -> Flow {
    let _ = conn;
    Flow::Continue
}

use std::collections::BTreeMap;
use std::sync::Arc;

use bridge_engine::Session;
use bridge_protocol::provider::{ErrorMessage, HookRule, TransformSpec};

use crate::provider::ProviderHandle;
use crate::state::{GatewayInner, Trust};

/// Checks rules and transforms against the capability matrix and limits.
pub(crate) fn validate_hooks(
    gw: &GatewayInner,
    trust: &Trust,
    rules: &[HookRule],
    transforms: &BTreeMap<String, Option<TransformSpec>>,
) -> Result<(), ErrorMessage> {
    let _ = (gw, trust, rules, transforms);
    Ok(())
}

/// Makes `rules` and `transforms` exactly what `handle` has in `session`.
pub(crate) fn apply_hooks(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
    rules: &[HookRule],
    transforms: &BTreeMap<String, TransformSpec>,
) -> Result<(), ErrorMessage> {
    let _ = (gw, handle, session, rules, transforms);
    Ok(())
}

pub(crate) fn remove_hooks(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
) {
    let _ = (gw, handle, session);
}
