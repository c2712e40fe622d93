//! Private keys in every shape tool output shows them: whole blocks behind
//! a line prefix, blocks inside JSON strings, body lines without their
//! header (a line range, a search hit), and the look-alikes that must stay
//! (digests, integrity hashes, certificates, identifiers, minified code).
//! Key material is generated at run time: random bytes, base64-encoded and
//! wrapped the way OpenSSL and OpenSSH wrap it.

use std::borrow::Cow;

use bridge_policy::redact::{REDACTED, redact};

/// Deterministic pseudo-random bytes (an LCG).
fn random_bytes(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(7);
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[(word >> (18 - 6 * index) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    text.as_bytes()
        .chunks(width)
        .map(|line| String::from_utf8(line.to_vec()).unwrap())
        .collect()
}

/// A key in PEM or OpenSSH form: header, body lines, footer.
struct Key {
    header: String,
    body: Vec<String>,
    footer: String,
}

impl Key {
    /// An RSA key as OpenSSL writes it: DER (`30 82 …`) in base64, 64 wide.
    fn pem(seed: u64) -> Self {
        let mut der = vec![
            0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01,
        ];
        der.extend(random_bytes(1180, seed));
        Self::armored("RSA PRIVATE KEY", wrap(&base64(&der), 64))
    }

    /// An ed25519 key as OpenSSH writes it: its structure (runs of zero
    /// bytes, names) in base64, 70 wide.
    fn openssh(seed: u64) -> Self {
        let mut blob = b"openssh-key-v1\0".to_vec();
        for part in [&b"none"[..], b"none", b""] {
            blob.extend((part.len() as u32).to_be_bytes());
            blob.extend(part);
        }
        blob.extend(1u32.to_be_bytes());
        blob.extend(51u32.to_be_bytes());
        blob.extend(11u32.to_be_bytes());
        blob.extend(b"ssh-ed25519");
        blob.extend(32u32.to_be_bytes());
        blob.extend(random_bytes(32, seed));
        blob.extend(144u32.to_be_bytes());
        blob.extend(random_bytes(8, seed + 1));
        blob.extend(11u32.to_be_bytes());
        blob.extend(b"ssh-ed25519");
        blob.extend(random_bytes(100, seed + 2));
        Self::armored("OPENSSH PRIVATE KEY", wrap(&base64(&blob), 70))
    }

    fn armored(label: &str, body: Vec<String>) -> Self {
        Self {
            header: format!("-----BEGIN {label}-----"),
            body,
            footer: format!("-----END {label}-----"),
        }
    }

    /// Every line, each after `prefix`.
    fn lines_with(&self, prefix: &str) -> Vec<String> {
        std::iter::once(&self.header)
            .chain(&self.body)
            .chain(std::iter::once(&self.footer))
            .map(|line| format!("{prefix}{line}"))
            .collect()
    }

    fn text_with(&self, prefix: &str) -> String {
        self.lines_with(prefix).join("\n")
    }

    /// The body lines, long enough to be recognised when a part of them shows.
    fn secrets(&self) -> Vec<&str> {
        self.body.iter().map(String::as_str).collect()
    }
}

/// Checks that no body line (nor its first half) of `key` survives in the
/// redaction of `text`, and that a second pass changes nothing.
fn assert_no_key_material(text: &str, key: &Key) -> String {
    let once = redact(text).into_owned();
    for line in key.secrets() {
        let half = &line[..line.len().min(12)];
        assert!(
            !once.contains(half),
            "key material {half:?} of {line:?} leaked from\n{text}\n->\n{once}"
        );
    }
    assert!(once.contains(REDACTED), "nothing redacted in {text}");
    let twice = redact(&once);
    assert!(
        matches!(twice, Cow::Borrowed(_)),
        "second pass changed {once:?}"
    );
    once
}

#[test]
fn a_key_block_behind_a_line_prefix_is_replaced_whole() {
    for key in [Key::pem(1), Key::openssh(2)] {
        for prefix in ["# ", "// ", "  ", "    ", " * ", "; ", "> ", "-- ", "#"] {
            let text = format!("config:\n{}\nafter: 1\n", key.text_with(prefix));
            let output = assert_no_key_material(&text, &key);
            assert_eq!(
                output,
                format!("config:\n{prefix}{REDACTED}\nafter: 1\n"),
                "prefix {prefix:?}"
            );
        }
    }
}

#[test]
fn numbered_lines_of_a_key_are_withheld() {
    let key = Key::pem(3);
    // `cat -n`, `grep -n`, and an editor's gutter.
    for number in [
        |n: usize| format!("{n:>6}\t"),
        |n: usize| format!("id_rsa:{n}:"),
        |n: usize| format!("{n:>4} | "),
    ] {
        let text: String = key
            .lines_with("")
            .iter()
            .enumerate()
            .map(|(index, line)| format!("{}{line}\n", number(index + 1)))
            .collect();
        let output = assert_no_key_material(&text, &key);
        assert!(output.starts_with(&number(1)), "{output}");
    }
}

#[test]
fn yaml_json_and_code_forms_of_a_key_are_redacted() {
    let key = Key::pem(4);
    let body = key.body.join("\n");
    let cases = [
        // A YAML block scalar.
        format!("tls:\n  key: |\n{}\n  cert: none\n", key.text_with("    ")),
        // The header on the key's line, the body below it.
        format!(
            "tls_key: {}\n  {}\n  {}\nname: web\n",
            key.header,
            key.body.join("\n  "),
            key.footer
        ),
        // Everything on one line, as an env file or a folded YAML value has it.
        format!(
            "TLS_KEY={} {} {}\nNAME=web\n",
            key.header,
            key.body.join(" "),
            key.footer
        ),
        // A JSON string with escaped line breaks, with and without a prefix.
        serde_json::to_string(&serde_json::json!({
            "private_key": format!("{}\n{body}\n{}\n", key.header, key.footer),
            "comment": key.text_with("# "),
        }))
        .unwrap(),
        // Quoted line by line in code.
        format!(
            "const KEY: &str = concat!(\n{}\n);\n",
            key.lines_with("    \"")
                .iter()
                .map(|line| format!("{line}\\n\","))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        format!(
            "key = (\n{}\n)\n",
            key.lines_with("    \"")
                .iter()
                .map(|line| format!("{line}\\n\""))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    ];
    for text in cases {
        assert_no_key_material(&text, &key);
    }
}

#[test]
fn body_lines_seen_without_their_header_are_withheld() {
    for key in [Key::pem(5), Key::openssh(6)] {
        let lines = key.lines_with("");
        let last = lines.len() - 1;
        // Line ranges: inside the body, up to the footer, the last body
        // lines alone, and the same behind a prefix.
        // (The short last line alone, without the footer, has nothing left
        // that tells it from any other base64: it shows.)
        for (from, to) in [(3, 6), (2, last), (last - 2, last + 1), (last - 2, last)] {
            for prefix in ["", "# ", "    "] {
                let slice: String = lines[from..to]
                    .iter()
                    .map(|line| format!("{prefix}{line}\n"))
                    .collect();
                let output = redact(&slice);
                for line in &lines[from..to] {
                    if key.body.contains(line) {
                        assert!(
                            !output.contains(line.as_str()),
                            "{line:?} of lines {from}..{to} leaked: {output}"
                        );
                    }
                }
            }
        }
        // A search hit: one line, alone or with a prefix.
        for line in &key.body[..key.body.len() - 1] {
            assert_eq!(redact(line), REDACTED);
            assert_eq!(redact(&format!("  {line}")), format!("  {REDACTED}"));
        }
    }
}

#[test]
fn a_json_escaped_slice_of_a_key_is_withheld() {
    let key = Key::pem(7);
    let slice = key.body[2..8].join("\n");
    let text = serde_json::to_string(&serde_json::json!({"content": slice})).unwrap();
    let output = redact(&text);
    assert_eq!(output, format!("{{\"content\":\"{REDACTED}\"}}"));
}

/// Text of the shapes that look a little like key bodies and must come back
/// unchanged.
fn look_alikes() -> Vec<String> {
    let hex = |seed: u64, length: usize| -> String {
        random_bytes(length / 2, seed)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    };
    let certificate_body = wrap(&base64(&random_bytes(700, 40)), 64).join("\n");
    let public_body = wrap(&base64(&random_bytes(270, 41)), 64).join("\n");
    vec![
        // Cargo.lock: sha256 checksums in hex, 64 characters.
        format!(
            "[[package]]\nname = \"serde\"\nversion = \"1.0.219\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"\n",
            hex(1, 64)
        ),
        // A hex digest alone on its line, lower and upper case.
        format!("{}\n{}\n", hex(2, 64), hex(3, 64).to_uppercase()),
        format!("{}  target/release/app\n", hex(4, 64)),
        // package-lock.json and yarn.lock: integrity hashes are public
        // digests of published packages.
        format!(
            "    \"node_modules/left-pad\": {{\n      \"version\": \"1.3.0\",\n      \"integrity\": \"sha512-{}\"\n    }},\n",
            base64(&random_bytes(64, 5))
        ),
        format!(
            "left-pad@^1.3.0:\n  integrity sha512-{}\n",
            base64(&random_bytes(64, 6))
        ),
        // Subresource integrity: sha384 in base64 is exactly 64 characters.
        format!(
            "<script src=\"app.js\" integrity=\"sha384-{}\"></script>\n",
            base64(&random_bytes(48, 7))
        ),
        format!("integrity:\nsha384-{}\n", base64(&random_bytes(48, 8))),
        // go.sum.
        format!(
            "golang.org/x/text v0.14.0 h1:{}\n",
            base64(&random_bytes(32, 9))
        ),
        // git.
        format!(
            "commit {}\nMerge: {} {}\n",
            hex(10, 40),
            hex(11, 7),
            hex(12, 7)
        ),
        // Identifiers as long as a key line.
        "ThisIsAVeryLongGeneratedIdentifierNameForTheTestCaseNumber4Part2\n".to_owned(),
        "    testThatTheConfigurationLoaderRejectsInvalidInputsWhenStrict1\n".to_owned(),
        "SOME_VERY_LONG_CONSTANT_NAME_THAT_IS_EXACTLY_SIXTY_FOUR_CHARS_XY\n".to_owned(),
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl\n".to_owned(),
        // Minified code with a data URI.
        format!(
            "!function(e){{var t={{}};e.icon=\"data:image/png;base64,{}\";e.run=function(){{return t}}}}(window);\n",
            base64(&random_bytes(48, 13))
        ),
        format!(
            ".logo{{background:url(data:image/gif;base64,{})}}\n",
            base64(&random_bytes(48, 14))
        ),
        // Short base64 in text, and an SSH public key.
        format!(
            "the payload {} was decoded\n",
            base64(&random_bytes(24, 15))
        ),
        format!("ssh-ed25519 {} dev@laptop\n", base64(&random_bytes(51, 16))),
        // Public armored blocks keep their bodies.
        format!("-----BEGIN CERTIFICATE-----\n{certificate_body}\n-----END CERTIFICATE-----\n"),
        format!(
            "# -----BEGIN PUBLIC KEY-----\n# {}\n# -----END PUBLIC KEY-----\n",
            public_body.replace('\n', "\n# ")
        ),
        format!(
            "{{\"cert\": \"-----BEGIN CERTIFICATE-----\\n{}\\n-----END CERTIFICATE-----\\n\"}}",
            certificate_body.replace('\n', "\\n")
        ),
    ]
}

#[test]
fn digests_integrity_hashes_certificates_and_code_are_left_alone() {
    for text in look_alikes() {
        let output = redact(&text);
        assert!(
            matches!(output, Cow::Borrowed(_)),
            "changed:\n{text}\n->\n{output}"
        );
    }
}
