//! `copilot-bridge vscode install|uninstall [--editor E] [--extensions-dir
//! DIR]`, the edits: the Copilot Bridge extension for VS Code
//! (extensions/vscode/, shipped inside the binary; docs/vscode.md).
//!
//! `install` writes the extension into the editor's extensions directory as
//! `copilot-bridge.copilot-bridge-<version>/`, the way the editor itself
//! unpacks a `.vsix`, with a `config.json` naming this program and its state
//! directory (the extension's defaults for `bridge.binary` and
//! `bridge.home`, so it reaches or starts the same daemon), and records it in
//! the directory's `extensions.json` when the editor keeps one. Older
//! versions of the extension there are removed.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use serde_json::{Value, json};

use crate::error::AgentsError;
use crate::json_edit::{read_if_present, write_atomically};
use crate::program::Program;

/// The extension as the repository holds it; `test/` is not shipped.
static EXTENSION: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../extensions/vscode");

/// `publisher.name`, the extension's identifier.
const IDENTIFIER: &str = "copilot-bridge.copilot-bridge";

/// Where each editor keeps the user's extensions, under the home
/// (`AgentEnv::vscode_extensions_dir`): the `--editor` name and the
/// directory.
pub const EDITORS: [(&str, &str); 5] = [
    ("code", ".vscode/extensions"),
    ("insiders", ".vscode-insiders/extensions"),
    ("codium", ".vscode-oss/extensions"),
    ("code-server", ".local/share/code-server/extensions"),
    // The server side of Remote - SSH / WSL / Dev Containers: where the
    // workspace (and the daemon) is.
    ("remote", ".vscode-server/extensions"),
];

/// The shipped package.json's version.
pub fn version() -> Result<String, AgentsError> {
    let manifest = EXTENSION
        .get_file("package.json")
        .and_then(|file| file.contents_utf8())
        .ok_or(AgentsError::NoShippedManifest)?;
    let manifest: Value = serde_json::from_str(manifest).map_err(AgentsError::ShippedManifest)?;
    manifest["version"]
        .as_str()
        .map(str::to_owned)
        .ok_or(AgentsError::NoShippedVersion)
}

fn shipped(path: &Path) -> bool {
    !path.starts_with("test") && !path.starts_with("node_modules")
}

fn write_files(dir: &Dir<'_>, target: &Path) -> Result<usize, AgentsError> {
    let mut written = 0;
    for file in dir.files() {
        if !shipped(file.path()) {
            continue;
        }
        let text = file
            .contents_utf8()
            .ok_or_else(|| AgentsError::ShippedNotText {
                path: file.path().to_owned(),
            })?;
        write_atomically(&target.join(file.path()), text)?;
        written += 1;
    }
    for sub in dir.dirs() {
        if shipped(sub.path()) {
            written += write_files(sub, target)?;
        }
    }
    Ok(written)
}

/// Older (or this) versions of the extension in `extensions`.
fn installed_versions(extensions: &Path) -> Vec<PathBuf> {
    let prefix = format!("{IDENTIFIER}-");
    std::fs::read_dir(extensions)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect()
}

/// `extensions.json` (VS Code 1.74+ keeps the installed extensions there),
/// read before anything is written so a broken one refuses the whole change;
/// `None` when the directory has none (the editor scans the folders).
struct ExtensionList {
    path: PathBuf,
    entries: Option<Vec<Value>>,
}

impl ExtensionList {
    fn read(extensions: &Path) -> Result<Self, AgentsError> {
        let path = extensions.join("extensions.json");
        let entries = match read_if_present(&path)? {
            None => None,
            Some(text) => Some(serde_json::from_str(&text).map_err(|source| {
                AgentsError::NotAnExtensionList {
                    path: path.clone(),
                    source,
                }
            })?),
        };
        Ok(Self { path, entries })
    }

    /// Our entry replaced by `entry`, or removed when `None`.
    fn record(self, entry: Option<Value>) -> Result<(), AgentsError> {
        let Some(mut list) = self.entries else {
            return Ok(());
        };
        list.retain(|item| item["identifier"]["id"].as_str() != Some(IDENTIFIER));
        list.extend(entry);
        write_atomically(&self.path, &Value::Array(list).to_string())
    }
}

/// `.obsolete` lists the extension folders the editor deletes at its next
/// start (an uninstall from its UI): a version installed again must not be
/// on it.
fn forget_obsolete(extensions: &Path) -> Result<(), AgentsError> {
    let path = extensions.join(".obsolete");
    let Some(text) = read_if_present(&path)? else {
        return Ok(());
    };
    let Ok(Value::Object(mut marked)) = serde_json::from_str::<Value>(&text) else {
        // Not ours to repair; the editor rewrites it.
        return Ok(());
    };
    let before = marked.len();
    marked.retain(|folder, _| !folder.starts_with(&format!("{IDENTIFIER}-")));
    if marked.len() == before {
        return Ok(());
    }
    write_atomically(&path, &Value::Object(marked).to_string())
}

/// Writes the extension into the editor's `extensions` directory (older
/// versions removed) with a config.json naming `program` and its state
/// directory: what to tell the user.
pub fn install(program: &Program, extensions: &Path) -> Result<String, AgentsError> {
    let version = version()?;
    let folder = format!("{IDENTIFIER}-{version}");
    let target = extensions.join(&folder);
    let list = ExtensionList::read(extensions)?;
    for old in installed_versions(extensions) {
        std::fs::remove_dir_all(&old)
            .map_err(|source| AgentsError::RemoveOldExtension { path: old, source })?;
    }
    forget_obsolete(extensions)?;
    let files = write_files(&EXTENSION, &target)?;
    let defaults = json!({"binary": program.path, "home": program.home});
    write_atomically(
        &target.join("config.json"),
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&defaults).unwrap_or_default()
        ),
    )?;
    list.record(Some(json!({
            "identifier": {"id": IDENTIFIER},
            "version": version,
            "location": {"$mid": 1, "path": target, "scheme": "file"},
            "relativeLocation": folder,
    })))?;
    Ok(format!(
        "Installed the Copilot Bridge extension {version} ({files} files) in {}.\n\
         Reload the editor's window (Developer: Reload Window) to start it; see docs/vscode.md.\n",
        target.display()
    ))
}

/// Removes every version of the extension from `extensions`: what to tell
/// the user.
pub fn uninstall(extensions: &Path) -> Result<String, AgentsError> {
    let list = ExtensionList::read(extensions)?;
    let found = installed_versions(extensions);
    for dir in &found {
        std::fs::remove_dir_all(dir).map_err(|source| AgentsError::RemoveExtension {
            path: dir.clone(),
            source,
        })?;
    }
    list.record(None)?;
    Ok(if found.is_empty() {
        format!(
            "The Copilot Bridge extension is not installed in {}.\n",
            extensions.display()
        )
    } else {
        format!(
            "Removed the Copilot Bridge extension from {}.\n",
            extensions.display()
        )
    })
}
