//! What feeds what: pipelines, redirections, here-strings and
//! here-documents, and the scripts they hand to a shell.

use tree_sitter::Node;

use super::super::Context;
use super::super::access::{self, ReadCheck};
use super::super::commands::{self, Roles};
use super::super::words::{self, Word};
use super::{Frame, FrameKind, Walker, children};

impl Walker<'_> {
    pub(super) fn check_pipeline(&mut self, context: &mut Context, node: Node<'_>) {
        let stage_nodes: Vec<Node<'_>> =
            children(node).into_iter().filter(Node::is_named).collect();
        let stages: Vec<(String, Roles)> = stage_nodes
            .iter()
            .map(|stage| self.stage_roles(context, *stage))
            .collect();
        // `echo 'script' | sh` runs the echoed text.
        for (pair, roles) in stage_nodes.windows(2).zip(stages.iter().skip(1)) {
            if roles.1.interpreter
                && commands::is_shell(roles.0.split(" ").next().unwrap_or_default())
                && let Some(script) = self.echoed_text(context, pair[0])
            {
                context.analyze_script(&script);
            }
        }
        for (index, (producer, producer_roles)) in stages.iter().enumerate() {
            for (consumer, consumer_roles) in &stages[index + 1..] {
                if producer_roles.downloader && consumer_roles.interpreter {
                    context.dangerous(format!(
                        "pipes downloaded code into an interpreter: {producer} | {consumer}"
                    ));
                }
                if producer_roles.env_dump && consumer_roles.network {
                    context.dangerous(format!(
                        "sends environment variables over the network: {producer} | {consumer}"
                    ));
                }
            }
        }
    }

    /// The text an `echo` stage prints, when its arguments are literal.
    fn echoed_text(&self, context: &Context, stage: Node<'_>) -> Option<String> {
        if stage.kind() != "command" {
            return None;
        }
        let argv = self.argv(context, stage);
        let (name, args) = argv.split_first()?;
        if name.value()? != "echo" {
            return None;
        }
        let values: Option<Vec<String>> = args
            .iter()
            .map(Word::value)
            .filter(|value| value.as_deref().is_none_or(|text| !text.starts_with('-')))
            .collect();
        Some(values?.join(" "))
    }

    /// The command name and roles of one pipeline stage.
    fn stage_roles(&self, context: &Context, stage: Node<'_>) -> (String, Roles) {
        let mut node = stage;
        loop {
            match node.kind() {
                "redirected_statement" => match node.child_by_field_name("body") {
                    Some(body) => node = body,
                    None => break,
                },
                "negated_command" => match node.named_child(0) {
                    Some(inner) => node = inner,
                    None => break,
                },
                _ => break,
            }
        }
        match node.kind() {
            "command" => {
                let argv = self.argv(context, node);
                (stage_label(&argv), commands::roles(&argv))
            }
            // `export`, `declare -p`, `set`: without assignments they print variables.
            "declaration_command" => {
                let text = words::node_text(node, self.source);
                let prints = !text.contains('=');
                let name = text
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                (
                    name,
                    Roles {
                        env_dump: prints,
                        ..Roles::default()
                    },
                )
            }
            _ => (node.kind().to_owned(), Roles::default()),
        }
    }

    pub(super) fn check_file_redirect(&mut self, context: &mut Context, node: Node<'_>) {
        let operator = children(node)
            .into_iter()
            .find(|child| !child.is_named())
            .map(|child| child.kind().to_owned())
            .unwrap_or_default();
        let env = self.env(context);
        let destinations: Vec<Word> = children(node)
            .into_iter()
            .filter(|child| child.is_named() && child.kind() != "file_descriptor")
            .map(|child| words::evaluate(child, self.source, &env))
            .collect();
        for destination in &destinations {
            let value = destination.value();
            let duplicates_descriptor = value
                .as_deref()
                .is_some_and(|value| value == "-" || value.chars().all(|c| c.is_ascii_digit()));
            match operator.as_str() {
                "<&-" | ">&-" => {}
                "<&" | ">&" if duplicates_descriptor => {}
                "<" | "<&" => access::check_read(context, destination, ReadCheck::Contents),
                _ => {
                    if !access::check_write(context, destination, "redirection") {
                        context.needs_approval(format!(
                            "redirects output to a file: {}",
                            destination.display()
                        ));
                    }
                }
            }
        }
    }

    /// `bash <<< 'script'` runs the here-string.
    pub(super) fn check_herestring(&mut self, context: &mut Context, node: Node<'_>) {
        let Some(Frame {
            kind: FrameKind::Command { name, .. },
            ..
        }) = self.frames.last()
        else {
            return;
        };
        if !commands::is_shell(name) {
            return;
        }
        let env = self.env(context);
        let text = node
            .named_children(&mut node.walk())
            .filter(|child| child.kind() != "file_descriptor")
            .map(|child| words::evaluate(child, self.source, &env).value())
            .next()
            .flatten();
        match text {
            Some(script) => context.analyze_script(&script),
            None => context.needs_approval("runs a here-string built at run time as a script"),
        }
    }

    /// `bash <<EOF` and `cat <<EOF | sh` run the here-document.
    pub(super) fn check_heredoc(&mut self, context: &mut Context, node: Node<'_>) {
        let mut runs_body = false;
        for child in children(node) {
            if child.kind() == "pipeline" {
                runs_body |= children(child)
                    .into_iter()
                    .filter(Node::is_named)
                    .any(|stage| self.stage_roles(context, stage).1.interpreter);
            }
        }
        if let Some(body) = node
            .parent()
            .filter(|parent| parent.kind() == "redirected_statement")
            .and_then(|parent| parent.child_by_field_name("body"))
            .filter(|body| body.kind() == "command")
        {
            let argv = self.argv(context, body);
            runs_body |= argv
                .first()
                .is_some_and(|name| commands::is_shell(&name.display()));
        }
        if !runs_body {
            return;
        }
        if let Some(body) = children(node)
            .into_iter()
            .find(|child| child.kind() == "heredoc_body")
        {
            let script = words::node_text(body, self.source).to_owned();
            context.analyze_script(&script);
        }
    }
}

/// A pipeline stage for messages: the command as written, shortened.
fn stage_label(argv: &[Word]) -> String {
    const MAX_CHARS: usize = 60;
    let text = argv
        .iter()
        .map(|word| word.raw.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    crate::redact::preview(&text, MAX_CHARS)
}
