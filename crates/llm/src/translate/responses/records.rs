//! The Responses API's records as they go on the wire: the `response`
//! object and each event of the stream, serialized straight from these
//! structs rather than built as `Value` maps first (the stream sends three
//! `response` objects and a record per event; the maps were most of the
//! encoder's work: docs/benchmarks.md, "Hot paths II").

use serde::Serialize;
use serde_json::Value;

use super::encode::ResponseHead;
use crate::Usage;

impl ResponseHead {
    pub(super) fn object<O: Serialize>(
        &self,
        status: &'static str,
        output: O,
        usage: Option<Usage>,
    ) -> ResponseObject<'_, O> {
        ResponseObject {
            id: &self.id,
            object: "response",
            created_at: self.created_at,
            status,
            error: None,
            incomplete_details: (status == "incomplete").then_some(Incomplete {
                reason: "max_output_tokens",
            }),
            model: &self.model,
            output,
            parallel_tool_calls: true,
            previous_response_id: self.previous_response_id.as_deref(),
            store: self.store,
            usage: usage.map(UsageObject::from),
        }
    }
}

impl<'a, O> ResponseObject<'a, O> {
    /// The object of a stream that broke off: `code` and `message` as its
    /// `error`.
    pub(super) fn failed_with(mut self, code: &'a str, message: &'a str) -> Self {
        self.error = Some(Failure { code, message });
        self
    }
}

/// A `response` object: a whole answer, and what the stream's
/// `response.created`, `response.in_progress`, `response.completed` and
/// `response.failed` carry.
#[derive(Debug, Serialize)]
pub struct ResponseObject<'a, O> {
    id: &'a str,
    object: &'static str,
    created_at: u64,
    status: &'static str,
    error: Option<Failure<'a>>,
    incomplete_details: Option<Incomplete>,
    model: &'a str,
    output: O,
    parallel_tool_calls: bool,
    previous_response_id: Option<&'a str>,
    store: bool,
    usage: Option<UsageObject>,
}

#[derive(Debug, Serialize)]
struct Failure<'a> {
    code: &'a str,
    message: &'a str,
}

#[derive(Debug, Serialize)]
struct Incomplete {
    reason: &'static str,
}

#[derive(Debug, Serialize)]
struct UsageObject {
    input_tokens: u64,
    input_tokens_details: CachedTokens,
    output_tokens: u64,
    output_tokens_details: ReasoningTokens,
    total_tokens: u64,
}

#[derive(Debug, Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

#[derive(Debug, Serialize)]
struct ReasoningTokens {
    reasoning_tokens: u64,
}

impl From<Usage> for UsageObject {
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.prompt_tokens,
            input_tokens_details: CachedTokens { cached_tokens: 0 },
            output_tokens: usage.completion_tokens,
            output_tokens_details: ReasoningTokens {
                reasoning_tokens: 0,
            },
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
        }
    }
}

/// One record of the stream: its `type` and `sequence_number`, then the
/// event's own fields.
#[derive(Serialize)]
struct Record<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    sequence_number: u64,
    #[serde(flatten)]
    data: T,
}

#[derive(Serialize)]
pub(super) struct ResponseEvent<'a, O> {
    pub(super) response: ResponseObject<'a, O>,
}

#[derive(Serialize)]
pub(super) struct ItemEvent<'a> {
    pub(super) output_index: usize,
    pub(super) item: &'a Value,
}

/// The fields of the events about a part of a message or a call's
/// arguments: which item, and where in the output.
#[derive(Serialize)]
struct ItemPlace<'a> {
    item_id: &'a str,
    output_index: usize,
}

/// `content_index` is always 0: a message has one text part.
#[derive(Serialize)]
pub(super) struct TextEvent<'a, T> {
    #[serde(flatten)]
    place: ItemPlace<'a>,
    content_index: u32,
    #[serde(flatten)]
    data: T,
}

#[derive(Serialize)]
pub(super) struct Delta<'a> {
    pub(super) delta: &'a str,
}

#[derive(Serialize)]
pub(super) struct Text<'a> {
    pub(super) text: &'a str,
}

#[derive(Serialize)]
pub(super) struct Part<'a> {
    part: OutputText<'a>,
}

/// A message's one content part: its text, without annotations.
#[derive(Serialize)]
pub(super) struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    annotations: [(); 0],
}

impl<'a> OutputText<'a> {
    pub(super) fn of(text: &'a str) -> Self {
        Self {
            kind: "output_text",
            text,
            annotations: [],
        }
    }
}

impl<'a> Part<'a> {
    pub(super) fn of(text: &'a str) -> Self {
        Self {
            part: OutputText::of(text),
        }
    }
}

#[derive(Serialize)]
pub(super) struct Arguments<'a> {
    pub(super) arguments: &'a str,
}

/// An event about a message's text part: which item, where, and `data`.
pub(super) fn text_event<'a, T>(
    item_id: &'a str,
    output_index: usize,
    data: T,
) -> TextEvent<'a, T> {
    TextEvent {
        place: ItemPlace {
            item_id,
            output_index,
        },
        content_index: 0,
        data,
    }
}

/// An event about a call's arguments: which item, where, and `data`.
pub(super) fn placed<T>(item_id: &str, output_index: usize, data: T) -> PlacedEvent<'_, T> {
    PlacedEvent {
        place: ItemPlace {
            item_id,
            output_index,
        },
        data,
    }
}

#[derive(Serialize)]
pub(super) struct PlacedEvent<'a, T> {
    #[serde(flatten)]
    place: ItemPlace<'a>,
    #[serde(flatten)]
    data: T,
}

/// `kind`'s record of `data`, numbered from `sequence`, onto `out`.
pub(super) fn emit<T: Serialize>(out: &mut Vec<String>, sequence: &mut u64, kind: &str, data: T) {
    let record = Record {
        kind,
        sequence_number: *sequence,
        data,
    };
    *sequence += 1;
    // Strings, numbers and `Value`s only: serializing cannot fail.
    let json = serde_json::to_string(&record).unwrap_or_default();
    out.push(format!("event: {kind}\ndata: {json}\n\n"));
}
