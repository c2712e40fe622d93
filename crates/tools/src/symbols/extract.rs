//! Running a language's definitions query over a parsed file and turning the
//! matches into an outline: names, kinds, line spans and containers.

use std::cell::Cell;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::time::Instant;

use streaming_iterator::StreamingIterator;
use tree_sitter::{
    Node, ParseOptions, ParseState, Parser, QueryCursor, QueryCursorOptions, QueryCursorState,
};

use super::languages::Lang;
use super::tangle::too_tangled;

/// One definition of the outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub name: String,
    pub kind: &'static str,
    pub line: usize,
    pub end_line: usize,
    pub container: Option<String>,
    start_byte: usize,
    end_byte: usize,
    /// The name nested definitions report as their container: for a Rust
    /// `impl Display for Wrapper<T>` that is `Wrapper`, not the impl's name.
    scope_name: String,
    /// A container known from the syntax itself (a Go method's receiver),
    /// which wins over lexical nesting.
    explicit_container: Option<String>,
}

/// Kinds whose nested functions are methods.
const METHOD_OWNERS: &[&str] = &["impl", "trait", "class"];

/// Why no outline was produced.
#[derive(Debug)]
pub(crate) enum ExtractError {
    /// Parsing and querying together ran past the deadline: hostile or badly
    /// broken input (megabytes of random brackets and quotes keep
    /// tree-sitter's error recovery busy for tens of seconds).
    OutOfTime,
    /// The syntax tree holds a run of this many anonymous tokens in a row, on
    /// which querying would take quadratic time (see `tangle`).
    Tangled(u64),
    /// The grammar or query could not be used; the text says which.
    Broken(String),
}

/// Outlines `source`, giving up once `deadline` passes.
pub(crate) fn extract(
    lang: Lang,
    source: &[u8],
    deadline: Instant,
) -> Result<Vec<Symbol>, ExtractError> {
    let out_of_time = Cell::new(false);
    let within_budget = || {
        if Instant::now() < deadline {
            ControlFlow::Continue(())
        } else {
            out_of_time.set(true);
            ControlFlow::Break(())
        }
    };

    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()).map_err(|err| {
        ExtractError::Broken(format!("cannot load the {} grammar: {err}", lang.id()))
    })?;
    let mut parse_progress = |_: &ParseState| within_budget();
    let tree = parser.parse_with_options(
        &mut |offset, _| source.get(offset..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut parse_progress)),
    );
    let tree = match tree {
        Some(tree) => tree,
        None if out_of_time.get() => return Err(ExtractError::OutOfTime),
        None => {
            return Err(ExtractError::Broken(format!(
                "the {} parser gave no syntax tree",
                lang.id()
            )));
        }
    };
    if let Some(run) = too_tangled(&tree) {
        return Err(ExtractError::Tangled(run));
    }
    let query = lang.query().map_err(ExtractError::Broken)?;
    let name_capture = query.capture_index_for_name("name").ok_or_else(|| {
        ExtractError::Broken(format!(
            "the {} symbols query has no @name capture",
            lang.id()
        ))
    })?;
    let kinds: Vec<Option<&'static str>> = query
        .capture_names()
        .iter()
        .map(|capture| capture.strip_prefix("definition."))
        .collect();

    let mut symbols = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = QueryCursor::new();
    let mut query_progress = |_: &QueryCursorState| within_budget();
    let mut matches = cursor.matches_with_options(
        query,
        tree.root_node(),
        source,
        QueryCursorOptions::new().progress_callback(&mut query_progress),
    );
    while let Some(found) = matches.next() {
        let mut definition = None;
        let mut name = None;
        for capture in found.captures() {
            if capture.index == name_capture {
                name = Some(capture.node);
            } else if let Some(Some(kind)) = kinds.get(capture.index as usize) {
                definition = Some((capture.node, *kind));
            }
        }
        let (Some((node, kind)), Some(name_node)) = (definition, name) else {
            continue;
        };
        let symbol = describe(lang, node, kind, name_node, source);
        if seen.insert((node.id(), symbol.name.clone())) {
            symbols.push(symbol);
        }
    }
    // A halted cursor simply stops yielding matches: only the flag tells a
    // partial outline from a complete one, and a partial one would mislead.
    if out_of_time.get() {
        return Err(ExtractError::OutOfTime);
    }
    assign_containers(&mut symbols);
    Ok(symbols)
}

fn describe(
    lang: Lang,
    node: Node<'_>,
    kind: &'static str,
    name_node: Node<'_>,
    source: &[u8],
) -> Symbol {
    let mut name = text(name_node, source);
    let mut kind = kind;
    let mut scope_name = name.clone();
    let mut explicit_container = None;
    match (lang, kind) {
        (Lang::Rust, "impl") => {
            scope_name = base_type_name(name_node, source);
            if let Some(trait_node) = node.child_by_field_name("trait") {
                name = format!("{} for {name}", text(trait_node, source));
            }
        }
        (Lang::Go, "method") if node.kind() == "method_declaration" => {
            explicit_container = go_receiver_type(node, source);
        }
        (Lang::Go, "type") if node.kind() == "type_spec" => {
            kind = match node.child_by_field_name("type").map(|ty| ty.kind()) {
                Some("struct_type") => "struct",
                Some("interface_type") => "interface",
                _ => "type",
            };
        }
        _ => {}
    }
    let start = node.start_position();
    let end = node.end_position();
    // An end at column 0 is the start of the next line: the node ended on the
    // line before.
    let end_row = if end.column == 0 && end.row > start.row {
        end.row - 1
    } else {
        end.row
    };
    Symbol {
        name,
        kind,
        line: start.row + 1,
        end_line: end_row + 1,
        container: None,
        start_byte: node.start_byte(),
        end_byte: node.end_byte(),
        scope_name,
        explicit_container,
    }
}

/// Sorts the symbols in source order and gives each the nearest enclosing
/// definition as its container; a function directly inside an impl, trait or
/// class becomes a method.
fn assign_containers(symbols: &mut [Symbol]) {
    symbols.sort_by(|a, b| {
        a.start_byte
            .cmp(&b.start_byte)
            .then(b.end_byte.cmp(&a.end_byte))
    });
    let mut open: Vec<usize> = Vec::new();
    for index in 0..symbols.len() {
        let (start, end) = (symbols[index].start_byte, symbols[index].end_byte);
        while let Some(&top) = open.last() {
            if symbols[top].start_byte <= start && end <= symbols[top].end_byte {
                break;
            }
            open.pop();
        }
        let parent = open
            .last()
            .map(|&top| (symbols[top].kind, symbols[top].scope_name.clone()));
        let symbol = &mut symbols[index];
        if let Some((parent_kind, parent_scope)) = parent {
            if symbol.kind == "function" && METHOD_OWNERS.contains(&parent_kind) {
                symbol.kind = "method";
            }
            symbol.container = Some(parent_scope);
        }
        if let Some(explicit) = symbol.explicit_container.take() {
            symbol.container = Some(explicit);
        }
        open.push(index);
    }
}

fn text(node: Node<'_>, source: &[u8]) -> String {
    String::from_utf8_lossy(&source[node.byte_range()]).into_owned()
}

/// `Wrapper` for `Wrapper<T>`, `&'a Wrapper`, `crate::x::Wrapper`.
fn base_type_name(mut node: Node<'_>, source: &[u8]) -> String {
    loop {
        let inner = match node.kind() {
            "generic_type" | "reference_type" | "pointer_type" => node.child_by_field_name("type"),
            "scoped_type_identifier" => node.child_by_field_name("name"),
            _ => None,
        };
        match inner {
            Some(inner) => node = inner,
            None => return text(node, source),
        }
    }
}

/// The receiver type of a Go method: `Server` for `(s *Server)` or
/// `(s Server[T])`.
fn go_receiver_type(method: Node<'_>, source: &[u8]) -> Option<String> {
    let receiver = method.child_by_field_name("receiver")?;
    let mut cursor = receiver.walk();
    let parameter = receiver
        .named_children(&mut cursor)
        .find(|child| child.kind() == "parameter_declaration")?;
    let mut ty = parameter.child_by_field_name("type")?;
    loop {
        let inner = match ty.kind() {
            "pointer_type" => ty.named_child(0),
            "generic_type" => ty.child_by_field_name("type"),
            "parenthesized_type" => ty.named_child(0),
            _ => None,
        };
        match inner {
            Some(inner) => ty = inner,
            None => return Some(text(ty, source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_passed_deadline_gives_up_instead_of_returning_a_partial_outline() {
        let source = "fn a() {}\n".repeat(5_000);
        let symbols = extract(
            Lang::Rust,
            source.as_bytes(),
            Instant::now() + Duration::from_secs(60),
        );
        assert_eq!(symbols.map(|symbols| symbols.len()).ok(), Some(5_000));
        let gave_up = extract(Lang::Rust, source.as_bytes(), Instant::now());
        assert!(
            matches!(gave_up, Err(ExtractError::OutOfTime)),
            "{gave_up:?}"
        );
    }
}
