//! Secret redaction. (STUB: to be implemented.)

use std::borrow::Cow;

use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

pub fn redact(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text)
}

pub fn redact_value(_value: &mut Value) {}
