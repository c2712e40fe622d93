//! Records of a call as the audit log and session events keep them: JSON
//! that has been through secret redaction, said so by its type, so the log
//! can take it without redacting it a second time.

use serde::Serialize;
use serde_json::Value;

use super::summarize_for_audit;
use crate::redact::redact_value;

/// A JSON value whose strings, keys included, have been through
/// [`redact_value`]. Made only by redacting; read-only afterwards.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Redacted(Value);

impl Redacted {
    /// `value`, redacted.
    pub fn new(mut value: Value) -> Self {
        redact_value(&mut value);
        Self(value)
    }

    /// What records keep of `value` (a call's arguments, an output):
    /// redacted first, since a secret cut in half by the summary would no
    /// longer match its rule, then bounded by [`summarize_for_audit`].
    pub fn record_of(value: &Value) -> Self {
        Self(summarize_for_audit(&Self::new(value.clone()).0))
    }

    pub fn as_value(&self) -> &Value {
        &self.0
    }

    pub fn into_value(self) -> Value {
        self.0
    }
}

/// Redacts a tool's result for its caller, and gives its record (see
/// [`Redacted::record_of`]) when `keep_record`.
///
/// The payload of a file reference (`{"file": {...}, "base64": "..."}`
/// from a provider's persistDir) is binary data: a rule matching by chance
/// inside its encoding would corrupt the file, so the caller gets it as it
/// came. Everything around it is redacted as usual, and so is the
/// payload's excerpt in the record.
pub fn redact_result(value: &mut Value, keep_record: bool) -> Option<Redacted> {
    let is_file = value.as_object().is_some_and(|map| {
        map.get("file").is_some_and(Value::is_object)
            && map.get("base64").is_some_and(Value::is_string)
    });
    let payload = if is_file {
        value.as_object_mut().and_then(|map| map.remove("base64"))
    } else {
        None
    };
    redact_value(value);
    let mut record = keep_record.then(|| summarize_for_audit(value));
    if let Some(payload) = payload {
        if let Some(Value::Object(record)) = record.as_mut() {
            let mut excerpt = summarize_for_audit(&payload);
            redact_value(&mut excerpt);
            record.insert("base64".to_owned(), excerpt);
        }
        if let Some(map) = value.as_object_mut() {
            map.insert("base64".to_owned(), payload);
        }
    }
    record.map(Redacted)
}
