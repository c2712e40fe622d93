#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

/// Writes `lines` (each followed by a newline) to `dir/name`, mode 0600.
fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut file = crate::owner_only::open_append(&path).unwrap();
    for line in lines {
        file.write_all(line.as_bytes()).unwrap();
        file.write_all(b"\n").unwrap();
    }
    path
}

fn entries(range: std::ops::Range<u32>, day: &str) -> Vec<String> {
    range
        .map(|n| {
            let decision = if n % 3 == 0 { "deny" } else { "allow" };
            json!({"n": n, "day": day, "decision": decision}).to_string()
        })
        .collect()
}

fn numbers(page: &Page) -> Vec<u64> {
    page.entries
        .iter()
        .map(|entry| entry["n"].as_u64().unwrap())
        .collect()
}

fn all(_: &Value, _: &str) -> bool {
    true
}

/// Small blocks, so that lines cross them.
fn tight() -> Limits {
    Limits {
        block: 7,
        max_line: 200,
        max_page_bytes: 1 << 20,
        max_scan: None,
    }
}

/// Two days of a log: day 1 holds 0..5, day 2 (the newest) 5..12.
fn two_days(dir: &Path) -> Pager {
    let older = write(dir, "log-1.jsonl", &entries(0..5, "1"));
    let newer = write(dir, "log-2.jsonl", &entries(5..12, "2"));
    Pager::new(vec![newer, older])
}

#[test]
fn pages_run_newest_first_across_two_files_and_end_without_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    for limits in [Limits::default(), tight()] {
        let pager = two_days(dir.path()).with_limits(limits);
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let page = pager.page(cursor.as_ref(), 4, all).unwrap();
            assert!(page.entries.len() <= 4);
            seen.extend(numbers(&page));
            pages += 1;
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, (0..12).rev().collect::<Vec<_>>(), "{limits:?}");
        assert_eq!(pages, 3, "4 + 4 + 4 entries: {limits:?}");
        for file in ["log-1.jsonl", "log-2.jsonl"] {
            std::fs::remove_file(dir.path().join(file)).unwrap();
        }
    }
}

#[test]
fn a_cursor_round_trips_through_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path());
    let first = pager.page(None, 3, all).unwrap();
    assert_eq!(numbers(&first), [11, 10, 9]);
    let next = first.next.unwrap();
    let text = next.to_string();
    assert!(text.starts_with("log-2.jsonl:"), "{text}");
    let back = pager.cursor(&text).unwrap();
    assert_eq!(back, next);
    let second = pager.page(Some(&back), 6, all).unwrap();
    // Across the change of file.
    assert_eq!(numbers(&second), [8, 7, 6, 5, 4, 3]);
    assert_eq!(second.start, Some(back));
    let third = pager
        .page(
            Some(&pager.cursor(&second.next.unwrap().to_string()).unwrap()),
            10,
            all,
        )
        .unwrap();
    assert_eq!(numbers(&third), [2, 1, 0]);
    assert!(third.next.is_none());
}

#[test]
fn a_page_that_fills_at_the_start_of_a_file_points_at_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path());
    let page = pager.page(None, 7, all).unwrap();
    assert_eq!(numbers(&page), [11, 10, 9, 8, 7, 6, 5]);
    let next = page.next.unwrap();
    assert_eq!(next.path(), dir.path().join("log-1.jsonl"));
    let rest = pager.page(Some(&next), 7, all).unwrap();
    assert_eq!(numbers(&rest), [4, 3, 2, 1, 0]);
    assert!(rest.next.is_none());
}

#[test]
fn a_torn_last_line_is_skipped_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "log.jsonl", &entries(0..3, "1"));
    let mut file = crate::owner_only::open_append(&path).unwrap();
    file.write_all(br#"{"n": 3, "day": "#).unwrap();
    for limits in [Limits::default(), tight()] {
        let pager = Pager::new(vec![path.clone()]).with_limits(limits);
        let page = pager.page(None, 10, all).unwrap();
        assert_eq!(numbers(&page), [2, 1, 0]);
        // Where whole lines end: a follower goes on from there.
        let start = page.start.unwrap();
        assert_eq!(
            start.offset(),
            std::fs::metadata(&path).unwrap().len() - br#"{"n": 3, "day": "#.len() as u64
        );
    }
    file.write_all(b"\"1\"}\n").unwrap();
    let page = Pager::new(vec![path]).page(None, 10, all).unwrap();
    assert_eq!(numbers(&page), [3, 2, 1, 0]);
}

#[test]
fn lines_that_are_not_json_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        json!({"n": 0}).to_string(),
        "not json".to_owned(),
        String::new(),
        "{\"n\": 1, \"cut\": \"short".to_owned(),
        json!({"n": 2}).to_string(),
        "\u{fffd} invalid \u{0}".to_owned(),
    ];
    let path = write(dir.path(), "log.jsonl", &lines);
    // Not UTF-8 at all.
    crate::owner_only::open_append(&path)
        .unwrap()
        .write_all(b"\xff\xfe{}\n")
        .unwrap();
    for limits in [Limits::default(), tight()] {
        let page = Pager::new(vec![path.clone()])
            .with_limits(limits)
            .page(None, 10, all)
            .unwrap();
        assert_eq!(numbers(&page), [2, 0], "{limits:?}");
    }
}

#[test]
fn an_oversized_line_is_skipped_without_being_held() {
    let dir = tempfile::tempdir().unwrap();
    let huge = json!({"n": 1, "pad": "x".repeat(5000)}).to_string();
    let path = write(
        dir.path(),
        "log.jsonl",
        &[
            json!({"n": 0}).to_string(),
            huge,
            json!({"n": 2}).to_string(),
        ],
    );
    let limits = Limits {
        block: 64,
        max_line: 1000,
        ..Limits::default()
    };
    let pager = Pager::new(vec![path]).with_limits(limits);
    let page = pager.page(None, 10, all).unwrap();
    assert_eq!(numbers(&page), [2, 0]);
    // One at a time: the cursor steps over it too.
    let first = pager.page(None, 1, all).unwrap();
    assert_eq!(numbers(&first), [2]);
    let rest = pager.page(first.next.as_ref(), 1, all).unwrap();
    assert_eq!(numbers(&rest), [0]);
}

#[test]
fn forged_cursors_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path());
    let refused = |text: &str| match pager
        .cursor(text)
        .and_then(|c| pager.page(Some(&c), 5, all))
    {
        Err(PageError::Cursor(reason)) => reason,
        other => panic!("{text}: {other:?}"),
    };
    for text in [
        "../../etc/passwd:0",
        "/etc/passwd:0:1",
        "log-3.jsonl:0:1",
        ":0:1",
    ] {
        assert!(
            refused(text).contains("names no file of this log"),
            "{text}"
        );
    }
    for text in [
        "",
        "log-2.jsonl",
        "log-2.jsonl:",
        "log-2.jsonl:12",
        "log-2.jsonl:-1:1",
        "log-2.jsonl:1x:1",
        "log-2.jsonl:+1:1",
    ] {
        assert!(
            refused(text).contains("is not a cursor this log gave"),
            "{text}"
        );
    }
    let real = pager.page(None, 1, all).unwrap().next.unwrap();
    let id = real.to_string().rsplit(':').next().unwrap().to_owned();
    let past = refused(&format!("log-2.jsonl:999999:{id}"));
    assert!(past.contains("past the end of log-2.jsonl"), "{past}");
    let mid = refused(&format!("log-2.jsonl:3:{id}"));
    assert!(mid.contains("not the start of a line"), "{mid}");
    let stranger = refused("log-2.jsonl:0:1");
    assert!(stranger.contains("is gone"), "{stranger}");
    // A long forgery is quoted short.
    let long = refused(&"x".repeat(10_000));
    assert!(long.len() < 200, "{long}");
}

#[test]
fn a_rotated_file_is_found_again_by_its_identity() {
    let dir = tempfile::tempdir().unwrap();
    let current = write(dir.path(), "requests.jsonl", &entries(0..6, "1"));
    let rotated = dir.path().join("requests.jsonl.1");
    let pager = Pager::new(vec![current.clone(), rotated.clone()]);
    let first = pager.page(None, 2, all).unwrap();
    assert_eq!(numbers(&first), [5, 4]);
    let text = first.next.unwrap().to_string();
    // The journal rotates: its file is renamed, a new one begins.
    std::fs::rename(&current, &rotated).unwrap();
    write(dir.path(), "requests.jsonl", &entries(100..200, "2"));
    let cursor = pager.cursor(&text).unwrap();
    let rest = pager.page(Some(&cursor), 10, all).unwrap();
    assert_eq!(numbers(&rest), [3, 2, 1, 0]);
    assert!(rest.next.is_none());
}

#[test]
fn the_predicate_filters_and_pages_stay_full() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path());
    let denied = |entry: &Value, line: &str| {
        assert!(line.contains(&format!("\"n\":{}", entry["n"])), "{line}");
        entry["decision"] == "deny"
    };
    let page = pager.page(None, 2, denied).unwrap();
    assert_eq!(numbers(&page), [9, 6]);
    let rest = pager.page(page.next.as_ref(), 2, denied).unwrap();
    assert_eq!(numbers(&rest), [3, 0]);
    assert!(rest.next.is_none(), "the oldest line was read");
    let none = pager.page(None, 5, |_, _| false).unwrap();
    assert!(none.entries.is_empty() && none.next.is_none());
}

#[test]
fn a_scan_budget_ends_a_page_early_and_the_next_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path()).with_limits(Limits {
        block: 16,
        max_scan: Some(1),
        ..Limits::default()
    });
    let mut cursor = None;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = pager
            .page(cursor.as_ref(), 5, |entry, _| entry["decision"] == "deny")
            .unwrap();
        seen.extend(numbers(&page));
        pages += 1;
        assert!(pages < 100, "no progress");
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, [9, 6, 3, 0]);
    assert!(pages >= 12, "one line a page: {pages}");
}

#[test]
fn the_page_bytes_bound_ends_a_page_after_the_entry_that_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path()).with_limits(Limits {
        max_page_bytes: 1,
        ..Limits::default()
    });
    let page = pager.page(None, 50, all).unwrap();
    assert_eq!(numbers(&page), [11]);
    assert!(page.next.is_some());
}

#[test]
fn missing_files_are_passed_over_and_no_files_is_an_empty_page() {
    let dir = tempfile::tempdir().unwrap();
    let only = write(dir.path(), "b.jsonl", &entries(0..2, "1"));
    let pager = Pager::new(vec![
        dir.path().join("a.jsonl"),
        only,
        dir.path().join("c.jsonl"),
    ]);
    let page = pager.page(None, 10, all).unwrap();
    assert_eq!(numbers(&page), [1, 0]);
    assert!(page.start.unwrap().path().ends_with("b.jsonl"));
    let empty = Pager::new(Vec::new()).page(None, 10, all).unwrap();
    assert!(empty.entries.is_empty() && empty.next.is_none() && empty.start.is_none());
}

#[test]
fn a_limit_of_zero_still_says_where_whole_lines_end() {
    let dir = tempfile::tempdir().unwrap();
    let pager = two_days(dir.path());
    let page = pager.page(None, 0, all).unwrap();
    assert!(page.entries.is_empty());
    let start = page.start.unwrap();
    assert!(start.path().ends_with("log-2.jsonl"));
    assert_eq!(
        start.offset(),
        std::fs::metadata(dir.path().join("log-2.jsonl"))
            .unwrap()
            .len()
    );
}

#[test]
fn a_symlink_in_the_set_is_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "elsewhere.jsonl", &entries(0..2, "1"));
    let link = dir.path().join("log.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let refused = Pager::new(vec![link]).page(None, 10, all).unwrap_err();
    assert!(matches!(refused, PageError::Io { .. }), "{refused}");
    assert!(refused.to_string().contains("symbolic link"), "{refused}");
}
