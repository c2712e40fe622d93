//! Integration tests of bridge-policy, one binary (see ARCHITECTURE.md).

mod approval;
mod audit;
mod audit_records;
mod audit_writer;
mod beneath;
mod guard;
mod paths;
mod permission;
mod protected;
mod redact;
mod shell;
mod workspace_policy;
mod workspaces;
