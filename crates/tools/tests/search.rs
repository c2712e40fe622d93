//! Tests of search_code on real temp workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_engine::ToolFailure;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use bridge_policy::PermissionRules;
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::{Value, json};

use crate::common::{runner, runner_with};

async fn search(ws: &TempWorkspace, args: Value) -> Result<Value, ToolFailure> {
    runner(ws, false).call("search_code", args).await
}

/// (file, line) of every hit, in result order.
fn locations(result: &Value) -> Vec<(String, u64)> {
    result["hits"]
        .as_array()
        .expect("hits array")
        .iter()
        .map(|hit| {
            (
                hit["file"].as_str().expect("file").to_owned(),
                hit["line"].as_u64().expect("line"),
            )
        })
        .collect()
}

fn loc(file: &str, line: u64) -> (String, u64) {
    (file.to_owned(), line)
}

fn code_workspace() -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write(
        "src/client.ts",
        "import { http } from './http';\n\nexport class PaymentClient {\n  charge(amount: number) {\n    return http.post('/charge', { amount });\n  }\n}\n",
    );
    ws.write(
        "src/server.rs",
        "fn main() {\n    let client = PaymentClient::new();\n    client.charge(10);\n}\n",
    );
    ws.write("docs/notes.md", "The paymentclient handles charges.\n");
    ws
}

#[tokio::test]
async fn finds_a_literal_with_line_column_and_snippet() {
    let ws = code_workspace();
    let result = search(&ws, json!({"query": "PaymentClient"}))
        .await
        .unwrap();

    assert_eq!(
        locations(&result),
        [loc("src/client.ts", 3), loc("src/server.rs", 2)]
    );
    let first = &result["hits"][0];
    assert_eq!(first["column"], 14);
    assert_eq!(first["snippet"], "export class PaymentClient {");
    assert!(first.get("before").is_none());
    assert_eq!(result["truncated"], false);
    assert_eq!(result["filesSearched"], 3);
}

#[tokio::test]
async fn literal_queries_treat_regex_characters_literally() {
    let ws = TempWorkspace::new();
    ws.write("a.rs", "foo(1);\nfoo bar\nfoo.*\n");

    let result = search(&ws, json!({"query": "foo("})).await.unwrap();
    assert_eq!(locations(&result), [loc("a.rs", 1)]);

    let result = search(&ws, json!({"query": "foo.*"})).await.unwrap();
    assert_eq!(locations(&result), [loc("a.rs", 3)]);
}

#[tokio::test]
async fn regex_queries_use_regex_syntax() {
    let ws = code_workspace();
    let result = search(&ws, json!({"query": r"charge\([a-z]+", "regex": true}))
        .await
        .unwrap();
    assert_eq!(locations(&result), [loc("src/client.ts", 4)]);

    let result = search(&ws, json!({"query": r"^\s+return", "regex": true}))
        .await
        .unwrap();
    assert_eq!(locations(&result), [loc("src/client.ts", 5)]);
    assert_eq!(result["hits"][0]["column"], 1);
}

#[tokio::test]
async fn case_insensitive_on_request() {
    let ws = code_workspace();
    let sensitive = search(&ws, json!({"query": "paymentclient"}))
        .await
        .unwrap();
    assert_eq!(locations(&sensitive), [loc("docs/notes.md", 1)]);

    let insensitive = search(
        &ws,
        json!({"query": "paymentclient", "caseSensitive": false}),
    )
    .await
    .unwrap();
    assert_eq!(
        locations(&insensitive),
        [
            loc("docs/notes.md", 1),
            loc("src/client.ts", 3),
            loc("src/server.rs", 2)
        ]
    );
}

#[tokio::test]
async fn glob_and_path_narrow_the_search() {
    let ws = code_workspace();
    let by_glob = search(&ws, json!({"query": "charge", "glob": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(locations(&by_glob), [loc("src/server.rs", 3)]);

    let by_path_glob = search(&ws, json!({"query": "charge", "glob": "src/**/*.ts"}))
        .await
        .unwrap();
    assert_eq!(
        locations(&by_path_glob),
        [loc("src/client.ts", 4), loc("src/client.ts", 5)]
    );

    let by_dir = search(&ws, json!({"query": "charge", "path": "docs"}))
        .await
        .unwrap();
    assert_eq!(locations(&by_dir), [loc("docs/notes.md", 1)]);

    let one_file = search(&ws, json!({"query": "charge", "path": "src/server.rs"}))
        .await
        .unwrap();
    assert_eq!(locations(&one_file), [loc("src/server.rs", 3)]);
    assert_eq!(one_file["filesSearched"], 1);
}

#[tokio::test]
async fn context_lines_surround_each_hit() {
    let ws = TempWorkspace::new();
    let text: String = (1..=12)
        .map(|n| format!("line {n}{}\n", if n == 4 || n == 6 { " hit" } else { "" }))
        .collect();
    ws.write("ctx.txt", &text);

    let result = search(&ws, json!({"query": "hit", "contextLines": 2}))
        .await
        .unwrap();
    let hits = result["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["line"], 4);
    assert_eq!(hits[0]["before"], json!(["line 2", "line 3"]));
    assert_eq!(hits[0]["after"], json!(["line 5", "line 6 hit"]));
    // Lines shared with the previous hit's context are repeated here.
    assert_eq!(hits[1]["line"], 6);
    assert_eq!(hits[1]["before"], json!(["line 4 hit", "line 5"]));
    assert_eq!(hits[1]["after"], json!(["line 7", "line 8"]));
}

#[tokio::test]
async fn context_is_clipped_at_file_edges() {
    let ws = TempWorkspace::new();
    ws.write("edge.txt", "hit first\nmiddle\nhit last");
    let result = search(&ws, json!({"query": "hit", "contextLines": 3}))
        .await
        .unwrap();
    let hits = result["hits"].as_array().unwrap();
    assert_eq!(hits[0]["before"], json!([]));
    assert_eq!(hits[0]["after"], json!(["middle", "hit last"]));
    assert_eq!(hits[1]["before"], json!(["hit first", "middle"]));
    assert_eq!(hits[1]["after"], json!([]));
}

#[tokio::test]
async fn crlf_line_endings_stay_out_of_snippets_and_context() {
    let ws = TempWorkspace::new();
    ws.write("win.txt", "before\r\nthe needle\r\nafter\r\n");
    let result = search(&ws, json!({"query": "needle", "contextLines": 1}))
        .await
        .unwrap();
    let hit = &result["hits"][0];
    assert_eq!(hit["line"], 2);
    assert_eq!(hit["column"], 5);
    assert_eq!(hit["snippet"], "the needle");
    assert_eq!(hit["before"], json!(["before"]));
    assert_eq!(hit["after"], json!(["after"]));
}

#[tokio::test]
async fn max_results_truncates() {
    let ws = TempWorkspace::new();
    for n in 0..20 {
        ws.write(&format!("f{n:02}.txt"), "needle\nhay\nneedle\n");
    }
    let result = search(&ws, json!({"query": "needle", "maxResults": 7}))
        .await
        .unwrap();
    let hits = locations(&result);
    assert_eq!(hits.len(), 7);
    assert_eq!(result["truncated"], true);
    let mut sorted = hits.clone();
    sorted.sort();
    assert_eq!(hits, sorted, "hits come sorted by file and line");

    let all = search(&ws, json!({"query": "needle", "maxResults": 40}))
        .await
        .unwrap();
    assert_eq!(locations(&all).len(), 40);
    assert_eq!(all["truncated"], false);
}

#[tokio::test]
async fn max_results_is_capped_by_the_settings() {
    let ws = TempWorkspace::new();
    ws.write("many.txt", "x\n".repeat(50));
    let settings = ToolSettings {
        search_max_results: 10,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());
    let result = runner
        .call("search_code", json!({"query": "x", "maxResults": 1000}))
        .await
        .unwrap();
    assert_eq!(locations(&result).len(), 10);
    assert_eq!(result["truncated"], true);
}

#[tokio::test]
async fn long_lines_are_cut_around_the_match() {
    let ws = TempWorkspace::new();
    let line = format!("{}needle{}", "a".repeat(2_000), "é".repeat(2_000));
    ws.write("min.js", format!("{line}\n"));
    let settings = ToolSettings {
        search_max_line_chars: 40,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());

    let result = runner
        .call("search_code", json!({"query": "needle"}))
        .await
        .unwrap();
    let hit = &result["hits"][0];
    assert_eq!(hit["column"], 2_001);
    let snippet = hit["snippet"].as_str().unwrap();
    assert!(snippet.contains("needle"), "{snippet}");
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
    assert!(
        snippet.chars().count() <= 42,
        "{} chars",
        snippet.chars().count()
    );
}

#[tokio::test]
async fn ignored_binary_and_oversized_files_are_skipped() {
    let ws = TempWorkspace::new();
    ws.write(".gitignore", "build/\n");
    ws.write("src/a.txt", "needle\n");
    ws.write("build/out.txt", "needle\n");
    ws.write(".hidden/h.txt", "needle\n");
    ws.write(".git/config", "needle\n");
    ws.write("blob.bin", b"needle\x00\x01\x02needle\n");
    ws.write("huge.txt", format!("{}needle\n", "x\n".repeat(600)));
    let settings = ToolSettings {
        search_max_file_bytes: 1_000,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());

    let result = runner
        .call("search_code", json!({"query": "needle"}))
        .await
        .unwrap();
    assert_eq!(locations(&result), [loc("src/a.txt", 1)]);
    assert_eq!(result["filesSkipped"], 1);

    let hidden = runner
        .call(
            "search_code",
            json!({"query": "needle", "includeHidden": true}),
        )
        .await
        .unwrap();
    assert_eq!(
        locations(&hidden),
        [loc(".hidden/h.txt", 1), loc("src/a.txt", 1)]
    );
}

#[tokio::test]
async fn non_utf8_names_and_contents_do_not_break_the_search() {
    let ws = TempWorkspace::new();
    let raw = ws.path().join(OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&raw, b"needle \xff\xfe here\n").unwrap();
    ws.write("plain.txt", "needle\n");

    let result = search(&ws, json!({"query": "needle"})).await.unwrap();
    assert_eq!(
        locations(&result),
        [loc("caf\u{FFFD}.txt", 1), loc("plain.txt", 1)]
    );
    assert_eq!(result["hits"][0]["snippet"], "needle \u{FFFD}\u{FFFD} here");
}

#[tokio::test]
async fn invalid_or_hostile_queries_are_refused() {
    let ws = code_workspace();

    let err = search(&ws, json!({"query": "foo(", "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.to_string().contains("\"foo(\""), "{err}");

    let err = search(&ws, json!({"query": "a{1000}{1000}{1000}", "regex": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments", "{err}");

    for (args, needle) in [
        (json!({"query": ""}), "query"),
        (json!({"query": "x", "contextLines": 11}), "contextLines"),
        (json!({"query": "x", "maxResults": 0}), "maxResults"),
        (json!({"query": "x", "glob": "[z"}), "[z"),
        (json!({"query": "x", "fuzzy": true}), "fuzzy"),
        (json!({"regex": true}), "query"),
    ] {
        let err = search(&ws, args.clone()).await.unwrap_err();
        assert_eq!(err.code, "invalid_arguments", "{args}: {err}");
        assert!(err.to_string().contains(needle), "{args}: {err}");
    }
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_denied() {
    let ws = code_workspace();
    let err = search(&ws, json!({"query": "x", "path": "../x"}))
        .await
        .unwrap_err();
    assert!(err.code == "policy_denied", "{err:?}");
    assert_eq!(err.code, "policy_denied");
}
