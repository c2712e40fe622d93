//! `copilot-bridge audit`: the audit log (`audit-YYYY-MM-DD.jsonl` in
//! `audit_log_dir`, docs/policy.md) read back, filtered, and followed as
//! the daemon and every other door append to it.
//!
//! The files are `bridge_policy::audit::log_files`, never opened through a
//! symlink. The whole log is read forward a line at a time (a log of any
//! size costs one line of memory); `--tail N` reads backwards from the end
//! (`bridge_util::jsonl_pages`, as the dashboard's Activity page does) and
//! costs N entries. A line that is not an entry (a torn last line still
//! being written) waits for the rest of it.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bridge_config::BridgeConfig;
use bridge_util::jsonl_pages::{Limits, Pager};
use serde_json::Value;

use super::tool::{print_json, write_stdout};
use crate::args::AuditArgs;
use crate::exit::{self, Failure};

/// How often `--follow` looks for new entries.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub async fn run(config: &BridgeConfig, args: AuditArgs) -> Result<ExitCode, Failure> {
    let dir = config.audit_log_dir.clone();
    tokio::task::spawn_blocking(move || read_and_follow(&dir, &args))
        .await
        .map_err(|err| Failure::internal(format!("cannot read the audit log: {err}")))??;
    Ok(ExitCode::SUCCESS)
}

fn read_and_follow(dir: &Path, args: &AuditArgs) -> Result<(), Failure> {
    let files = log_files(dir)?;
    let (kept, position) = match args.tail {
        Some(tail) => last_entries(&files, tail, args)?,
        None => every_entry(&files, args)?,
    };
    if kept.is_empty() && !args.follow && !args.json {
        write_stdout(&format!("no audit entries match in {}\n", dir.display()))?;
    }
    for entry in &kept {
        show(args, entry)?;
    }
    if !args.follow {
        return Ok(());
    }
    let (mut current, mut offset) = position.unwrap_or_default();
    loop {
        // The newest file, which changes at midnight (UTC).
        if let Some(newest) = log_files(dir)?.pop()
            && newest != current
        {
            // What the day's file got before the next one began.
            if !current.as_os_str().is_empty() {
                follow_file(&current, offset, args)?;
            }
            current = newest;
            offset = 0;
        }
        if !current.as_os_str().is_empty() {
            offset = follow_file(&current, offset, args)?;
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
}

/// Prints the entries of `path` after `offset`; the offset after the last
/// whole line.
fn follow_file(path: &Path, offset: u64, args: &AuditArgs) -> Result<u64, Failure> {
    let mut reader = open(path)?;
    reader
        .seek(SeekFrom::Start(offset))
        .map_err(|err| read_failure(path, &err))?;
    let read = each_entry(&mut reader, |entry| {
        if matches(args, &entry) {
            show(args, &entry)?;
        }
        Ok(())
    })?;
    Ok(offset + read)
}

/// Where following goes on: a file and the end of its last whole line.
type Position = Option<(PathBuf, u64)>;

/// Every entry that matches, oldest first, read forward; where they end.
fn every_entry(files: &[PathBuf], args: &AuditArgs) -> Result<(Vec<Value>, Position), Failure> {
    let mut kept = Vec::new();
    let mut position = None;
    for path in files {
        let mut reader = open(path)?;
        let end = each_entry(&mut reader, |entry| {
            if matches(args, &entry) {
                kept.push(entry);
            }
            Ok(())
        })?;
        position = Some((path.clone(), end));
    }
    Ok((kept, position))
}

/// The last `tail` entries that match, oldest first, read backwards from
/// the end; where the newest file's whole lines end.
fn last_entries(
    files: &[PathBuf],
    tail: usize,
    args: &AuditArgs,
) -> Result<(Vec<Value>, Position), Failure> {
    // All of them, however far back: no budget of bytes read or kept.
    let limits = Limits {
        max_page_bytes: usize::MAX,
        max_scan: None,
        ..Limits::default()
    };
    let pager = Pager::new(files.iter().rev().cloned().collect()).with_limits(limits);
    let page = pager
        .page(None, tail, |entry, _| matches(args, entry))
        .map_err(|err| Failure::new(exit::FAILED, format!("cannot read the audit log: {err}")))?;
    let mut kept = page.entries;
    kept.reverse();
    let position = page
        .start
        .map(|start| (start.path().to_path_buf(), start.offset()));
    Ok((kept, position))
}

/// The log's files, oldest first.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let files = bridge_policy::audit::log_files(dir).map_err(|err| read_failure(dir, &err))?;
    Ok(files.into_iter().map(|file| file.path).collect())
}

fn open(path: &Path) -> Result<BufReader<File>, Failure> {
    let file = bridge_util::owner_only::open_options()
        .read(true)
        .open(path)
        .map_err(|err| read_failure(path, &err))?;
    bridge_util::owner_only::check_own_file(&file).map_err(|err| read_failure(path, &err))?;
    Ok(BufReader::new(file))
}

fn read_failure(path: &Path, err: &std::io::Error) -> Failure {
    Failure::new(
        exit::FAILED,
        format!("cannot read the audit log {}: {err}", path.display()),
    )
}

/// Calls `each` with every whole entry; the bytes read up to the end of
/// the last whole line (a torn line is left for the next read).
fn each_entry(
    reader: &mut BufReader<File>,
    mut each: impl FnMut(Value) -> Result<(), Failure>,
) -> Result<u64, Failure> {
    let mut consumed = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(|err| {
            Failure::new(exit::FAILED, format!("cannot read the audit log: {err}"))
        })?;
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(consumed);
        }
        consumed += read as u64;
        // A line that is not JSON is not an entry (written by hand, damaged).
        if let Ok(entry) = serde_json::from_slice::<Value>(&line) {
            each(entry)?;
        }
    }
}

fn matches(args: &AuditArgs, entry: &Value) -> bool {
    let is = |field: &str, wanted: &Option<String>| {
        wanted
            .as_deref()
            .is_none_or(|wanted| entry[field].as_str() == Some(wanted))
    };
    is("sessionId", &args.session) && is("decision", &args.decision) && is("tool", &args.tool)
}

fn show(args: &AuditArgs, entry: &Value) -> Result<(), Failure> {
    if args.json {
        return print_json(entry, true);
    }
    write_stdout(&format!("{}\n", line_of(entry)))
}

/// One entry on one line: time, decision, session, door, tool, what it
/// was called with, and why it was refused.
fn line_of(entry: &Value) -> String {
    let text = |field: &str| entry[field].as_str().unwrap_or("-").to_owned();
    let input = &entry["input"];
    let called = ["command", "path", "pattern", "query"]
        .iter()
        .find_map(|key| input[*key].as_str())
        .map_or_else(|| input.to_string(), str::to_owned);
    let mut line = format!(
        "{}  {:5}  {}  {}  {}  {}",
        text("timestamp"),
        text("decision"),
        text("sessionId"),
        text("hook"),
        text("tool"),
        bridge_policy::redact::shorten(&called, 120),
    );
    if let Some(why) = entry["output"]["error"]["message"].as_str() {
        line.push_str(&format!("  — {}", bridge_policy::redact::shorten(why, 160)));
    }
    if let Some(answer) = entry["approval"]["answer"].as_str() {
        line.push_str(&format!(
            "  [asked: {answer}{}]",
            entry["approval"]["surface"]
                .as_str()
                .map(|surface| format!(" by {surface}"))
                .unwrap_or_default()
        ));
    }
    line
}
