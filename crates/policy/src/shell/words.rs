//! Static evaluation of shell words: what a word will expand to, as far as
//! that can be known without running anything.
//!
//! A word is kept as segments so that the rules can tell a quoted `'*'` from
//! a glob, a leading unquoted `~` from a literal one, and a known prefix from
//! an expansion whose value only exists at run time.

use std::path::Path;

use tree_sitter::Node;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Text whose value is known. Quoted text takes no part in globbing or
    /// tilde expansion.
    Known { text: String, quoted: bool },
    /// An expansion whose value is only known at run time.
    Unknown,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    /// The word as written, for messages.
    pub raw: String,
    pub segments: Vec<Segment>,
    /// A variable with a value known here (`$HOME`, `$PWD`) was substituted.
    pub expanded: bool,
    /// Contains `$(..)`, backquotes, `<(..)` or `>(..)`.
    pub substitution: bool,
    /// Every variable the word references, known or not.
    pub variables: Vec<String>,
}

/// Values the evaluator may substitute for variables.
pub(crate) struct Env<'a> {
    pub home: Option<&'a Path>,
    /// The working directory when it is known for certain.
    pub pwd: Option<&'a Path>,
}

impl Word {
    /// A word built by the analysis itself (e.g. the argument of `bash -c`
    /// split again), with a fully known value.
    pub(crate) fn known(text: &str, quoted: bool) -> Self {
        Self {
            raw: text.to_owned(),
            segments: vec![Segment::Known {
                text: text.to_owned(),
                quoted,
            }],
            ..Self::default()
        }
    }

    /// Some entry under the directory this word names (`find`'s `{}`): it
    /// is inside or outside the workspace exactly when the directory is,
    /// and it is never the directory itself.
    pub(crate) fn some_child(&self) -> Self {
        if self.value().is_none() {
            // Unknown either way; keep the word's own risks (`$DIR/` may be `/`).
            return self.clone();
        }
        let mut child = self.clone();
        child.raw.push_str("/{}");
        child.push_known("/{}", true);
        child
    }

    /// The value, when every part of it is known.
    pub(crate) fn value(&self) -> Option<String> {
        let mut value = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Known { text, .. } => value.push_str(text),
                Segment::Unknown => return None,
            }
        }
        Some(value)
    }

    /// A literal in the strict sense: no expansion of any kind.
    pub(crate) fn is_plain(&self) -> bool {
        !self.expanded && !self.substitution && self.value().is_some()
    }

    /// Starts with an unquoted `~`, which the shell replaces by a home directory.
    pub(crate) fn has_tilde(&self) -> bool {
        matches!(self.segments.first(), Some(Segment::Known { text, quoted: false }) if text.starts_with('~'))
    }

    /// Starts with an expansion whose value is unknown and continues with
    /// `/`: if the expansion is empty the word becomes an absolute path
    /// (`rm -rf "$DIR/"*` with `DIR` unset).
    pub(crate) fn starts_with_unknown_then_slash(&self) -> bool {
        let mut segments = self.segments.iter();
        if segments.next() != Some(&Segment::Unknown) {
            return false;
        }
        for segment in segments {
            match segment {
                Segment::Unknown => continue,
                Segment::Known { text, .. } => return text.starts_with('/'),
            }
        }
        false
    }

    /// Byte offset in [`Word::value`] of the first unquoted glob or brace
    /// expansion character.
    pub(crate) fn glob_offset(&self) -> Option<usize> {
        let mut offset = 0;
        for segment in &self.segments {
            match segment {
                Segment::Known { text, quoted } => {
                    if !quoted && let Some(at) = text.find(['*', '?', '[']) {
                        return Some(offset + at);
                    }
                    if !quoted && let Some(at) = brace_expansion_start(text) {
                        return Some(offset + at);
                    }
                    offset += text.len();
                }
                Segment::Unknown => return None,
            }
        }
        None
    }

    /// The value with every unknown part replaced by NUL, so that textual
    /// rules (credential file names) still see the known parts.
    pub(crate) fn skeleton(&self) -> String {
        let mut skeleton = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Known { text, .. } => skeleton.push_str(text),
                Segment::Unknown => skeleton.push('\0'),
            }
        }
        skeleton
    }

    /// The value if known, else the word as written: for messages.
    pub(crate) fn display(&self) -> String {
        self.value().unwrap_or_else(|| self.raw.clone())
    }

    fn push_known(&mut self, text: &str, quoted: bool) {
        if text.is_empty() {
            return;
        }
        if let Some(Segment::Known {
            text: last,
            quoted: last_quoted,
        }) = self.segments.last_mut()
            && *last_quoted == quoted
        {
            last.push_str(text);
            return;
        }
        self.segments.push(Segment::Known {
            text: text.to_owned(),
            quoted,
        });
    }

    fn push_unknown(&mut self) {
        if self.segments.last() != Some(&Segment::Unknown) {
            self.segments.push(Segment::Unknown);
        }
    }
}

fn brace_expansion_start(text: &str) -> Option<usize> {
    let open = text.find('{')?;
    let close = open + text[open..].find('}')?;
    let inner = &text[open + 1..close];
    (inner.contains(',') || inner.contains("..")).then_some(open)
}

pub(crate) fn node_text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// Evaluates one argument-like node (word, string, concatenation, ...).
pub(crate) fn evaluate(node: Node<'_>, source: &str, env: &Env<'_>) -> Word {
    let mut word = Word {
        raw: node_text(node, source).to_owned(),
        ..Word::default()
    };
    push_node(node, source, env, &mut word);
    word
}

fn push_node(node: Node<'_>, source: &str, env: &Env<'_>, word: &mut Word) {
    match node.kind() {
        "word" | "command_name" if node.named_child_count() == 0 => {
            push_unquoted_word(node_text(node, source), word);
        }
        "number" if node.named_child_count() == 0 => {
            word.push_known(node_text(node, source), false);
        }
        "raw_string" => {
            let text = node_text(node, source);
            let inner = text
                .strip_prefix('\'')
                .and_then(|rest| rest.strip_suffix('\''))
                .unwrap_or(text);
            word.push_known(inner, true);
        }
        "string" => push_double_quoted(node, source, env, word),
        "ansi_c_string" => match decode_ansi_c(node_text(node, source)) {
            Some(decoded) => word.push_known(&decoded, true),
            None => word.push_unknown(),
        },
        "command_name" | "concatenation" | "translated_string" => {
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                if child.is_named() {
                    push_node(child, source, env, word);
                } else if node.kind() != "translated_string" {
                    word.push_known(node_text(child, source), false);
                }
            }
        }
        "simple_expansion" | "expansion" => push_expansion(node, source, env, word, false),
        "command_substitution" => push_substitution(node, source, env, word, false),
        "process_substitution" => {
            word.substitution = true;
            word.push_unknown();
        }
        _ => word.push_unknown(),
    }
}

/// `$(pwd)` and `` `pwd` `` print the working directory, which is known
/// here like `$PWD` (so `rm -rf "$(pwd)"` is judged as the deletion of the
/// workspace it is). Any other substitution is unknown text.
fn push_substitution(node: Node<'_>, source: &str, env: &Env<'_>, word: &mut Word, quoted: bool) {
    let text = node_text(node, source);
    let inner = text
        .strip_prefix("$(")
        .and_then(|rest| rest.strip_suffix(')'))
        .or_else(|| {
            text.strip_prefix('`')
                .and_then(|rest| rest.strip_suffix('`'))
        })
        .map(str::trim);
    let prints_cwd = matches!(inner, Some("pwd" | "pwd -L" | "pwd -P"));
    match env.pwd.and_then(Path::to_str).filter(|_| prints_cwd) {
        Some(cwd) => {
            word.expanded = true;
            word.push_known(cwd, quoted);
        }
        None => {
            word.substitution = true;
            word.push_unknown();
        }
    }
}

/// An unquoted word: backslash escapes quote the next character.
fn push_unquoted_word(text: &str, word: &mut Word) {
    let mut chars = text.chars();
    let mut plain = String::new();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            plain.push(ch);
            continue;
        }
        word.push_known(&plain, false);
        plain.clear();
        match chars.next() {
            // A backslash-newline is a line continuation: it disappears.
            Some('\n') | None => {}
            Some(escaped) => word.push_known(escaped.encode_utf8(&mut [0; 4]), true),
        }
    }
    word.push_known(&plain, false);
}

fn push_double_quoted(node: Node<'_>, source: &str, env: &Env<'_>, word: &mut Word) {
    // The text between the quotes that no named child covers is literal
    // content too, so walk the byte ranges rather than only the children.
    let start = node.start_byte() + 1;
    let end = node.end_byte().saturating_sub(1).max(start);
    let mut position = start;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        if child.start_byte() > position {
            let gap = source.get(position..child.start_byte()).unwrap_or("");
            word.push_known(&unescape_double_quoted(gap), true);
        }
        match child.kind() {
            "string_content" => {
                word.push_known(&unescape_double_quoted(node_text(child, source)), true);
            }
            "simple_expansion" | "expansion" => push_expansion(child, source, env, word, true),
            "command_substitution" => push_substitution(child, source, env, word, true),
            _ => word.push_unknown(),
        }
        position = child.end_byte();
    }
    if end > position {
        let gap = source.get(position..end).unwrap_or("");
        word.push_known(&unescape_double_quoted(gap), true);
    }
}

fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(escaped) = chars.next() {
                        out.push(escaped);
                    }
                    continue;
                }
                Some('\n') => {
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(ch);
    }
    out
}

fn push_expansion(node: Node<'_>, source: &str, env: &Env<'_>, word: &mut Word, quoted: bool) {
    let mut cursor = node.walk();
    let name = node
        .named_children(&mut cursor)
        .find(|child| matches!(child.kind(), "variable_name" | "special_variable_name"))
        .map(|child| node_text(child, source).to_owned());
    let Some(name) = name else {
        word.push_unknown();
        return;
    };
    word.variables.push(name.clone());
    let text = node_text(node, source);
    // Only a bare `$NAME` or `${NAME}` has the variable's value; operators
    // like `${NAME:-default}` or `${NAME#prefix}` change it.
    let bare = text == format!("${name}") || text == format!("${{{name}}}");
    let known = match name.as_str() {
        "HOME" if bare => env.home,
        "PWD" if bare => env.pwd,
        _ => None,
    };
    match known.and_then(Path::to_str) {
        Some(value) => {
            word.expanded = true;
            word.push_known(value, quoted);
        }
        None => word.push_unknown(),
    }
}

/// Decodes `$'...'`; `None` for escapes it does not model (`\u`, `\c`).
fn decode_ansi_c(text: &str) -> Option<String> {
    let inner = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        let byte = match escaped {
            'n' => b'\n',
            't' => b'\t',
            'r' => b'\r',
            'a' => 0x07,
            'b' => 0x08,
            'e' | 'E' => 0x1b,
            'f' => 0x0c,
            'v' => 0x0b,
            '\\' => b'\\',
            '\'' => b'\'',
            '"' => b'"',
            '?' => b'?',
            'x' => {
                let digits: String = chars
                    .clone()
                    .take_while(char::is_ascii_hexdigit)
                    .take(2)
                    .collect();
                if digits.is_empty() {
                    return None;
                }
                for _ in 0..digits.len() {
                    chars.next();
                }
                u8::from_str_radix(&digits, 16).ok()?
            }
            '0'..='7' => {
                let mut digits = String::from(escaped);
                digits.extend(
                    chars
                        .clone()
                        .take_while(|c| ('0'..='7').contains(c))
                        .take(2),
                );
                for _ in 1..digits.len() {
                    chars.next();
                }
                u8::try_from(u32::from_str_radix(&digits, 8).ok()? & 0xff).ok()?
            }
            _ => return None,
        };
        bytes.push(byte);
    }
    String::from_utf8(bytes).ok()
}
