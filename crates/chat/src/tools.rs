//! A tool call as transcript lines: the call with its arguments, what the
//! policy decided, a bounded result, edits as diffs. Every mark is text
//! ("✓ allowed", "✗ denied: why", a diff's `+`/`-`), so it reads without
//! colour.

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::style::Palette;

/// Result lines shown before "… K more lines".
pub(crate) const RESULT_LINES: usize = 8;
/// Diff lines shown before "… K more lines".
pub(crate) const DIFF_LINES: usize = 40;
/// A longer argument or result line is cut (a minified file would
/// otherwise wrap into hundreds of rows).
const LINE_CHARS: usize = 240;

/// What the policy said about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allowed(Option<String>),
    Denied(Option<String>),
    Asked,
}

impl Verdict {
    /// From `{decision, reason?}` or a bare `"allow"`/`"deny"`/`"ask"`.
    pub(crate) fn from_json(value: &Value) -> Option<Verdict> {
        let (kind, reason) = match value {
            Value::String(kind) => (kind.as_str(), None),
            Value::Object(map) => (
                map.get("decision").and_then(Value::as_str)?,
                map.get("reason").and_then(Value::as_str).map(str::to_owned),
            ),
            _ => return None,
        };
        match kind {
            "allow" => Some(Verdict::Allowed(reason)),
            "deny" => Some(Verdict::Denied(reason)),
            "ask" => Some(Verdict::Asked),
            _ => None,
        }
    }
}

/// A finished (or only decided) call, from whichever event shape.
#[derive(Debug, Clone)]
pub(crate) struct ToolView<'a> {
    pub name: &'a str,
    /// Who ran it: a provider, or an agent for its own tools.
    pub by: Option<&'a str>,
    pub arguments: &'a Value,
    pub verdict: Option<Verdict>,
    /// `None`: only decided, not run (yet).
    pub outcome: Option<Outcome>,
    pub duration_ms: Option<u64>,
}

/// What a run gave.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub ok: bool,
    pub output: String,
}

/// The transcript lines of a call.
pub(crate) fn tool_lines(view: &ToolView<'_>, palette: Palette) -> Vec<Line<'static>> {
    let mut header = vec![Span::styled(format!("⚙ {}", view.name), palette.tool())];
    if let Some(by) = view.by {
        header.push(Span::styled(format!(" ({by})"), palette.dim()));
    }
    let denied = matches!(view.verdict, Some(Verdict::Denied(_)));
    let failed = view.outcome.as_ref().is_some_and(|o| !o.ok);
    let mark = match (&view.verdict, &view.outcome) {
        (Some(Verdict::Denied(reason)), _) => {
            Span::styled(with_reason("✗ denied", reason.as_deref()), palette.error())
        }
        (_, Some(outcome)) if !outcome.ok => Span::styled("✗ failed", palette.error()),
        (Some(Verdict::Allowed(reason)), _) => {
            Span::styled(with_reason("✓ allowed", reason.as_deref()), palette.ok())
        }
        (Some(Verdict::Asked), _) => Span::styled("? asked", palette.warn()),
        (None, _) => Span::styled("✓ done", palette.ok()),
    };
    header.push(Span::raw("  "));
    header.push(mark);
    if let Some(ms) = view.duration_ms {
        header.push(Span::styled(format!(" · {ms} ms"), palette.dim()));
    }
    let mut lines = vec![Line::from(header)];
    lines.extend(argument_lines(view.arguments, palette));
    if let Some(outcome) = &view.outcome
        && !denied
    {
        let style = if failed {
            palette.error()
        } else {
            palette.dim()
        };
        lines.extend(bounded(
            outcome.output.lines().map(|l| {
                Line::from(vec![
                    Span::styled("  │ ", palette.dim()),
                    Span::styled(cut(l), style),
                ])
            }),
            RESULT_LINES,
            palette,
        ));
    }
    lines
}

fn with_reason(mark: &str, reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("{mark}: {reason}"),
        None => mark.to_owned(),
    }
}

/// The arguments: an edit's old and new text as a diff, a patch string as
/// a diff, every other argument as `name: value` on one line.
pub(crate) fn argument_lines(arguments: &Value, palette: Palette) -> Vec<Line<'static>> {
    let Value::Object(map) = arguments else {
        return match arguments {
            Value::Null => Vec::new(),
            other => vec![Line::from(format!("  {}", cut(&other.to_string())))],
        };
    };
    let old = map
        .get("oldString")
        .or_else(|| map.get("old_string"))
        .and_then(Value::as_str);
    let new = map
        .get("newString")
        .or_else(|| map.get("new_string"))
        .and_then(Value::as_str);
    let mut lines = Vec::new();
    let mut diffs = Vec::new();
    for (key, value) in map {
        if old.is_some() && new.is_some() && is_edit_key(key) {
            continue;
        }
        match value.as_str() {
            Some(text) if looks_like_diff(text) => diffs.push(text),
            Some(text) => {
                let mut shown = text.lines().next().unwrap_or("").to_owned();
                let count = text.lines().count();
                if count > 1 {
                    shown.push_str(&format!(" … ({count} lines)"));
                }
                lines.push(arg_line(key, &shown, palette));
            }
            None => lines.push(arg_line(key, &value.to_string(), palette)),
        }
    }
    if let (Some(old), Some(new)) = (old, new) {
        let diff = old
            .lines()
            .map(|l| format!("-{l}"))
            .chain(new.lines().map(|l| format!("+{l}")));
        lines.extend(bounded(
            diff.map(|l| indented(diff_line(&l, palette))),
            DIFF_LINES,
            palette,
        ));
    }
    for text in diffs {
        lines.extend(bounded(
            text.lines().map(|l| indented(diff_line(l, palette))),
            DIFF_LINES,
            palette,
        ));
    }
    lines
}

fn is_edit_key(key: &str) -> bool {
    matches!(key, "oldString" | "old_string" | "newString" | "new_string")
}

fn arg_line(key: &str, value: &str, palette: Palette) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("  {key}: "), palette.dim()),
        Span::raw(cut(value)),
    ])
}

fn indented(line: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("  ")];
    spans.extend(line.spans);
    Line::from(spans).style(line.style)
}

/// A unified diff or an apply_patch text.
pub(crate) fn looks_like_diff(text: &str) -> bool {
    text.starts_with("--- ")
        || text.starts_with("diff --git")
        || text.starts_with("*** Begin Patch")
        || text.starts_with("@@")
        || text.contains("\n@@ ")
}

/// One diff line, its sign kept: green `+`, red `-`, hunk headers cyan.
pub(crate) fn diff_line(line: &str, palette: Palette) -> Line<'static> {
    let style = if line.starts_with("+++") || line.starts_with("---") {
        palette.bold()
    } else if line.starts_with('+') {
        palette.added()
    } else if line.starts_with('-') {
        palette.removed()
    } else if line.starts_with("@@") {
        palette.hunk()
    } else {
        palette.dim()
    };
    Line::styled(cut(line), style)
}

/// At most `max` lines, then "… K more lines".
fn bounded(
    lines: impl Iterator<Item = Line<'static>>,
    max: usize,
    palette: Palette,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for line in lines {
        if out.len() < max {
            out.push(line);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        let noun = if more == 1 { "line" } else { "lines" };
        out.push(Line::styled(
            format!("  … {more} more {noun}"),
            palette.dim(),
        ));
    }
    out
}

/// A line cut to a bounded length, tabs as spaces, control characters gone.
pub(crate) fn cut(line: &str) -> String {
    let clean: String = line
        .replace('\t', "    ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if clean.chars().count() <= LINE_CHARS {
        return clean;
    }
    let mut out: String = clean.chars().take(LINE_CHARS).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn an_edit_is_a_diff_and_the_result_is_bounded() {
        let args = json!({"path": "src/a.rs", "oldString": "a\nb", "newString": "c"});
        let output = (1..=12)
            .map(|n| format!("line {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let view = ToolView {
            name: "edit_file",
            by: None,
            arguments: &args,
            verdict: Some(Verdict::Allowed(None)),
            outcome: Some(Outcome { ok: true, output }),
            duration_ms: Some(3),
        };
        let out = text(&tool_lines(&view, Palette::new(false)));
        assert_eq!(out[0], "⚙ edit_file  ✓ allowed · 3 ms");
        assert_eq!(out[1..5], ["  path: src/a.rs", "  -a", "  -b", "  +c"]);
        assert_eq!(out[5], "  │ line 1");
        assert_eq!(out.last().map(String::as_str), Some("  … 4 more lines"));
        assert_eq!(out.len(), 5 + RESULT_LINES + 1);
    }

    #[test]
    fn a_denial_says_why_and_hides_the_output() {
        let args = json!({"command": "rm -rf /"});
        let view = ToolView {
            name: "run_command",
            by: Some("claude"),
            arguments: &args,
            verdict: Some(Verdict::Denied(Some("not in the allow list".into()))),
            outcome: Some(Outcome {
                ok: false,
                output: "denied".into(),
            }),
            duration_ms: None,
        };
        let out = text(&tool_lines(&view, Palette::new(false)));
        assert_eq!(
            out,
            [
                "⚙ run_command (claude)  ✗ denied: not in the allow list",
                "  command: rm -rf /"
            ]
        );
    }
}
