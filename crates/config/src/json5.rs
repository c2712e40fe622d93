//! The one JSON5 reader of the project. OpenClaw's configuration is JSON5
//! (comments, trailing commas, unquoted keys, single quotes): bridge-config
//! reads it ([`parse_value`], crates/config/src/openclaw.rs), and the CLI
//! edits it by splicing text (crates/agents/src/json_edit/), for which
//! every value keeps its byte positions: everything an edit does not change,
//! comments and formatting included, stays byte for byte.

use serde_json::{Map, Number, Value};

/// A parsed value: its JSON equivalent, where it is, and for objects where
/// each member is.
#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    pub start: usize,
    pub end: usize,
    /// For objects: the members in order.
    pub members: Vec<Member>,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub key: String,
    pub key_start: usize,
    pub value: Node,
    /// Where the comma after the value is, if one follows.
    pub comma: Option<usize>,
}

impl Node {
    pub fn is_object(&self) -> bool {
        self.value.is_object()
    }

    pub fn member(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|member| member.key == key)
    }
}

/// Where and why the text is not JSON5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// Parses a whole JSON5 document into its JSON equivalent (`Infinity` and
/// `NaN`, which JSON lacks, become `null`).
pub fn parse_value(text: &str) -> Result<Value, ParseError> {
    parse(text).map(|node| node.value)
}

/// Parses a whole JSON5 document, keeping positions.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut parser = Parser { text, pos: 0 };
    parser.skip_blank()?;
    let node = parser.value(0)?;
    parser.skip_blank()?;
    if parser.pos < text.len() {
        return Err(parser.error("unexpected text after the document"));
    }
    Ok(node)
}

const MAX_NESTING: usize = 128;

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ParseError {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ParseError {
            line,
            column,
            message: message.to_owned(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    /// Whitespace and comments.
    fn skip_blank(&mut self) -> Result<(), ParseError> {
        loop {
            let rest = self.rest();
            if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if let Some(comment) = rest.strip_prefix("/*") {
                let close = comment
                    .find("*/")
                    .ok_or_else(|| self.error("unclosed /* comment"))?;
                self.pos += close + 4;
            } else if let Some(c) = self
                .peek()
                .filter(|c| c.is_whitespace() || *c == '\u{feff}')
            {
                self.pos += c.len_utf8();
            } else {
                return Ok(());
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        if depth > MAX_NESTING {
            return Err(self.error("nested too deeply"));
        }
        let start = self.pos;
        let (value, members) = match self.peek() {
            Some('{') => self.object(depth)?,
            Some('[') => (self.array(depth)?, Vec::new()),
            Some('"' | '\'') => (Value::String(self.string()?), Vec::new()),
            Some(_) => (self.literal()?, Vec::new()),
            None => return Err(self.error("expected a value, found the end of the file")),
        };
        Ok(Node {
            value,
            start,
            end: self.pos,
            members,
        })
    }

    fn object(&mut self, depth: usize) -> Result<(Value, Vec<Member>), ParseError> {
        self.bump();
        let mut members: Vec<Member> = Vec::new();
        let mut map = Map::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some('}') {
                self.bump();
                return Ok((Value::Object(map), members));
            }
            let key_start = self.pos;
            let key = match self.peek() {
                Some('"' | '\'') => self.string()?,
                _ => self.identifier()?,
            };
            self.skip_blank()?;
            if self.bump() != Some(':') {
                return Err(self.error("expected `:` after an object key"));
            }
            self.skip_blank()?;
            let value = self.value(depth + 1)?;
            self.skip_blank()?;
            let comma = match self.peek() {
                Some(',') => {
                    let at = self.pos;
                    self.bump();
                    Some(at)
                }
                Some('}') => None,
                _ => return Err(self.error("expected `,` or `}` in an object")),
            };
            map.insert(key.clone(), value.value.clone());
            members.push(Member {
                key,
                key_start,
                value,
                comma,
            });
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some(']') {
                self.bump();
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?.value);
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {}
                _ => return Err(self.error("expected `,` or `]` in an array")),
            }
        }
    }

    fn identifier(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        {
            self.pos += c.len_utf8();
        }
        if self.pos == start {
            return Err(self.error("expected an object key"));
        }
        Ok(self.text[start..self.pos].to_owned())
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(self.error("unterminated string")),
                Some(c) if Some(c) == quote => return Ok(out),
                Some('\\') => self.escape(&mut out)?,
                Some('\n') => return Err(self.error("line break inside a string")),
                Some(c) => out.push(c),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let escaped = self
            .bump()
            .ok_or_else(|| self.error("unterminated escape"))?;
        match escaped {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '0' => out.push('\0'),
            // A backslash before a line break continues the string.
            '\n' | '\u{2028}' | '\u{2029}' => {}
            '\r' => {
                if self.peek() == Some('\n') {
                    self.bump();
                }
            }
            'x' => {
                let code = self.hex(2)?;
                out.push(char::from_u32(code).ok_or_else(|| self.error("bad \\x escape"))?);
            }
            'u' => {
                let high = self.hex(4)?;
                let code = if (0xD800..0xDC00).contains(&high) && self.rest().starts_with("\\u") {
                    self.pos += 2;
                    let low = self.hex(4)?;
                    0x10000 + ((high - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF)
                } else {
                    high
                };
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            other => out.push(other),
        }
        Ok(())
    }

    fn hex(&mut self, digits: usize) -> Result<u32, ParseError> {
        let text = self
            .rest()
            .get(..digits)
            .ok_or_else(|| self.error("short escape"))?;
        let code = u32::from_str_radix(text, 16).map_err(|_| self.error("bad hex escape"))?;
        self.pos += digits;
        Ok(code)
    }

    fn literal(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_alphanumeric() || matches!(c, '+' | '-' | '.' | '_'))
        {
            self.pos += c.len_utf8();
        }
        let word = &self.text[start..self.pos];
        match word {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            "null" => Ok(Value::Null),
            // No JSON equivalent; compared as null on both sides of an edit.
            "Infinity" | "+Infinity" | "-Infinity" | "NaN" | "+NaN" | "-NaN" => Ok(Value::Null),
            _ => number(word).ok_or_else(|| {
                self.pos = start;
                self.error(&format!(
                    "unexpected {:?}",
                    bridge_policy::redact::preview(word, 20)
                ))
            }),
        }
    }
}

fn number(word: &str) -> Option<Value> {
    let (negative, digits) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    if digits.is_empty() {
        return None;
    }
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        let magnitude = i64::from_str_radix(hex, 16).ok()?;
        return Some(Value::from(if negative { -magnitude } else { magnitude }));
    }
    if !digits
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
    {
        return None;
    }
    if let Ok(integer) = digits.parse::<i64>() {
        return Some(Value::from(if negative { -integer } else { integer }));
    }
    let float: f64 = digits.parse().ok()?;
    Number::from_f64(if negative { -float } else { float }).map(Value::Number)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_json5() {
        let text = r#"// OpenClaw
{
  agents: { defaults: { workspace: '~/ws', }, },
  /* block */ "mcp": {"servers": {}},
  n: [1, 0x10, -2.5, .5, +3,],
  s: 'it\'s',
}"#;
        let node = parse(text).unwrap();
        assert_eq!(
            node.value,
            json!({"agents": {"defaults": {"workspace": "~/ws"}}, "mcp": {"servers": {}},
                   "n": [1, 16, -2.5, 0.5, 3], "s": "it's"})
        );
        let mcp = node.member("mcp").unwrap();
        assert_eq!(&text[mcp.key_start..mcp.key_start + 5], "\"mcp\"");
        assert_eq!(&text[mcp.value.start..mcp.value.end], r#"{"servers": {}}"#);
        assert!(mcp.comma.is_some());
    }

    #[test]
    fn parse_value_gives_the_json_equivalent() {
        assert_eq!(
            parse_value("// c\n{a: [Infinity, 'x',], /* b */ b: {c: null,},}").unwrap(),
            json!({"a": [null, "x"], "b": {"c": null}})
        );
        assert!(parse_value("{a: }").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("{\n  a: 1\n  b: 2\n}").unwrap_err();
        assert_eq!((err.line, err.column), (3, 3));
        assert!(parse("{\"a\": /* x }").is_err());
    }
}
