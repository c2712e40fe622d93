//! Shared setup: a real temp workspace and a one-session registry over it,
//! so every call takes the path every door takes (`Session::call_tool`:
//! the decision, the tool, redaction, the audit log).

use std::sync::Arc;

use bridge_engine::{
    CallOrigin, RegistrySettings, Session, SessionDefaults, SessionRegistry, SessionSpec,
    ToolFailure,
};
use bridge_policy::{Approver, AuditLog, DenyAll, PermissionPolicy, PermissionRules};
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::Value;

/// Calls tools in one session of a workspace.
#[derive(Clone)]
pub struct Runner {
    parts: Parts,
    session: Arc<Session>,
    _registry: Arc<SessionRegistry>,
}

#[derive(Clone)]
struct Parts {
    root: std::path::PathBuf,
    read_only: bool,
    settings: ToolSettings,
    rules: PermissionRules,
    audit: Option<AuditLog>,
    approver: Arc<dyn Approver>,
    session_id: String,
}

impl Runner {
    fn build(parts: Parts) -> Self {
        let defaults = SessionDefaults {
            permission: PermissionPolicy::compile(&parts.rules).expect("rules compile"),
            read_only: parts.read_only,
            tool_settings: Arc::new(parts.settings.clone()),
            audit: parts.audit.clone(),
            approver: parts.approver.clone(),
            rules: None,
            // Shell analysis judges `~` against no home at all.
            home: Some(None),
        };
        let registry = SessionRegistry::new(defaults, RegistrySettings::default());
        let session = registry
            .create(SessionSpec {
                id: Some(parts.session_id.clone()),
                label: "tools test".to_owned(),
                cwd: parts.root.clone(),
                foreground: true,
                door: bridge_engine::Door::Rpc,
            })
            .expect("session over the workspace");
        Self {
            parts,
            session,
            _registry: Arc::new(registry),
        }
    }

    /// The same workspace and settings, with an audit log.
    pub fn with_audit(self, audit: AuditLog, session_id: &str) -> Self {
        Self::build(Parts {
            audit: Some(audit),
            session_id: session_id.to_owned(),
            ..self.parts
        })
    }

    /// The same workspace and settings, with someone to answer "ask".
    pub fn with_approver(self, approver: Arc<dyn Approver>) -> Self {
        Self::build(Parts {
            approver,
            ..self.parts
        })
    }

    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        self.session
            .call_tool(name, args, CallOrigin::Cli)
            .await
            .result
    }
}

/// A runner over `ws` with default permission rules, the workspace's own
/// `.agent-policy.yaml` (if any) and the given read-only mode.
pub fn runner(ws: &TempWorkspace, read_only: bool) -> Runner {
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
) -> Runner {
    Runner::build(Parts {
        root: ws.path().to_path_buf(),
        read_only,
        settings,
        rules,
        audit: None,
        approver: Arc::new(DenyAll),
        session_id: "tools-test".to_owned(),
    })
}

/// An approver that answers every ask the same way at once, and keeps the
/// asks it was given.
pub struct FixedApprover {
    pub allow: bool,
    pub asks: std::sync::Mutex<Vec<bridge_policy::Ask>>,
}

impl FixedApprover {
    pub fn new(allow: bool) -> Arc<Self> {
        Arc::new(Self {
            allow,
            asks: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub fn asks(&self) -> Vec<bridge_policy::Ask> {
        self.asks.lock().unwrap().clone()
    }
}

impl Approver for FixedApprover {
    fn approve(&self, ask: bridge_policy::Ask) -> bridge_policy::ApprovalFuture<'_> {
        self.asks.lock().unwrap().push(ask);
        let approval = if self.allow {
            bridge_policy::Approval::Allowed {
                scope: bridge_policy::Scope::Once,
                surface: bridge_policy::Surface::Cli,
                waited: std::time::Duration::ZERO,
            }
        } else {
            bridge_policy::Approval::Denied {
                surface: bridge_policy::Surface::Cli,
                reason: None,
                waited: std::time::Duration::ZERO,
            }
        };
        Box::pin(std::future::ready(approval))
    }
}
