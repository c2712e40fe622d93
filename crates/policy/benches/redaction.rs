//! Throughput of secret redaction on tool output, and latency of shell
//! command analysis. Fake secrets are assembled at run time.

use std::hint::black_box;

use bridge_policy::redact::{redact, redact_value};
use bridge_policy::shell;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const MEGABYTE: usize = 1024 * 1024;

/// Lines of the kind tools print: source code, build and server logs,
/// including words that look a little like secrets.
fn ordinary_line(index: usize) -> String {
    match index % 8 {
        0 => format!(
            "    let total_{index} = items.iter().map(|item| item.price * item.quantity).sum::<u64>();"
        ),
        1 => format!(
            "2024-05-01T10:{:02}:{:02}Z INFO  http: GET /api/v1/orders/{index} 200 {}ms",
            index % 60,
            index % 59,
            index % 97
        ),
        2 => format!(
            "   Compiling serde_json v1.0.{} (registry+https://github.com/rust-lang/crates.io-index)",
            index % 140
        ),
        3 => format!(
            "    fn handle_{index}(&mut self, request: &Request) -> Result<Response, Error> {{"
        ),
        4 => format!(
            "DEBUG model usage: prompt_tokens={} max_tokens=4096 task-list updated",
            index * 3
        ),
        5 => format!(
            "commit {:040x} Merge pull request #{index} from feature/risk-management",
            index * 7919
        ),
        6 => {
            "        // The password reset flow sends a one-time link; see docs/auth.md.".to_owned()
        }
        _ => format!(
            "test tests::case_{index} ... ok ({} tests, Größe {index} — fine)",
            index % 13
        ),
    }
}

fn ordinary_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut index = 0;
    while text.len() < bytes {
        text.push_str(&ordinary_line(index));
        text.push('\n');
        index += 1;
    }
    text
}

fn fake_secret(index: usize) -> String {
    let body: String = (0..40)
        .map(|offset| char::from(b"aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL"[(index + offset * 7) % 32]))
        .collect();
    match index % 5 {
        0 => format!("export GITHUB_TOKEN=gh{}_{}", "p", &body[..36]),
        1 => format!("Authorization: Bearer {body}"),
        2 => format!("client = OpenAI(api_key=\"sk-{body}\")"),
        3 => format!("AWS key AKIA{} in config", "QRSTUVWXYZ234567"),
        _ => format!("db: postgres://app:{}@db.internal:5432/app", &body[..12]),
    }
}

/// Configuration-shaped credentials: netrc, cookies, curl, docker, Azure,
/// `*_KEY`, `*_PASS` and URLs with an empty user.
fn fake_config_secret(index: usize) -> String {
    let body: String = (0..40)
        .map(|offset| char::from(b"aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL"[(index + offset * 7) % 32]))
        .collect();
    match index % 8 {
        0 => format!("machine api.example.com login ci password {}", &body[..16]),
        1 => format!(
            "> Cookie: sessionid={}; csrftoken={}",
            &body[..20],
            &body[20..]
        ),
        2 => format!(
            "+ curl -sS -u deploy:{} https://deploy.example.com",
            &body[..14]
        ),
        3 => format!("      \"auth\": \"{}=\"", &body[..28]),
        4 => format!(
            "AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
            body
        ),
        5 => format!("SIGNING_KEY={body}"),
        6 => format!("SMTP_PASS: \"{}\"", &body[..12]),
        _ => format!("REDIS_URL=redis://:{}@cache:6379/0", &body[..12]),
    }
}

/// Ordinary text with a configuration credential line about every 2 KB.
fn text_with_config_secrets(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut index = 0;
    let mut next_secret_at = 2048;
    while text.len() < bytes {
        if text.len() >= next_secret_at {
            text.push_str(&fake_config_secret(index));
            text.push('\n');
            next_secret_at += 2048;
        }
        text.push_str(&ordinary_line(index));
        text.push('\n');
        index += 1;
    }
    text
}

/// Ordinary text with a secret line about every 2 KB.
fn text_with_secrets(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut index = 0;
    let mut next_secret_at = 2048;
    while text.len() < bytes {
        if text.len() >= next_secret_at {
            text.push_str(&fake_secret(index));
            text.push('\n');
            next_secret_at += 2048;
        }
        text.push_str(&ordinary_line(index));
        text.push('\n');
        index += 1;
    }
    text
}

/// Lock files: sha256 checksums in hex (Cargo.lock) and sha512 integrity
/// hashes in base64 (package-lock.json), the lines most like key bodies.
fn lockfile_text(bytes: usize) -> String {
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random = |alphabet: &[u8], length: usize| -> String {
        (0..length)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                char::from(alphabet[((state >> 33) % alphabet.len() as u64) as usize])
            })
            .collect()
    };
    let mut text = String::with_capacity(bytes + 400);
    let mut index = 0;
    while text.len() < bytes {
        let checksum = random(b"0123456789abcdef", 64);
        let integrity = random(BASE64, 86);
        text.push_str(&format!(
            "[[package]]\nname = \"crate-{index}\"\nversion = \"1.0.{index}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{checksum}\"\n\n    \"node_modules/pkg-{index}\": {{\n      \"integrity\": \"sha512-{integrity}==\"\n    }},\n"
        ));
        index += 1;
    }
    text
}

/// A shell tool result as the runner redacts it: ~8 KB of output with two
/// secrets, metadata, and an environment map.
fn tool_result() -> Value {
    let mut stdout = ordinary_text(8 * 1024);
    stdout.insert_str(4000, &format!("{}\n", fake_secret(0)));
    json!({
        "tool": "shell",
        "command": "cargo test --workspace 2>&1 | tail -200",
        "exit_code": 0,
        "duration_ms": 5123,
        "stdout": stdout,
        "stderr": format!("warning: unused variable\n{}\n", fake_secret(1)),
        "truncated": false,
        "env": { "PATH": "/usr/bin:/bin", "HOME": "/home/dev", "API_KEY": "abc123", "LANG": "C.UTF-8" },
        "files": ["src/lib.rs", "src/main.rs", "tests/all.rs"],
        "usage": { "prompt_tokens": 1200, "max_tokens": 4096 },
    })
}

fn bench_redaction(c: &mut Criterion) {
    let clean = ordinary_text(MEGABYTE);
    let dirty = text_with_secrets(MEGABYTE);
    assert!(
        matches!(redact(&clean), std::borrow::Cow::Borrowed(_)),
        "clean text has a false positive"
    );
    let redacted_count = redact(&dirty).matches("[REDACTED]").count();
    assert!(
        redacted_count >= MEGABYTE / 2048 - 1,
        "only {redacted_count} secrets redacted"
    );

    let config = text_with_config_secrets(MEGABYTE);
    let config_count = redact(&config).matches("[REDACTED]").count();
    assert!(
        config_count >= MEGABYTE / 2048 - 1,
        "only {config_count} configuration secrets redacted"
    );

    let lockfiles = lockfile_text(MEGABYTE);
    assert!(
        matches!(redact(&lockfiles), std::borrow::Cow::Borrowed(_)),
        "lock file hashes have a false positive"
    );

    let mut group = c.benchmark_group("redact");
    group.throughput(Throughput::Bytes(clean.len() as u64));
    group.bench_function("1MB_no_secrets", |b| {
        b.iter(|| redact(black_box(&clean)).len())
    });
    group.throughput(Throughput::Bytes(dirty.len() as u64));
    group.bench_function("1MB_secret_every_2KB", |b| {
        b.iter(|| redact(black_box(&dirty)).len())
    });
    group.throughput(Throughput::Bytes(config.len() as u64));
    group.bench_function("1MB_config_secret_every_2KB", |b| {
        b.iter(|| redact(black_box(&config)).len())
    });
    group.throughput(Throughput::Bytes(lockfiles.len() as u64));
    group.bench_function("1MB_lockfile_hashes", |b| {
        b.iter(|| redact(black_box(&lockfiles)).len())
    });
    let result = tool_result();
    let result_bytes = serde_json::to_string(&result).map_or(0, |text| text.len());
    group.throughput(Throughput::Bytes(result_bytes as u64));
    group.bench_function("redact_value_tool_result", |b| {
        b.iter_batched(
            || result.clone(),
            |mut value| {
                redact_value(&mut value);
                value
            },
            criterion::BatchSize::SmallInput,
        )
    });
    // What the writer of the audit log redacts for one ordinary tool call:
    // the short header strings and small argument and result records.
    let call_strings = [
        "s-8f14e45fceea167a",
        "toolCall:rpc",
        "echo",
        "allow",
        "hello from the bench",
        "src/main.rs",
    ];
    group.throughput(Throughput::Elements(call_strings.len() as u64));
    group.bench_function("short_strings_of_a_call", |b| {
        b.iter(|| {
            call_strings
                .iter()
                .map(|text| redact(black_box(text)).len())
                .sum::<usize>()
        })
    });
    let hits = search_result(16_000);
    group.throughput(Throughput::Elements(16_000));
    group.bench_function("redact_value_16k_search_hits", |b| {
        b.iter_batched(
            || hits.clone(),
            |mut value| {
                redact_value(&mut value);
                value
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// A `search_code` result of `count` hits on code that says "token" a lot,
/// as real code does.
fn search_result(count: usize) -> Value {
    let hits: Vec<Value> = (0..count)
        .map(|i| {
            serde_json::json!({
                "file": format!("src/module_{}/file_{i}.rs", i % 97),
                "line": i % 200 + 1,
                "column": 1,
                "snippet": if i % 2 == 0 {
                    format!("fn handle_token_{i}(token: &Token) -> Result<(), Error> {{")
                } else {
                    format!("fn handle_client_{i}(client: &Client) -> Result<(), Error> {{")
                },
            })
        })
        .collect();
    serde_json::json!({"hits": hits, "truncated": false, "filesSearched": 20000})
}

fn bench_shell(c: &mut Criterion) {
    let workspace = tempfile::tempdir().unwrap_or_else(|err| panic!("temp dir: {err}"));
    std::fs::create_dir_all(workspace.path().join("src"))
        .unwrap_or_else(|err| panic!("mkdir: {err}"));
    let home = workspace.path().parent().map(std::path::Path::to_path_buf);
    let short = "ls -la src";
    let pipeline = "cat src/main.rs src/lib.rs | grep -v '^//' | sed -n '1,400p' | sort | uniq -c \
                    | sort -rn | head -n 50 | cut -c1-120 | tr -s ' ' | wc -l && git status --short && git log --oneline -n 20";
    assert!(shell::analyze(short, workspace.path(), home.as_deref()).is_safe());
    assert!(shell::analyze(pipeline, workspace.path(), home.as_deref()).is_safe());

    let mut group = c.benchmark_group("shell_analyze");
    group.bench_function("short_safe_command", |b| {
        b.iter(|| shell::analyze(black_box(short), workspace.path(), home.as_deref()))
    });
    group.bench_function("long_pipeline", |b| {
        b.iter(|| shell::analyze(black_box(pipeline), workspace.path(), home.as_deref()))
    });
    group.finish();
}

criterion_group!(benches, bench_redaction, bench_shell);
criterion_main!(benches);
