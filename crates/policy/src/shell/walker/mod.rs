//! The walk over a parsed script: structure the allowlist cannot vouch for,
//! redirections, pipelines, and what feeds what through substitutions.
//!
//! The walk is iterative (a `&&` chain of thousands of commands is a tree
//! thousands of levels deep) and keeps its own stack of the nodes that
//! matter for context: commands, substitutions, subshells, functions.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::Context;
use super::commands::{self, Roles};

mod feeds;
use super::location::Cwd;
use super::words::{self, Env, Word};

/// Deeper nesting of commands inside substitutions than this is refused:
/// nothing legitimate needs it, and it bounds the context scans below.
const MAX_FRAMES: usize = 128;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parsing some hostile inputs (thousands of `<<` here-document openers) is
/// quadratic in tree-sitter; past this budget the input is refused.
const PARSE_BUDGET: Duration = Duration::from_secs(1);

enum Parsed {
    Tree(Tree),
    OverBudget,
    Failed,
}

fn parse(source: &str) -> Parsed {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            if parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .is_err()
            {
                return Parsed::Failed;
            }
            *slot = Some(parser);
        }
        let Some(parser) = slot.as_mut() else {
            return Parsed::Failed;
        };
        let deadline = Instant::now() + PARSE_BUDGET;
        let mut over_budget = false;
        let mut check_deadline = |_: &ParseState| {
            if Instant::now() > deadline {
                over_budget = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = source.as_bytes();
        let tree = parser.parse_with_options(
            &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
            None,
            Some(ParseOptions::new().progress_callback(&mut check_deadline)),
        );
        // A cancelled parse leaves state behind for resumption; drop it.
        parser.reset();
        match tree {
            Some(tree) => Parsed::Tree(tree),
            None if over_budget => Parsed::OverBudget,
            None => Parsed::Failed,
        }
    })
}

enum FrameKind {
    Command {
        name: String,
        roles: Roles,
    },
    Substitution,
    Function {
        name: String,
    },
    /// A subshell-like scope: `cd` inside it does not leak out.
    Scope {
        saved_cwd: Cwd,
    },
}

struct Frame {
    node_id: usize,
    kind: FrameKind,
}

struct Walker<'s> {
    source: &'s str,
    frames: Vec<Frame>,
    /// Enclosing `list` nodes: `true` for `||`. Not frames: a long `&&`
    /// chain nests one list per command.
    lists: Vec<(usize, bool)>,
    /// How many of `lists` are `||` lists.
    or_lists: usize,
    /// Enclosing bodies that may run any number of times, or never.
    conditionals: Vec<usize>,
    /// The script runs something in the background, so commands do not
    /// run in sequence.
    has_background: bool,
    parse_error_reported: bool,
}

pub(super) fn walk(context: &mut Context, source: &str) {
    let tree = match parse(source) {
        Parsed::Tree(tree) => tree,
        Parsed::OverBudget => {
            context.dangerous(format!(
                "too complex to parse within {} ms",
                PARSE_BUDGET.as_millis()
            ));
            return;
        }
        Parsed::Failed => {
            context.needs_approval("does not parse");
            return;
        }
    };
    let mut walker = Walker {
        source,
        frames: Vec::new(),
        lists: Vec::new(),
        or_lists: 0,
        conditionals: Vec::new(),
        has_background: has_background_operator(source),
        parse_error_reported: false,
    };
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if walker.enter(context, node) && cursor.goto_first_child() {
            continue;
        }
        walker.leave(context, node);
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            walker.leave(context, cursor.node());
        }
    }
}

/// A lone `&` (not `&&`, `&>`, `>&`, `|&`): approximate, erring towards
/// "yes", which only makes `cd` tracking more cautious.
fn has_background_operator(source: &str) -> bool {
    let bytes = source.as_bytes();
    bytes.iter().enumerate().any(|(index, &byte)| {
        let before = index.checked_sub(1).map(|at| bytes[at]);
        let after = bytes.get(index + 1).copied();
        byte == b'&'
            && !matches!(before, Some(b'&' | b'>' | b'<' | b'|'))
            && !matches!(after, Some(b'&' | b'>'))
    })
}

impl Walker<'_> {
    /// Returns whether to descend into the node's children.
    fn enter(&mut self, context: &mut Context, node: Node<'_>) -> bool {
        if (node.is_error() || node.is_missing()) && !self.parse_error_reported {
            self.parse_error_reported = true;
            context.needs_approval("does not parse");
        }
        if !node.is_named() {
            if node.kind() == "&" {
                context.needs_approval("runs a command in the background");
            }
            return true;
        }
        if self.frames.len() >= MAX_FRAMES {
            context.dangerous(format!(
                "commands nested more than {MAX_FRAMES} levels deep are not analysed"
            ));
            return false;
        }
        let id = node.id();
        match node.kind() {
            "command" => self.enter_command(context, node),
            "pipeline" => {
                self.check_pipeline(context, node);
                self.push_scope(context, id);
            }
            "list" => {
                let is_or = children(node).iter().any(|child| child.kind() == "||");
                self.or_lists += usize::from(is_or);
                self.lists.push((id, is_or));
            }
            "subshell" => {
                context.needs_approval("runs a subshell");
                self.push_scope(context, id);
            }
            "command_substitution" | "process_substitution" => {
                context.needs_approval(if node.kind() == "command_substitution" {
                    "contains command substitution"
                } else {
                    "contains process substitution"
                });
                self.push_scope(context, id);
                self.frames.push(Frame {
                    node_id: id,
                    kind: FrameKind::Substitution,
                });
            }
            "function_definition" => {
                context.needs_approval("defines a function");
                let name = node
                    .child_by_field_name("name")
                    .map(|name| words::node_text(name, self.source).to_owned())
                    .unwrap_or_default();
                self.frames.push(Frame {
                    node_id: id,
                    kind: FrameKind::Function { name },
                });
                self.conditionals.push(id);
            }
            "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement" => {
                context.needs_approval(format!(
                    "uses control flow ({})",
                    node.kind().replace('_', " ")
                ));
                self.conditionals.push(id);
            }
            "compound_statement" => context.needs_approval("uses a command group"),
            "test_command" => context.needs_approval("uses a test expression"),
            // A command's own `NAME=value` prefix is reported with the command.
            "variable_assignment"
                if matches!(
                    self.frames.last(),
                    Some(Frame {
                        kind: FrameKind::Command { .. },
                        ..
                    })
                ) => {}
            "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command" => {
                context.needs_approval("changes shell variables");
                context.commands_seen += 1;
            }
            "simple_expansion" | "expansion" => self.enter_expansion(context, node),
            "arithmetic_expansion" => context.needs_approval("uses arithmetic expansion"),
            "brace_expression" => context.needs_approval("uses brace expansion"),
            "ansi_c_string" | "translated_string" => {
                context.needs_approval("uses $'...' or $\"...\" quoting")
            }
            "file_redirect" => self.check_file_redirect(context, node),
            "herestring_redirect" => {
                context.needs_approval("uses a here-string");
                self.check_herestring(context, node);
            }
            "heredoc_redirect" => {
                context.needs_approval("uses a here-document");
                self.check_heredoc(context, node);
            }
            _ => {}
        }
        true
    }

    fn leave(&mut self, context: &mut Context, node: Node<'_>) {
        let id = node.id();
        while self.frames.last().is_some_and(|frame| frame.node_id == id) {
            if let Some(Frame {
                kind: FrameKind::Scope { saved_cwd },
                ..
            }) = self.frames.pop()
            {
                context.cwd = saved_cwd;
            }
        }
        if self.lists.last().is_some_and(|(list, _)| *list == id)
            && let Some((_, is_or)) = self.lists.pop()
        {
            self.or_lists -= usize::from(is_or);
        }
        if self.conditionals.last() == Some(&id) {
            self.conditionals.pop();
        }
    }

    fn push_scope(&mut self, context: &Context, id: usize) {
        self.frames.push(Frame {
            node_id: id,
            kind: FrameKind::Scope {
                saved_cwd: context.cwd.clone(),
            },
        });
    }

    fn env<'c>(&self, context: &'c Context) -> Env<'c> {
        Env {
            home: context.resolver.home(),
            pwd: context.cwd.certain(),
        }
    }

    /// The words of a `command` node: name, then arguments.
    fn argv(&self, context: &Context, command: Node<'_>) -> Vec<Word> {
        let env = self.env(context);
        let mut argv = Vec::new();
        if let Some(name) = command.child_by_field_name("name") {
            argv.push(words::evaluate(name, self.source, &env));
        }
        let mut cursor = command.walk();
        for argument in command.children_by_field_name("argument", &mut cursor) {
            argv.push(words::evaluate(argument, self.source, &env));
        }
        argv
    }

    fn enter_command(&mut self, context: &mut Context, node: Node<'_>) {
        context.commands_seen += 1;
        for child in children(node) {
            if child.kind() == "variable_assignment" {
                let name = child
                    .child_by_field_name("name")
                    .map_or("", |name| words::node_text(name, self.source));
                context.needs_approval(format!(
                    "sets environment variables for the command: {name}"
                ));
            }
        }
        let argv = self.argv(context, node);
        let in_sequence =
            !self.has_background && self.conditionals.is_empty() && self.or_lists == 0;
        context.cd_replaces_cwd = in_sequence;
        let roles = commands::check_argv(context, &argv, false);
        let name = argv.first().map(Word::display).unwrap_or_default();
        let command = argv
            .iter()
            .map(|word| word.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if roles.downloader && self.output_feeds(|consumer| consumer.interpreter) {
            context.dangerous(format!(
                "runs downloaded code: the output of `{command}` is executed"
            ));
        }
        if roles.env_dump && self.output_feeds(|consumer| consumer.network) {
            context.dangerous(format!(
                "sends environment variables over the network: `{command}`"
            ));
        }
        let recursive_function = self
            .frames
            .iter()
            .any(|frame| matches!(&frame.kind, FrameKind::Function { name: function } if *function == name));
        if recursive_function {
            context.dangerous(format!(
                "self-recursive function `{name}` (fork bomb pattern)"
            ));
        }
        self.frames.push(Frame {
            node_id: node.id(),
            kind: FrameKind::Command { name, roles },
        });
    }

    /// Whether the output of the command being entered is, through a
    /// substitution, an argument or input of a command matching `consumer`.
    fn output_feeds(&self, consumer: impl Fn(&Roles) -> bool) -> bool {
        let mut through_substitution = false;
        for frame in self.frames.iter().rev() {
            match &frame.kind {
                FrameKind::Substitution => through_substitution = true,
                FrameKind::Command { roles, .. } if through_substitution && consumer(roles) => {
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    fn enter_expansion(&mut self, context: &mut Context, node: Node<'_>) {
        let text = words::node_text(node, self.source);
        context.needs_approval(format!("uses variable expansion: {text}"));
        let variable = children(node)
            .into_iter()
            .find(|child| child.kind() == "variable_name")
            .map(|child| words::node_text(child, self.source));
        let Some(variable) = variable.filter(|name| commands::is_secret_variable(name)) else {
            return;
        };
        // Anywhere in a network command: arguments, here-strings, substitutions.
        let network = self
            .frames
            .iter()
            .rev()
            .find_map(|frame| match &frame.kind {
                FrameKind::Command { name, roles } if roles.network => Some(name.clone()),
                _ => None,
            });
        if let Some(command) = network {
            context.dangerous(format!(
                "sends secret variable ${variable} over the network ({command})"
            ));
        }
    }
}

fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}
