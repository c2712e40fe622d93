//! Shared setup: a real temp workspace and a runner over it.

use std::sync::Arc;

use bridge_policy::{Guard, PermissionPolicy, PermissionRules, WorkspacePolicy, WorkspaceRoot};
use bridge_testkit::TempWorkspace;
use bridge_tools::{ToolContext, ToolRegistry, ToolRunner, ToolSettings};

/// A runner over `ws` with default permission rules, the workspace's own
/// `.agent-policy.yaml` (if any) and the given read-only mode.
pub fn runner(ws: &TempWorkspace, read_only: bool) -> ToolRunner {
    runner_with(
        ws,
        read_only,
        ToolSettings::default(),
        PermissionRules::default(),
    )
}

pub fn runner_with(
    ws: &TempWorkspace,
    read_only: bool,
    settings: ToolSettings,
    rules: PermissionRules,
) -> ToolRunner {
    let root = WorkspaceRoot::new(ws.path()).expect("workspace root");
    let permission = PermissionPolicy::compile(&rules).expect("rules compile");
    let workspace = WorkspacePolicy::load(ws.path()).expect("policy file loads");
    let guard = Guard::new(root, permission, workspace, read_only).with_home(None);
    let ctx = ToolContext::new(Arc::new(guard), Arc::new(settings));
    ToolRunner::new(ToolRegistry::builtin(), ctx)
}
