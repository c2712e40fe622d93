//! The memory index kept in the state directory: a fresh server answers
//! from it exactly as from a full read, reads only what changed, and never
//! trusts a damaged, foreign or planted file.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bridge_mcp::memory::{MemoryLayout, MemoryServer, SearchOutcome};
use bridge_testkit::memory_corpus::{Filler, note_path};

use crate::memory::{write, write_fix_and_topic_notes};

const QUERIES: [&str; 6] = [
    "staging deploy",
    "deploy incident",
    "quokka",
    "budget review meeting",
    "secret",
    "tokio",
];

/// A workspace of a few hundred notes, with a symlinked note inside, one
/// pointing outside, a symlinked directory and a hidden note (none of the
/// last three is ever searched).
struct Memory {
    dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
}

impl Memory {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut filler = Filler::new(3);
        write(
            root,
            "MEMORY.md",
            "# Memory\n\nThe user deploys with Helm.\n",
        );
        write(root, "USER.md", "# User\n- name: Ada\n");
        for n in 0..300 {
            let planted = (n % 41 == 0).then_some((2, "quokka"));
            write(root, &note_path(n), &filler.note_with(6, planted));
        }
        write_fix_and_topic_notes(root);
        write(root, "memory/.hidden.md", "secret hidden tokio\n");
        write(outside.path(), "leak.md", "secret outside tokio\n");
        std::os::unix::fs::symlink(outside.path().join("leak.md"), root.join("memory/leak.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("memory/linkdir")).unwrap();
        std::os::unix::fs::symlink(
            root.join("memory/topics/rust.md"),
            root.join("memory/alias.md"),
        )
        .unwrap();
        Self {
            dir,
            _outside: outside,
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn layout(&self) -> MemoryLayout {
        MemoryLayout::for_directory(self.root(), "--workspace")
    }

    /// A server of a fresh process: with the state directory or without.
    fn server(&self, state: Option<&Path>) -> MemoryServer {
        let server = MemoryServer::new(self.layout());
        match state {
            Some(state) => server.with_state_dir(state),
            None => server,
        }
    }
}

/// A note is kept in the index only once it was read two seconds after
/// its last change.
fn settle() {
    std::thread::sleep(Duration::from_millis(2_100));
}

/// A fresh workspace, settled, and an empty state directory for its index.
fn settled_memory() -> (Memory, tempfile::TempDir) {
    let memory = Memory::new();
    let state = tempfile::tempdir().unwrap();
    settle();
    (memory, state)
}

/// Every query's answer, without `notes_read`.
fn answers(server: &MemoryServer) -> Vec<SearchOutcome> {
    QUERIES
        .iter()
        .map(|query| SearchOutcome {
            notes_read: 0,
            ..server.search_blocking(query, 10)
        })
        .collect()
}

/// The index file a server with the state directory saves after a search.
fn saved_index(memory: &Memory, state: &Path) -> PathBuf {
    let server = memory.server(Some(state));
    server.search_blocking("deploy", 5);
    server.save_index().unwrap().expect("an index to save")
}

fn first_reads(memory: &Memory, state: &Path) -> usize {
    memory
        .server(Some(state))
        .search_blocking("deploy", 5)
        .notes_read
}

#[test]
fn a_kept_index_answers_as_a_full_read_without_reading_a_note() {
    let (memory, state) = settled_memory();
    let all = memory.server(None).search_blocking("deploy", 5).notes_read;
    assert!(all > 300, "{all}");
    let file = saved_index(&memory, state.path());
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(file.parent().unwrap(), state.path().join("memory-index"));

    let fresh = memory.server(Some(state.path()));
    let first = fresh.search_blocking("staging deploy", 10);
    assert_eq!(first.notes_read, 0, "every note came from the index file");
    let full = answers(&memory.server(None));
    assert_eq!(answers(&fresh), full);
    // Ranking, snippets and containment as a full read has them.
    assert_eq!(full[0].hits[0].path, "memory/2026-01-11.md");
    assert!(full[0].hits[0].snippet.contains("staging deploy"));
    assert!(full[2].matched >= 8, "quokka: {}", full[2].matched);
    let paths: Vec<&str> = full[5].hits.iter().map(|hit| hit.path.as_str()).collect();
    assert_eq!(paths, ["memory/alias.md", "memory/topics/rust.md"]);
    assert!(full[4].hits.is_empty(), "{:?}", full[4].hits);
}

#[test]
fn notes_edited_added_or_removed_between_processes_are_seen() {
    let (memory, state) = settled_memory();
    saved_index(&memory, state.path());
    let root = memory.root();
    // Same size, new words.
    let edited = root.join("memory/2026-01-11.md");
    let before = std::fs::read_to_string(&edited).unwrap();
    let after = before.replace("staging deploy", "quokka arrived");
    assert_eq!(after.len(), before.len());
    std::fs::write(&edited, after).unwrap();
    write(root, "memory/topics/new.md", "the quokka moved in\n");
    std::fs::remove_file(root.join(note_path(41))).unwrap();
    // The symlinked note now points at another note inside.
    std::fs::remove_file(root.join("memory/alias.md")).unwrap();
    std::os::unix::fs::symlink(root.join("MEMORY.md"), root.join("memory/alias.md")).unwrap();

    let fresh = memory.server(Some(state.path()));
    let quokka = fresh.search_blocking("quokka", 20);
    // The edit, the new note and the relinked one; no other.
    assert_eq!(quokka.notes_read, 3);
    let paths: Vec<&str> = quokka.hits.iter().map(|hit| hit.path.as_str()).collect();
    assert!(paths.contains(&"memory/2026-01-11.md"), "{paths:?}");
    assert!(paths.contains(&"memory/topics/new.md"), "{paths:?}");
    assert!(!paths.contains(&note_path(41).as_str()), "{paths:?}");
    assert_eq!(answers(&fresh), answers(&memory.server(None)));
}

#[test]
fn a_note_read_too_soon_after_its_change_is_read_again() {
    let (memory, state) = settled_memory();
    // Written just before the index is: its stamp cannot vouch for it.
    write(memory.root(), "memory/topics/fresh.md", "just written\n");
    saved_index(&memory, state.path());
    assert_eq!(first_reads(&memory, state.path()), 1);
    // Once settled, the next save keeps it too.
    settle();
    saved_index(&memory, state.path());
    assert_eq!(first_reads(&memory, state.path()), 0);
}

#[test]
fn a_damaged_index_is_ignored_and_rebuilt() {
    let (memory, state) = settled_memory();
    let file = saved_index(&memory, state.path());
    let good = std::fs::read(&file).unwrap();
    let all = memory.server(None).search_blocking("deploy", 5).notes_read;
    let full = answers(&memory.server(None));
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("a flipped bit", flipped),
        ("garbage", vec![0xA5; 4096]),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&file, &bytes).unwrap();
        let fresh = memory.server(Some(state.path()));
        assert_eq!(fresh.search_blocking("deploy", 5).notes_read, all, "{what}");
        assert_eq!(answers(&fresh), full, "{what}");
        // Rebuilt: the next process reads nothing again.
        fresh.save_index().unwrap();
        assert_eq!(first_reads(&memory, state.path()), 0, "{what}");
    }
    // Too large to be an index: not read (a sparse file, no disk used).
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(300 * 1024 * 1024)
        .unwrap();
    assert_eq!(first_reads(&memory, state.path()), all);
}

#[test]
fn a_symlink_in_place_of_the_index_is_neither_read_nor_written_through() {
    let (memory, state) = settled_memory();
    let elsewhere = tempfile::tempdir().unwrap();
    let file = saved_index(&memory, state.path());
    // A valid index, moved away and linked back: not read through the link.
    let moved = elsewhere.path().join("index");
    std::fs::rename(&file, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &file).unwrap();
    let all = memory.server(None).search_blocking("deploy", 5).notes_read;
    assert_eq!(first_reads(&memory, state.path()), all);
    // A link to a file someone wants overwritten: the save replaces the
    // link, the file stays as it was.
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&victim, &file).unwrap();
    let server = memory.server(Some(state.path()));
    server.search_blocking("deploy", 5);
    server.save_index().unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(first_reads(&memory, state.path()), 0);
}

#[test]
fn an_index_directory_others_may_write_is_not_trusted() {
    let (memory, state) = settled_memory();
    let file = saved_index(&memory, state.path());
    let dir = file.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let all = memory.server(None).search_blocking("deploy", 5).notes_read;
    assert_eq!(first_reads(&memory, state.path()), all);
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(first_reads(&memory, state.path()), 0);
}

#[test]
fn a_search_saves_the_index_in_the_background_one_file_per_root() {
    let memory = Memory::new();
    let other = Memory::new();
    let state = tempfile::tempdir().unwrap();
    settle();
    for memory in [&memory, &other] {
        memory
            .server(Some(state.path()))
            .search_blocking("deploy", 5);
    }
    let index_dir = state.path().join("memory-index");
    let started = Instant::now();
    let files = loop {
        let files = std::fs::read_dir(&index_dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|entry| entry.file_name().to_string_lossy().ends_with(".idx"))
                    .count()
            })
            .unwrap_or(0);
        if files == 2 || started.elapsed() > Duration::from_secs(20) {
            break files;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(files, 2, "one index file per memory root");
    assert_eq!(first_reads(&memory, state.path()), 0);
    assert_eq!(first_reads(&other, state.path()), 0);
}

#[test]
fn a_symlink_planted_at_the_index_directory_is_refused_and_nothing_is_written_there() {
    let (memory, state) = settled_memory();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), state.path().join("memory-index")).unwrap();
    let server = memory.server(Some(state.path()));
    server.search_blocking("deploy", 5);
    let err = server.save_index().unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    // Searching still works: the index is a cache.
    assert!(!server.search_blocking("deploy", 5).hits.is_empty());
}
