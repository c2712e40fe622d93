//! A provider tool's declared access (`access` of its declaration, ours:
//! docs/providers.md, "Declared access") turned into the [`Access`]es the
//! session's decision checks before the call is sent: containment, read-only
//! mode and the workspace policy's write globs, as for the built-in tools.

use bridge_engine::ToolFailure;
use bridge_policy::Access;
use bridge_protocol::excerpt;
use bridge_protocol::provider::ToolAccess;
use serde_json::Value;

/// What a call with `args` declares it reads and writes. A declared argument
/// that is absent declares nothing; one of the wrong type, or a diff that does
/// not parse, refuses the call (the decision cannot be made, so it is no).
pub(crate) fn declared(
    tool: &str,
    access: &ToolAccess,
    args: &Value,
) -> Result<Vec<Access>, ToolFailure> {
    let mut accesses = Vec::new();
    for name in &access.reads {
        for path in paths(tool, name, args)? {
            accesses.push(Access::Read(path));
        }
    }
    for name in &access.writes {
        for path in paths(tool, name, args)? {
            accesses.push(Access::Write(path));
        }
    }
    for name in &access.diffs {
        let Some(value) = args.get(name) else {
            continue;
        };
        let Some(diff) = value.as_str() else {
            return Err(invalid(tool, name, "a unified diff (string)"));
        };
        let files = bridge_tools::patch::parse_unified_diff(diff).map_err(|err| {
            ToolFailure::new(
                "invalid_arguments",
                format!(
                    "{tool}: argument {:?} is not a unified diff: {err}",
                    excerpt(name)
                ),
            )
        })?;
        for file in files {
            for path in [file.old_path, file.new_path].into_iter().flatten() {
                if !accesses.contains(&Access::Write(path.clone())) {
                    accesses.push(Access::Write(path));
                }
            }
        }
    }
    Ok(accesses)
}

/// The path or paths an argument holds: a string or an array of strings.
fn paths(tool: &str, name: &str, args: &Value) -> Result<Vec<String>, ToolFailure> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(path)) => Ok(vec![path.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(tool, name, "a path or an array of paths"))
            })
            .collect(),
        Some(_) => Err(invalid(tool, name, "a path or an array of paths")),
    }
}

fn invalid(tool: &str, name: &str, expected: &str) -> ToolFailure {
    ToolFailure::new(
        "invalid_arguments",
        format!("{tool}: argument {:?} must be {expected}", excerpt(name)),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn access(reads: &[&str], writes: &[&str], diffs: &[&str]) -> ToolAccess {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        ToolAccess {
            effect: None,
            reads: names(reads),
            writes: names(writes),
            diffs: names(diffs),
        }
    }

    #[test]
    fn paths_and_diffs_become_reads_and_writes() {
        let diff = "--- a/src/a.js\n+++ b/src/a.js\n@@ -1,1 +1,1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+x\n";
        let got = declared(
            "t",
            &access(&["path"], &["out"], &["patch"]),
            &json!({"path": "r.txt", "out": ["w1", "w2"], "patch": diff}),
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Access::Read("r.txt".into()),
                Access::Write("w1".into()),
                Access::Write("w2".into()),
                Access::Write("src/a.js".into()),
                Access::Write("new.txt".into()),
            ]
        );
    }

    #[test]
    fn absent_arguments_declare_nothing_and_wrong_types_refuse() {
        let declared_access = access(&["path"], &[], &["patch"]);
        assert!(
            declared("t", &declared_access, &json!({}))
                .unwrap()
                .is_empty()
        );
        let err = declared("t", &declared_access, &json!({"path": 3})).unwrap_err();
        assert!(
            err.message.contains("\"path\" must be a path"),
            "{}",
            err.message
        );
        let err = declared("t", &declared_access, &json!({"patch": "not a diff"})).unwrap_err();
        assert!(
            err.message.contains("not a unified diff"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_effect_follows_what_is_declared() {
        use bridge_protocol::ToolEffect;
        assert_eq!(access(&["p"], &[], &[]).effect(), ToolEffect::Read);
        assert_eq!(access(&["p"], &["q"], &[]).effect(), ToolEffect::Write);
        assert_eq!(access(&[], &[], &["d"]).effect(), ToolEffect::Write);
        assert_eq!(access(&[], &[], &[]).effect(), ToolEffect::Execute);
    }
}
