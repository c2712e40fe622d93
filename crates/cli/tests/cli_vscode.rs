//! `copilot-bridge vscode install|uninstall`: the extension shipped in the
//! binary, written where each editor keeps its extensions, older versions
//! replaced, the editor's extension list kept true, and broken input refused
//! without damage. The installed extension running in real VS Code is
//! tests/agents/vscode.rs.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::Bridge;

const FOLDER: &str = "copilot-bridge.copilot-bridge-0.1.0";

fn version() -> String {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            bridge_testkit::repo_root().join("extensions/vscode/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    manifest["version"].as_str().unwrap().to_owned()
}

fn vscode(bridge: &Bridge, home: &Path, args: &[&str]) -> std::process::Output {
    bridge
        .cmd()
        .env("HOME", home)
        .arg("vscode")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn install_writes_the_shipped_extension_with_its_daemon_and_uninstall_removes_it() {
    assert_eq!(
        FOLDER,
        format!("copilot-bridge.copilot-bridge-{}", version())
    );
    let bridge = Bridge::new();
    let home = tempfile::tempdir().unwrap();
    let extensions = home.path().join(".vscode/extensions");
    std::fs::create_dir_all(extensions.join("copilot-bridge.copilot-bridge-0.0.1")).unwrap();
    std::fs::create_dir_all(extensions.join("someone.else-1.0.0")).unwrap();
    let other = json!({"identifier": {"id": "someone.else"}, "version": "1.0.0",
                       "relativeLocation": "someone.else-1.0.0"});
    let old = json!({"identifier": {"id": "copilot-bridge.copilot-bridge"}, "version": "0.0.1",
                     "relativeLocation": "copilot-bridge.copilot-bridge-0.0.1"});
    std::fs::write(
        extensions.join("extensions.json"),
        json!([other, old]).to_string(),
    )
    .unwrap();
    // Uninstalled once from the editor's own UI: marked for deletion.
    std::fs::write(
        extensions.join(".obsolete"),
        json!({FOLDER: true, "someone.else-0.9.0": true}).to_string(),
    )
    .unwrap();

    let output = vscode(&bridge, home.path(), &["install"]);
    assert!(output.status.success(), "{output:?}");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains(FOLDER) && said.contains("Reload"), "{said}");
    let installed = extensions.join(FOLDER);
    // Exactly the repository's files, byte for byte, and no tests.
    for file in [
        "package.json",
        "extension.js",
        "lib/connection.js",
        "lib/diff.js",
    ] {
        let shipped = std::fs::read(
            bridge_testkit::repo_root()
                .join("extensions/vscode")
                .join(file),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(installed.join(file)).unwrap(),
            shipped,
            "{file}"
        );
    }
    assert!(!installed.join("test").exists());
    // Which daemon it reaches: this program and its state directory.
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(installed.join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["home"], json!(bridge.state.path()));
    assert!(Path::new(config["binary"].as_str().unwrap()).ends_with("copilot-bridge"));
    // The old version is gone, the other extension untouched.
    assert!(
        !extensions
            .join("copilot-bridge.copilot-bridge-0.0.1")
            .exists()
    );
    assert!(extensions.join("someone.else-1.0.0").exists());
    let obsolete: Value =
        serde_json::from_str(&std::fs::read_to_string(extensions.join(".obsolete")).unwrap())
            .unwrap();
    assert_eq!(obsolete, json!({"someone.else-0.9.0": true}));
    let list: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(extensions.join("extensions.json")).unwrap())
            .unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0], other);
    assert_eq!(list[1]["relativeLocation"], FOLDER);
    assert_eq!(list[1]["version"], version());

    // Installing again changes nothing.
    assert!(vscode(&bridge, home.path(), &["install"]).status.success());
    let again: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(extensions.join("extensions.json")).unwrap())
            .unwrap();
    assert_eq!(again, list);

    let output = vscode(&bridge, home.path(), &["uninstall"]);
    assert!(output.status.success(), "{output:?}");
    assert!(!installed.exists());
    let list: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(extensions.join("extensions.json")).unwrap())
            .unwrap();
    assert_eq!(list, vec![other]);
    let output = vscode(&bridge, home.path(), &["uninstall"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("not installed"));
}

#[test]
fn each_editor_has_its_directory_and_bad_input_is_refused_unharmed() {
    let bridge = Bridge::new();
    let home = tempfile::tempdir().unwrap();
    for (editor, dir) in [
        ("insiders", ".vscode-insiders/extensions"),
        ("codium", ".vscode-oss/extensions"),
        ("code-server", ".local/share/code-server/extensions"),
        ("remote", ".vscode-server/extensions"),
    ] {
        let output = vscode(&bridge, home.path(), &["install", "--editor", editor]);
        assert!(output.status.success(), "{editor}: {output:?}");
        assert!(
            home.path()
                .join(dir)
                .join(FOLDER)
                .join("package.json")
                .exists()
        );
    }
    let output = vscode(&bridge, home.path(), &["install", "--editor", "notepad"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("notepad"));

    // An extension list that is not one: refused, left as it was.
    let extensions = home.path().join("broken");
    std::fs::create_dir_all(&extensions).unwrap();
    std::fs::write(extensions.join("extensions.json"), "{not json").unwrap();
    let output = vscode(
        &bridge,
        home.path(),
        &["install", "--extensions-dir", extensions.to_str().unwrap()],
    );
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("extensions.json"), "{said}");
    assert_eq!(
        std::fs::read_to_string(extensions.join("extensions.json")).unwrap(),
        "{not json"
    );
    assert!(!extensions.join(FOLDER).exists(), "nothing is installed");
}
