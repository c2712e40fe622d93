//! Edits to an agent's JSON (or JSON5) configuration that touch one member
//! and leave the rest of the file (other settings, comments, formatting) as
//! it was: OpenClaw's `mcp.servers.<name>` (`openclaw register`), Claude
//! Code's `hooks.<Event>` (`hooks install`). The new text is spliced in;
//! every edit is checked by parsing the result: it must equal the old
//! document with exactly our change applied, or nothing is written.

mod files;
pub use bridge_config::json5;

pub use files::{back_up, back_up_into, read_if_present, write_atomically, write_private};

use serde_json::{Map, Value};

use json5::{Member, Node};

/// An edit that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("it is not valid JSON5 ({0}); fix it first, nothing was changed")]
    Parse(json5::ParseError),
    #[error("`{0}` is not an object; refusing to change it")]
    NotAnObject(String),
    #[error("the edited text did not check out ({0}); nothing was changed")]
    Check(String),
}

impl From<json5::ParseError> for EditError {
    fn from(err: json5::ParseError) -> Self {
        Self::Parse(err)
    }
}

/// `text` with the member at `path` set to `value`, objects on the way
/// made as needed; `None` when it already is exactly that. An empty `text`
/// is an empty document.
pub fn set_at(text: &str, path: &[&str], value: &Value) -> Result<Option<String>, EditError> {
    let (root, text) = parse_document(text)?;
    let mut node = &root;
    let mut edited = None;
    for (depth, key) in path.iter().enumerate() {
        let rest = &path[depth + 1..];
        match node.member(key) {
            None => {
                edited = Some(insert_member(&text, node, key, &nested(rest, value)));
                break;
            }
            Some(member) if rest.is_empty() => {
                if member.value.value == *value {
                    return Ok(None);
                }
                edited = Some(replace_value(&text, member, value));
            }
            Some(member) => node = object(member, &path[..=depth].join("."))?,
        }
    }
    let Some(edited) = edited else {
        return Ok(None);
    };
    let mut expected = root.value.clone();
    set_value(&mut expected, path, value);
    check(&edited, &expected)?;
    Ok(Some(edited))
}

/// `text` without the member at `path`; `None` when it is not there.
pub fn remove_at(text: &str, path: &[&str]) -> Result<Option<String>, EditError> {
    let (root, text) = parse_document(text)?;
    let Some((last, parents)) = path.split_last() else {
        return Ok(None);
    };
    let mut node = &root;
    for key in parents {
        match node.member(key).filter(|member| member.value.is_object()) {
            Some(member) => node = &member.value,
            None => return Ok(None),
        }
    }
    let Some(index) = node.members.iter().rposition(|m| m.key == *last) else {
        return Ok(None);
    };
    let edited = remove_member(&text, node, index);
    let mut expected = root.value.clone();
    let mut parent = Some(&mut expected);
    for key in parents {
        parent = parent.and_then(|value| value.get_mut(*key));
    }
    if let Some(map) = parent.and_then(Value::as_object_mut) {
        map.remove(*last);
    }
    check(&edited, &expected)?;
    Ok(Some(edited))
}

/// The value at `path` of a parsed document, if there is one.
pub fn get_at<'a>(document: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(document, |value, key| value.get(*key))
}

/// Parses `text` (empty: `{}`) as a JSON5 document whose root is an object.
pub fn parse(text: &str) -> Result<Value, EditError> {
    Ok(parse_document(text)?.0.value)
}

fn parse_document(text: &str) -> Result<(Node, String), EditError> {
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let root = json5::parse(text)?;
    if !root.is_object() {
        return Err(EditError::NotAnObject("the configuration".to_owned()));
    }
    Ok((root, text.to_owned()))
}

fn object<'a>(member: &'a Member, path: &str) -> Result<&'a Node, EditError> {
    if member.value.is_object() {
        Ok(&member.value)
    } else {
        Err(EditError::NotAnObject(path.to_owned()))
    }
}

/// `value` under the keys of `path`, innermost last.
fn nested(path: &[&str], value: &Value) -> Value {
    path.iter().rev().fold(value.clone(), |inner, key| {
        let mut map = Map::new();
        map.insert((*key).to_owned(), inner);
        Value::Object(map)
    })
}

fn set_value(document: &mut Value, path: &[&str], value: &Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = document;
    for key in parents {
        let Some(map) = node.as_object_mut() else {
            return;
        };
        node = map
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(map) = node.as_object_mut() {
        map.insert((*last).to_owned(), value.clone());
    }
}

fn check(edited: &str, expected: &Value) -> Result<(), EditError> {
    let reparsed = json5::parse(edited).map_err(|err| EditError::Check(err.to_string()))?;
    if reparsed.value == *expected {
        Ok(())
    } else {
        Err(EditError::Check(
            "the result differs from the intended change".to_owned(),
        ))
    }
}

/// The indentation of the line `pos` is on.
fn indentation_at(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..width]
}

/// `value` as pretty JSON whose continuation lines start at `indent`.
fn render(value: &Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    pretty.replace('\n', &format!("\n{indent}"))
}

fn quoted(key: &str) -> String {
    Value::String(key.to_owned()).to_string()
}

fn insert_member(text: &str, object: &Node, key: &str, value: &Value) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    match object.members.last() {
        Some(last) => {
            let indent = indentation_at(text, last.key_start).to_owned();
            let member = format!("\n{indent}{}: {}", quoted(key), render(value, &indent));
            match last.comma {
                Some(comma) => {
                    out.push_str(&text[..=comma]);
                    out.push_str(&member);
                    out.push(',');
                    out.push_str(&text[comma + 1..]);
                }
                None => {
                    out.push_str(&text[..last.value.end]);
                    out.push(',');
                    out.push_str(&member);
                    out.push_str(&text[last.value.end..]);
                }
            }
        }
        None => {
            let outer = indentation_at(text, object.start).to_owned();
            let indent = format!("{outer}  ");
            let member = format!("\n{indent}{}: {}", quoted(key), render(value, &indent));
            let inside = &text[object.start + 1..object.end - 1];
            out.push_str(&text[..=object.start]);
            out.push_str(&member);
            if inside.trim().is_empty() {
                out.push('\n');
                out.push_str(&outer);
            } else {
                out.push_str(inside);
            }
            out.push_str(&text[object.end - 1..]);
        }
    }
    out
}

fn replace_value(text: &str, member: &Member, value: &Value) -> String {
    let indent = indentation_at(text, member.key_start);
    format!(
        "{}{}{}",
        &text[..member.value.start],
        render(value, indent),
        &text[member.value.end..]
    )
}

/// Removes member `index` with its comma, its line when it had the line to
/// itself, and the comma before it when it was the last member.
fn remove_member(text: &str, object: &Node, index: usize) -> String {
    let member = &object.members[index];
    let mut start = member.key_start;
    let mut end = member.comma.map_or(member.value.end, |comma| comma + 1);
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let rest_of_line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let alone_on_line =
        text[line_start..start].trim().is_empty() && text[end..rest_of_line_end].trim().is_empty();
    if alone_on_line {
        start = line_start;
        end = (rest_of_line_end + 1).min(text.len());
    }
    let mut out = format!("{}{}", &text[..start], &text[end..]);
    let was_last = index + 1 == object.members.len();
    if was_last
        && member.comma.is_none()
        && let Some(comma) = index.checked_sub(1).and_then(|i| object.members[i].comma)
    {
        out.remove(comma);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({"command": "/bin/cb", "args": ["mcp", "code"]})
    }

    const PATH: &[&str] = &["mcp", "servers", "copilot-bridge"];

    fn register(text: &str, _name: &str, entry: &Value) -> Result<Option<String>, EditError> {
        set_at(text, PATH, entry)
    }

    fn unregister(text: &str, _name: &str) -> Result<Option<String>, EditError> {
        remove_at(text, PATH)
    }

    #[test]
    fn register_into_an_empty_file_and_again_changes_nothing() {
        let once = register("", "copilot-bridge", &entry()).unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&once).unwrap(),
            json!({"mcp": {"servers": {"copilot-bridge": entry()}}})
        );
        assert_eq!(register(&once, "copilot-bridge", &entry()).unwrap(), None);
        let removed = unregister(&once, "copilot-bridge").unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&removed).unwrap(),
            json!({"mcp": {"servers": {}}})
        );
        assert_eq!(unregister(&removed, "copilot-bridge").unwrap(), None);
    }

    #[test]
    fn keeps_comments_and_other_servers_and_stays_strict_json_when_it_was() {
        let text = "{\n  // my servers\n  \"mcp\": {\n    \"servers\": {\n      \"fs\": {\"command\": \"npx\"}\n    }\n  },\n  \"gateway\": {\"port\": 18789}\n}\n";
        let added = register(text, "copilot-bridge", &entry()).unwrap().unwrap();
        assert!(added.contains("// my servers"));
        assert!(added.contains("      \"fs\": {\"command\": \"npx\"},\n      \"copilot-bridge\": {\n        \"args\": [\n          \"mcp\",\n          \"code\"\n        ],\n        \"command\": \"/bin/cb\"\n      }\n    }"));
        let removed = unregister(&added, "copilot-bridge").unwrap().unwrap();
        assert_eq!(removed, text);
    }

    #[test]
    fn replaces_a_changed_entry_in_place() {
        let text = "{mcp: {servers: {'copilot-bridge': {command: 'old'}, other: {url: 'x'},},},}";
        let changed = register(text, "copilot-bridge", &entry()).unwrap().unwrap();
        let value = json5::parse(&changed).unwrap().value;
        assert_eq!(value["mcp"]["servers"]["copilot-bridge"], entry());
        assert_eq!(value["mcp"]["servers"]["other"], json!({"url": "x"}));
    }

    #[test]
    fn refuses_what_it_cannot_edit_faithfully() {
        assert!(matches!(
            register("{mcp: 3}", "copilot-bridge", &entry()),
            Err(EditError::NotAnObject(_))
        ));
        assert!(matches!(
            register("{\"a\": }", "x", &entry()),
            Err(EditError::Parse(_))
        ));
        assert!(matches!(
            register("[1]", "x", &entry()),
            Err(EditError::NotAnObject(_))
        ));
    }
}
