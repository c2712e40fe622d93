//! `<home>/gateway.json`: how clients find the daemon (port, pid) and the
//! secrets they need (the `/rpc` bearer token, the default session's
//! provider token). Written atomically with mode 0600 in a 0700 directory,
//! removed on shutdown only by the daemon it describes.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "gateway.json";

/// The contents of `gateway.json`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayFile {
    pub port: u16,
    pub pid: u32,
    /// The address clients connect to (loopback even when bound to all
    /// interfaces).
    #[serde(default = "default_host")]
    pub host: String,
    /// Bearer token for HTTP and `/rpc`.
    pub token: String,
    /// Project token for the default session (`TAP_PROVIDER_TOKEN`).
    pub provider_token: String,
    pub default_session: String,
    pub started_at: String,
    pub version: String,
}

fn default_host() -> String {
    "127.0.0.1".to_owned()
}

// Tokens stay out of logs and panics.
impl std::fmt::Debug for GatewayFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayFile")
            .field("port", &self.port)
            .field("pid", &self.pid)
            .field("host", &self.host)
            .field("default_session", &self.default_session)
            .field("started_at", &self.started_at)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl GatewayFile {
    pub fn path(home: &Path) -> PathBuf {
        home.join(FILE_NAME)
    }

    /// `127.0.0.1:9400` or `[::1]:9400`.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address())
    }

    /// The file in `home`; `None` when there is none or it cannot be read
    /// as one (a torn or foreign file is treated as no daemon).
    pub fn read(home: &Path) -> Option<Self> {
        let path = Self::path(home);
        let text = fs::read(&path).ok()?;
        match serde_json::from_slice(&text) {
            Ok(file) => Some(file),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "ignoring an unreadable gateway.json");
                None
            }
        }
    }

    /// Replaces the file atomically: a reader sees the old file or the new
    /// one, never half of one, and never a moment with looser permissions.
    pub fn write(&self, home: &Path) -> std::io::Result<()> {
        ensure_private_dir(home)?;
        let path = Self::path(home);
        let temp = home.join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            // `mode` applies only when the file is created.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            file.write_all(&json)?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&temp, &path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }

    /// Removes the file if it still describes process `pid` (a newer daemon
    /// may have replaced it). Returns whether it was removed.
    pub fn remove_if_owned_by(home: &Path, pid: u32) -> std::io::Result<bool> {
        match Self::read(home) {
            Some(file) if file.pid == pid => {
                fs::remove_file(Self::path(home))?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Creates `dir` (and parents) and makes it private to the user.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample(pid: u32) -> GatewayFile {
        GatewayFile {
            port: 9400,
            pid,
            host: "127.0.0.1".to_owned(),
            token: "btk-secret".to_owned(),
            provider_token: "ptk-secret".to_owned(),
            default_session: "s-1".to_owned(),
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            version: "0.1.0".to_owned(),
        }
    }

    #[test]
    fn written_private_and_read_back_and_removed_only_by_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("state");
        sample(42).write(&home).unwrap();
        let mode = fs::metadata(GatewayFile::path(&home))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = fs::metadata(&home).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert_eq!(GatewayFile::read(&home), Some(sample(42)));
        assert!(!GatewayFile::remove_if_owned_by(&home, 43).unwrap());
        assert!(GatewayFile::path(&home).exists());
        assert!(GatewayFile::remove_if_owned_by(&home, 42).unwrap());
        assert_eq!(GatewayFile::read(&home), None);
    }

    #[test]
    fn debug_never_shows_tokens() {
        let shown = format!("{:?}", sample(1));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
