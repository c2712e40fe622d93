//! `copilot-bridge vscode install|uninstall [--editor E] [--extensions-dir
//! DIR]`: the Copilot Bridge extension for VS Code (extensions/vscode/,
//! shipped inside this binary; docs/vscode.md).
//!
//! `install` writes the extension into the editor's extensions directory as
//! `copilot-bridge.copilot-bridge-<version>/`, the way the editor itself
//! unpacks a `.vsix`, with a `config.json` naming this program and its state
//! directory (the extension's defaults for `bridge.binary` and
//! `bridge.home`, so it reaches or starts the same daemon), and records it in
//! the directory's `extensions.json` when the editor keeps one. Older
//! versions of the extension there are removed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bridge_config::BridgeConfig;
use include_dir::{Dir, include_dir};
use serde_json::{Value, json};

use super::tool::write_stdout;
use crate::args::{VscodeArgs, VscodeCommand};
use crate::exit::Failure;
use bridge_agents::json_edit::{read_if_present, write_atomically};

/// The extension as the repository holds it; `test/` is not shipped.
static EXTENSION: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../../extensions/vscode");

/// `publisher.name`, the extension's identifier.
const IDENTIFIER: &str = "copilot-bridge.copilot-bridge";

/// Where each editor keeps the user's extensions, under `$HOME`.
const EDITORS: [(&str, &str); 5] = [
    ("code", ".vscode/extensions"),
    ("insiders", ".vscode-insiders/extensions"),
    ("codium", ".vscode-oss/extensions"),
    ("code-server", ".local/share/code-server/extensions"),
    // The server side of Remote - SSH / WSL / Dev Containers: where the
    // workspace (and the daemon) is.
    ("remote", ".vscode-server/extensions"),
];

fn extensions_dir(args: &VscodeArgs) -> Result<PathBuf, Failure> {
    if let Some(dir) = &args.extensions_dir {
        return Ok(dir.clone());
    }
    let relative = EDITORS
        .iter()
        .find(|(editor, _)| *editor == args.editor)
        .map(|(_, dir)| *dir)
        .ok_or_else(|| Failure::usage(format!("unknown editor {:?}", args.editor)))?;
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .ok_or_else(|| {
            Failure::usage("neither HOME nor USERPROFILE is set; pass --extensions-dir")
        })?;
    Ok(PathBuf::from(home).join(relative))
}

/// The shipped package.json's version.
fn version() -> Result<String, Failure> {
    let manifest = EXTENSION
        .get_file("package.json")
        .and_then(|file| file.contents_utf8())
        .ok_or_else(|| Failure::internal("the shipped extension has no package.json"))?;
    let manifest: Value = serde_json::from_str(manifest)
        .map_err(|err| Failure::internal(format!("the shipped package.json: {err}")))?;
    manifest["version"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::internal("the shipped package.json has no version"))
}

fn shipped(path: &Path) -> bool {
    !path.starts_with("test") && !path.starts_with("node_modules")
}

fn write_files(dir: &Dir<'_>, target: &Path) -> Result<usize, Failure> {
    let mut written = 0;
    for file in dir.files() {
        if !shipped(file.path()) {
            continue;
        }
        let text = file.contents_utf8().ok_or_else(|| {
            Failure::internal(format!(
                "the shipped extension file {} is not text",
                file.path().display()
            ))
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
    fn read(extensions: &Path) -> Result<Self, Failure> {
        let path = extensions.join("extensions.json");
        let entries = match read_if_present(&path)? {
            None => None,
            Some(text) => Some(serde_json::from_str(&text).map_err(|err| {
                Failure::usage(format!(
                    "{} is not the editor's extension list ({err}); nothing was changed",
                    path.display()
                ))
            })?),
        };
        Ok(Self { path, entries })
    }

    /// Our entry replaced by `entry`, or removed when `None`.
    fn record(self, entry: Option<Value>) -> Result<(), Failure> {
        let Some(mut list) = self.entries else {
            return Ok(());
        };
        list.retain(|item| item["identifier"]["id"].as_str() != Some(IDENTIFIER));
        list.extend(entry);
        let text = serde_json::to_string(&list).map_err(|err| {
            Failure::internal(format!("cannot write {}: {err}", self.path.display()))
        })?;
        Ok(write_atomically(&self.path, &text)?)
    }
}

/// `.obsolete` lists the extension folders the editor deletes at its next
/// start (an uninstall from its UI): a version installed again must not be
/// on it.
fn forget_obsolete(extensions: &Path) -> Result<(), Failure> {
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
    Ok(write_atomically(&path, &Value::Object(marked).to_string())?)
}

fn install(config: &BridgeConfig, args: &VscodeArgs) -> Result<String, Failure> {
    let extensions = extensions_dir(args)?;
    let version = version()?;
    let folder = format!("{IDENTIFIER}-{version}");
    let target = extensions.join(&folder);
    let list = ExtensionList::read(&extensions)?;
    for old in installed_versions(&extensions) {
        std::fs::remove_dir_all(&old).map_err(|err| {
            Failure::usage(format!("cannot remove the old {}: {err}", old.display()))
        })?;
    }
    forget_obsolete(&extensions)?;
    let files = write_files(&EXTENSION, &target)?;
    let exe = std::env::current_exe()
        .map_err(|err| Failure::internal(format!("cannot find this program's own path: {err}")))?;
    let defaults = json!({"binary": exe, "home": config.home});
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

fn uninstall(args: &VscodeArgs) -> Result<String, Failure> {
    let extensions = extensions_dir(args)?;
    let list = ExtensionList::read(&extensions)?;
    let found = installed_versions(&extensions);
    for dir in &found {
        std::fs::remove_dir_all(dir)
            .map_err(|err| Failure::usage(format!("cannot remove {}: {err}", dir.display())))?;
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

pub fn run(config: &BridgeConfig, command: VscodeCommand) -> Result<ExitCode, Failure> {
    let said = match command {
        VscodeCommand::Install(args) => install(config, &args)?,
        VscodeCommand::Uninstall(args) => uninstall(&args)?,
    };
    write_stdout(&said)?;
    Ok(ExitCode::SUCCESS)
}
