//! The add-ons copilot-bridge installs: the Copilot CLI extension and the
//! VS Code extension, written where each agent looks, naming the program
//! and state directory that installed them, and removed again.

use std::path::{Path, PathBuf};

use bridge_agents::{AgentEnv, AgentsError, Program, Scope, copilot_extension, vscode};
use serde_json::{Value, json};

fn program(home: &Path) -> Program {
    Program {
        path: PathBuf::from("/opt/bin/copilot-bridge"),
        home: home.to_owned(),
        home_configured: false,
        port: None,
        approval_timeout_secs: 120,
    }
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_copilot_cli_extension_goes_under_copilot_home_and_names_its_daemon() {
    let home = tempfile::tempdir().unwrap();
    let env = AgentEnv::from_vars([("HOME", home.path())]);
    let dir = copilot_extension::directory(Scope::User, &env).unwrap();
    assert_eq!(dir, home.path().join(".copilot/extensions/copilot-bridge"));
    let project = copilot_extension::directory(Scope::Project(Path::new("/w")), &env).unwrap();
    assert_eq!(project, Path::new("/w/.github/extensions/copilot-bridge"));

    let said = copilot_extension::install(&program(Path::new("/state")), &dir).unwrap();
    assert!(said.contains("--experimental"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.join("extension.mjs")).unwrap(),
        copilot_extension::EXTENSION_SOURCE
    );
    assert_eq!(
        read(&dir.join("config.json")),
        json!({"binary": "/opt/bin/copilot-bridge", "home": "/state"})
    );
    let said = copilot_extension::uninstall(&dir).unwrap();
    assert_eq!(said, format!("Removed {}.\n", dir.display()));
    assert!(!dir.exists());
    let said = copilot_extension::uninstall(&dir).unwrap();
    assert!(said.contains("not installed"), "{said}");

    let homeless = AgentEnv::from_vars([("PATH", "/bin")]);
    let err = copilot_extension::directory(Scope::User, &homeless).unwrap_err();
    assert!(matches!(err, AgentsError::NoCopilotHome), "{err}");
}

#[test]
fn the_vscode_extension_replaces_older_versions_and_keeps_the_editors_list() {
    let extensions = tempfile::tempdir().unwrap();
    let dir = extensions.path();
    let old = dir.join("copilot-bridge.copilot-bridge-0.0.1");
    std::fs::create_dir_all(&old).unwrap();
    let other = json!({"identifier": {"id": "someone.else"}, "version": "1.0.0"});
    std::fs::write(
        dir.join("extensions.json"),
        json!([other, {"identifier": {"id": "copilot-bridge.copilot-bridge"}, "version": "0.0.1"}])
            .to_string(),
    )
    .unwrap();
    // Uninstalled from the editor's UI before: the editor would delete the
    // folder at its next start unless it is off this list.
    let version = vscode::version().unwrap();
    std::fs::write(
        dir.join(".obsolete"),
        json!({format!("copilot-bridge.copilot-bridge-{version}"): true, "someone.else-0.9": true})
            .to_string(),
    )
    .unwrap();

    let said = vscode::install(&program(Path::new("/state")), dir).unwrap();
    let folder = dir.join(format!("copilot-bridge.copilot-bridge-{version}"));
    assert!(
        said.contains(&format!("{version} (")) && said.contains(&folder.display().to_string()),
        "{said}"
    );
    assert!(!old.exists(), "the older version is gone");
    assert!(folder.join("package.json").exists());
    assert!(!folder.join("test").exists(), "tests are not shipped");
    assert_eq!(
        read(&folder.join("config.json")),
        json!({"binary": "/opt/bin/copilot-bridge", "home": "/state"})
    );
    let list = read(&dir.join("extensions.json"));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0], other);
    assert_eq!(list[1]["version"], version.as_str());
    assert_eq!(
        read(&dir.join(".obsolete")),
        json!({"someone.else-0.9": true})
    );

    assert!(vscode::uninstall(dir).unwrap().starts_with("Removed"));
    assert!(!folder.exists());
    assert_eq!(read(&dir.join("extensions.json")), json!([other]));
    assert!(vscode::uninstall(dir).unwrap().contains("not installed"));
}

#[test]
fn a_broken_extension_list_refuses_the_install_before_anything_changes() {
    let extensions = tempfile::tempdir().unwrap();
    let dir = extensions.path();
    let old = dir.join("copilot-bridge.copilot-bridge-0.0.1");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(dir.join("extensions.json"), "[{").unwrap();
    let err = vscode::install(&program(Path::new("/state")), dir).unwrap_err();
    assert!(
        matches!(err, AgentsError::NotAnExtensionList { .. }),
        "{err}"
    );
    assert!(err.to_string().ends_with("; nothing was changed"), "{err}");
    assert!(old.exists(), "nothing was removed");
}
