//! The Responses API's store: the conversation behind each response a
//! client asked to keep (`store: true`), so a later request can continue it
//! with `previous_response_id`. One file per response in the state
//! directory (`responses/resp_….json`, mode 0600), written whole and
//! renamed into place; bounded in count, size and age, the oldest going
//! first. It survives a restart of the daemon.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bridge_llm::Message;
use bridge_util::owner_only::{self, Replace};

/// How much the store keeps.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    pub max_responses: usize,
    /// A conversation larger than this is not kept (logged; a request that
    /// continues it is told the id is unknown).
    pub max_response_bytes: u64,
    pub max_total_bytes: u64,
    pub max_age: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            max_responses: 1_000,
            max_response_bytes: 8 * 1024 * 1024,
            max_total_bytes: 256 * 1024 * 1024,
            max_age: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

#[derive(Debug)]
pub struct ResponseStore {
    dir: PathBuf,
    limits: StoreLimits,
}

/// Why a conversation could not be kept or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the conversation is {size} bytes, more than the store keeps ({limit})")]
    TooLarge { size: u64, limit: u64 },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("stored response {path} is unreadable: {message}")]
    Corrupt { path: PathBuf, message: String },
}

/// The ids this store hands out and accepts: `resp_` and 24 hex digits.
/// Anything else is unknown, never a path.
pub fn is_response_id(id: &str) -> bool {
    id.strip_prefix("resp_")
        .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub fn new_response_id() -> String {
    format!("resp_{}", bridge_util::ids::random_hex(12))
}

impl ResponseStore {
    pub fn new(dir: PathBuf, limits: StoreLimits) -> Self {
        Self { dir, limits }
    }

    /// The conversation kept under `id`; `None` for an id it does not
    /// hold (unknown, malformed or expired).
    pub fn load(&self, id: &str) -> Result<Option<Vec<Message>>, StoreError> {
        if !is_response_id(id) {
            return Ok(None);
        }
        let path = self.path_of(id);
        // Never through a symlink planted in the store, nor another user's file.
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io("cannot read", &path, source)),
        };
        if self.expired(&metadata) {
            return Ok(None);
        }
        let bytes = owner_only::read(&path, self.limits.max_response_bytes)
            .map_err(|source| io("cannot read", &path, source))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|err| StoreError::Corrupt {
                path,
                message: err.to_string(),
            })
    }

    /// Keeps `conversation` under `id`, then drops what is past the limits.
    pub fn save(&self, id: &str, conversation: &[Message]) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(conversation).map_err(|err| StoreError::Corrupt {
            path: self.path_of(id),
            message: err.to_string(),
        })?;
        let size = bytes.len() as u64;
        if size > self.limits.max_response_bytes {
            return Err(StoreError::TooLarge {
                size,
                limit: self.limits.max_response_bytes,
            });
        }
        owner_only::ensure_private_subdir(&self.dir)
            .map_err(|source| io("cannot create", &self.dir, source))?;
        let path = self.path_of(id);
        owner_only::write_atomically(&path, &bytes, Replace::Private)
            .map_err(|source| io("cannot write", &path, source))?;
        self.prune()
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn expired(&self, metadata: &std::fs::Metadata) -> bool {
        metadata
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_some_and(|age| age > self.limits.max_age)
    }

    /// Removes expired responses, then the oldest until the count and the
    /// total size are within the limits.
    fn prune(&self) -> Result<(), StoreError> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|source| io("cannot list", &self.dir, source))?;
        let mut kept = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if !is_response_id(id) {
                continue;
            }
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if self.expired(&metadata) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            kept.push((modified, metadata.len(), entry.path()));
        }
        kept.sort();
        let mut total: u64 = kept.iter().map(|(_, size, _)| size).sum();
        let mut count = kept.len();
        for (_, size, path) in kept {
            if count <= self.limits.max_responses && total <= self.limits.max_total_bytes {
                break;
            }
            let _ = std::fs::remove_file(path);
            count -= 1;
            total -= size;
        }
        Ok(())
    }
}

fn io(what: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use bridge_llm::Role;

    fn store(limits: StoreLimits) -> (tempfile::TempDir, ResponseStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = ResponseStore::new(dir.path().join("responses"), limits);
        (dir, store)
    }

    #[test]
    fn a_kept_conversation_comes_back_and_unknown_ids_are_none() {
        let (_dir, store) = store(StoreLimits::default());
        let id = new_response_id();
        let conversation = vec![
            Message::text(Role::User, "hi"),
            Message::text(Role::Assistant, "hello"),
        ];
        store.save(&id, &conversation).unwrap();
        assert_eq!(store.load(&id).unwrap(), Some(conversation));
        assert_eq!(store.load(&new_response_id()).unwrap(), None);
        for hostile in [
            "../gateway",
            "resp_../../etc/passwd",
            "resp_",
            "",
            "resp_ZZZZZZZZZZZZZZZZZZZZZZZZ",
        ] {
            assert_eq!(store.load(hostile).unwrap(), None, "{hostile}");
        }
    }

    #[test]
    fn the_store_never_grows_past_its_limits() {
        let (_dir, store) = store(StoreLimits {
            max_responses: 3,
            max_response_bytes: 200,
            max_total_bytes: 10_000,
            max_age: Duration::from_secs(3600),
        });
        let mut ids = Vec::new();
        for n in 0..6 {
            let id = new_response_id();
            store
                .save(&id, &[Message::text(Role::User, format!("turn {n}"))])
                .unwrap();
            ids.push(id);
            // Modification times order the files; keep them apart.
            std::thread::sleep(Duration::from_millis(15));
        }
        let kept: Vec<bool> = ids
            .iter()
            .map(|id| store.load(id).unwrap().is_some())
            .collect();
        assert_eq!(kept, [false, false, false, true, true, true]);
        let big = vec![Message::text(Role::User, "x".repeat(500))];
        assert!(matches!(
            store.save(&new_response_id(), &big),
            Err(StoreError::TooLarge { .. })
        ));
    }

    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let (dir, store) = store(StoreLimits::default());
        let id = new_response_id();
        store
            .save(&id, &[Message::text(Role::User, "secret plans")])
            .unwrap();
        let path = dir.path().join("responses").join(format!("{id}.json"));
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("responses"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
    }

    #[test]
    fn a_symlink_planted_at_the_store_or_a_response_is_refused_not_followed() {
        let (dir, planted_store) = store(StoreLimits::default());
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("responses")).unwrap();
        let id = new_response_id();
        let err = planted_store.save(&id, &[]).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);

        let (dir, store) = store(StoreLimits::default());
        let kept = new_response_id();
        store.save(&kept, &[]).unwrap();
        let victim = dir.path().join("victim.json");
        std::fs::write(&victim, "[]").unwrap();
        let planted = new_response_id();
        std::os::unix::fs::symlink(
            &victim,
            dir.path().join(format!("responses/{planted}.json")),
        )
        .unwrap();
        assert!(store.load(&planted).is_err(), "not read through the link");
        assert_eq!(store.load(&kept).unwrap(), Some(Vec::new()));
    }
}
