//! File names in diff headers: `a/` `b/` prefixes, git's C-quoted names and
//! the two names of a `diff --git` line.

/// Git and GNU diff prefix names with `a/` and `b/`; strip them only when
/// both sides carry them, so an unprefixed `--- src/x` stays as written.
pub(super) fn strip_ab_prefixes(
    old: Option<String>,
    new: Option<String>,
) -> (Option<String>, Option<String>) {
    let old_prefixed = old.as_deref().is_none_or(|path| path.starts_with("a/"));
    let new_prefixed = new.as_deref().is_none_or(|path| path.starts_with("b/"));
    if old_prefixed && new_prefixed {
        let strip = |path: Option<String>| path.map(|path| path[2..].to_owned());
        (strip(old), strip(new))
    } else {
        (old, new)
    }
}

/// The path of `a/x b/x` (the part after `diff --git `), prefix stripped.
pub(super) fn git_header_path(rest: &str) -> Option<String> {
    if rest.starts_with('"') {
        let end = closing_quote(rest)?;
        let old = unquote_c_string(&rest[..=end])?;
        return Some(old.strip_prefix("a/").unwrap_or(&old).to_owned());
    }
    // Names may contain " b/"; for an unrenamed file both halves are equal.
    let candidates: Vec<usize> = rest.match_indices(" b/").map(|(at, _)| at).collect();
    let split = candidates
        .iter()
        .copied()
        .find(|&at| rest[..at].strip_prefix("a/") == Some(&rest[at + 3..]))
        .or_else(|| candidates.first().copied())?;
    let old = &rest[..split];
    Some(old.strip_prefix("a/").unwrap_or(old).to_owned())
}

fn closing_quote(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (index, ch) in text.char_indices().skip(1) {
        match ch {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(index),
            _ => {}
        }
    }
    None
}

/// A git C-quoted name: `"a/sp\303\244ce \"q\".txt"`.
pub(super) fn unquote_c_string(text: &str) -> Option<String> {
    let end = closing_quote(text)?;
    let inner = &text[1..end];
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(byte) = chars.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        let escaped = chars.next()?;
        let decoded = match escaped {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'v' => 0x0b,
            b'"' | b'\\' => escaped,
            b'0'..=b'7' => {
                let mut value = u32::from(escaped - b'0');
                for _ in 0..2 {
                    let digit = chars.next_if(|d| (b'0'..=b'7').contains(d))?;
                    value = value * 8 + u32::from(digit - b'0');
                }
                u8::try_from(value).ok()?
            }
            _ => return None,
        };
        bytes.push(decoded);
    }
    String::from_utf8(bytes).ok()
}
