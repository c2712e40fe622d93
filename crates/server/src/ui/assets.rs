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
    /// `app.3f2a9c1b0d4e.js`: served at `/ui/assets/NAME`.
    pub name: String,
    pub content_type: &'static str,
    pub body: &'static str,
}

/// The files, as written in crates/server/ui/.
const FILES: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../ui/style.css"),
    ),
];

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
        let files = FILES
            .iter()
            .map(|(file, content_type, body)| {
                let digest = Sha256::digest(body.as_bytes());
                let hash = bridge_util::ids::hex(&digest[..6]);
                let (stem, extension) = file.rsplit_once('.').unwrap_or((file, ""));
                let name = format!("{stem}.{hash}.{extension}");
                shell = shell.replace(&format!("{{{{{file}}}}}"), &format!("/ui/assets/{name}"));
                Asset {
                    name,
                    content_type,
                    body,
                }
            })
            .collect();
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
    fn the_shell_names_each_asset_by_its_hash() {
        let assets = assets();
        for file in &assets.files {
            assert!(assets.shell.contains(&format!("/ui/assets/{}", file.name)));
            assert!(asset(&file.name).is_some());
        }
        assert!(!assets.shell.contains("{{"), "every placeholder filled");
    }
}
