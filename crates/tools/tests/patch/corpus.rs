//! The one diff corpus (tests/diff-corpus/) that the VS Code extension's
//! diff port also passes (extensions/vscode/test/diff-corpus.test.js): the
//! same diffs accepted with the same files, the same refusals at the same
//! lines, the same results and conflicts.

use bridge_testkit::{TempWorkspace, repo_root};
use bridge_tools::patch::{apply_hunks, parse_unified_diff};
use serde_json::Value;

use super::apply;

/// The cases of one corpus file.
fn cases(file: &str) -> Vec<Value> {
    let path = repo_root().join("tests/diff-corpus").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    let cases = parsed["cases"].as_array().unwrap().clone();
    assert!(!cases.is_empty(), "{} has cases", path.display());
    cases
}

/// A case's diff text: its lines joined, ending with a line break.
fn diff_text(case: &Value) -> String {
    let eol = if case["crlf"] == true { "\r\n" } else { "\n" };
    let lines: Vec<&str> = case["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line.as_str().unwrap())
        .collect();
    let mut text = lines.join(eol);
    text.push_str(eol);
    text
}

fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap()
}

#[test]
fn accepted_diffs_name_the_same_files() {
    for case in cases("accepted.json") {
        let files = parse_unified_diff(&diff_text(&case))
            .unwrap_or_else(|err| panic!("{}: {err}", name(&case)));
        let seen: Vec<Value> = files
            .iter()
            .map(|file| {
                serde_json::json!({"path": file.path(), "change": file.change().as_str(),
                                   "hunks": file.hunks.len(), "line": file.line})
            })
            .collect();
        assert_eq!(Value::Array(seen), case["files"], "{}", name(&case));
    }
}

#[tokio::test]
async fn refused_diffs_are_refused_at_the_same_line_by_the_parser_and_by_apply_patch() {
    for file in ["refused.json", "names.json"] {
        for case in cases(file) {
            let line = case["line"].as_u64().unwrap() as usize;
            let message = case["message"].as_str().unwrap();
            let text = diff_text(&case);
            let err = parse_unified_diff(&text).expect_err(name(&case));
            assert_eq!(err.line, line, "{}: {err}", name(&case));
            assert!(err.message.contains(message), "{}: {err}", name(&case));
            // What an agent sees: nothing written, the line and the reason.
            let ws = TempWorkspace::new();
            ws.write("a.txt", "one\ntwo\nthree\n");
            let refused = apply(&ws, &text).await.expect_err(name(&case));
            assert_eq!(refused.code, "invalid_arguments", "{}", name(&case));
            let shown = refused.to_string();
            assert!(
                shown.contains(&format!("line {line}: ")) && shown.contains(message),
                "{}: {shown}",
                name(&case)
            );
            assert_eq!(ws.read("a.txt"), "one\ntwo\nthree\n", "{}", name(&case));
        }
    }
}

#[test]
fn applied_diffs_give_the_same_content_or_the_same_conflicts() {
    for case in cases("applied.json") {
        let files = parse_unified_diff(&diff_text(&case)).unwrap();
        let before = case["before"].as_str().unwrap();
        let applied = apply_hunks(before, &files[0].hunks, true);
        match (&case["conflicts"], applied) {
            (Value::Null, Ok(applied)) => {
                assert_eq!(
                    applied.content,
                    case["after"].as_str().unwrap(),
                    "{}",
                    name(&case)
                );
            }
            (Value::Array(expected), Err(conflicts)) => {
                let seen: Vec<(Option<usize>, Option<usize>)> =
                    conflicts.iter().map(|c| (c.hunk, c.line)).collect();
                let wanted: Vec<(Option<usize>, Option<usize>)> = expected
                    .iter()
                    .map(|c| {
                        (
                            c["hunk"].as_u64().map(|n| n as usize),
                            c["line"].as_u64().map(|n| n as usize),
                        )
                    })
                    .collect();
                assert_eq!(seen, wanted, "{}", name(&case));
                for (conflict, want) in conflicts.iter().zip(expected) {
                    let reason = want["reason"].as_str().unwrap();
                    assert!(
                        conflict.reason.contains(reason),
                        "{}: {reason:?} not in {:?}",
                        name(&case),
                        conflict.reason
                    );
                }
            }
            (expected, got) => panic!("{}: expected {expected}, got {got:?}", name(&case)),
        }
    }
}
