//! The one timestamp format of the hub's files and events.

use chrono::{SecondsFormat, Utc};

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-28T00:34:20.123Z`): the
/// timestamp of audit entries, session events and state files.
pub fn now_timestamp() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Unix seconds as RFC 3339 UTC (`2026-11-28T00:34:20Z`), for people to
/// read (a rule's expiry); `None` out of range.
pub fn unix_timestamp(secs: u64) -> Option<String> {
    let secs = i64::try_from(secs).ok()?;
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_with_milliseconds() {
        let stamp = now_timestamp();
        assert_eq!(stamp.len(), "2026-11-28T00:34:20.123Z".len(), "{stamp}");
        assert!(
            stamp.ends_with('Z') && stamp.as_bytes()[19] == b'.',
            "{stamp}"
        );
    }
}
