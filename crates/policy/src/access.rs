//! What a tool call will do to the workspace, declared before it runs.
//!
//! The decision ([`Guard::check_accesses`](crate::Guard::check_accesses))
//! checks every declared access, so a tool that writes files or runs
//! commands is checked by the decision itself, not by remembering to call
//! the guard inside its handler. Tools that cannot say what they will do
//! must refuse to be called (fail closed).

use serde_json::Value;

use crate::paths::PATH_KEYS;

/// One thing a call will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Reads this path: it must resolve inside the workspace.
    Read(String),
    /// Creates, changes or deletes this path: containment, read-only mode
    /// and the workspace policy's write globs.
    Write(String),
    /// Changes files it does not name beforehand (a patch an agent applies
    /// with its own tool): only a writable workspace may take it.
    WriteUnnamed { tool: String },
    /// Runs this command line through the shell analysis, in `cwd`
    /// (workspace-relative; the root when `None`).
    Run {
        command: String,
        cwd: Option<String>,
    },
}

/// Every path-like argument of `args` (a [`PATH_KEYS`] key holding a string
/// or an array of strings, at any depth), in document order.
pub fn path_arguments(args: &Value) -> Vec<&str> {
    let mut found = Vec::new();
    collect_paths(args, &mut found);
    found
}

fn collect_paths<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if PATH_KEYS.contains(&key.as_str()) {
                    match value {
                        Value::String(path) => found.push(path),
                        Value::Array(items) => found.extend(items.iter().filter_map(Value::as_str)),
                        _ => {}
                    }
                }
                collect_paths(value, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_paths(item, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn path_arguments_are_found_at_any_depth_and_in_arrays() {
        let args = json!({
            "path": "a.txt",
            "edits": [{"file": "b.txt"}, {"other": "c.txt"}],
            "paths": "not a path key",
            "target": ["d.txt", 7, "e.txt"],
        });
        let mut found = path_arguments(&args);
        found.sort_unstable();
        assert_eq!(found, ["a.txt", "b.txt", "d.txt", "e.txt"]);
    }
}
