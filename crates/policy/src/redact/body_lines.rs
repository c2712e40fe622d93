//! Key body lines seen without their header: a line range or a search hit
//! inside a key file, a part of a key quoted in a log.
//!
//! A body line is judged by its shape: one run of base64 at the PEM (64)
//! or OpenSSH (70) width, alone on its line, mixed case with digits and
//! character classes alternating like random data. Hex digests (no upper
//! case), integrity hashes (`sha512-…`: not alone on their line), names
//! (they read like words) keep their shape and are left alone, and so are
//! the lines of certificates and public keys under their header.

use super::armor::{
    MAX_LINE_VIEW, MAX_PREFIX, MAX_RUN, Shape, is_base64, is_line_closer, line_at,
    line_start_before, padding_only_at_end, scan_body,
};
use super::values::looks_random;

/// Full widths of a key body line: PEM (also PuTTY, GnuPG) wraps base64
/// at 64 characters, OpenSSH at 70.
const BODY_LINE_WIDTHS: [usize; 2] = [64, 70];
/// Every run of base64 as long as a body line holds two bytes this far
/// apart at offsets divisible by it, so only those offsets are looked at
/// first.
const PROBE_STRIDE: usize = BODY_LINE_WIDTHS[0] / 2;

/// The key body lines of `text` that no span in `covered` (sorted) already
/// withholds and that lie in no public block: spans from the first such
/// line over the lines of the same shape after it (not the footer; a key's
/// header and footer hold no secret).
///
/// Found by code after the regex scan: a counted base64 run in the regex
/// would start at every word and slow the whole scan. Here ordinary text
/// costs a look at every 32nd byte and a few bytes before it.
pub(super) fn key_body_lines(
    text: &str,
    covered: &[(usize, usize)],
    public: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let (mut covered, mut public) = (covered.iter().peekable(), public.iter().peekable());
    let mut probe = 0;
    while probe + PROBE_STRIDE < bytes.len() {
        let far = probe + PROBE_STRIDE;
        // The run through `probe` and `far`, if every byte between is base64
        // (looked at from `far` back: in text a blank comes soon).
        if !is_base64(bytes[probe])
            || bytes[probe..=far]
                .iter()
                .rev()
                .any(|&byte| !is_base64(byte))
        {
            probe = far;
            continue;
        }
        let run_start = probe
            - bytes[..probe]
                .iter()
                .rev()
                .take_while(|&&b| is_base64(b))
                .count();
        let run_end = far + bytes[far..].iter().take_while(|&&b| is_base64(b)).count();
        probe = next_probe(run_end);
        if !BODY_LINE_WIDTHS.contains(&(run_end - run_start))
            || !text
                .get(run_start..run_end)
                .is_some_and(looks_like_key_body)
        {
            continue;
        }
        let Some(line_start) = body_line_start(bytes, run_start, run_end) else {
            continue;
        };
        let inside = |ranges: &mut std::iter::Peekable<std::slice::Iter<'_, (usize, usize)>>| {
            while ranges
                .next_if(|&&(_, range_end)| range_end <= run_start)
                .is_some()
            {}
            ranges
                .peek()
                .is_some_and(|&&(range_start, _)| range_start <= run_start)
        };
        if inside(&mut covered) || inside(&mut public) {
            continue;
        }
        let span = body_lines_span(bytes, line_start, run_start, run_end);
        found.push(span);
        probe = next_probe(span.1);
    }
    found
}

/// The first probe offset at or after `at`.
fn next_probe(at: usize) -> usize {
    at.div_ceil(PROBE_STRIDE) * PROBE_STRIDE
}

/// Where the line of the full-width base64 run `run_start..run_end` starts,
/// when the run is a body line: alone on its line after a short
/// prefix (a blank, a comment or quote marker, `:` of `grep -n`; not `-`,
/// `,` or `=` of `sha384-…`, `base64,…`, `KEY=…`), then only closing
/// quotes before the line's end.
fn body_line_start(bytes: &[u8], run_start: usize, run_end: usize) -> Option<usize> {
    if !ends_line_after(bytes, run_end) {
        return None;
    }
    let line_start = line_start_before(bytes, run_start, MAX_PREFIX)?;
    let after_prefix = run_start == line_start || b" \t#\"'>*;|!%:".contains(&bytes[run_start - 1]);
    after_prefix.then_some(line_start)
}

/// Whether only closing quotes and blanks come between `at` and the end of
/// its line (a real or escaped line break, or the end of the text).
fn ends_line_after(bytes: &[u8], mut at: usize) -> bool {
    for _ in 0..MAX_LINE_VIEW - MAX_RUN {
        let Some(&byte) = bytes.get(at) else {
            return true;
        };
        match byte {
            b'\n' => return true,
            b'\\' => {
                let run_end = at + bytes[at..].iter().take_while(|&&b| b == b'\\').count();
                match bytes.get(run_end) {
                    Some(b'n' | b'r' | b'\n') | None => return true,
                    _ => at = run_end,
                }
            }
            _ if is_line_closer(byte) => at += 1,
            _ => return false,
        }
    }
    false
}

/// For a full-width body line at `line_start` whose run is
/// `run_start..run_end`: the span over it and the body lines of the same
/// shape that follow.
fn body_lines_span(
    bytes: &[u8],
    line_start: usize,
    run_start: usize,
    run_end: usize,
) -> (usize, usize) {
    let shape = Shape {
        prefix: (line_start, run_start),
        width: run_end - run_start,
        prefix_known: false,
    };
    let next = line_at(bytes, line_start).and_then(|line| line.next);
    let scan = scan_body(bytes, next, Some(shape), run_end);
    (run_start, scan.end)
}

/// Whether `run` looks like a line of a key body rather than a digest or a
/// name: upper and lower case, digits (or `+`, `/`) more than once,
/// character classes alternating like random data, and not made of words.
fn looks_like_key_body(run: &str) -> bool {
    let bytes = run.as_bytes();
    // Cheapest and most selective first: a hex digest has no upper case.
    bytes.iter().any(u8::is_ascii_uppercase)
        && bytes.iter().any(u8::is_ascii_lowercase)
        && bytes
            .iter()
            .filter(|&&byte| byte.is_ascii_digit() || byte == b'+' || byte == b'/')
            .count()
            >= 2
        && padding_only_at_end(bytes)
        && looks_random(run)
        && !reads_like_words(bytes)
}

/// Whether a run is a camel-case name (`parseConfigurationFromServiceV2…`):
/// capitals rarely next to each other and vowels as frequent as in words
/// (three letters in ten; base64 has two in ten). Generated keys of
/// OpenSSL and OpenSSH never read so; about one random line in 30,000 does,
/// and the lines around it still give the key away.
fn reads_like_words(run: &[u8]) -> bool {
    let adjacent_capitals = run
        .windows(2)
        .filter(|pair| pair[0].is_ascii_uppercase() && pair[1].is_ascii_uppercase())
        .count();
    let letters = run.iter().filter(|byte| byte.is_ascii_alphabetic()).count();
    let vowels = run
        .iter()
        .filter(|byte| b"aeiouAEIOU".contains(byte))
        .count();
    adjacent_capitals <= 1 && vowels * 10 >= letters * 3
}
