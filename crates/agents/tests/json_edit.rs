//! Spliced edits of an agent's JSON5 configuration: one member changes,
//! the rest of the text (comments, formatting, other settings) stays.

use std::os::unix::fs::PermissionsExt;

use bridge_agents::json_edit::{self, EditError};
use serde_json::json;

const OPENCLAW: &str = r#"// OpenClaw configuration (JSON5)
{
  agents: {
    defaults: { workspace: '~/work' }, // where agents work
  },
  /* the gateway */
  gateway: { port: 18789, },
}
"#;

#[test]
fn a_member_is_added_and_removed_keeping_comments_and_the_rest_byte_for_byte() {
    let path = ["mcp", "servers", "copilot-bridge"];
    let entry = json!({"url": "http://127.0.0.1:8650/mcp/code", "transport": "streamable-http"});
    let added = json_edit::set_at(OPENCLAW, &path, &entry)
        .unwrap()
        .expect("a change");
    for kept in [
        "// OpenClaw configuration (JSON5)",
        "// where agents work",
        "/* the gateway */",
        "workspace: '~/work'",
    ] {
        assert!(added.contains(kept), "lost {kept:?}:\n{added}");
    }
    let document = json_edit::parse(&added).unwrap();
    assert_eq!(json_edit::get_at(&document, &path), Some(&entry));
    assert_eq!(document["gateway"]["port"], 18789);
    assert_eq!(
        json_edit::set_at(&added, &path, &entry).unwrap(),
        None,
        "already so"
    );
    let removed = json_edit::remove_at(&added, &path).unwrap().unwrap();
    let removed = json_edit::remove_at(&removed, &["mcp", "servers"])
        .unwrap()
        .unwrap();
    let removed = json_edit::remove_at(&removed, &["mcp"]).unwrap().unwrap();
    assert_eq!(removed, OPENCLAW);
}

#[test]
fn what_cannot_be_edited_faithfully_is_refused_with_the_reason() {
    let broken = json_edit::set_at("{\n  a: 1,\n  b: \n}", &["c"], &json!(1)).unwrap_err();
    assert!(matches!(broken, EditError::Parse(_)));
    assert!(
        broken
            .to_string()
            .ends_with("; fix it first, nothing was changed"),
        "{broken}"
    );
    let scalar = json_edit::set_at("{mcp: 3}", &["mcp", "servers"], &json!({})).unwrap_err();
    assert_eq!(
        scalar.to_string(),
        "`mcp` is not an object; refusing to change it"
    );
}

#[test]
fn a_backup_keeps_the_old_text_and_the_new_file_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, "{}\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let first = json_edit::back_up(&file, "{}\n").unwrap();
    let second = json_edit::back_up(&file, "{}\n").unwrap();
    assert_ne!(first, second, "an earlier backup is never overwritten");
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "{}\n");
    json_edit::write_atomically(&file, "{\"a\": 1}\n").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"a\": 1}\n");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    json_edit::write_private(&file, "{}\n").unwrap();
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
