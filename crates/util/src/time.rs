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

/// The instant an RFC 3339 timestamp names, as Unix milliseconds (what
/// entries and filters of the hub's logs are compared by); `None` when it
/// does not parse.
pub fn unix_millis(timestamp: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .ok()
        .map(|at| at.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_back_as_unix_millis_whatever_their_offset() {
        assert_eq!(unix_millis("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(
            unix_millis("2026-01-01T01:00:00+01:00"),
            unix_millis("2026-01-01T00:00:00Z")
        );
        assert_eq!(unix_millis("yesterday"), None);
        assert_eq!(unix_millis("2026-01-01"), None);
    }

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
