//! Cutting text to a size: redacted first, so a secret the cut goes
//! through is replaced whole and never shown in part.

use std::borrow::Cow;

use bridge_policy::redact::{CUT_CONTEXT_BYTES, REDACTED, redact_and_cut, redact_excerpt};

use super::alnum;

#[test]
fn a_token_straddling_the_cut_is_replaced_whole() {
    let token = format!("ghp_{}", alnum(36, 40));
    let before = format!("{} ", "x".repeat(99));
    let text = format!("{before}{token} and more text after it");
    for cap in [101, 104, 110, 130, 139] {
        let cut = redact_and_cut(&text, cap);
        assert_eq!(cut.text, format!("{before}{REDACTED}"), "cap {cap}");
        assert_eq!(cut.omitted_bytes, text.len() - cap);
    }
    // Cut before the token: nothing of it shows.
    let cut = redact_and_cut(&text, 100);
    assert_eq!(cut.text, before);
    assert!(matches!(cut.text, Cow::Borrowed(_)));
}

#[test]
fn a_key_value_secret_and_a_key_block_straddling_the_cut_are_withheld() {
    let text = format!("config: password={} next=1", alnum(30, 41));
    let cut = redact_and_cut(&text, 25);
    assert_eq!(cut.text, format!("config: password={REDACTED}"));

    let body: Vec<String> = (0..20).map(|line| alnum(64, line)).collect();
    let block = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        body.join("\n")
    );
    let text = format!("key file:\n{block}");
    let cut = redact_and_cut(&text, 500);
    assert_eq!(cut.text, format!("key file:\n{REDACTED}"));
}

#[test]
fn clean_text_is_cut_on_a_character_boundary_and_borrowed() {
    let text = "é".repeat(100);
    let cut = redact_and_cut(&text, 51);
    assert_eq!(cut.text, "é".repeat(25));
    assert!(matches!(cut.text, Cow::Borrowed(_)));
    assert_eq!(cut.omitted_bytes, 150);
    let whole = redact_and_cut("short", 10);
    assert_eq!((whole.text.as_ref(), whole.omitted_bytes), ("short", 0));
}

#[test]
fn short_text_is_redacted_whole() {
    let token = format!("ghp_{}", alnum(36, 42));
    let cut = redact_and_cut(&token, 1000);
    assert_eq!((cut.text.as_ref(), cut.omitted_bytes), (REDACTED, 0));
}

#[test]
fn only_the_context_past_the_cut_is_read() {
    // A token far past the cut is not looked for, nor shown.
    let token = format!("ghp_{}", alnum(36, 43));
    let text = format!("{}{token}", "y".repeat(100 + CUT_CONTEXT_BYTES + 10));
    let cut = redact_and_cut(&text, 100);
    assert_eq!(cut.text, "y".repeat(100));
}

#[test]
fn an_excerpt_shows_secrets_crossing_either_edge_as_one_marker() {
    let first = format!("ghp_{}", alnum(36, 44));
    let second = format!("sk-{}", alnum(48, 45));
    let text = format!("aaa {first} middle text {second} zzz");
    let start = text.find(&first).unwrap() + 10;
    let end = text.find(&second).unwrap() + 10;
    assert_eq!(
        redact_excerpt(&text, start..end),
        format!("{REDACTED} middle text {REDACTED}")
    );
    let middle = text.find("middle").unwrap();
    let excerpt = redact_excerpt(&text, middle..middle + 6);
    assert_eq!(excerpt, "middle");
    assert!(matches!(excerpt, Cow::Borrowed(_)));
}

#[test]
fn shorten_counts_characters_redacts_first_and_notes_what_it_left_out() {
    assert_eq!(bridge_policy::redact::shorten("short", 10), "short");
    let text = "é".repeat(50);
    assert_eq!(
        bridge_policy::redact::shorten(&text, 10),
        format!("{}…[80 more bytes]", "é".repeat(10))
    );
    // The cut goes through the token: it is replaced whole, never halved.
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    let shown = bridge_policy::redact::shorten(&format!("token {token} end"), 12);
    assert!(!shown.contains("ghp_"), "{shown}");
    assert!(
        shown.contains("[REDACTED]") && shown.contains("more bytes]"),
        "{shown}"
    );
}

#[test]
fn preview_counts_characters_and_marks_the_cut_without_a_size() {
    use bridge_policy::redact::preview;
    assert_eq!(preview("one line", 20), "one line");
    assert_eq!(preview("abcdefgh", 3), "abc…");
    assert_eq!(preview(&"é".repeat(9), 3), "ééé…");
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    assert_eq!(preview(&format!("use {token}"), 10), "use [REDACTED]…");
}

#[test]
fn printable_drops_what_could_rewrite_a_terminal_then_redacts_and_cuts() {
    use bridge_policy::redact::printable;
    // An escape sequence that would clear the screen, a carriage return that
    // would overwrite the line, a bell: gone; tabs stay.
    assert_eq!(
        printable("my\x1b[2J provider\r\x07\tok", 40),
        "my[2J provider\tok"
    );
    assert_eq!(printable("a\nb", 40), "ab", "one line stays one line");
    assert_eq!(printable("plain", 40), "plain");
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    assert_eq!(
        printable(&format!("name\x1b {token}"), 60),
        "name [REDACTED]"
    );
    assert_eq!(
        printable(&"x".repeat(70), 64),
        format!("{}…", "x".repeat(64))
    );
}
