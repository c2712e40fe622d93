//! `keep_transcripts`: transcripts written to `<state>/transcripts/ID.jsonl`
//! (mode 0600), one event per line as kept in memory (redacted, texts
//! cut), by one writer thread so no request waits on the disk. Bounded:
//! a file stops at [`MAX_FILE_BYTES`] (its last line says so), and the
//! daemon keeps the newest [`MAX_FILES`] files, removing older ones when
//! it starts.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use bridge_util::owner_only;
use serde_json::{Value, json};

use super::Page;

/// Bytes one transcript file grows to at most.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Transcript files kept.
pub const MAX_FILES: usize = 200;

/// Where transcripts are kept, and the thread that writes them.
#[derive(Debug, Clone)]
pub struct TranscriptFiles {
    dir: PathBuf,
    lines: mpsc::Sender<(String, Vec<u8>)>,
}

impl TranscriptFiles {
    /// Makes `dir` (0700), removes all but the newest [`MAX_FILES`] files
    /// and starts the writer.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        owner_only::ensure_private_subdir(dir)?;
        prune(dir);
        let (lines, queued) = mpsc::channel::<(String, Vec<u8>)>();
        let written = dir.to_path_buf();
        std::thread::Builder::new()
            .name("transcripts".to_owned())
            .spawn(move || write_all(&written, &queued))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            lines,
        })
    }

    /// `<home>/transcripts` when `keep_transcripts` is `on`; one that
    /// cannot be opened leaves them in memory, with a warning.
    pub fn kept(on: bool, home: &Path) -> Option<Self> {
        if !on {
            return None;
        }
        let dir = home.join("transcripts");
        Self::open(&dir)
            .inspect_err(|err| {
                tracing::warn!(dir = %dir.display(), error = %err, "transcripts are kept in memory only");
            })
            .ok()
    }

    /// Queues `event` for the file of transcript `id`.
    pub fn append(&self, id: &str, event: &Value) {
        if let Ok(mut line) = serde_json::to_vec(event) {
            line.push(b'\n');
            let _ = self.lines.send((id.to_owned(), line));
        }
    }

    /// The kept events of transcript `id` after `since`, at most `limit`,
    /// when it has a file.
    pub fn read(&self, id: &str, since: u64, limit: usize) -> Option<Page> {
        if !plain_id(id) {
            return None;
        }
        let file = owner_only::open_options()
            .read(true)
            .open(self.dir.join(format!("{id}.jsonl")))
            .ok()?;
        owner_only::check_own_file(&file).ok()?;
        let mut events = Vec::new();
        // The file is bounded by MAX_FILE_BYTES, a line by the same.
        let reader = BufReader::new(std::io::Read::take(file, MAX_FILE_BYTES + 1024 * 1024));
        for line in reader.split(b'\n').map_while(Result::ok) {
            let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if event["seq"].as_u64().is_some_and(|seq| seq > since) {
                events.push(event);
                if events.len() == limit {
                    break;
                }
            }
        }
        Some(Page::after(since, events))
    }

    /// The kept files' transcripts: `{id, updatedAt, bytes}`.
    pub fn list(&self) -> Vec<Value> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?.to_owned();
                let meta = entry.metadata().ok()?;
                let updated = meta
                    .modified()
                    .ok()
                    .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
                    .and_then(|since| bridge_util::time::unix_timestamp(since.as_secs()));
                Some(json!({"id": id, "updatedAt": updated, "bytes": meta.len()}))
            })
            .collect()
    }
}

fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 160
        && !id.starts_with(['.', '-'])
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn write_all(dir: &Path, queued: &mpsc::Receiver<(String, Vec<u8>)>) {
    let mut sizes: HashMap<String, u64> = HashMap::new();
    while let Ok((id, line)) = queued.recv() {
        if !plain_id(&id) {
            continue;
        }
        let path = dir.join(format!("{id}.jsonl"));
        let size = sizes
            .entry(id)
            .or_insert_with(|| std::fs::symlink_metadata(&path).map_or(0, |meta| meta.len()));
        if *size >= MAX_FILE_BYTES {
            continue;
        }
        let line = if *size + line.len() as u64 >= MAX_FILE_BYTES {
            let mut cut = json!({"type": "transcript.cut", "why": "the file reached its bound"})
                .to_string()
                .into_bytes();
            cut.push(b'\n');
            *size = MAX_FILE_BYTES;
            cut
        } else {
            *size += line.len() as u64;
            line
        };
        let written = owner_only::open_append(&path).and_then(|mut file| file.write_all(&line));
        if let Err(err) = written {
            tracing::warn!(path = %path.display(), error = %err, "a transcript could not be kept");
        }
    }
}

/// Removes all but the newest [`MAX_FILES`] transcript files.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".jsonl"))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .collect();
    if files.len() <= MAX_FILES {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - MAX_FILES] {
        let _ = std::fs::remove_file(path);
    }
}
