//! Where a path argument points: resolution against the workspace and the
//! home directory, symlinks included, and which paths hold credentials.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use super::words::Word;

/// Symlink hops followed before giving up (the kernel's own limit is 40).
const MAX_SYMLINK_HOPS: usize = 40;

/// The directories a command may run in. `cd` inside the command adds a
/// candidate rather than replacing the old one, because the analysis does
/// not track which `cd` is in effect where (subshells, `||`): every relative
/// path is judged against each candidate, and the worst outcome counts.
#[derive(Debug, Clone)]
pub(crate) struct Cwd {
    pub candidates: Vec<PathBuf>,
    /// A `cd` went somewhere that cannot be known statically.
    pub unknown: bool,
}

impl Cwd {
    /// The working directory when there is exactly one candidate.
    pub(crate) fn certain(&self) -> Option<&Path> {
        match self.candidates.as_slice() {
            [only] if !self.unknown => Some(only),
            _ => None,
        }
    }
}

/// One possible meaning of a path argument.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The absolute path, symlinks followed; `None` when it depends on
    /// something unknown. For a glob, the directory holding the matches.
    pub path: Option<PathBuf>,
    /// The word is a glob: `path` is the directory its matches are in.
    pub glob: bool,
    /// The glob matches every entry of that directory (`*`, `.*`).
    pub glob_everything: bool,
    /// The word names a home directory that cannot be resolved (`~` without
    /// a known home, `~other`).
    pub home_unknown: bool,
    /// Starts with an unknown expansion followed by `/` (see
    /// [`Word::starts_with_unknown_then_slash`]).
    pub empty_variable_risk: bool,
}

impl Target {
    pub(crate) fn at(path: PathBuf) -> Self {
        Self {
            path: Some(path),
            ..Self::unknown()
        }
    }

    pub(crate) fn unknown() -> Self {
        Self {
            path: None,
            glob: false,
            glob_everything: false,
            home_unknown: false,
            empty_variable_risk: false,
        }
    }
}

pub(crate) struct Resolver {
    workspace: PathBuf,
    home: Option<PathBuf>,
    canonical_cache: HashMap<PathBuf, PathBuf>,
}

impl Resolver {
    pub(crate) fn new(workspace: &Path, home: Option<&Path>) -> Self {
        let mut resolver = Self {
            workspace: PathBuf::new(),
            home: None,
            canonical_cache: HashMap::new(),
        };
        let absolute_workspace = if workspace.is_absolute() {
            workspace.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|cwd| cwd.join(workspace))
                .unwrap_or_else(|_| workspace.to_path_buf())
        };
        resolver.workspace = resolver.follow(&absolute_workspace);
        resolver.home = home.map(|home| resolver.follow(home));
        resolver
    }

    pub(crate) fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The working directory `directory` (relative to the workspace unless absolute).
    pub(crate) fn cwd_at(&mut self, directory: &Path) -> Cwd {
        let absolute = self.workspace.join(directory);
        Cwd {
            candidates: vec![self.follow(&absolute)],
            unknown: false,
        }
    }

    /// `path` (absolute) with every symlink followed, as the kernel would.
    pub(crate) fn canonical(&mut self, path: &Path) -> PathBuf {
        self.follow(path)
    }

    pub(crate) fn is_inside(&self, path: &Path) -> bool {
        path.starts_with(&self.workspace)
    }

    /// `path` relative to the workspace, `/`-separated, when it is inside.
    pub(crate) fn relative(&self, path: &Path) -> Option<String> {
        let inside = path.strip_prefix(&self.workspace).ok()?;
        Some(
            inside
                .components()
                .map(|component| component.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }

    pub(crate) fn is_workspace_root(&self, path: &Path) -> bool {
        path == self.workspace
    }

    /// The filesystem root, the home directory, or a directory above it.
    pub(crate) fn is_root_or_home(&self, path: &Path) -> bool {
        path == Path::new("/")
            || self
                .home
                .as_deref()
                .is_some_and(|home| home.starts_with(path))
    }

    /// Every meaning of `word` as a path, one per working-directory candidate.
    pub(crate) fn resolve(&mut self, word: &Word, cwd: &Cwd) -> Vec<Target> {
        let unresolved = Target {
            empty_variable_risk: word.starts_with_unknown_then_slash(),
            ..Target::unknown()
        };
        let Some(value) = word.value() else {
            // `$HOME` is only unknown here when no home directory was given.
            let raw = word.raw.trim_start_matches('"');
            let home_unknown = raw.starts_with("$HOME") || raw.starts_with("${HOME}");
            return vec![Target {
                home_unknown,
                ..unresolved
            }];
        };
        let glob = word.glob_offset().is_some();
        let (text, glob_everything) = match word.glob_offset() {
            Some(offset) => split_glob(&value, offset),
            None => (value.as_str(), false),
        };
        let mut text = text.to_owned();
        if word.has_tilde() {
            match expand_tilde(&text, self.home.as_deref()) {
                Some(expanded) => text = expanded,
                None => {
                    return vec![Target {
                        home_unknown: true,
                        ..unresolved
                    }];
                }
            }
        }
        let mut targets = Vec::new();
        if Path::new(&text).is_absolute() {
            let path = self.follow(Path::new(&text));
            targets.push(Target {
                path: Some(path),
                glob,
                glob_everything,
                ..unresolved.clone()
            });
        } else {
            for base in cwd.candidates.clone() {
                let path = self.follow(&base.join(&text));
                targets.push(Target {
                    path: Some(path),
                    glob,
                    glob_everything,
                    ..unresolved.clone()
                });
            }
            if cwd.unknown {
                targets.push(unresolved);
            }
        }
        targets
    }

    /// Resolves `path` the way the kernel would: component by component,
    /// following symlinks as they are met (so `link/..` is the parent of the
    /// link's target, not the workspace), including dangling ones, since a
    /// write through a dangling link creates its target.
    fn follow(&mut self, path: &Path) -> PathBuf {
        if let Some(cached) = self.canonical_cache.get(path) {
            return cached.clone();
        }
        let mut resolved = PathBuf::from("/");
        let mut pending: Vec<PathBuf> = Vec::new();
        push_components(path, &mut pending);
        let mut hops = 0;
        while let Some(component) = pending.pop() {
            match component.to_str() {
                Some("/") => resolved = PathBuf::from("/"),
                Some("..") => {
                    resolved.pop();
                }
                _ => {
                    resolved.push(&component);
                    // /dev and /proc links point at per-process kernel objects
                    // (`/dev/stdout` -> `/proc/self/fd/1` -> a pipe): the name
                    // written is what tells whether the write is harmless.
                    let is_virtual = resolved.starts_with("/dev") || resolved.starts_with("/proc");
                    let is_link = !is_virtual
                        && std::fs::symlink_metadata(&resolved)
                            .map(|meta| meta.file_type().is_symlink())
                            .unwrap_or(false);
                    if is_link && hops < MAX_SYMLINK_HOPS {
                        hops += 1;
                        if let Ok(link_target) = std::fs::read_link(&resolved) {
                            resolved.pop();
                            push_components(&link_target, &mut pending);
                        }
                    }
                }
            }
        }
        self.canonical_cache
            .insert(path.to_path_buf(), resolved.clone());
        resolved
    }
}

/// Pushes the components of `path` onto a stack that is popped from the end,
/// so that they come out in order.
fn push_components(path: &Path, pending: &mut Vec<PathBuf>) {
    let components: Vec<PathBuf> = path
        .components()
        .filter_map(|component| match component {
            Component::RootDir | Component::Prefix(_) => Some(PathBuf::from("/")),
            Component::CurDir => None,
            Component::ParentDir => Some(PathBuf::from("..")),
            Component::Normal(name) => Some(PathBuf::from(name)),
        })
        .collect();
    pending.extend(components.into_iter().rev());
}

/// Splits a glob word into the directory that holds the matches and whether
/// the pattern matches everything in it (`*`, `.*`, `?*`: no letter to select by).
fn split_glob(value: &str, glob_offset: usize) -> (&str, bool) {
    let directory_end = value[..glob_offset].rfind('/').map_or(0, |slash| slash + 1);
    let pattern = &value[directory_end..];
    let last_component = pattern
        .split('/')
        .find(|part| !part.is_empty())
        .unwrap_or("");
    let matches_everything = pattern.split('/').filter(|part| !part.is_empty()).count() == 1
        && !last_component.chars().any(char::is_alphanumeric);
    let directory = &value[..directory_end];
    (
        if directory.is_empty() { "." } else { directory },
        matches_everything,
    )
}

fn expand_tilde(text: &str, home: Option<&Path>) -> Option<String> {
    let rest = text.strip_prefix('~')?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        // `~user`: another account's home, unknown here.
        return None;
    }
    let home = home?.to_str()?;
    Some(format!("{home}{rest}"))
}

/// Why reading `path` would expose credentials, if it would. `path` may be a
/// resolved path or the textual skeleton of a word.
pub(crate) fn credential_reason(path: &str) -> Option<&'static str> {
    let components: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    let has = |name: &str| components.contains(&name);
    let has_pair = |first: &str, second: &str| {
        components
            .windows(2)
            .any(|pair| pair[0] == first && pair[1] == second)
    };
    let file_name = components.last().copied().unwrap_or("");
    if has(".ssh") {
        return Some("reads SSH keys or configuration (~/.ssh)");
    }
    if has(".gnupg") {
        return Some("reads the GnuPG keyring (~/.gnupg)");
    }
    if has(".aws") {
        return Some("reads AWS credentials (~/.aws)");
    }
    if [".netrc", "_netrc", ".git-credentials", ".pgpass"].contains(&file_name) {
        return Some("reads a credentials file");
    }
    if has_pair("gh", "hosts.yml")
        || has_pair(".docker", "config.json")
        || has_pair(".kube", "config")
    {
        return Some("reads stored CLI credentials");
    }
    if has_pair(".config", "gcloud") || has(".azure") {
        return Some("reads cloud CLI credentials");
    }
    if has_pair("etc", "shadow") || has_pair("etc", "gshadow") || has_pair("etc", "sudoers") {
        return Some("reads the system password database");
    }
    if has_pair("etc", "ssh") && file_name.starts_with("ssh_host_") && file_name.ends_with("_key") {
        return Some("reads an SSH host private key");
    }
    if is_private_key_file_name(file_name) {
        return Some("reads an SSH private key");
    }
    if has("proc") && file_name == "environ" {
        return Some("reads a process environment");
    }
    None
}

/// `id_rsa`, `id_ed25519_work`, `id_ecdsa.bak`, but not `id_rsa.pub` or
/// `id_rsa_parser.py`.
fn is_private_key_file_name(file_name: &str) -> bool {
    const KEY_NAMES: [&str; 4] = ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
    const BACKUP_SUFFIXES: [&str; 6] = [".bak", ".old", ".orig", ".backup", ".pem", ".key"];
    KEY_NAMES.iter().any(|key| {
        file_name.strip_prefix(key).is_some_and(|rest| {
            !rest.contains('.') || BACKUP_SUFFIXES.iter().any(|suffix| rest.ends_with(suffix))
        })
    })
}

/// `.env` files hold a project's secrets; the workspace's own are the
/// user's business, anyone else's are not.
pub(crate) fn is_env_file(path: &Path) -> bool {
    path.file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|name| name == ".env" || name.starts_with(".env."))
}

/// Files that usually hold secrets, wherever they are: reading them needs
/// approval even inside the workspace, because a read-only command can
/// transform their contents (`rev`, `od`, `tr`) past the secret redactor.
pub(crate) fn is_secret_bearing(path: &Path) -> bool {
    const NAMES: [&str; 8] = [
        ".npmrc",
        ".netrc",
        "_netrc",
        ".pypirc",
        ".git-credentials",
        ".pgpass",
        ".htpasswd",
        ".dockercfg",
    ];
    const EXTENSIONS: [&str; 6] = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];
    let Some(name) = path.file_name().and_then(OsStr::to_str) else {
        return false;
    };
    is_env_file(path)
        || NAMES.contains(&name)
        || name.starts_with("id_")
        || name.starts_with("credentials")
        || EXTENSIONS.iter().any(|extension| name.ends_with(extension))
}

/// Devices that are harmless to write to.
pub(crate) fn is_harmless_device(path: &Path) -> bool {
    matches!(
        path.to_str(),
        Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
    ) || path.starts_with("/dev/fd")
        || path.starts_with("/proc/self/fd")
}

/// Raw disks: writing to one destroys a filesystem.
pub(crate) fn is_block_device(path: &Path) -> bool {
    let Some(name) = path.strip_prefix("/dev").ok().and_then(Path::to_str) else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "dm-", "md", "loop", "mapper/",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}
