//! Secrets in what the tools return, in the shapes that used to slip past
//! the redactor: private keys behind a line prefix, parts of a key read
//! without its header, and tokens that a size cap cuts through.

use bridge_policy::PermissionRules;
use bridge_testkit::{FakeKey, TempWorkspace};
use bridge_tools::ToolSettings;
use serde_json::{Value, json};

use crate::common::{Runner, runner, runner_with};

/// A GitHub token assembled at run time.
fn token() -> String {
    format!("gh{}_{}", "p", "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL1234")
}

fn with_settings(ws: &TempWorkspace, settings: ToolSettings) -> Runner {
    runner_with(ws, false, settings, PermissionRules::default())
}

async fn call(runner: &Runner, tool: &str, args: Value) -> Value {
    runner
        .call(tool, args)
        .await
        .unwrap_or_else(|err| panic!("{tool} failed: {err}"))
}

fn assert_no_key_material(key: &FakeKey, shown: &str) {
    if let Some(leak) = key.leaks_into(shown) {
        panic!("key material {leak:?} shown:\n{shown}");
    }
}

/// A deploy script with a key pasted into its comments.
fn commented_key_workspace(key: &FakeKey) -> TempWorkspace {
    let ws = TempWorkspace::new();
    ws.write(".agent-policy.yaml", "shell:\n  allow: [\"cat\"]\n");
    ws.write(
        "deploy.sh",
        format!(
            "#!/bin/sh\n# The deploy key:\n{}\nscp build.tar deploy@host:/srv\n",
            key.text_with("# ")
        ),
    );
    ws
}

#[tokio::test]
async fn read_file_of_a_key_behind_comment_markers_shows_none_of_it() {
    let key = FakeKey::pem(21);
    let ws = commented_key_workspace(&key);
    let result = call(
        &runner(&ws, false),
        "read_file",
        json!({"path": "deploy.sh"}),
    )
    .await;
    let content = result["content"].as_str().unwrap();
    assert_no_key_material(&key, content);
    assert!(content.contains("scp build.tar"), "{content}");
    assert!(content.contains("# [REDACTED]"), "{content}");
}

#[tokio::test]
async fn a_line_range_inside_a_key_shows_none_of_it() {
    for key in [FakeKey::pem(22), FakeKey::openssh(23)] {
        let ws = TempWorkspace::new();
        ws.write("id_key", format!("{}\n", key.text_with("")));
        let lines = u64::try_from(key.body.len()).unwrap() + 2;
        for (start, end) in [(3, 6), (2, 2), (lines - 3, lines), (2, lines - 1)] {
            let result = call(
                &runner(&ws, false),
                "read_file",
                json!({"path": "id_key", "startLine": start, "endLine": end}),
            )
            .await;
            let content = result["content"].as_str().unwrap();
            assert_no_key_material(&key, content);
            assert!(content.contains("[REDACTED]"), "{start}..{end}: {content}");
        }
    }
}

#[tokio::test]
async fn shell_output_of_a_key_behind_comment_markers_shows_none_of_it() {
    let key = FakeKey::openssh(24);
    let ws = commented_key_workspace(&key);
    for command in ["cat deploy.sh", "cat -n deploy.sh"] {
        let result = call(&runner(&ws, false), "shell", json!({"command": command})).await;
        let stdout = result["stdout"].as_str().unwrap();
        assert_eq!(result["exitCode"], 0, "{result}");
        assert_no_key_material(&key, stdout);
        assert!(stdout.contains("scp build.tar"), "{stdout}");
    }
}

#[tokio::test]
async fn search_hits_and_their_context_inside_a_key_show_none_of_it() {
    let key = FakeKey::pem(25);
    let ws = TempWorkspace::new();
    ws.write(
        "config/tls.yaml",
        format!("tls:\n  key: |\n{}\n", key.text_with("    ")),
    );
    ws.write("certs/server.key", format!("{}\n", key.text_with("")));
    // Text from the middle of a body line finds that line in both files.
    let needle = &key.body[5][20..32];
    let result = call(
        &runner(&ws, false),
        "search_code",
        json!({"query": needle, "contextLines": 2}),
    )
    .await;
    let hits = result["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{result}");
    for hit in hits {
        assert_eq!(
            hit["line"],
            if hit["file"] == "certs/server.key" {
                7
            } else {
                9
            }
        );
        assert_no_key_material(&key, &hit.to_string());
    }
}

#[tokio::test]
async fn a_token_cut_by_the_read_cap_shows_no_part_of_it() {
    let ws = TempWorkspace::new();
    let secret = token();
    let settings = ToolSettings {
        read_max_bytes: 1000,
        ..ToolSettings::default()
    };
    // One long line: only a line range reads it, and it is cut at the cap.
    for offset in [5, 20, 35] {
        let line = format!(
            "{} {secret} {}\n",
            "word ".repeat(200).get(..1000 - offset - 1).unwrap(),
            "tail ".repeat(300)
        );
        ws.write("log.txt", &line);
        let result = call(
            &with_settings(&ws, settings.clone()),
            "read_file",
            json!({"path": "log.txt", "startLine": 1}),
        )
        .await;
        assert_eq!(result["truncated"], true, "{result}");
        let content = result["content"].as_str().unwrap();
        assert!(
            !content.contains("gh"),
            "part of the token shown: …{}",
            &content[900..]
        );
        assert!(content.ends_with("[REDACTED]"), "…{}", &content[900..]);
    }
}

#[tokio::test]
async fn a_token_cut_by_the_shell_output_cap_shows_no_part_of_it() {
    let ws = TempWorkspace::new();
    ws.write(".agent-policy.yaml", "shell:\n  allow: [\"cat\"]\n");
    let secret = token();
    ws.write(
        "out.txt",
        format!("{} {secret} and the rest\n", "x".repeat(990)),
    );
    let settings = ToolSettings {
        shell_output_cap_bytes: 1000,
        ..ToolSettings::default()
    };
    let result = call(
        &with_settings(&ws, settings),
        "shell",
        json!({"command": "cat out.txt"}),
    )
    .await;
    assert_eq!(result["stdoutTruncated"], true, "{result}");
    let stdout = result["stdout"].as_str().unwrap();
    assert!(
        !stdout.contains("gh"),
        "part of the token shown: …{}",
        &stdout[950..]
    );
    assert!(stdout.ends_with("[REDACTED]"), "…{}", &stdout[950..]);
}

#[tokio::test]
async fn a_token_cut_by_a_search_snippet_shows_no_part_of_it() {
    let ws = TempWorkspace::new();
    let secret = token();
    let settings = ToolSettings {
        search_max_line_chars: 100,
        ..ToolSettings::default()
    };
    // The snippet is cut after the match (the token at its end) and, for a
    // match far into the line, before it (the token at its start).
    ws.write(
        "after.txt",
        format!("needle {} {secret} end\n", "y".repeat(80)),
    );
    ws.write(
        "before.txt",
        format!("{} {secret} needle end\n", "z".repeat(100)),
    );
    let result = call(
        &with_settings(&ws, settings),
        "search_code",
        json!({"query": "needle"}),
    )
    .await;
    let hits = result["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{result}");
    for hit in hits {
        let snippet = hit["snippet"].as_str().unwrap();
        assert!(snippet.contains("needle"), "{snippet}");
        assert!(snippet.contains("[REDACTED]"), "{snippet}");
        assert!(
            !snippet.contains("gh") && !snippet.contains("1234"),
            "part of the token shown: {snippet}"
        );
    }
}

/// Keys whose body lines a shape alone does not give away: wrapped at 76
/// (MIME) or 40, and the short last line read alone.
fn odd_keys() -> Vec<FakeKey> {
    vec![
        FakeKey::pem(26).wrapped_at(76),
        FakeKey::pem(27).wrapped_at(40),
        FakeKey::openssh(28).wrapped_at(52),
    ]
}

#[tokio::test]
async fn a_range_or_a_hit_inside_a_key_of_any_width_shows_none_of_it_nor_does_the_audit_log() {
    for (index, key) in odd_keys().into_iter().enumerate() {
        let ws = TempWorkspace::new();
        ws.write(
            "secrets/deploy.pem",
            format!("# staging\n{}\nafter the key\n", key.text_with("")),
        );
        let audit_dir = tempfile::tempdir().unwrap();
        let runner =
            runner(&ws, false).with_audit(bridge_policy::AuditLog::new(audit_dir.path()), "keys");
        // The key's lines are 2 (header) ..= body + 3 (footer).
        let body = u64::try_from(key.body.len()).unwrap();
        let last_body = body + 2;
        for (start, end) in [(3, 4), (last_body, last_body), (last_body, last_body + 2)] {
            let result = call(
                &runner,
                "read_file",
                json!({"path": "secrets/deploy.pem", "startLine": start, "endLine": end}),
            )
            .await;
            let content = result["content"].as_str().unwrap();
            assert_no_key_material(&key, content);
            assert!(
                content.starts_with("[REDACTED]"),
                "key {index} {start}..{end}: {content}"
            );
        }
        let tail = call(
            &runner,
            "read_file",
            json!({"path": "secrets/deploy.pem", "startLine": last_body + 1}),
        )
        .await;
        assert_eq!(
            tail["content"], "[REDACTED]\nafter the key\n",
            "the footer and on"
        );
        // A hit on the short last line, and context reaching into the key.
        let needle = &key.body[key.body.len() - 1][..6];
        let result = call(
            &runner,
            "search_code",
            json!({"query": needle, "contextLines": 2}),
        )
        .await;
        let hits = result["hits"].as_array().unwrap();
        assert!(!hits.is_empty(), "key {index}: {result}");
        for hit in hits {
            assert_no_key_material(&key, &hit.to_string());
        }
        let after = call(
            &runner,
            "search_code",
            json!({"query": "after the key", "contextLines": 3}),
        )
        .await;
        assert_no_key_material(&key, &after.to_string());
        assert_eq!(after["hits"][0]["snippet"], "after the key", "{after}");
        let audit = crate::runner::audit_entries(audit_dir.path());
        assert!(audit.len() >= 6, "{audit:?}");
        for entry in &audit {
            assert_no_key_material(&key, &entry.to_string());
        }
    }
}
