//! The built-in workspace tools as entries of a session's tool table.

use std::sync::Arc;

use async_trait::async_trait;
use bridge_policy::Access;
use bridge_tools::{Tool, ToolContext, ToolError};
use serde_json::Value;

use crate::call::ToolFailure;
use crate::tools::{ToolHandler, ToolInvocation};

/// One workspace tool bound to its session's guard and settings.
pub struct WorkspaceTool {
    tool: Arc<dyn Tool>,
    ctx: ToolContext,
}

impl WorkspaceTool {
    pub fn new(tool: Arc<dyn Tool>, ctx: ToolContext) -> Self {
        Self { tool, ctx }
    }
}

#[async_trait]
impl ToolHandler for WorkspaceTool {
    async fn call(&self, invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        self.tool
            .call(&self.ctx, invocation.args)
            .await
            .map_err(|err| ToolFailure::from_tool_error(err.sanitized()))
    }

    fn accesses(&self, args: &Value) -> Result<Vec<Access>, ToolFailure> {
        self.tool
            .accesses(args)
            .map_err(|err| ToolFailure::from_tool_error(err.sanitized()))
    }
}

impl ToolFailure {
    pub fn from_tool_error(err: ToolError) -> Self {
        let details = match &err {
            ToolError::Conflict { details, .. } => Some(details.clone()),
            _ => None,
        };
        Self {
            kind: err.kind(),
            code: err.code().to_owned(),
            message: err.to_string(),
            details,
        }
    }
}
