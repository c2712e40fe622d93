//! Tests of workspace_policy.
