//! Credentials found by the red-team review, each in the places tool output
//! shows them: plain text, env files, YAML and JSON (compact, pretty, nested
//! inside another JSON string, and as a tree through `redact_value`).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use bridge_policy::redact::{self, REDACTED, is_secret_key, redact, redact_value};
use serde_json::{Value, json};

use super::alnum;

const R: &str = REDACTED;

/// Redacts `text`, checks that none of `secrets` survives and that a second
/// pass changes nothing, and returns the result.
fn redacted(text: &str, secrets: &[&str]) -> String {
    let once = redact(text).into_owned();
    for secret in secrets {
        assert!(
            !once.contains(secret),
            "{secret:?} leaked from {text:?}: {once:?}"
        );
    }
    assert!(once.contains(REDACTED), "nothing redacted in {text:?}");
    let twice = redact(&once);
    assert!(
        matches!(twice, Cow::Borrowed(_)),
        "second pass changed {once:?} into {twice:?}"
    );
    once
}

/// Checks `value` as compact, pretty and nested JSON text and as a tree:
/// no secret survives, every `kept` string does.
fn assert_json_redacted(value: &Value, secrets: &[&str], kept: &[&str]) {
    let compact = serde_json::to_string(value).unwrap();
    let pretty = serde_json::to_string_pretty(value).unwrap();
    let nested = serde_json::to_string(&json!({ "stdout": pretty })).unwrap();
    for text in [compact, pretty, nested] {
        let output = redacted(&text, secrets);
        for kept in kept {
            assert!(output.contains(kept), "{kept:?} lost from {text}: {output}");
        }
    }
    let mut tree = value.clone();
    redact_value(&mut tree);
    let output = serde_json::to_string(&tree).unwrap();
    for secret in secrets {
        assert!(
            !output.contains(secret),
            "redact_value leaked {secret:?}: {output}"
        );
    }
    for kept in kept {
        assert!(
            output.contains(kept),
            "redact_value lost {kept:?}: {output}"
        );
    }
}

/// Deterministic pseudo-random characters from `alphabet` (an LCG), shaped
/// like generated keys rather than like words.
fn random_from(alphabet: &[u8], length: usize, seed: u64) -> String {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            alphabet[((state >> 33) % alphabet.len() as u64) as usize] as char
        })
        .collect()
}

fn base64ish(length: usize, seed: u64) -> String {
    random_from(
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        length,
        seed,
    )
}

fn hex(length: usize, seed: u64) -> String {
    random_from(b"0123456789abcdef", length, seed)
}

fn github_token(seed: usize) -> String {
    format!("ghp_{}", alnum(36, seed))
}

#[test]
fn keys_ending_in_pass_are_secret_in_every_format() {
    assert_eq!(
        redacted("connecting with DB_PASS=Hunter2db as app", &["Hunter2db"]),
        format!("connecting with DB_PASS={R} as app")
    );
    let env = "DB_HOST=db.internal\nDB_PASS=Hunter2db\nSMTP_PASS=\"mail pw 9\"\nexport REDIS_PASS='R3dis-pw'\nBYPASS=enabled\n";
    assert_eq!(
        redacted(env, &["Hunter2db", "mail pw 9", "R3dis-pw"]),
        format!(
            "DB_HOST=db.internal\nDB_PASS={R}\nSMTP_PASS=\"{R}\"\nexport REDIS_PASS='{R}'\nBYPASS=enabled\n"
        )
    );
    let yaml = "smtp:\n  host: mail.internal\n  SMTP_PASS: \"Sm7p-pw\"\n  smtpPass: Camel9pw\n  pass: Plain1pw\n  bypass: enabled\n";
    assert_eq!(
        redacted(yaml, &["Sm7p-pw", "Camel9pw", "Plain1pw"]),
        format!(
            "smtp:\n  host: mail.internal\n  SMTP_PASS: \"{R}\"\n  smtpPass: {R}\n  pass: {R}\n  bypass: enabled\n"
        )
    );
    assert_json_redacted(
        &json!({
            "db_pass": "Hunter2db",
            "SMTP_PASS": "Sm7p-pw",
            "smtpPass": "Camel9pw",
            "bypass": "enabled",
            "compass": "north",
        }),
        &["Hunter2db", "Sm7p-pw", "Camel9pw"],
        &["enabled", "north"],
    );
    for key in ["pass", "DB_PASS", "smtp-pass", "dbPass", "SMTP_PASS"] {
        assert!(is_secret_key(key), "{key} should be secret");
    }
    for key in ["bypass", "compass", "passthrough", "pass_count", "passes"] {
        assert!(!is_secret_key(key), "{key} should not be secret");
    }
}

#[test]
fn netrc_passwords_are_secret_in_every_format() {
    assert_eq!(
        redacted(
            "machine api.example.com login bob password Hunter2nt",
            &["Hunter2nt"]
        ),
        format!("machine api.example.com login bob password {R}")
    );
    let file = "machine github.com\n  login octocat\n  password Gh0st-pw\n\nmachine ftp.example.com login anon passwd Ftp9pw port 21\ndefault login guest password Guest7pw\n";
    assert_eq!(
        redacted(file, &["Gh0st-pw", "Ftp9pw", "Guest7pw"]),
        format!(
            "machine github.com\n  login octocat\n  password {R}\n\nmachine ftp.example.com login anon passwd {R} port 21\ndefault login guest password {R}\n"
        )
    );
    assert_eq!(
        redacted(
            "NETRC_DATA=\"machine h.example login bob password Hunter2nt\"\n",
            &["Hunter2nt"]
        ),
        format!("NETRC_DATA=\"machine h.example login bob password {R}\"\n")
    );
    let yaml =
        "files:\n  .netrc: |\n    machine h.example\n    login bob\n    PASSWORD Hunter2nt\n";
    assert_eq!(
        redacted(yaml, &["Hunter2nt"]),
        format!("files:\n  .netrc: |\n    machine h.example\n    login bob\n    PASSWORD {R}\n")
    );
    assert_json_redacted(
        &json!({ "path": ".netrc", "content": file }),
        &["Gh0st-pw", "Ftp9pw", "Guest7pw"],
        &["octocat", "port 21"],
    );
}

#[test]
fn a_token_in_the_part_of_a_match_that_is_kept_is_still_redacted() {
    let token = github_token(41);
    let cases = [
        (
            format!("machine api.github.com login {token} password x-oauth-basic"),
            format!("machine api.github.com login {R} password {R}"),
        ),
        (
            format!("git clone https://{token}:x-oauth-basic@github.com/o/r.git"),
            format!("git clone https://{R}:{R}@github.com/o/r.git"),
        ),
        (
            format!("curl -u {token}:x-oauth-basic https://api.github.com/user"),
            format!("curl -u {R}:{R} https://api.github.com/user"),
        ),
        (
            // The netrc password is a variable, so the match is kept, but
            // the token before it is not.
            format!("machine h login {token} password $NETRC_PASSWORD"),
            format!("machine h login {R} password $NETRC_PASSWORD"),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redacted(&input, &[&token]), expected);
    }
}

#[test]
fn npmrc_auth_and_password_are_secret_in_every_format() {
    let auth = format!("{}==", base64ish(30, 1));
    let password = format!("{}=", base64ish(15, 2));
    let npm_token = format!("npm_{}", alnum(36, 42));
    let npmrc = format!(
        "registry=https://registry.example.com/\n_auth={auth}\nalways-auth=true\n//registry.example.com/:username=bob\n//registry.example.com/:_password={password}\n//registry.example.com/:_authToken={npm_token}\n"
    );
    assert_eq!(
        redacted(&npmrc, &[&auth, &password, &npm_token]),
        format!(
            "registry=https://registry.example.com/\n_auth={R}\nalways-auth=true\n//registry.example.com/:username=bob\n//registry.example.com/:_password={R}\n//registry.example.com/:_authToken={R}\n"
        )
    );
    assert_eq!(
        redacted(&format!("npm config get: _auth = \"{auth}\""), &[&auth]),
        format!("npm config get: _auth = \"{R}\"")
    );
    assert_eq!(
        redacted(&format!("npm_config__auth={auth}\nCI=true\n"), &[&auth]),
        format!("npm_config__auth={R}\nCI=true\n")
    );
    let yaml = format!("npm:\n  _auth: \"{auth}\"\n  always-auth: true\n");
    assert_eq!(
        redacted(&yaml, &[&auth]),
        format!("npm:\n  _auth: \"{R}\"\n  always-auth: true\n")
    );
    assert_json_redacted(
        &json!({ "_auth": auth, "always-auth": true, "npmrc": npmrc }),
        &[&auth, &password, &npm_token],
        &["always-auth", "username=bob"],
    );
}

#[test]
fn cookie_headers_are_secret_in_every_format() {
    let verbose = "< HTTP/1.1 200 OK\n< Set-Cookie: sessionid=Ses5ion-v4l; Path=/; HttpOnly\r\n> Cookie: sessionid=Ses5ion-v4l; csrftoken=Csrf7tok\n< Content-Type: text/html\n";
    assert_eq!(
        redacted(verbose, &["Ses5ion-v4l", "Csrf7tok"]),
        format!(
            "< HTTP/1.1 200 OK\n< Set-Cookie: {R}\r\n> Cookie: {R}\n< Content-Type: text/html\n"
        )
    );
    assert_eq!(
        redacted(
            "curl -H 'Cookie: sessionid=Ses5ion-v4l' https://example.com",
            &["Ses5ion-v4l"]
        ),
        format!("curl -H 'Cookie: {R}' https://example.com")
    );
    assert_eq!(
        redacted(
            "HTTP_COOKIE=sessionid=Ses5ion-v4l; csrftoken=Csrf7tok\nHOME=/home/u\n",
            &["Ses5ion-v4l", "Csrf7tok"]
        ),
        format!("HTTP_COOKIE={R}\nHOME=/home/u\n")
    );
    let yaml =
        "headers:\n  Cookie: \"sessionid=Ses5ion-v4l; csrftoken=Csrf7tok\"\n  Accept: text/html\n";
    assert_eq!(
        redacted(yaml, &["Ses5ion-v4l", "Csrf7tok"]),
        format!("headers:\n  Cookie: \"{R}\"\n  Accept: text/html\n")
    );
    assert_json_redacted(
        &json!({
            "headers": {
                "Cookie": "sessionid=Ses5ion-v4l; csrftoken=Csrf7tok",
                "Set-Cookie": "sessionid=Ses5ion-v4l; Path=/; Secure",
                "Accept": "text/html",
            },
            "status": 200,
        }),
        &["Ses5ion-v4l", "Csrf7tok"],
        &["text/html", "200"],
    );
}

#[test]
fn docker_config_auth_is_secret_but_author_is_not() {
    let auth = format!("{}=", base64ish(27, 3));
    let config = format!(
        "{{\n  \"auths\": {{\n    \"https://index.docker.io/v1/\": {{\n      \"auth\": \"{auth}\"\n    }}\n  }},\n  \"credsStore\": \"desktop\",\n  \"author\": \"Jane Doe\"\n}}\n"
    );
    assert_eq!(
        redacted(&config, &[&auth]),
        config.replace(&auth, R),
        "only the auth value goes"
    );
    let yaml = format!(
        "data:\n  .dockerconfigjson: '{{\"auths\":{{\"r.example\":{{\"auth\":\"{auth}\"}}}}}}'\n"
    );
    assert_eq!(redacted(&yaml, &[&auth]), yaml.replace(&auth, R));
    let env =
        format!("DOCKER_AUTH_CONFIG={{\"auths\":{{\"r.example\":{{\"auth\":\"{auth}\"}}}}}}\n");
    assert_eq!(redacted(&env, &[&auth]), env.replace(&auth, R));
    let tree: Value = serde_json::from_str(&config).unwrap();
    assert_json_redacted(&tree, &[&auth], &["desktop", "Jane Doe", "index.docker.io"]);
    assert!(is_secret_key("auth"));
    assert!(!is_secret_key("author"));
    assert!(!is_secret_key("auths"));
}

#[test]
fn azure_connection_string_keys_are_secret_in_every_format() {
    let account_key = format!("{}==", base64ish(86, 4));
    let access_key = format!("{}=", base64ish(43, 5));
    let storage = format!(
        "DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey={account_key};EndpointSuffix=core.windows.net"
    );
    let bus = format!(
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={access_key}"
    );
    let secrets = [account_key.as_str(), access_key.as_str()];
    assert_eq!(
        redacted(&storage, &secrets),
        format!(
            "DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey={R};EndpointSuffix=core.windows.net"
        )
    );
    let env = format!("AZURE_STORAGE_CONNECTION_STRING=\"{storage}\"\nSERVICE_BUS={bus}\n");
    assert_eq!(
        redacted(&env, &secrets),
        env.replace(&account_key, R).replace(&access_key, R)
    );
    let yaml = format!("ConnectionStrings:\n  Bus: \"{bus}\"\n");
    assert_eq!(redacted(&yaml, &secrets), yaml.replace(&access_key, R));
    assert_json_redacted(
        &json!({
            "ConnectionStrings": { "Storage": storage, "Bus": bus },
            "AccountKey": account_key,
        }),
        &secrets,
        &[
            "AccountName=myacct",
            "EndpointSuffix=core.windows.net",
            "SharedAccessKeyName=RootManageSharedAccessKey",
        ],
    );
}

#[test]
fn named_and_random_looking_keys_are_secret_in_every_format() {
    let encryption = base64ish(44, 6);
    let signing = alnum(32, 43);
    let master = hex(32, 7);
    let private = base64ish(40, 8);
    let key_base = hex(128, 9);
    let webhook = base64ish(24, 10);
    let public = base64ish(60, 11);
    let secrets = [
        encryption.as_str(),
        signing.as_str(),
        master.as_str(),
        private.as_str(),
        key_base.as_str(),
        webhook.as_str(),
    ];
    let env = format!(
        "ENCRYPTION_KEY={encryption}\nSIGNING_KEY=\"{signing}\"\nMASTER_KEY={master}\nPRIVATE_KEY={private}\nSECRET_KEY_BASE={key_base}\nWEBHOOK_KEY={webhook}\nPUBLIC_KEY={public}\nPRIMARY_KEY=id\nSORT_KEY=name\nKEY=value\nCACHE_KEY=user_profile_v2_by_id\nSSH_KEY=~/.ssh/id_ed25519\n"
    );
    assert_eq!(
        redacted(&env, &secrets),
        format!(
            "ENCRYPTION_KEY={R}\nSIGNING_KEY=\"{R}\"\nMASTER_KEY={R}\nPRIVATE_KEY={R}\nSECRET_KEY_BASE={R}\nWEBHOOK_KEY={R}\nPUBLIC_KEY={public}\nPRIMARY_KEY=id\nSORT_KEY=name\nKEY=value\nCACHE_KEY=user_profile_v2_by_id\nSSH_KEY=~/.ssh/id_ed25519\n"
        )
    );
    assert_eq!(
        redacted(
            &format!("Loaded ENCRYPTION_KEY={encryption} from .env"),
            &secrets
        ),
        format!("Loaded ENCRYPTION_KEY={R} from .env")
    );
    // A named key is a secret whatever its value; `*_KEY` only when random.
    assert_eq!(
        redacted(
            "MASTER_KEY=changeme SORT_KEY=changeme",
            &["MASTER_KEY=changeme"]
        ),
        format!("MASTER_KEY={R} SORT_KEY=changeme")
    );
    let yaml = format!(
        "app:\n  signing_key: \"{signing}\"\n  encryptionKey: {encryption}\n  webhookKey: {webhook}\n  sort_key: name\n  primary_key: id\n"
    );
    assert_eq!(
        redacted(&yaml, &secrets),
        format!(
            "app:\n  signing_key: \"{R}\"\n  encryptionKey: {R}\n  webhookKey: {R}\n  sort_key: name\n  primary_key: id\n"
        )
    );
    assert_json_redacted(
        &json!({
            "MASTER_KEY": master,
            "signingKey": signing,
            "SECRET_KEY_BASE": key_base,
            "webhook_key": webhook,
            "sort_key": "name",
            "primary_key": "id",
            "public_key": public,
            "cache_key": "user_profile_v2_by_id",
        }),
        &[&master, &signing, &key_base, &webhook],
        &["name", "user_profile_v2_by_id", &public],
    );
}

#[test]
fn curl_user_passwords_are_secret_in_every_format() {
    let cases = [
        (
            "curl -u bob:Hunter2cu https://api.example.com/v1",
            format!("curl -u bob:{R} https://api.example.com/v1"),
        ),
        (
            "curl --user 'bob:Hunter2cu' -X POST https://x.example",
            format!("curl --user 'bob:{R}' -X POST https://x.example"),
        ),
        (
            "/usr/bin/curl -sS --user=bob:Hunter2cu https://x.example",
            format!("/usr/bin/curl -sS --user=bob:{R} https://x.example"),
        ),
        (
            "curl -ubob:Hunter2cu https://x.example",
            format!("curl -ubob:{R} https://x.example"),
        ),
        (
            "curl -U proxy:Hunter2cu -x http://proxy:3128 https://x.example",
            format!("curl -U proxy:{R} -x http://proxy:3128 https://x.example"),
        ),
        (
            "CURL_OPTS=\"-u deploy:Hunter2cu --retry 3\"\n",
            format!("CURL_OPTS=\"-u deploy:{R} --retry 3\"\n"),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redacted(input, &["Hunter2cu"]), expected);
    }
    let yaml = "steps:\n  - run: curl -u deploy:D3ploy-pw https://deploy.example.com\n  - run: curl -u \"$USER:$PASS\" https://x.example\n  - run: curl --user bob:${{ secrets.PW }} https://x.example\n";
    assert_eq!(
        redacted(yaml, &["D3ploy-pw"]),
        yaml.replace("D3ploy-pw", R),
        "only the literal password goes"
    );
    assert_json_redacted(
        &json!({ "command": "curl -u bob:Hunter2cu https://x.example", "exit_code": 0 }),
        &["Hunter2cu"],
        &["curl -u bob:", "x.example"],
    );
}

#[test]
fn url_credentials_with_an_empty_user_are_secret_in_every_format() {
    let cases = [
        (
            "connecting to redis://:R3dis-pw@cache:6379/0",
            format!("connecting to redis://:{R}@cache:6379/0"),
        ),
        (
            "rediss://:R3dis-pw@cache.example.com:6380 amqp://:R3dis-pw@mq",
            format!("rediss://:{R}@cache.example.com:6380 amqp://:{R}@mq"),
        ),
        (
            "REDIS_URL=redis://:R3dis-pw@cache:6379/0\n",
            format!("REDIS_URL=redis://:{R}@cache:6379/0\n"),
        ),
        (
            "cache:\n  url: \"redis://:R3dis-pw@cache:6379\"\n",
            format!("cache:\n  url: \"redis://:{R}@cache:6379\"\n"),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redacted(input, &["R3dis-pw"]), expected);
    }
    assert_json_redacted(
        &json!({ "REDIS_URL": "redis://:R3dis-pw@cache:6379/0" }),
        &["R3dis-pw"],
        &["@cache:6379/0"],
    );
}

/// Hostile output built to make a rule rescan the text again and again
/// (a context rule matching from `machine`, `curl`, `Cookie:` or a URL
/// scheme up to its secret; a private key header without a footer) must
/// still take linear time.
#[test]
fn hostile_repetitions_are_redacted_in_linear_time() {
    const SIZE: usize = 128 * 1024;
    // Per shape, for an unoptimized build on a busy machine: each takes well
    // under a second; the quadratic private key rule this replaced took 8 s
    // on the header-only shapes.
    const BUDGET: Duration = Duration::from_secs(4);
    let shapes = [
        "-u a:b ",
        "curl token=abc ",
        "machine h login token=a ",
        "machine h login h login h ",
        "Cookie: a=b ",
        "https://u:p@h ",
        "SIGNING_KEY=aB3dE5gH7jK9mN1pQ2sT ",
        "-----BEGIN PRIVATE KEY----- password=x ",
        "-----BEGIN PRIVATE KEY-----;\n",
        "-----BEGIN RSA PRIVATE KEY-----; token=abc ",
    ];
    // Key bodies: a line of one, public blocks, footers without a body,
    // headers before lines too long to be body lines.
    let key_line = base64ish(64, 3);
    let shapes: Vec<String> = shapes
        .iter()
        .map(|shape| (*shape).to_owned())
        .chain([
            "# -----BEGIN PRIVATE KEY-----\n# ".to_owned(),
            "-----END PRIVATE KEY-----\n".to_owned(),
            format!("{key_line}\n-----END PRIVATE KEY-----\n"),
            "-----BEGIN CERTIFICATE-----\n".to_owned(),
            format!("-----BEGIN CERTIFICATE-----\n{key_line}\n"),
            format!("{key_line}\n"),
            format!("# {key_line}\n"),
            format!("{key_line} "),
        ])
        .collect();
    let long_line = "x".repeat(SIZE / 2);
    let mut texts: Vec<String> = shapes
        .iter()
        .map(|shape| shape.repeat(SIZE / shape.len()))
        .collect();
    texts.push(format!(
        "{}\n{long_line}",
        "-----BEGIN PRIVATE KEY-----;".repeat(SIZE / 56)
    ));
    texts.push(format!(
        "{}\n{long_line}",
        "-----BEGIN PRIVATE KEY-----\\n;".repeat(SIZE / 60)
    ));
    // The rules compile on first use: not part of any shape's time.
    redact::check_rules().unwrap();
    for text in texts {
        let shape = &text[..text.len().min(80)];
        let started = Instant::now();
        let output = redact(&text);
        let elapsed = started.elapsed();
        assert!(elapsed < BUDGET, "{shape:?} took {elapsed:?}");
        let again = redact(&output);
        assert!(
            matches!(again, Cow::Borrowed(_)),
            "{shape:?} not idempotent"
        );
    }
}
