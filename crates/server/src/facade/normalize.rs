//! The conversation as one prompt, for backends that take a single prompt
//! (`PromptStyle::SinglePrompt`): the latest system message and the last
//! `turns` user/assistant messages, laid out as
//!
//! ```text
//! [SYSTEM]
//! You are a cautious coding assistant.
//! [DIALOG]
//! user: Refactor the retry logic.
//! assistant: Which file?
//! user: PaymentClient.
//! ```
//!
//! and sent as one user message. Tool calls, tool results, tools and the
//! fields such a backend has no use for are left out; keeping the window
//! small keeps prompts bounded however long the client's history grows.

use bridge_llm::{ChatRequest, Message, Role};

/// The prompt for `messages`. A turn is one user or assistant message
/// with text; at least one turn is kept whatever `turns` says, since a
/// prompt without the question is of no use. Without a system message the
/// `[SYSTEM]` section is left out.
pub fn single_prompt(messages: &[Message], turns: usize) -> String {
    let system = messages
        .iter()
        .rev()
        .find(|message| message.role == Role::System)
        .and_then(|message| message.content.as_deref());
    let dialog: Vec<(&str, &str)> = messages
        .iter()
        .filter_map(|message| {
            let speaker = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::System | Role::Tool => return None,
            };
            let text = message.content.as_deref()?.trim_end();
            (!text.trim().is_empty()).then_some((speaker, text))
        })
        .collect();
    let kept = &dialog[dialog.len().saturating_sub(turns.max(1))..];
    let mut prompt = String::new();
    if let Some(system) = system {
        prompt.push_str("[SYSTEM]\n");
        prompt.push_str(system.trim_end());
        prompt.push('\n');
    }
    prompt.push_str("[DIALOG]\n");
    for (speaker, text) in kept {
        prompt.push_str(speaker);
        prompt.push_str(": ");
        prompt.push_str(text);
        prompt.push('\n');
    }
    prompt
}

/// The request for a single-prompt backend: the prompt as one user
/// message, with the model and the sampling limits every backend knows
/// (temperature, max tokens, stop). Tools and unknown fields are dropped.
pub fn single_prompt_request(request: &ChatRequest, turns: usize) -> ChatRequest {
    ChatRequest {
        model: request.model.clone(),
        messages: vec![Message::text(
            Role::User,
            single_prompt(&request.messages, turns),
        )],
        tools: Vec::new(),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        stop: request.stop.clone(),
        extra: Default::default(),
        headers: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use bridge_llm::{ToolCall, ToolDefinition};
    use serde_json::json;

    use super::*;

    fn user(text: &str) -> Message {
        Message::text(Role::User, text)
    }

    fn assistant(text: &str) -> Message {
        Message::text(Role::Assistant, text)
    }

    fn system(text: &str) -> Message {
        Message::text(Role::System, text)
    }

    #[test]
    fn lays_out_the_system_and_the_dialog() {
        let prompt = single_prompt(
            &[
                system("You are a cautious coding assistant."),
                user("Refactor retry logic in PaymentClient."),
            ],
            3,
        );
        assert_eq!(
            prompt,
            "[SYSTEM]\nYou are a cautious coding assistant.\n[DIALOG]\n\
             user: Refactor retry logic in PaymentClient.\n"
        );
    }

    #[test]
    fn keeps_the_latest_system_and_the_last_n_turns() {
        let messages = [
            system("old rules"),
            user("u1"),
            assistant("a1"),
            user("u2"),
            system("new rules"),
            assistant("a2"),
            user("u3"),
        ];
        assert_eq!(
            single_prompt(&messages, 3),
            "[SYSTEM]\nnew rules\n[DIALOG]\nuser: u2\nassistant: a2\nuser: u3\n"
        );
        assert_eq!(
            single_prompt(&messages, 100),
            "[SYSTEM]\nnew rules\n[DIALOG]\nuser: u1\nassistant: a1\nuser: u2\nassistant: a2\nuser: u3\n"
        );
    }

    #[test]
    fn at_least_the_last_turn_is_kept() {
        assert_eq!(
            single_prompt(&[user("a"), user("b")], 0),
            "[DIALOG]\nuser: b\n"
        );
    }

    #[test]
    fn without_a_system_message_there_is_no_system_section() {
        assert_eq!(
            single_prompt(&[user("hello")], 3),
            "[DIALOG]\nuser: hello\n"
        );
    }

    #[test]
    fn tool_traffic_and_empty_messages_are_not_turns() {
        let call = Message {
            role: Role::Assistant,
            content: None,
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: "{}".into(),
            }],
            tool_call_id: None,
        };
        let messages = [
            user("first"),
            call,
            Message::tool_result("c", "file text"),
            assistant("  "),
            assistant("done"),
        ];
        assert_eq!(
            single_prompt(&messages, 2),
            "[DIALOG]\nuser: first\nassistant: done\n"
        );
    }

    #[test]
    fn multi_line_text_stays_under_its_speaker() {
        assert_eq!(
            single_prompt(&[user("line 1\nline 2\n\n")], 3),
            "[DIALOG]\nuser: line 1\nline 2\n"
        );
    }

    #[test]
    fn the_request_is_one_user_message_without_tools_or_extra_fields() {
        let mut request = ChatRequest {
            model: Some("m".into()),
            messages: vec![system("s"), user("q")],
            tools: vec![ToolDefinition {
                name: "f".into(),
                description: String::new(),
                parameters: json!({}),
            }],
            temperature: Some(0.1),
            max_tokens: Some(9),
            stop: vec!["x".into()],
            ..ChatRequest::default()
        };
        request.extra.insert("seed".into(), json!(1));
        let single = single_prompt_request(&request, 3);
        assert_eq!(
            single.messages,
            vec![user("[SYSTEM]\ns\n[DIALOG]\nuser: q\n")]
        );
        assert!(single.tools.is_empty());
        assert!(single.extra.is_empty());
        assert_eq!(single.model.as_deref(), Some("m"));
        assert_eq!(single.temperature, Some(0.1));
        assert_eq!(single.max_tokens, Some(9));
        assert_eq!(single.stop, vec!["x".to_owned()]);
    }
}
