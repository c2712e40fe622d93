//! `apply_patch`: a 20-hunk diff on a 5,000-line file and a 10-file patch,
//! through a session's call path (policy, parsing, verification, atomic writes,
//! redaction), plus the in-memory parse + apply alone for comparison.
//! Each measured iteration applies the patch once to freshly reset files.

#![allow(
    clippy::expect_used,
    reason = "a benchmark whose setup or patch fails must stop, not measure"
)]

#[path = "support.rs"]
mod support;

use std::hint::black_box;

use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use bridge_tools::patch::{apply_hunks, parse_unified_diff};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use support::BenchSession;

const BIG_FILE_LINES: usize = 5_000;
const BIG_FILE_HUNKS: usize = 20;
const SMALL_FILES: usize = 10;
const SMALL_FILE_LINES: usize = 300;

fn file_text(name: &str, lines: usize) -> String {
    (1..=lines)
        .map(|n| format!("    let {name}_{n} = compute({n}, \"{name}\"); // line {n}\n"))
        .collect()
}

/// A diff of `path` that rewrites one line in each of `hunks` evenly spaced
/// places, with three lines of context as `diff -u` writes them.
fn file_diff(path: &str, name: &str, lines: usize, hunks: usize) -> String {
    let original: Vec<String> = file_text(name, lines).lines().map(str::to_owned).collect();
    let mut diff = format!("--- a/{path}\n+++ b/{path}\n");
    let spacing = lines / hunks;
    for hunk in 0..hunks {
        let changed = hunk * spacing + spacing / 2; // 0-based
        let start = changed - 3;
        diff.push_str(&format!("@@ -{},7 +{},8 @@\n", start + 1, start + 1 + hunk));
        for line in &original[start..changed] {
            diff.push_str(&format!(" {line}\n"));
        }
        diff.push_str(&format!("-{}\n", original[changed]));
        diff.push_str(&format!("+{} // changed\n", original[changed]));
        diff.push_str("+    // and one more line\n");
        for line in &original[changed + 1..changed + 4] {
            diff.push_str(&format!(" {line}\n"));
        }
    }
    diff
}

fn runner(ws: &TempWorkspace) -> BenchSession {
    BenchSession::new(ws, false, ToolSettings::default())
}

fn bench_patch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ws = TempWorkspace::new();
    let runner = runner(&ws);

    let big_original = file_text("big", BIG_FILE_LINES);
    let big_diff = file_diff("src/big.rs", "big", BIG_FILE_LINES, BIG_FILE_HUNKS);
    let small: Vec<(String, String)> = (0..SMALL_FILES)
        .map(|index| {
            let name = format!("m{index}");
            (
                format!("src/mod{index}.rs"),
                file_text(&name, SMALL_FILE_LINES),
            )
        })
        .collect();
    let multi_diff: String = (0..SMALL_FILES)
        .map(|index| file_diff(&small[index].0, &format!("m{index}"), SMALL_FILE_LINES, 3))
        .collect();

    let mut group = c.benchmark_group("apply_patch");
    group.bench_function("in_memory_20_hunks_5000_lines", |b| {
        b.iter(|| {
            let files = parse_unified_diff(black_box(&big_diff)).expect("parses");
            apply_hunks(black_box(&big_original), &files[0].hunks, true).expect("applies")
        });
    });
    group.bench_function("tool_20_hunks_5000_lines", |b| {
        b.iter_batched(
            || {
                ws.write("src/big.rs", &big_original);
            },
            |()| {
                let result = rt
                    .block_on(runner.call("apply_patch", json!({"unifiedDiff": &big_diff})))
                    .expect("applies");
                assert_eq!(result["ok"], true, "{result}");
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("tool_10_files_3_hunks_each", |b| {
        b.iter_batched(
            || {
                for (path, text) in &small {
                    ws.write(path, text);
                }
            },
            |()| {
                let result = rt
                    .block_on(runner.call("apply_patch", json!({"unifiedDiff": &multi_diff})))
                    .expect("applies");
                assert_eq!(result["ok"], true, "{result}");
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench_patch);
criterion_main!(benches);
