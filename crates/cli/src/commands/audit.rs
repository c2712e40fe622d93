//! `copilot-bridge audit`: the audit log (`audit-YYYY-MM-DD.jsonl` in
//! `audit_log_dir`, docs/policy.md) read back, filtered, and followed as
//! the daemon and every other door append to it.
//!
//! Files are read a line at a time (a log of any size costs one line of
//! memory, `--tail N` N entries) and never through a symlink; a line that
//! is not an entry (a torn last line still being written) waits for the
//! rest of it.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bridge_config::BridgeConfig;
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
    let mut kept = VecDeque::new();
    let mut position = None;
    for path in &files {
        let mut reader = open(path)?;
        let end = each_entry(&mut reader, |entry| {
            if matches(args, &entry) && args.tail != Some(0) {
                if args.tail.is_some_and(|tail| kept.len() >= tail) {
                    kept.pop_front();
                }
                kept.push_back(entry);
            }
            Ok(())
        })?;
        position = Some((path.clone(), end));
    }
    if kept.is_empty() && !args.follow && !args.json {
        write_stdout(&format!("no audit entries match in {}\n", dir.display()))?;
    }
    for entry in kept.drain(..) {
        show(args, &entry)?;
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

/// The log's files, oldest first.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(read_failure(dir, &err)),
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("audit-") && name.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    Ok(files)
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
