//! `search_code` through a session's call path (policy, redaction and all) over a
//! generated tree of 2,000 files × 200 lines (~15 MB): a literal that hits
//! rarely, a regex that hits often, and a case-insensitive literal.

#[path = "support.rs"]
mod support;

use std::hint::black_box;
use std::path::Path;

use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use support::BenchSession;

const FILES: usize = 2_000;
const LINES_PER_FILE: usize = 200;
const FILES_PER_DIR: usize = 50;
/// Appears in one file out of 97.
const RARE_LITERAL: &str = "RARE_MARKER_7f3a";

const WORDS: &[&str] = &[
    "let", "value", "config", "request", "response", "buffer", "index", "count", "result",
    "handler", "client", "session", "token", "payload", "stream", "error", "context", "state",
];

/// A small deterministic generator: the tree is identical on every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn word(&mut self) -> &'static str {
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }
}

fn generate_file(rng: &mut XorShift, file: usize) -> String {
    let mut text = String::with_capacity(LINES_PER_FILE * 48);
    for line in 0..LINES_PER_FILE {
        match line % 20 {
            0 => text.push_str(&format!(
                "fn handle_{}_{}(input: &str) -> usize {{\n",
                rng.word(),
                rng.next() % 1000
            )),
            10 if file.is_multiple_of(97) && line == 110 => {
                text.push_str(&format!("    // {RARE_LITERAL} tracked here\n"))
            }
            _ => {
                let (a, b, c) = (rng.word(), rng.word(), rng.word());
                text.push_str(&format!(
                    "    let {a}_{line} = {b}.{c}({});\n",
                    rng.next() % 10_000
                ));
            }
        }
    }
    text
}

fn generate_tree(root: &Path) {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for file in 0..FILES {
        let dir = root.join(format!("src/mod_{:03}", file / FILES_PER_DIR));
        std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(
            dir.join(format!("file_{file:04}.rs")),
            generate_file(&mut rng, file),
        )
        .unwrap_or_else(|err| panic!("{err}"));
    }
}

fn runner_for(ws: &TempWorkspace) -> BenchSession {
    let settings = ToolSettings {
        search_max_results: 1_000_000,
        ..ToolSettings::default()
    };
    BenchSession::new(ws, true, settings)
}

fn hit_count(result: &Value) -> usize {
    result["hits"].as_array().map_or(0, Vec::len)
}

fn bench_search(c: &mut Criterion) {
    let ws = TempWorkspace::new();
    generate_tree(ws.path());
    let runner = runner_for(&ws);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| panic!("{err}"));

    let cases = [
        (
            "search_literal_rare",
            json!({"query": RARE_LITERAL, "maxResults": 1_000_000}),
        ),
        (
            "search_regex_fn_defs",
            json!({"query": r"fn handle_(client|token)_\d+\(", "regex": true, "maxResults": 1_000_000}),
        ),
        (
            "search_literal_case_insensitive",
            json!({"query": "rare_marker", "caseSensitive": false, "maxResults": 1_000_000}),
        ),
    ];
    let mut group = c.benchmark_group("search_code_2000x200");
    group.sample_size(10);
    for (name, args) in cases {
        let check = runtime
            .block_on(runner.call("search_code", args.clone()))
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(hit_count(&check) > 0, "{name} found nothing");
        assert_eq!(check["filesSearched"], FILES, "{name}");
        group.bench_function(name, |b| {
            b.iter(|| {
                let result = runtime
                    .block_on(runner.call("search_code", black_box(args.clone())))
                    .unwrap_or_else(|err| panic!("{name}: {err}"));
                black_box(hit_count(&result))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
