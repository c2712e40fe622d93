//! The dashboard's files, embedded in the binary at build time
//! (crates/server/ui/: plain ES modules and CSS, no build step). Each asset
//! is served under a name with its content's hash, cached for good
//! (`immutable`); the page shell that names them is never cached, so a new
//! binary's page loads its own assets.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    /// As written in crates/server/ui/ (`app.js`).
    pub file: &'static str,
    /// `app.3f2a9c1b0d4e.js`: served at `/ui/assets/NAME`.
    pub name: String,
    pub content_type: &'static str,
    /// Its imports naming the hashed files.
    pub body: String,
}

/// The files, as written in crates/server/ui/: a module only imports
/// modules listed before it (its imports name their hashed files, so a
/// changed module changes the names of all that import it).
const FILES: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../ui/style.css"),
    ),
    ("lib.js", JS, include_str!("../../ui/lib.js")),
    ("overview.js", JS, include_str!("../../ui/overview.js")),
    ("approvals.js", JS, include_str!("../../ui/approvals.js")),
    ("sessions.js", JS, include_str!("../../ui/sessions.js")),
    ("activity.js", JS, include_str!("../../ui/activity.js")),
    (
        "orchestrations.js",
        JS,
        include_str!("../../ui/orchestrations.js"),
    ),
    (
        "configuration.js",
        JS,
        include_str!("../../ui/configuration.js"),
    ),
    ("app.js", JS, include_str!("../../ui/app.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

const SHELL: &str = include_str!("../../ui/index.html");

/// Every asset with its hashed name, and the page shell that names them.
pub struct Assets {
    pub files: Vec<Asset>,
    pub shell: String,
}

/// Hashed once, on first use.
pub fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let mut shell = SHELL.to_owned();
        let mut files: Vec<Asset> = Vec::new();
        for (file, content_type, written) in FILES {
            let mut body = (*written).to_owned();
            for earlier in &files {
                body = body.replace(
                    &format!("'./{}'", earlier.file),
                    &format!("'/ui/assets/{}'", earlier.name),
                );
            }
            let digest = Sha256::digest(body.as_bytes());
            let hash = bridge_util::ids::hex(&digest[..6]);
            let (stem, extension) = file.rsplit_once('.').unwrap_or((file, ""));
            let name = format!("{stem}.{hash}.{extension}");
            shell = shell.replace(&format!("{{{{{file}}}}}"), &format!("/ui/assets/{name}"));
            files.push(Asset {
                file,
                name,
                content_type,
                body,
            });
        }
        Assets { files, shell }
    })
}

/// The asset served as `name`.
pub fn asset(name: &str) -> Option<&'static Asset> {
    assets().files.iter().find(|asset| asset.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_reached_from_the_shell_by_its_hash() {
        let assets = assets();
        for file in &assets.files {
            let named = format!("/ui/assets/{}", file.name);
            let reached = assets.shell.contains(&named)
                || assets.files.iter().any(|other| other.body.contains(&named));
            assert!(
                reached,
                "{} is neither in the shell nor imported",
                file.file
            );
            assert!(asset(&file.name).is_some());
        }
        assert!(!assets.shell.contains("{{"), "every placeholder filled");
    }

    #[test]
    fn every_import_names_a_served_file() {
        for file in &assets().files {
            assert!(
                !file.body.contains("from './"),
                "{} imports a module not listed before it",
                file.file
            );
            for import in file.body.split("from '/ui/assets/").skip(1) {
                let name = import.split('\'').next().unwrap_or_default();
                assert!(asset(name).is_some(), "{} imports {name}", file.file);
            }
        }
    }
}
