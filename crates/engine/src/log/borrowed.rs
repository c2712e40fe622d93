//! A line of a session file read in one pass without building what the
//! conversation does not need: the envelope's strings borrowed from the
//! line, of `data` only the fields [`Folded`] keeps, everything else
//! checked and dropped. Resume reads 100,000 events this way
//! (docs/benchmarks.md, "Session event log").
//!
//! [`LoggedEvent`](super::LoggedEvent) stays the one definition of a valid line. This reading
//! checks every byte as strictly as `LoggedEvent` (with `serde_json::Value`
//! for `data`) does and yields what [`Folded::from_value`] makes of that
//! event; where it would have to work harder to be sure (a field that is
//! not the usual JSON type, deep nesting, an array for an object, fields
//! out of order) it gives up, and the caller reads the line as a
//! `LoggedEvent`, which decides.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{ToolRequest, types};

/// What the conversation takes from one event's data.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Folded {
    /// An event whose data the conversation does not read.
    Nothing,
    Start(Value),
    User {
        content: String,
    },
    Assistant {
        content: String,
        tool_requests: Vec<ToolRequest>,
    },
    ToolComplete {
        call_id: String,
        success: bool,
        /// `result.content` as text, if there.
        result: Option<String>,
        /// `error.message` as text, if there.
        error: Option<String>,
    },
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
    },
}

impl Folded {
    /// What the conversation takes from an event of type `kind` read as a
    /// whole [`LoggedEvent`](super::LoggedEvent).
    pub(super) fn from_value(kind: &str, data: Value) -> Self {
        let text = |key: &str| data.get(key).map(as_text).unwrap_or_default();
        match kind {
            types::SESSION_START => Self::Start(data),
            types::USER_MESSAGE => Self::User {
                content: text("content"),
            },
            types::ASSISTANT_MESSAGE => Self::Assistant {
                content: text("content"),
                tool_requests: data
                    .get("toolRequests")
                    .map(tool_requests)
                    .unwrap_or_default(),
            },
            types::TOOL_EXECUTION_COMPLETE => Self::ToolComplete {
                call_id: text("toolCallId"),
                success: data.get("success").and_then(Value::as_bool) == Some(true),
                result: data.pointer("/result/content").map(as_text),
                error: data.pointer("/error/message").map(as_text),
            },
            types::SESSION_USAGE => {
                let count = |key| data.get(key).and_then(Value::as_u64).unwrap_or(0);
                Self::Usage {
                    prompt_tokens: count("promptTokens"),
                    completion_tokens: count("completionTokens"),
                }
            }
            _ => Self::Nothing,
        }
    }
}

/// A string as is; anything else as compact JSON.
pub(super) fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An assistant message's requests; none if they are not well formed.
fn tool_requests(requests: &Value) -> Vec<ToolRequest> {
    Vec::<ToolRequest>::deserialize(requests).unwrap_or_default()
}

/// One line read the plain way.
pub(super) struct PlainEvent<'a> {
    pub seq: u64,
    pub id: Cow<'a, str>,
    pub folded: Folded,
}

/// Reads `line` as [`PlainEvent`]; an error means "read it as a
/// `LoggedEvent`", not necessarily that it is damaged.
pub(super) fn read_plain(line: &[u8]) -> Result<PlainEvent<'_>, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let event = deserializer.deserialize_map(EnvelopeVisitor)?;
    deserializer.end()?;
    Ok(event)
}

/// The reason for giving up on the plain reading (never shown: the
/// `LoggedEvent` reading's error is).
fn give_up<E: de::Error>() -> E {
    E::custom("left to the full reading")
}

/// serde_json's marker of a raw value: `serde_json::Value` reads an object
/// that starts with this key differently, so such data is left to it.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Nesting the plain reading goes into (well within serde_json's limit,
/// which counts the envelope too).
const MAX_DEPTH: usize = 64;

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = PlainEvent<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a session event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PlainEvent<'de>, A::Error> {
        let mut seq = None;
        let mut id = None;
        let mut parent_id = false;
        let mut timestamp = false;
        let mut kind: Option<Cow<'de, str>> = None;
        let mut folded = None;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match key.0.as_ref() {
                "seq" if seq.is_none() => seq = Some(map.next_value::<u64>()?),
                "id" if id.is_none() => id = Some(map.next_value::<Text<'de>>()?.0),
                "parentId" if !parent_id => {
                    map.next_value::<Option<Text<'de>>>()?;
                    parent_id = true;
                }
                "timestamp" if !timestamp => {
                    map.next_value::<Text<'de>>()?;
                    timestamp = true;
                }
                "type" if kind.is_none() => kind = Some(map.next_value::<Text<'de>>()?.0),
                // The data is read for what its type needs: the type must
                // come first, as the writer puts it.
                "data" if folded.is_none() => {
                    let kind = kind.as_deref().ok_or_else(give_up)?;
                    folded = Some(map.next_value_seed(DataSeed { kind })?);
                }
                "seq" | "id" | "parentId" | "timestamp" | "type" | "data" => {
                    return Err(give_up());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (seq, id, timestamp, kind, folded) {
            (Some(seq), Some(id), true, Some(_), Some(folded)) => {
                Ok(PlainEvent { seq, id, folded })
            }
            _ => Err(give_up()),
        }
    }
}

/// A JSON string, borrowed from the line when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(text.to_owned())))
    }
}

/// An object key, checked as `serde_json::Value` checks keys; the raw
/// value marker makes the plain reading give up.
fn object_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Text<'de>>, A::Error> {
    match map.next_key::<Text<'de>>()? {
        Some(key) if key.0 == RAW_VALUE_TOKEN => Err(give_up()),
        key => Ok(key),
    }
}

/// The `data` of an event of type `kind`.
struct DataSeed<'k> {
    kind: &'k str,
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = Folded;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Folded, D::Error> {
        match self.kind {
            // Rare and kept whole: read exactly as the full reading does.
            types::SESSION_START => Value::deserialize(deserializer).map(Folded::Start),
            types::USER_MESSAGE
            | types::ASSISTANT_MESSAGE
            | types::TOOL_EXECUTION_COMPLETE
            | types::SESSION_USAGE => deserializer.deserialize_any(DataVisitor { kind: self.kind }),
            _ => {
                Checked { depth: 1 }.deserialize(deserializer)?;
                Ok(Folded::Nothing)
            }
        }
    }
}

/// The data of an event the conversation reads: an object whose known
/// fields are kept (the last of duplicates, as `Value` keeps), anything
/// else checked and dropped.
struct DataVisitor<'k> {
    kind: &'k str,
}

impl DataVisitor<'_> {
    /// `data` that is not an object: none of its fields are there.
    fn not_an_object(&self) -> Folded {
        Folded::from_value(self.kind, Value::Null)
    }

    fn scalar<E: de::Error>(self) -> Result<Folded, E> {
        Ok(self.not_an_object())
    }
}

impl<'de> Visitor<'de> for DataVisitor<'_> {
    type Value = Folded;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("event data")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Folded, E> {
        self.scalar()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Folded, A::Error> {
        Checked { depth: 1 }.visit_seq(seq)?;
        Ok(self.not_an_object())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Folded, A::Error> {
        let mut folded = self.not_an_object();
        while let Some(key) = object_key(&mut map)? {
            let key = key.0;
            match (&mut folded, key.as_ref()) {
                (Folded::User { content } | Folded::Assistant { content, .. }, "content") => {
                    *content = map.next_value::<PlainText>()?.0
                }
                (Folded::Assistant { tool_requests, .. }, "toolRequests") => {
                    *tool_requests = self::tool_requests(&map.next_value::<Value>()?);
                }
                (Folded::ToolComplete { call_id, .. }, "toolCallId") => {
                    *call_id = map.next_value::<PlainText>()?.0;
                }
                (Folded::ToolComplete { success, .. }, "success") => {
                    *success = map.next_value_seed(IsTrue)?;
                }
                (Folded::ToolComplete { result, .. }, "result") => {
                    *result = map.next_value_seed(Member { name: "content" })?;
                }
                (Folded::ToolComplete { error, .. }, "error") => {
                    *error = map.next_value_seed(Member { name: "message" })?;
                }
                (Folded::Usage { prompt_tokens, .. }, "promptTokens") => {
                    *prompt_tokens = map.next_value_seed(Count)?;
                }
                (
                    Folded::Usage {
                        completion_tokens, ..
                    },
                    "completionTokens",
                ) => {
                    *completion_tokens = map.next_value_seed(Count)?;
                }
                _ => map.next_value_seed(Checked { depth: 2 })?,
            }
        }
        Ok(folded)
    }
}

/// A field read as [`as_text`] reads it: a string, or `null` as empty;
/// any other value is left to the full reading (its compact form is
/// `Value`'s).
struct PlainText(String);

impl<'de> Deserialize<'de> for PlainText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PlainTextVisitor)
    }
}

struct PlainTextVisitor;

impl<'de> Visitor<'de> for PlainTextVisitor {
    type Value = PlainText;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string or null")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<PlainText, E> {
        Ok(PlainText(text.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<PlainText, E> {
        Ok(PlainText(String::new()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<PlainText, E> {
        Err(give_up())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<PlainText, E> {
        Err(give_up())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<PlainText, E> {
        Err(give_up())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<PlainText, E> {
        Err(give_up())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<PlainText, A::Error> {
        Err(give_up())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<PlainText, A::Error> {
        Err(give_up())
    }
}

mod checks;
#[cfg(test)]
mod tests;

use checks::{Checked, Count, IsTrue, Member};
