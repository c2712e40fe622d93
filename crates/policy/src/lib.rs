//! The security layer every tool call passes through, whatever door it came in by.
//!
//! Pure decision logic plus the audit file: permission rules, path containment,
//! the workspace policy file (`.agent-policy.yaml`), secret redaction, shell
//! command analysis, the audit log, and [`Guard`], which composes them.
//! This crate must not execute tools, talk to the network or hold sessions; and
//! every function here fails closed — when in doubt, it denies.

pub mod access;
pub mod agent_tools;
pub mod approval;
pub mod audit;
pub mod guard;
pub mod live_guard;
pub mod live_permission;
pub mod patch_files;
pub mod paths;
pub mod permission;
pub mod protected;
pub mod redact;
pub mod shell;
pub mod workspace_policy;
pub mod workspaces;

pub use access::Access;
pub use approval::{
    AgentAsks, Approval, ApprovalFuture, Approver, Ask, DenyAll, GrantKey, RuleStore, Scope,
    SessionGrants, Surface,
};
pub use audit::{AuditEntry, AuditLog};
pub use guard::Guard;
pub use live_guard::LiveGuard;
pub use live_permission::LivePermission;
pub use paths::{PathError, WorkspaceRoot};
pub use permission::{PermissionPolicy, PermissionRules};
pub use protected::ProtectedFiles;
pub use redact::{redact, redact_value};
pub use shell::{ShellAnalysis, ShellVerdict};
pub use workspace_policy::WorkspacePolicy;
pub use workspaces::WorkspaceChoice;

/// Errors that come from policy *configuration* (never from a decision: a
/// decision that cannot be made is a deny, not an error).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("invalid pattern in {key}: {pattern:?}: {reason}")]
    InvalidPattern {
        key: String,
        pattern: String,
        reason: String,
    },
    #[error("invalid workspace policy file {path}: {reason}")]
    InvalidPolicyFile { path: String, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
