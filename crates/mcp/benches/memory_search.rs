//! `openclaw_memory_search` over a generated memory of 10,000 notes
//! (daily notes and topic notes, 12 lines of 10 words each): warm queries
//! (nothing changed: the watcher says so) for a rare term, common terms and
//! three terms; a query right after one note was edited (every note
//! `stat`ed again, one re-read); and the first query of a fresh server,
//! without an index file (every note read) and with one in the state
//! directory (`cold_first_query_10k`: every note `stat`ed, none read).
//! Target: under 50 ms a query.
//!
//! Beside the cold query, the first `openclaw_memory_search` call of a
//! fresh session as `run` makes one (docs/openclaw.md, "Memory in every
//! session"): the memory tools in a new registry whose index is warmed in
//! the background as the session starts, the call through
//! `Session::call_tool` with the audit log on — timed right away
//! (`first_session_call_at_once_10k`, the worst case: no model answers
//! that fast) and after the model's first turn (`…_after_first_turn_10k`,
//! 300 ms untimed).

#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_engine::{CallOrigin, Session, SessionDefaults, SessionRegistry, SessionSpec};
use bridge_mcp::openclaw::{GatewayTools, SessionTools, ToolSet};
use bridge_policy::AuditLog;

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
    let layout: &dyn Fn() -> MemoryLayout = &layout;
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
    first_session_calls(&mut cold, &layout, state.path());
    cold.finish();
}

/// A fresh session of a fresh registry with the memory tools, its index
/// warmed on a thread as `bridge_compose::OpenClawMemory` does.
fn fresh_session(
    layout: &MemoryLayout,
    state: &Path,
    audit: &Path,
) -> (SessionRegistry, Arc<Session>) {
    let memory = MemoryServer::new(layout.clone()).with_state_dir(state);
    let defaults = SessionDefaults {
        audit: Some(AuditLog::new(audit)),
        ..SessionDefaults::restrictive().expect("defaults")
    };
    let registry = SessionRegistry::new(defaults, Default::default());
    let set = ToolSet {
        gateway: false,
        memory: true,
    };
    registry.add_listener(Arc::new(SessionTools::new(
        GatewayTools::new(None, memory.clone()),
        set,
    )));
    std::thread::spawn(move || memory.warm_up_blocking());
    let session = registry
        .create(SessionSpec {
            id: None,
            label: "run".to_owned(),
            cwd: audit.to_path_buf(),
            foreground: true,
            door: bridge_engine::Door::Cli,
        })
        .expect("a session");
    (registry, session)
}

fn first_session_calls(
    cold: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    layout: &dyn Fn() -> MemoryLayout,
    state: &Path,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let audit = tempfile::tempdir().expect("a temporary directory");
    let call = |session: &Arc<Session>| {
        let outcome = runtime.block_on(session.call_tool(
            "openclaw_memory_search",
            serde_json::json!({"query": "quokka"}),
            CallOrigin::Engine,
        ));
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        outcome
    };
    cold.bench_function("first_session_call_at_once_10k", |b| {
        b.iter_with_large_drop(|| {
            let (registry, session) = fresh_session(&layout(), state, audit.path());
            let outcome = black_box(call(&session));
            (registry, session, outcome)
        })
    });
    cold.bench_function("first_session_call_after_first_turn_10k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (registry, session) = fresh_session(&layout(), state, audit.path());
                std::thread::sleep(Duration::from_millis(300));
                let started = Instant::now();
                black_box(call(&session));
                total += started.elapsed();
                drop((session, registry));
            }
            total
        })
    });
}

criterion_group!(benches, memory_search);
criterion_main!(benches);
