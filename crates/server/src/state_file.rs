//! `<home>/gateway.json`: how clients find the daemon (port, pid) and the
//! secrets they need (the `/rpc` bearer token, the default session's
//! provider token). Written atomically with mode 0600 in a 0700 directory,
//! removed on shutdown only by the daemon it describes.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bridge_util::owner_only::{self, Replace};

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
    /// as one (a torn or foreign file is treated as no daemon). Only a
    /// regular file owned by this user counts: a FIFO planted there must
    /// not hang every command, and a symlink or another user's file must not
    /// point the CLI (and its bearer token) at someone else's port.
    pub fn read(home: &Path) -> Option<Self> {
        let path = Self::path(home);
        let text = match owner_only::read(&path, MAX_FILE_BYTES) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "ignoring gateway.json");
                return None;
            }
        };
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
        owner_only::ensure_private_dir(home)?;
        let mut json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        json.push(b'\n');
        owner_only::write_atomically(&Self::path(home), &json, Replace::Private)
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

/// `<home>/token`: the daemon's bearer token kept across restarts, made by
/// `openclaw register` so that a client configured once (OpenClaw's MCP
/// entry reads it from its `.env`) still gets in after a restart. Without
/// it (and without a configured `token`) every start draws a new one.
pub const TOKEN_FILE: &str = "token";

/// The kept token, if `<home>/token` exists; an unreadable or malformed
/// file is an error (the daemon must not silently fall back to another).
pub fn kept_token(home: &Path) -> std::io::Result<Option<String>> {
    kept_secret(home, TOKEN_FILE)
}

/// The token that answers approvals (`approvals.answer`,
/// docs/approvals.md): never given to agents, unlike [`TOKEN_FILE`]'s.
pub const APPROVER_TOKEN_FILE: &str = "approver-token";

/// The approver token, made (mode 0600, kept across restarts) when there is
/// none yet.
pub fn keep_approver_token(home: &Path) -> std::io::Result<String> {
    keep_secret(home, APPROVER_TOKEN_FILE, None, "bap")
}

/// The approver token if one was made (a client reading it never makes one).
pub fn kept_approver_token(home: &Path) -> std::io::Result<Option<String>> {
    kept_secret(home, APPROVER_TOKEN_FILE)
}

/// The token a Prometheus scraper presents at `GET /metrics`
/// (docs/telemetry.md): it opens nothing else, and is kept across restarts
/// so a scrape configuration's `credentials_file` stays valid.
pub const METRICS_TOKEN_FILE: &str = "metrics-token";

/// The scrape token, made (mode 0600, kept across restarts) when there is
/// none yet.
pub fn keep_metrics_token(home: &Path) -> std::io::Result<String> {
    keep_secret(home, METRICS_TOKEN_FILE, None, "bmt")
}

fn kept_secret(home: &Path, name: &str) -> std::io::Result<Option<String>> {
    let path = home.join(name);
    let bytes = match owner_only::read(&path, MAX_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(std::io::Error::other(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    // Like ssh with a key: a token others can read is no secret any more.
    let mode = fs::symlink_metadata(&path)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is readable by others (mode {:o}); run `chmod 600` on it, or remove it to get a new token",
            path.display(),
            mode & 0o777
        )));
    }
    let token = String::from_utf8_lossy(&bytes).trim().to_owned();
    let visible = |c: char| c.is_ascii_graphic();
    if !(16..=512).contains(&token.len()) || !token.chars().all(visible) {
        return Err(std::io::Error::other(format!(
            "{} must hold one token of 16-512 visible ASCII characters; remove it to get a new one",
            path.display()
        )));
    }
    Ok(Some(token))
}

/// The kept token, made (mode 0600) when there is none yet: `current`
/// (the running daemon's, so its clients keep working) or a new one.
pub fn keep_token(home: &Path, current: Option<&str>) -> std::io::Result<String> {
    keep_secret(home, TOKEN_FILE, current, "btk")
}

fn keep_secret(
    home: &Path,
    name: &str,
    current: Option<&str>,
    prefix: &str,
) -> std::io::Result<String> {
    if let Some(token) = kept_secret(home, name)? {
        return Ok(token);
    }
    owner_only::ensure_private_dir(home)?;
    let token = current.map_or_else(|| bridge_util::ids::token(prefix), str::to_owned);
    let mut file = match owner_only::create_new(&home.join(name)) {
        Ok(file) => file,
        // Another process kept one meanwhile: that is the token.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            return kept_secret(home, name)?.ok_or(err);
        }
        Err(err) => return Err(err),
    };
    file.write_all(format!("{token}\n").as_bytes())?;
    file.sync_all()?;
    Ok(token)
}

/// Largest `gateway.json` or token file worth reading (a few hundred bytes).
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Opens (creating it, mode 0600) a log file in the state directory for
/// appending (`daemon.log`): never through a symlink, only a regular file
/// of this user.
pub fn open_private_log(path: &Path) -> std::io::Result<fs::File> {
    owner_only::open_append(path)
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
    fn a_kept_token_is_made_once_private_and_refused_when_others_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        assert_eq!(kept_token(&home).unwrap(), None);
        let token = keep_token(&home, Some("btk-the-running-daemons-token")).unwrap();
        assert_eq!(token, "btk-the-running-daemons-token");
        let path = home.join(TOKEN_FILE);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Kept: a second call (another daemon's token) changes nothing.
        assert_eq!(
            keep_token(&home, Some("btk-other-0000000000")).unwrap(),
            token
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = kept_token(&home).unwrap_err().to_string();
        assert!(err.contains("readable by others"), "{err}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, "short\n").unwrap();
        assert!(
            kept_token(&home)
                .unwrap_err()
                .to_string()
                .contains("16-512")
        );
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
    fn a_symlink_planted_at_gateway_json_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("state");
        owner_only::ensure_private_dir(&home).unwrap();
        let target = dir.path().join("victim");
        fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, GatewayFile::path(&home)).unwrap();
        // A symlink at gateway.json is not read through either.
        assert_eq!(GatewayFile::read(&home), None);
        sample(7).write(&home).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "untouched");
        assert_eq!(GatewayFile::read(&home), Some(sample(7)));
        let left: Vec<_> = fs::read_dir(&home)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, [FILE_NAME], "no temporary file is left behind");
    }

    #[test]
    fn debug_never_shows_tokens() {
        let shown = format!("{:?}", sample(1));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
