//! Private key blocks in the shapes tool output shows them: whole PEM and
//! OpenSSH blocks, also with every line behind a common prefix (a comment
//! marker, an indent, a line number, a YAML key) or inside a JSON string
//! with escaped line breaks; and the line-by-line reading of a key body
//! that [`super::body_lines`] shares.
//!
//! Every scan here looks at a bounded part of a line before it decides, so
//! hostile text (a header followed by a megabyte-long line) costs no more
//! than ordinary text.

/// Longest prefix a body line may carry: `# `, `// `, an indent, `  12\t`
/// of `cat -n`, `key.pem:12:` of `grep -n`.
pub(super) const MAX_PREFIX: usize = 40;
/// Longest base64 run of a body line (MIME wraps at 76).
pub(super) const MAX_RUN: usize = 76;
/// Most of a line looked at to judge it: prefix, run and closing quotes.
pub(super) const MAX_LINE_VIEW: usize = MAX_PREFIX + MAX_RUN + 8;
/// Shortest first body line after a header: a key body does not start with
/// a word.
const MIN_FIRST_RUN: usize = 16;
/// Blank and `Proc-Type:` / `DEK-Info:` lines allowed between a header and
/// the body.
const MAX_PREAMBLE_LINES: usize = 4;
/// How far after `-----END` the closing dashes of a footer may be
/// (`-----END ENCRYPTED PRIVATE KEY BLOCK-----`).
const MAX_FOOTER_LENGTH: usize = 64;

/// Which bytes are base64 characters (padding included): a table, as the
/// body line pass asks for every probed byte.
static BASE64: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=';
        byte += 1;
    }
    table
};

pub(super) fn is_base64(byte: u8) -> bool {
    BASE64[usize::from(byte)]
}

/// Characters that close a line of a key quoted in code or data:
/// `"MIIE…",`, `'…');`, `…"}`, a trailing `\`.
pub(super) fn is_line_closer(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'\r' | b'"' | b'\'' | b',' | b';' | b'\\' | b')' | b']' | b'}'
    )
}

/// Characters of a prefix that holds no text of its own: indents, comment
/// and quote markers.
fn is_decoration(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'#' | b'/' | b'*' | b';' | b'>' | b'|' | b'"' | b'\'' | b'%' | b'!' | b'-'
    )
}

/// One line of text: a real line, or one between escaped line breaks
/// (`\n`, `\\n`, `\r\n` inside JSON strings).
#[derive(Debug, Clone, Copy)]
pub(super) struct Line {
    pub start: usize,
    /// End of the content (before the line break); `None` when the line is
    /// longer than [`MAX_LINE_VIEW`] (it is then no body line).
    pub end: Option<usize>,
    /// Start of the next line; `None` at the end of the text.
    pub next: Option<usize>,
}

/// The line starting at `start`, looking at most [`MAX_LINE_VIEW`] bytes.
pub(super) fn line_at(bytes: &[u8], start: usize) -> Option<Line> {
    if start >= bytes.len() {
        return None;
    }
    let limit = bytes.len().min(start + MAX_LINE_VIEW + 1);
    let mut at = start;
    while at < limit {
        match bytes[at] {
            b'\n' => {
                let end = if at > start && bytes[at - 1] == b'\r' {
                    at - 1
                } else {
                    at
                };
                return Some(Line {
                    start,
                    end: Some(end),
                    next: Some(at + 1),
                });
            }
            b'\\' => {
                let run_end = at + bytes[at..].iter().take_while(|&&b| b == b'\\').count();
                match bytes.get(run_end) {
                    Some(b'n' | b'r') => {
                        let mut next = run_end + 1;
                        // `\r\n` escaped: one break, not two.
                        if bytes[run_end] == b'r' {
                            let backslashes = bytes[next..].iter().take_while(|&&b| b == b'\\');
                            let after = next + backslashes.count();
                            if after > next && bytes.get(after) == Some(&b'n') {
                                next = after + 1;
                            }
                        }
                        return Some(Line {
                            start,
                            end: Some(at),
                            next: Some(next),
                        });
                    }
                    _ => at = run_end.max(at + 1),
                }
            }
            _ => at += 1,
        }
    }
    let end = (limit == bytes.len()).then_some(bytes.len());
    Some(Line {
        start,
        end: end.filter(|&end| end - start <= MAX_LINE_VIEW),
        next: None,
    })
}

/// Where the line holding `pos` starts, when that is at most `max` bytes
/// back (after a real or an escaped line break, or at the start of the
/// text).
pub(super) fn line_start_before(bytes: &[u8], pos: usize, max: usize) -> Option<usize> {
    let floor = pos.saturating_sub(max + 1);
    let mut at = pos;
    while at > floor {
        let byte = bytes[at - 1];
        if byte == b'\n' || (matches!(byte, b'n' | b'r') && at >= 2 && bytes[at - 2] == b'\\') {
            return Some(at);
        }
        at -= 1;
    }
    (at == 0).then_some(0)
}

/// Where the line break that ends just before `line_start` begins: back
/// over `\n` or `\r\n`, real or escaped.
fn break_start_before(bytes: &[u8], line_start: usize) -> Option<usize> {
    let mut at = line_start;
    for letter in [b'n', b'r'] {
        match bytes.get(at.checked_sub(1)?) {
            Some(&b'\n') if letter == b'n' => {
                at -= 1;
                if at > 0 && bytes[at - 1] == b'\r' {
                    at -= 1;
                }
                return Some(at);
            }
            Some(&byte) if byte == letter && at >= 2 && bytes[at - 2] == b'\\' => {
                at -= 1;
                while at > 0 && bytes[at - 1] == b'\\' {
                    at -= 1;
                }
            }
            _ if letter == b'r' => return Some(at),
            _ => return None,
        }
    }
    Some(at)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// Only decoration (`#`, an indent, quotes) or nothing.
    Blank,
    /// `Proc-Type: 4,ENCRYPTED`, `DEK-Info: …` of an encrypted PEM key.
    PemHeader,
    /// A prefix, then one base64 run (`start..end`).
    Body {
        run_start: usize,
        run_end: usize,
    },
    /// `-----END … -----`, ending at `end`.
    Footer {
        end: usize,
    },
    Other,
}

fn footer_end(bytes: &[u8], line: &Line) -> Option<usize> {
    // Within the line: a footer on the next line is that line's.
    let line_end = line.end.unwrap_or(bytes.len());
    let view_end = line_end.min(line.start + MAX_PREFIX + 8);
    let view = &bytes[line.start..view_end];
    let at = line.start + view.windows(8).position(|word| word == b"-----END")?;
    let after = at + 8;
    let closing = &bytes[after..bytes.len().min(after + MAX_FOOTER_LENGTH)];
    let close = closing.windows(5).position(|dashes| dashes == b"-----")?;
    Some(after + close + 5)
}

fn classify(bytes: &[u8], line: &Line) -> LineKind {
    if let Some(end) = footer_end(bytes, line) {
        return LineKind::Footer { end };
    }
    let Some(end) = line.end else {
        return LineKind::Other;
    };
    let content = &bytes[line.start..end];
    if [&b"Proc-Type:"[..], b"DEK-Info:"]
        .iter()
        .any(|name| content.windows(name.len()).any(|word| word == *name))
    {
        return LineKind::PemHeader;
    }
    let trimmed = without_line_closers(content);
    let run_len = trimmed
        .iter()
        .rev()
        .take_while(|&&byte| is_base64(byte))
        .count();
    let prefix_len = trimmed.len() - run_len;
    if run_len == 0 {
        return if trimmed.iter().all(|&byte| is_decoration(byte)) {
            LineKind::Blank
        } else {
            LineKind::Other
        };
    }
    if prefix_len > MAX_PREFIX || run_len > MAX_RUN || !padding_only_at_end(&trimmed[prefix_len..])
    {
        return LineKind::Other;
    }
    let run_start = line.start + prefix_len;
    LineKind::Body {
        run_start,
        run_end: run_start + run_len,
    }
}

/// `content` without what closes a line of a key quoted in code: quotes,
/// commas, brackets, and a string concatenation (`"MIIE…\n" +`).
fn without_line_closers(content: &[u8]) -> &[u8] {
    let mut end = content.len();
    loop {
        while end > 0 && is_line_closer(content[end - 1]) {
            end -= 1;
        }
        // ` +` cannot end a base64 run: a blank comes before the `+`.
        if end >= 2 && content[end - 1] == b'+' && matches!(content[end - 2], b' ' | b'\t') {
            end -= 2;
        } else {
            return &content[..end];
        }
    }
}

pub(super) fn padding_only_at_end(run: &[u8]) -> bool {
    let body = run.len() - run.iter().rev().take_while(|&&b| b == b'=').count();
    body > 0 && run.len() - body <= 2 && !run[..body].contains(&b'=')
}

/// Whether two line prefixes have the same shape: equal, except that a
/// line number (with the blanks that align it) may differ: `   9\t` and
/// `  10\t`, `f:9:` and `f:10:`.
fn same_prefix(a: &[u8], b: &[u8]) -> bool {
    let (mut at_a, mut at_b) = (0, 0);
    loop {
        match (prefix_token(a, &mut at_a), prefix_token(b, &mut at_b)) {
            (None, None) => return true,
            (x, y) if x == y => {}
            _ => return false,
        }
    }
}

/// The next byte of a prefix, a line number (blanks before it included)
/// standing for one `0`.
fn prefix_token(bytes: &[u8], at: &mut usize) -> Option<u8> {
    let byte = *bytes.get(*at)?;
    let blanks = bytes[*at..]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    let digits = bytes[*at + blanks..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits > 0 {
        *at += blanks + digits;
        return Some(b'0');
    }
    *at += 1;
    Some(byte)
}

/// The prefix and width every line of one key body shares.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub prefix: (usize, usize),
    pub width: usize,
    /// Whether the prefix is known, or to be taken from the next full
    /// line: the first line of a slice carries what came before it on its
    /// line (`{"content":"` of a JSON string).
    pub prefix_known: bool,
}

pub(super) struct BodyScan {
    /// End of the last body line.
    pub end: usize,
    /// End of the footer, when the body was followed by one.
    pub footer_end: Option<usize>,
}

/// Follows body lines from the line starting at `at`: lines of `shape`
/// (taken from the first body line when `None`), of full width except a
/// shorter last one, then possibly the footer. A blank line may come
/// between body lines (a key quoted line by line in code: `"MIIE…\n"`
/// then a line break), but not two.
pub(super) fn scan_body(
    bytes: &[u8],
    mut at: Option<usize>,
    mut shape: Option<Shape>,
    end: usize,
) -> BodyScan {
    let mut scan = BodyScan {
        end,
        footer_end: None,
    };
    let mut preamble = 0;
    let mut blanks = 0;
    let mut last_line_seen = false;
    while let Some(line) = at.and_then(|at| line_at(bytes, at)) {
        at = line.next;
        let kind = classify(bytes, &line);
        if let LineKind::Footer { end } = kind {
            scan.footer_end = Some(end);
            return scan;
        }
        let Some(known) = shape else {
            match kind {
                LineKind::Blank | LineKind::PemHeader if preamble < MAX_PREAMBLE_LINES => {
                    preamble += 1;
                }
                LineKind::Body { run_start, run_end } if run_end - run_start >= MIN_FIRST_RUN => {
                    shape = Some(Shape {
                        prefix: (line.start, run_start),
                        width: run_end - run_start,
                        prefix_known: true,
                    });
                    scan.end = run_end;
                }
                _ => return scan,
            }
            continue;
        };
        match kind {
            LineKind::Blank if blanks == 0 => blanks += 1,
            LineKind::Body { run_start, run_end } if !last_line_seen => {
                let width = run_end - run_start;
                let prefix = (line.start, run_start);
                let same = same_prefix(
                    &bytes[known.prefix.0..known.prefix.1],
                    &bytes[prefix.0..prefix.1],
                );
                if !known.prefix_known && width == known.width {
                    shape = Some(Shape {
                        prefix,
                        prefix_known: true,
                        ..known
                    });
                } else if !same || width > known.width {
                    return scan;
                }
                blanks = 0;
                scan.end = run_end;
                // A shorter line is the last: only a footer may follow.
                last_line_seen = width < known.width;
            }
            _ => return scan,
        }
    }
    scan
}

/// Where the private key block whose header ends at `body_start` ends:
/// after its `-----END … -----` footer, or where its body stops when the
/// text was cut short. The body is followed as base64 and blanks (also a
/// whole block on one line, or in a JSON string with escaped line breaks),
/// and line by line when its lines carry a prefix (`# `, `// `, `key: `).
pub(super) fn private_key_block_end(text: &str, body_start: usize) -> usize {
    let bytes = text.as_bytes();
    let (plain_end, closed) = plain_body_end(bytes, body_start);
    if closed {
        return plain_end;
    }
    let next = line_at(bytes, body_start).and_then(|line| line.next);
    let scan = scan_body(bytes, next, None, body_start);
    plain_end.max(scan.footer_end.unwrap_or(scan.end))
}

/// The body as one stretch of base64, PEM header and blank characters:
/// its end, and whether a footer closed it.
fn plain_body_end(bytes: &[u8], body_start: usize) -> (usize, bool) {
    let is_body_byte = |byte: u8| {
        byte.is_ascii_alphanumeric() || b"+/=:,\\-".contains(&byte) || byte.is_ascii_whitespace()
    };
    let mut at = body_start;
    while let Some(&byte) = bytes.get(at) {
        if bytes[at..].starts_with(b"-----END") {
            let footer = &bytes[at + 8..bytes.len().min(at + 8 + MAX_FOOTER_LENGTH)];
            if let Some(close) = footer.windows(5).position(|dashes| dashes == b"-----") {
                return (at + 8 + close + 5, true);
            }
        }
        if !is_body_byte(byte) {
            break;
        }
        at += 1;
    }
    (at, false)
}

/// For a `-----END … PRIVATE KEY-----` footer at `footer_start`: the run of
/// the line before it when that is the (shorter) last line of a key body
/// with the footer's prefix, which a key seen without its header shows.
pub(super) fn last_body_line_before(text: &str, footer_start: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let footer_line = line_start_before(bytes, footer_start, MAX_PREFIX)?;
    let previous_end = break_start_before(bytes, footer_line)?;
    let previous_start = line_start_before(bytes, previous_end, MAX_LINE_VIEW)?;
    let line = line_at(bytes, previous_start)?;
    if line.next != Some(footer_line) {
        return None;
    }
    let LineKind::Body { run_start, run_end } = classify(bytes, &line) else {
        return None;
    };
    same_prefix(
        &bytes[line.start..run_start],
        &bytes[footer_line..footer_start],
    )
    .then_some((run_start, run_end))
}
