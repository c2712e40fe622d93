//! A small code highlighter for fenced blocks: keywords, strings, numbers
//! and line comments, one line at a time. A full grammar-based highlighter
//! (syntect) would cost minutes of compile time on CI's two cores and
//! megabytes of syntax dumps for a screen that mostly shows short snippets;
//! a line lexer is enough to tell code from prose, and never has to hold
//! state across a streamed line it has not seen yet.

use ratatui::text::{Line, Span};

use crate::style::Palette;

const KEYWORDS: &[&str] = &[
    // Rust
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "else",
    "enum",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "dyn",
    "true",
    "false",
    "None",
    "Some",
    "Ok",
    "Err",
    // Python, JavaScript, TypeScript, Go, shell
    "def",
    "class",
    "import",
    "from",
    "return",
    "lambda",
    "with",
    "yield",
    "pass",
    "raise",
    "try",
    "except",
    "finally",
    "elif",
    "not",
    "and",
    "or",
    "is",
    "True",
    "False",
    "null",
    "function",
    "var",
    "new",
    "this",
    "export",
    "default",
    "interface",
    "extends",
    "package",
    "func",
    "go",
    "defer",
    "chan",
    "select",
    "case",
    "switch",
    "then",
    "fi",
    "do",
    "done",
    "esac",
    "echo",
    "undefined",
];

/// How a language writes a line comment.
fn comment_marker(lang: &str) -> &'static [&'static str] {
    match lang {
        "python" | "py" | "sh" | "bash" | "shell" | "zsh" | "console" | "yaml" | "yml" | "toml"
        | "ruby" | "rb" | "perl" | "make" | "makefile" | "dockerfile" => &["#"],
        "sql" | "lua" | "haskell" => &["--"],
        "" | "text" | "txt" | "plain" | "json" => &[],
        _ => &["//"],
    }
}

/// One line of code in `lang` (the fence's info string, lower case).
pub(crate) fn highlight_line(line: &str, lang: &str, palette: Palette) -> Line<'static> {
    if matches!(lang, "diff" | "patch") {
        return crate::tools::diff_line(line, palette);
    }
    if !palette.color() || matches!(lang, "text" | "txt" | "plain") {
        return Line::from(line.to_owned());
    }
    let comments = comment_marker(lang);
    let chars: Vec<char> = line.chars().collect();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut plain = String::new();
    let mut i = 0;
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            spans.push(Span::raw(std::mem::take(plain)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..].iter().take(2).collect();
        if comments.iter().any(|m| rest.starts_with(m)) {
            flush(&mut plain, &mut spans);
            spans.push(Span::styled(
                chars[i..].iter().collect::<String>(),
                palette.comment(),
            ));
            break;
        }
        if c == '"' || c == '\'' || c == '`' {
            flush(&mut plain, &mut spans);
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            spans.push(Span::styled(
                chars[i..end].iter().collect::<String>(),
                palette.string(),
            ));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            let style = if c.is_ascii_digit() {
                Some(palette.number())
            } else if KEYWORDS.contains(&word.as_str()) {
                Some(palette.keyword())
            } else {
                None
            };
            match style {
                Some(style) => {
                    flush(&mut plain, &mut spans);
                    spans.push(Span::styled(word, style));
                }
                None => plain.push_str(&word),
            }
            i = j;
            continue;
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut spans);
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_strings_and_comments_get_their_styles() {
        let palette = Palette::new(true);
        let line = highlight_line("let s = \"hi\"; // note", "rust", palette);
        assert_eq!(line.to_string(), "let s = \"hi\"; // note");
        let styled: Vec<_> = line
            .spans
            .iter()
            .map(|s| (s.content.to_string(), s.style))
            .collect();
        assert!(styled.contains(&("let".into(), palette.keyword())));
        assert!(styled.contains(&("\"hi\"".into(), palette.string())));
        assert!(styled.contains(&("// note".into(), palette.comment())));
    }

    #[test]
    fn without_colour_the_text_is_unchanged() {
        let line = highlight_line("fn main() {}", "rust", Palette::new(false));
        assert_eq!(line.spans.len(), 1);
        assert_eq!(line.to_string(), "fn main() {}");
    }
}
