//! JSON sizes known without building the text.

use serde::Serialize;

/// The length in bytes of `value` serialized as compact JSON (escapes
/// included), counted without allocating the text. A value that fails to
/// serialize counts as what was written before the failure.
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::encoded_len;
    use serde_json::json;

    #[test]
    fn counts_what_serde_json_writes_escapes_included() {
        for value in [
            json!("plain"),
            json!("\u{1}\u{2}\"\\\n"),
            json!({"ts": "t", "event": "é ✓", "metadata": {"n": [1, 2.5, null]}}),
        ] {
            assert_eq!(
                encoded_len(&value),
                serde_json::to_string(&value).unwrap().len()
            );
        }
    }
}
