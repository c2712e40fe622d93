//! Tests of secret redaction. Every token-shaped string is assembled at run
//! time from harmless pieces, so this file holds nothing a secret scanner
//! would flag.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use std::borrow::Cow;

use bridge_policy::redact::{self, REDACTED, is_secret_key, redact, redact_value};
use serde_json::{Value, json};

mod cut;
mod formats;
mod keys;

/// Deterministic mixed-case letters and digits, `length` long.
fn alnum(length: usize, seed: usize) -> String {
    const ALPHABET: &[u8] = b"aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL";
    (0..length)
        .map(|index| ALPHABET[(index * 7 + seed * 13) % ALPHABET.len()] as char)
        .collect()
}

/// Like [`alnum`] with `-` and `_` mixed in (newer key formats).
fn alnum_dashed(length: usize, seed: usize) -> String {
    alnum(length, seed)
        .chars()
        .enumerate()
        .map(|(index, ch)| match index % 11 {
            5 => '-',
            9 => '_',
            _ => ch,
        })
        .collect()
}

fn upper_base32(length: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    (0..length)
        .map(|index| ALPHABET[(index * 5 + 3) % 32] as char)
        .collect()
}

fn digits(length: usize) -> String {
    (0..length)
        .map(|index| char::from(b'0' + (index * 3 % 10) as u8))
        .collect()
}

fn private_key_block(kind: &str) -> String {
    let header = format!("-----BEGIN {kind}PRIVATE KEY-----");
    let footer = format!("-----END {kind}PRIVATE KEY-----");
    let body: Vec<String> = (0..6).map(|line| alnum(64, line)).collect();
    format!("{header}\n{}\n{footer}", body.join("\n"))
}

/// Named fake secrets, one (at least) per rule.
fn secrets() -> Vec<(&'static str, String)> {
    vec![
        ("github classic", format!("ghp_{}", alnum(36, 1))),
        ("github oauth", format!("gho_{}", alnum(36, 2))),
        ("github user-to-server", format!("ghu_{}", alnum(36, 3))),
        ("github server-to-server", format!("ghs_{}", alnum(36, 4))),
        ("github refresh", format!("ghr_{}", alnum(36, 5))),
        (
            "github fine-grained",
            format!("github_pat_{}_{}", alnum(22, 6), alnum(59, 7)),
        ),
        ("aws key id", format!("AKIA{}", upper_base32(16))),
        ("aws session key id", format!("ASIA{}", upper_base32(16))),
        ("openai legacy", format!("sk-{}", alnum(48, 8))),
        (
            "openai project",
            format!("sk-proj-{}", alnum_dashed(120, 9)),
        ),
        (
            "openai service account",
            format!("sk-svcacct-{}", alnum_dashed(80, 10)),
        ),
        (
            "anthropic api",
            format!("sk-ant-api03-{}", alnum_dashed(93, 11)),
        ),
        (
            "anthropic admin",
            format!("sk-ant-admin01-{}", alnum_dashed(93, 12)),
        ),
        ("stripe", format!("sk_live_{}", alnum(24, 13))),
        (
            "slack bot",
            format!("xoxb-{}-{}-{}", digits(12), digits(13), alnum(24, 14)),
        ),
        (
            "slack app",
            format!("xapp-1-{}-{}", upper_base32(11), alnum(40, 15)),
        ),
        ("google api", format!("AIza{}", alnum_dashed(35, 16))),
        ("gitlab", format!("glpat-{}", alnum(20, 17))),
        (
            "jwt",
            format!(
                "eyJ{}.eyJ{}.{}",
                alnum(20, 18),
                alnum(40, 19),
                alnum_dashed(43, 20)
            ),
        ),
        ("rsa private key", private_key_block("RSA ")),
        ("openssh private key", private_key_block("OPENSSH ")),
        ("pkcs8 private key", private_key_block("")),
    ]
}

#[test]
fn rules_compile() {
    redact::check_rules().unwrap();
}

#[test]
fn every_token_rule_redacts_in_plain_text_and_logs() {
    for (name, secret) in secrets() {
        let plain = format!("the value {secret} was printed");
        assert_eq!(
            redact(&plain),
            format!("the value {REDACTED} was printed"),
            "{name}"
        );
        let log = format!("2024-05-01T10:00:00Z INFO request id=7 auth={secret}, status=200\n");
        let redacted = redact(&log);
        assert!(
            !redacted.contains(&secret),
            "{name} leaked from a log line: {redacted}"
        );
        assert!(redacted.contains("status=200"), "{name}: {redacted}");
    }
}

#[test]
fn every_token_rule_redacts_inside_json_text_and_env_lines() {
    for (name, secret) in secrets() {
        let json_text =
            serde_json::to_string(&json!({ "output": format!("found {secret}") })).unwrap();
        let redacted = redact(&json_text);
        assert!(
            !redacted.contains(&secret),
            "{name} leaked from JSON text: {redacted}"
        );
        // Multi-line blocks are escaped (`\n`) inside JSON strings.
        if !secret.contains('\n') {
            assert_eq!(
                redacted,
                format!("{{\"output\":\"found {REDACTED}\"}}"),
                "{name}"
            );
        }
        let env_line = format!("SOME_VALUE={secret}\nOTHER=1\n");
        let redacted = redact(&env_line);
        assert!(
            !redacted.contains(&secret),
            "{name} leaked from an env line: {redacted}"
        );
        assert!(redacted.ends_with("\nOTHER=1\n"), "{name}: {redacted}");
    }
}

#[test]
fn private_key_block_is_replaced_whole_even_when_truncated() {
    let block = private_key_block("EC ");
    let text = format!("before\n{block}\nafter");
    assert_eq!(redact(&text), format!("before\n{REDACTED}\nafter"));
    let truncated: String = block.chars().take(150).collect();
    let redacted = redact(&format!("output: {truncated}")).into_owned();
    assert_eq!(redacted, format!("output: {REDACTED}"));
    let encrypted = format!(
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{}\n-----END ENCRYPTED PRIVATE KEY-----",
        alnum(64, 3)
    );
    assert_eq!(redact(&encrypted), REDACTED);
}

#[test]
fn key_value_forms_keep_key_and_separator() {
    let token = alnum(24, 21);
    let cases = [
        ("password=hunter2", "password=[REDACTED]".to_owned()),
        (
            "DB_PASSWORD=\"s3cr3t value\"",
            "DB_PASSWORD=\"[REDACTED]\"".to_owned(),
        ),
        ("api_key: abc123xyz", "api_key: [REDACTED]".to_owned()),
        (
            "{\"password\": \"hunter2\"}",
            "{\"password\": \"[REDACTED]\"}".to_owned(),
        ),
        (
            "client_secret='abc def'",
            "client_secret='[REDACTED]'".to_owned(),
        ),
        (
            "run --token=abc123 --verbose",
            "run --token=[REDACTED] --verbose".to_owned(),
        ),
        ("passwd := \"x9\"", "passwd := \"[REDACTED]\"".to_owned()),
        ("'api-key' => 'k3y'", "'api-key' => '[REDACTED]'".to_owned()),
        (
            "{\\\"secret\\\": \\\"hunter2\\\"}",
            "{\\\"secret\\\": \\\"[REDACTED]\\\"}".to_owned(),
        ),
        (
            "GET /cb?access_token=abc123&state=4 HTTP/1.1",
            "GET /cb?access_token=[REDACTED]&state=4 HTTP/1.1".to_owned(),
        ),
        ("pwd=letmein", "pwd=[REDACTED]".to_owned()),
        ("x-api-key: 0123abcd", "x-api-key: [REDACTED]".to_owned()),
        (
            "AWS_SECRET_ACCESS_KEY=wJalr/K7MDENG+bPxRfi",
            "AWS_SECRET_ACCESS_KEY=[REDACTED]".to_owned(),
        ),
        (
            &format!("export GITHUB_TOKEN={token}") as &str,
            "export GITHUB_TOKEN=[REDACTED]".to_owned(),
        ),
        (
            "Authorization: Basic dXNlcjpwYXNz",
            "Authorization: Basic [REDACTED]".to_owned(),
        ),
        (
            "\"Authorization\": \"Bearer abc.def.123\"",
            "\"Authorization\": \"Bearer [REDACTED]\"".to_owned(),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redact(input), expected, "{input}");
    }
}

#[test]
fn bearer_keeps_the_scheme_word() {
    let token = alnum_dashed(40, 22);
    assert_eq!(
        redact(&format!(
            "curl -H 'X-Auth: Bearer {token}' https://api.example.com"
        )),
        format!("curl -H 'X-Auth: Bearer {REDACTED}' https://api.example.com")
    );
    assert_eq!(redact("bearer abcd1234efgh"), format!("bearer {REDACTED}"));
}

#[test]
fn url_credentials_lose_only_the_password() {
    assert_eq!(
        redact("cloning https://user:hunter2@git.example.com/repo.git"),
        format!("cloning https://user:{REDACTED}@git.example.com/repo.git")
    );
    assert_eq!(
        redact("DATABASE=postgres://app:pa55w0rd@db:5432/app"),
        format!("DATABASE=postgres://app:{REDACTED}@db:5432/app")
    );
    let hook = format!(
        "https://hooks.slack.com/services/T{}/B{}/{}",
        upper_base32(8),
        upper_base32(10),
        alnum(24, 23)
    );
    assert_eq!(
        redact(&hook),
        format!("https://hooks.slack.com/services/{REDACTED}")
    );
}

/// Text that looks a little like a secret and must come back untouched.
fn look_alikes() -> Vec<String> {
    let mut texts: Vec<String> = [
        "update the task-list and the risk-management plan",
        "pip install scikit-learn; sk-learn is a nickname",
        "the token count is 5",
        "max_tokens=100, tokens_used: 42, prompt_tokens=7",
        "password reset instructions were sent to your email",
        "SGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IQ==",
        "the bearer of this note is a friend",
        "Bearer authentication is described in RFC 6750",
        "id 123e4567-e89b-12d3-a456-426614174000 ok",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "fn new(token: Token) -> Self { Self { token } }",
        "let password = read_password();",
        "struct Login { password: String, api_key: Option<String> }",
        "token = self.token.clone()",
        "self.token = token; this.apiKey = apiKey;",
        "const API_KEY = process.env.API_KEY; if token == \"\" { return; }",
        "{\"token\": null, \"password\": \"\"}",
        "token=$GITHUB_TOKEN",
        "password: ${DB_PASSWORD}",
        "password=%(password)s",
        "api_key: <your-api-key>",
        "password: ********",
        "PWD=/home/user/project",
        "https://example.com:8080/path?q=1",
        "git@github.com:org/repo.git and user@example.com",
        "keyboard tokenizer=bert api_key_id=5 secrets: 3",
        "Authorization required; secret santa; token-based auth",
        "eyJhbGciOiJIUzI1NiJ9 alone is only a header",
        "Größe: 5 — こんにちは — пароль сброшен 🔑",
        // Code and configuration that name secrets without holding one.
        "token = getToken()",
        "const url = process.env.DB_PASSWORD || process.env.DB_PASS;",
        "password: ${{ secrets.DB_PASSWORD }}\nSMTP_PASS: ${{ secrets.SMTP_PASS }}",
        "passthrough=1 compass=north --passthrough=yes",
        "bypass: true\nbypass: enabled\nBYPASS=on\ncompass: north",
        "test result: ok. 12 passed; Pass: 12  Fail: 0",
        "DB_PASS=$DB_PASS\npass = get_pass()\ndbPass: string",
        "the default password is admin; machine learning login page",
        "Password reset: log in with your new password",
        "use_auth=1 basic_auth: false require_auth=yes oauth=enabled always-auth=true",
        "Cookie: chocolate chip\nthe Set-Cookie header is sent by the server",
        "cookie = request.cookies.get(\"sid\")\ncookies: 3\ncookie_policy=strict",
        "cookie: ${{ secrets.COOKIE }}",
        "{\"author\": \"Jane Doe\", \"authors\": [\"A\"], \"auth\": \"none\", \"oauth\": \"on\"}",
        "PRIMARY_KEY=id\nSORT_KEY=name\nKEY=value\nCACHE_KEY=user_profile_v2_by_id",
        "partition_key: tenantId\nSSH_KEY=~/.ssh/id_ed25519\n\"sort_key\": \"name\"",
        "FOREIGN_KEY=users.id; hotkey=Ctrl+Shift+K; monkey: banana",
        "docker run -u 1000:1000 alpine id\ngit push -u origin main\npodman exec -u app:app web ls",
        "redis://cache:6379/0 and http://[::1]:8080/ and https://example.com:443/a@b",
        // Constants and types in source code named like secrets.
        "pub const FS_IOC_ADD_ENCRYPTION_KEY: u32 = 3226494487;\nNETKIT_PASS = 0,\nDEVSTAT_MATCH_PASS = 0x04,",
        "pub const HTTP_QUERY_AUTHORIZATION: u32 = 28u32;\npub pvKeyEncryptionKey: *mut c_void,",
        "pub const InheritNewDefaultKey: X509RequestInheritOptions = 1i32;",
        "pub const SHARES_RO_PASS: windows_sys::core::PCWSTR = w!(\"Parm2\");\nconst FLAGS_PASS = sys::IORING_FLAGS_PASS;",
        "hmasterkey : NCRYPT_KEY_HANDLE, phmasterkey : *mut NCRYPT_KEY_HANDLE",
        "brace_token: syn::token::Brace,\npub type FREE_PASSWORD = Option<unsafe extern \"system\" fn()>;",
        "the command we'd otherwise pass:\n// $ /opt/bin/clang --target=x86_64 dummy.c",
        "plain ordinary source code\nfn main() { println!(\"hi\"); }\n",
        "",
    ]
    .iter()
    .map(|text| (*text).to_owned())
    .collect();
    texts.push(format!("ghp_{} is too short", alnum(10, 24)));
    texts.push(format!(
        "AKIA{} is lower case",
        upper_base32(16).to_lowercase()
    ));
    texts.push(format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----",
        alnum(64, 25)
    ));
    texts
}

#[test]
fn look_alikes_are_returned_borrowed_and_unchanged() {
    for text in look_alikes() {
        let redacted = redact(&text);
        assert!(
            matches!(redacted, Cow::Borrowed(_)),
            "changed: {text:?} -> {redacted:?}"
        );
    }
}

/// Secrets of every rule in their usual settings, with the look-alikes.
fn mixed_corpus() -> Vec<String> {
    let mut corpus: Vec<String> = look_alikes();
    for (_, secret) in secrets() {
        corpus.push(format!("a {secret} b"));
        corpus.push(format!("token={secret}"));
        corpus.push(format!("Authorization: Bearer {secret}"));
        corpus.push(format!("https://u:{secret}@h.example"));
    }
    corpus.push("password=hunter2 and https://u:p4ss@h and Bearer abcdefgh1234".to_owned());
    corpus.push(REDACTED.to_owned());
    corpus.push(format!(
        "password={REDACTED} \"token\": \"{REDACTED}\" Bearer {REDACTED}"
    ));
    corpus
}

#[test]
fn redaction_is_idempotent_over_the_whole_corpus() {
    for text in &mixed_corpus() {
        let once = redact(text).into_owned();
        let twice = redact(&once);
        assert_eq!(twice, once, "not idempotent on {text:?}");
        assert!(
            matches!(twice, Cow::Borrowed(_)),
            "second pass changed {once:?}"
        );
    }
}

/// A thread keeps its regex capture slots from one text to the next: what
/// one match left in them must never decide the next text. Each text is
/// redacted once after every other on one thread, and compared with the
/// answer of a thread that never redacted anything before.
#[test]
fn a_text_is_redacted_the_same_whatever_was_redacted_before_it() {
    let corpus = mixed_corpus();
    let fresh: Vec<String> = corpus
        .iter()
        .map(|text| {
            let text = text.clone();
            std::thread::spawn(move || redact(&text).into_owned())
                .join()
                .unwrap()
        })
        .collect();
    for (index, expected) in fresh.iter().enumerate() {
        for previous in &corpus {
            redact(previous);
            assert_eq!(&redact(&corpus[index]), expected, "after {previous:?}");
        }
    }
}

#[test]
fn non_ascii_text_around_secrets_survives() {
    let token = format!("ghp_{}", alnum(36, 26));
    let text = format!("Пароль: password=hunter2 ✓ 日本語 →{token}← émoji 🔐");
    assert_eq!(
        redact(&text),
        format!("Пароль: password={REDACTED} ✓ 日本語 →{REDACTED}← émoji 🔐")
    );
    let value = "mot de passe: password=sécurité fin";
    assert_eq!(
        redact(value),
        format!("mot de passe: password={REDACTED} fin")
    );
}

#[test]
fn several_secrets_in_one_text_are_all_redacted() {
    let all: Vec<String> = secrets().into_iter().map(|(_, secret)| secret).collect();
    let text = all.join(" | ");
    let redacted = redact(&text);
    for secret in &all {
        assert!(!redacted.contains(secret.as_str()), "leaked {secret}");
    }
    assert_eq!(redacted.matches(REDACTED).count(), all.len(), "{redacted}");
}

#[test]
fn a_secret_inside_a_value_that_is_not_one_is_still_found() {
    let token = format!("ghp_{}", alnum(36, 27));
    assert_eq!(
        redact(&format!("api_key: \"<{token}>\"")),
        format!("api_key: \"<{REDACTED}>\"")
    );
}

#[test]
fn redact_value_walks_nested_json() {
    let github = format!("ghp_{}", alnum(36, 28));
    let key_named_token = format!("ghs_{}", alnum(36, 29));
    let mut value = json!({
        "tool": "shell",
        "result": {
            "stdout": format!("export GITHUB_TOKEN={github}\ndone"),
            "env": { "API_KEY": "abc", "HOME": "/home/u" },
            "lines": ["ok", format!("key {github}"), 3, null],
        },
        "headers": [{ "Authorization": "Bearer xyz" }, { "Accept": "text/plain" }],
        "usage": { "max_tokens": 100, "tokens_used": 42, "prompt_tokens": 10, "token_count": 5 },
        "password": null,
        "has_secret": true,
        "token_type": "bearer",
        "apiKey": 12345,
        "credentials": { "user": "a", "pass": "b" },
        key_named_token.clone(): "value",
    });
    redact_value(&mut value);
    let expected = json!({
        "tool": "shell",
        "result": {
            "stdout": format!("export GITHUB_TOKEN={REDACTED}\ndone"),
            "env": { "API_KEY": REDACTED, "HOME": "/home/u" },
            "lines": ["ok", format!("key {REDACTED}"), 3, null],
        },
        "headers": [{ "Authorization": REDACTED }, { "Accept": "text/plain" }],
        "usage": { "max_tokens": 100, "tokens_used": 42, "prompt_tokens": 10, "token_count": 5 },
        "password": null,
        "has_secret": true,
        "token_type": "bearer",
        "apiKey": REDACTED,
        "credentials": REDACTED,
        REDACTED: "value",
    });
    assert_eq!(value, expected);
    let before = value.clone();
    redact_value(&mut value);
    assert_eq!(value, before, "redact_value is not idempotent");
}

#[test]
fn redact_value_survives_very_deep_nesting() {
    let secret = format!("ghp_{}", alnum(36, 30));
    let mut value = Value::String(secret);
    for _ in 0..3000 {
        value = Value::Array(vec![value]);
    }
    redact_value(&mut value);
    let mut inner = &value;
    while let Value::Array(items) = inner {
        inner = &items[0];
    }
    assert_eq!(inner, &Value::String(REDACTED.to_owned()));
}

#[test]
fn secret_keys_and_their_look_alikes() {
    for key in [
        "password",
        "Password",
        "db_password",
        "PASSWD",
        "passphrase",
        "secret",
        "client_secret",
        "clientSecret",
        "token",
        "access_token",
        "accessToken",
        "refresh_token",
        "GITHUB_TOKEN",
        "api_key",
        "apiKey",
        "API-KEY",
        "x-api-key",
        "private_key",
        "privateKey",
        "aws_secret_access_key",
        "authorization",
        "Proxy-Authorization",
        "cookie",
        "Set-Cookie",
        "credentials",
    ] {
        assert!(is_secret_key(key), "{key} should be secret");
    }
    for key in [
        "tokens_used",
        "max_tokens",
        "prompt_tokens",
        "token_count",
        "token_type",
        "tokenizer",
        "max_token",
        "token_limit",
        "tokenTtl",
        "public_key",
        "key",
        "keyboard",
        "secrets_count",
        "password_length",
        "password_min_length",
        "author",
        "path",
        "",
    ] {
        assert!(!is_secret_key(key), "{key} should not be secret");
    }
}
