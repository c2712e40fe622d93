//! The tool bus: the `mcp.*` methods of the VS Code facade design
//! (`mcp.fs.read`, `mcp.search.code`, `mcp.edit.applyPatch`, …), each a
//! thin mapping onto a workspace tool of a session, called through
//! `Session::call_tool` so the policy sees every call.

use super::MethodTable;

/// Adds the `mcp.*` methods to `table`.
pub fn register(_table: &mut MethodTable) {}
