//! A deterministic OpenClaw memory of thousands of notes, for the memory
//! search's tests and benchmarks: dated daily notes and topic notes of
//! filler text drawn from a fixed vocabulary, identical on every run.

use std::path::Path;

/// The words filler text is made of.
const WORDS: &[&str] = &[
    "meeting",
    "project",
    "deploy",
    "review",
    "bug",
    "fix",
    "release",
    "notes",
    "user",
    "database",
    "migration",
    "api",
    "test",
    "refactor",
    "design",
    "plan",
    "call",
    "email",
    "budget",
    "team",
    "server",
    "client",
    "cache",
    "latency",
    "index",
    "query",
    "docs",
    "build",
    "pipeline",
    "alert",
    "incident",
    "backup",
    "schema",
    "feature",
    "flag",
    "metric",
];

/// Deterministic filler text: the same seed gives the same words.
#[derive(Debug, Clone)]
pub struct Filler(u64);

impl Filler {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next word (a linear congruential generator over [`WORDS`]).
    pub fn word(&mut self) -> &'static str {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        WORDS[((self.0 >> 33) as usize) % WORDS.len()]
    }

    /// A note: a `# Notes` heading and `lines` lines of ten words.
    pub fn note(&mut self, lines: usize) -> String {
        self.note_with(lines, None)
    }

    /// Like [`Filler::note`], with `planted.1` appended to line `planted.0`
    /// (a term a search must find).
    pub fn note_with(&mut self, lines: usize, planted: Option<(usize, &str)>) -> String {
        let mut text = String::from("# Notes\n\n");
        for line in 0..lines {
            let words: Vec<&str> = (0..10).map(|_| self.word()).collect();
            text.push_str(&words.join(" "));
            if let Some((at, term)) = planted
                && at == line
            {
                text.push(' ');
                text.push_str(term);
            }
            text.push('\n');
        }
        text
    }
}

/// The relative path of note `n`: even numbers are daily notes
/// (`memory/YYYY-MM-DD.md`, 28-day months from 2000), odd ones topic notes
/// (`memory/topics/tNNNNN.md`).
pub fn note_path(n: u32) -> String {
    if n.is_multiple_of(2) {
        let day = n / 2;
        format!(
            "memory/{:04}-{:02}-{:02}.md",
            2000 + day / 336,
            1 + (day / 28) % 12,
            1 + day % 28
        )
    } else {
        format!("memory/topics/t{n:05}.md")
    }
}

/// Writes `text` to `relative` under `root`, creating its directories.
pub fn write_note(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", parent.display()));
    }
    std::fs::write(&path, text)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
}
