//! Tests of errors: classification and the recovery decided from it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_util::recovery::classify;
use bridge_util::{ErrorClass, ErrorPolicy, RecoveryAction};

#[test]
fn statuses_classify() {
    assert_eq!(classify(Some(429), ""), ErrorClass::RateLimit);
    for status in [408, 500, 502, 503, 504] {
        assert_eq!(
            classify(Some(status), ""),
            ErrorClass::Transient,
            "{status}"
        );
    }
    assert_eq!(classify(Some(404), ""), ErrorClass::NotFound);
    for status in [400, 401, 403, 409, 422, 501] {
        assert_eq!(classify(Some(status), ""), ErrorClass::Other, "{status}");
    }
}

#[test]
fn messages_classify_case_insensitively() {
    let cases = [
        ("API rate limit exceeded for user", ErrorClass::RateLimit),
        ("429 Too Many Requests", ErrorClass::RateLimit),
        ("request Timeout after 30s", ErrorClass::Transient),
        ("operation timed out", ErrorClass::Transient),
        ("read ECONNRESET", ErrorClass::Transient),
        ("Connection reset by peer", ErrorClass::Transient),
        ("service temporarily unavailable", ErrorClass::Transient),
        ("model is overloaded, try later", ErrorClass::Transient),
        ("ENOENT: open 'a.txt'", ErrorClass::NotFound),
        (
            "No such file or directory (os error 2)",
            ErrorClass::NotFound,
        ),
        ("file not found: src/x.rs", ErrorClass::NotFound),
        ("permission denied", ErrorClass::Other),
        ("", ErrorClass::Other),
    ];
    for (message, expected) in cases {
        assert_eq!(classify(None, message), expected, "{message:?}");
    }
}

#[test]
fn a_specific_status_outweighs_the_message() {
    assert_eq!(classify(Some(429), "not found"), ErrorClass::RateLimit);
    assert_eq!(classify(Some(404), "timed out"), ErrorClass::NotFound);
    // A non-specific status leaves it to the message.
    assert_eq!(classify(Some(400), "rate limit hit"), ErrorClass::RateLimit);
}

#[test]
fn default_policy_matches_the_documented_defaults() {
    let policy = ErrorPolicy::default();
    assert_eq!(policy.max_retries, 3);
    assert_eq!(policy.transient_retries, 2);
}

#[test]
fn rate_limit_retries_up_to_max_retries() {
    let policy = ErrorPolicy::default();
    let actions: Vec<_> = (0..5)
        .map(|attempt| policy.decide(ErrorClass::RateLimit, attempt))
        .collect();
    use RecoveryAction::{Abort, Retry};
    assert_eq!(actions, [Retry, Retry, Retry, Abort, Abort]);
}

#[test]
fn transient_retries_up_to_transient_retries() {
    let policy = ErrorPolicy::default();
    use RecoveryAction::{Abort, Retry};
    let actions: Vec<_> = (0..4)
        .map(|attempt| policy.decide(ErrorClass::Transient, attempt))
        .collect();
    assert_eq!(actions, [Retry, Retry, Abort, Abort]);
}

#[test]
fn not_found_skips_and_other_aborts_at_any_attempt() {
    let policy = ErrorPolicy::default();
    for attempt in [0, 1, 10] {
        assert_eq!(
            policy.decide(ErrorClass::NotFound, attempt),
            RecoveryAction::Skip
        );
        assert_eq!(
            policy.decide(ErrorClass::Other, attempt),
            RecoveryAction::Abort
        );
    }
}

#[test]
fn zero_retries_configured_means_no_retry() {
    let policy = ErrorPolicy {
        max_retries: 0,
        transient_retries: 0,
    };
    assert_eq!(
        policy.decide(ErrorClass::RateLimit, 0),
        RecoveryAction::Abort
    );
    assert_eq!(
        policy.decide(ErrorClass::Transient, 0),
        RecoveryAction::Abort
    );
}

#[test]
fn decide_for_classifies_then_decides() {
    let policy = ErrorPolicy::default();
    assert_eq!(policy.decide_for(Some(503), "", 1), RecoveryAction::Retry);
    assert_eq!(policy.decide_for(Some(503), "", 2), RecoveryAction::Abort);
    assert_eq!(policy.decide_for(None, "ENOENT", 0), RecoveryAction::Skip);
}

#[test]
fn classes_and_actions_serialize_in_snake_case() {
    assert_eq!(
        serde_json::to_string(&ErrorClass::RateLimit).unwrap(),
        "\"rate_limit\""
    );
    assert_eq!(
        serde_json::to_string(&RecoveryAction::Retry).unwrap(),
        "\"retry\""
    );
}
