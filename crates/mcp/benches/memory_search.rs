//! `openclaw_memory_search` over a generated memory of 10,000 notes
//! (daily notes and topic notes, 12 lines of 10 words each): warm queries
//! (nothing changed: the watcher says so) for a rare term, common terms and
//! three terms; a query right after one note was edited (every note
//! `stat`ed again, one re-read); and the first query of a fresh server,
//! without an index file (every note read) and with one in the state
//! directory (`cold_first_query_10k`: every note `stat`ed, none read).
//! Target: under 50 ms a query.

#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

use bridge_mcp::memory::{MemoryLayout, MemoryServer};
use bridge_testkit::memory_corpus::{Filler, note_path, write_note};
use criterion::{Criterion, criterion_group, criterion_main};

const NOTES: u32 = 10_000;

/// The generated corpus: one dated or topic note per number, a rare term
/// planted in every 97th.
fn write_corpus(root: &Path) {
    let mut filler = Filler::new(7);
    for n in 0..NOTES {
        let planted = n.is_multiple_of(97).then_some((5, "quokka"));
        write_note(root, &note_path(n), &filler.note_with(12, planted));
    }
}

fn memory_search(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_corpus(dir.path());
    let server = MemoryServer::new(MemoryLayout::workspace(dir.path(), "bench"));
    let warmed = server.search_blocking("quokka", 5);
    assert_eq!(warmed.searched, NOTES as usize);
    let mut group = c.benchmark_group("memory_search_10k");
    group.sample_size(30);
    for (name, query) in [
        ("rare_term", "quokka"),
        ("common_terms", "deploy incident"),
        ("three_terms", "budget review meeting"),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(server.search_blocking(query, 5)))
        });
    }
    // After a note changed: every note is `stat`ed again, one re-read.
    let edited = dir.path().join("memory/topics/t00001.md");
    let mut round = 0u64;
    group.bench_function("after_one_edit", |b| {
        b.iter_batched(
            || {
                round += 1;
                std::fs::write(&edited, format!("edit {round}\n")).expect("edit a note");
            },
            |()| black_box(server.search_blocking("deploy incident", 5)),
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
    // The first query reads and tokenizes every note.
    let layout = || MemoryLayout::workspace(dir.path(), "bench");
    let mut cold = c.benchmark_group("memory_search_10k_cold");
    cold.sample_size(10);
    // The server is dropped outside the timing: freeing it is not part of
    // anyone's wait.
    cold.bench_function("first_query", |b| {
        b.iter_with_large_drop(|| {
            let fresh = MemoryServer::new(layout());
            let outcome = black_box(fresh.search_blocking("quokka", 5));
            (fresh, outcome)
        })
    });
    // With the index file of a previous process: notes are kept in it only
    // once read two seconds after their last change (the edits above).
    let state = tempfile::tempdir().expect("a temporary directory");
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let previous = MemoryServer::new(layout()).with_state_dir(state.path());
    let full = previous.search_blocking("deploy incident", 5);
    previous.save_index().expect("the index is saved");
    let fresh = MemoryServer::new(layout()).with_state_dir(state.path());
    let answer = fresh.search_blocking("deploy incident", 5);
    assert_eq!((answer.hits, answer.matched), (full.hits, full.matched));
    assert_eq!(answer.notes_read, 0, "every note came from the index file");
    cold.bench_function("cold_first_query_10k", |b| {
        b.iter_with_large_drop(|| {
            let fresh = MemoryServer::new(layout()).with_state_dir(state.path());
            let outcome = black_box(fresh.search_blocking("quokka", 5));
            (fresh, outcome)
        })
    });
    cold.finish();
}

criterion_group!(benches, memory_search);
criterion_main!(benches);
