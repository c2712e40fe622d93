//! Private keys in every shape tool output shows them: whole blocks behind
//! a line prefix, blocks inside JSON strings, body lines without their
//! header (a line range, a search hit), and the look-alikes that must stay
//! (digests, integrity hashes, certificates, identifiers, minified code).
//! Key material is generated at run time ([`bridge_testkit::fake_keys`]).

use std::borrow::Cow;

use bridge_policy::redact::{REDACTED, redact};
use bridge_testkit::FakeKey as Key;
use bridge_testkit::fake_keys::{base64, random_bytes, wrap};

/// Checks that no body line (nor its first half) of `key` survives in the
/// redaction of `text`, and that a second pass changes nothing.
fn assert_no_key_material(text: &str, key: &Key) -> String {
    let once = redact(text).into_owned();
    if let Some(leak) = key.leaks_into(&once) {
        panic!("key material {leak:?} leaked from\n{text}\n->\n{once}");
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
            "const key =\n{};\n",
            key.lines_with("    \"")
                .iter()
                .map(|line| format!("{line}\\n\""))
                .collect::<Vec<_>>()
                .join(" +\n")
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
