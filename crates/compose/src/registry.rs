//! The sessions of a host: the one way the daemon, `run`, `tool`, `hook`,
//! `mcp code` and `orchestrate` build their session registry.

use std::sync::Arc;

use bridge_config::BridgeConfig;
use bridge_engine::{RegistrySettings, SessionDefaults, SessionRegistry};
use bridge_policy::{Approver, AuditLog, PermissionPolicy, RuleStore, WorkspaceChoice};

use crate::ComposeError;

/// Where people's approval rules are kept (see docs/approvals.md).
pub fn rules_path(config: &BridgeConfig) -> std::path::PathBuf {
    config.home.join("approval-rules.json")
}

/// The rules people kept, or none (said in the log) when the file cannot
/// be read as ours: a grant is never taken from a file in doubt.
fn rule_store(config: &BridgeConfig) -> Option<Arc<RuleStore>> {
    let path = rules_path(config);
    match RuleStore::open(&path) {
        Ok(store) => Some(Arc::new(store)),
        Err(err) => {
            tracing::error!(error = %err, "approval rules not used: every ask is asked");
            None
        }
    }
}

/// A registry whose sessions have the configured permission rules,
/// read-only mode, tool settings and audit log, their "ask"s going to
/// `approver`.
pub fn registry(
    config: &BridgeConfig,
    approver: Arc<dyn Approver>,
) -> Result<SessionRegistry, ComposeError> {
    let permission = PermissionPolicy::compile(&config.permissions)
        .map_err(|err| ComposeError::Config(err.to_string()))?;
    let defaults = SessionDefaults {
        permission,
        read_only: config.read_only,
        tool_settings: Arc::new(config.tools.clone()),
        audit: Some(AuditLog::new(&config.audit_log_dir)),
        approver,
        rules: rule_store(config),
        home: None,
    };
    Ok(SessionRegistry::new(defaults, RegistrySettings::default()))
}

/// A registry for sessions that run tasks (`run`, `sessions resume`,
/// `tool`, `mcp code`, `orchestrate`): [`registry`]'s sessions with the
/// tools the configuration gives every session the hub creates (OpenClaw's
/// memory, crate::openclaw). The daemon adds the same itself, with its
/// gateway; a hook's session gets none.
pub fn task_registry(
    config: &BridgeConfig,
    approver: Arc<dyn Approver>,
) -> Result<SessionRegistry, ComposeError> {
    let registry = registry(config, approver)?;
    let memory = crate::openclaw::OpenClawMemory::detect(config);
    if let Some(tools) = memory.session_tools(None) {
        memory.warm_up_in_background();
        registry.add_listener(tools);
    }
    Ok(registry)
}

/// Which directories a client may name as a workspace: `[workspaces]
/// roots`, else the default rule (see `bridge_policy::workspaces`).
pub fn workspace_choice(config: &BridgeConfig) -> WorkspaceChoice {
    WorkspaceChoice::new(
        &config.workspace_roots,
        &config.home,
        config.user_home.as_deref(),
    )
}
