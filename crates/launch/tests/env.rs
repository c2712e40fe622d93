//! The environment policy, on a made-up parent environment.

use std::ffi::OsString;

use bridge_launch::{ChildEnv, is_secret_env_name};

fn parent() -> Vec<(OsString, OsString)> {
    [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/ada"),
        ("LANG", "C.UTF-8"),
        ("CARGO_HOME", "/home/ada/.cargo"),
        (
            "COPILOT_BRIDGE_TOKEN",
            "cb_0123456789abcdef0123456789abcdef",
        ),
        ("COPILOT_BYOK_API_KEY", "sk-live-key"),
        ("OPENAI_API_KEY", "sk-another"),
        ("GITHUB_TOKEN", "gh-value"),
        ("TAP_PROVIDER_TOKEN", "tap"),
        ("MY_PASSWORD", "hunter2"),
        ("INNOCENT", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("GIT_DIR", "/elsewhere/.git"),
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("GIT_AUTHOR_NAME", "Ada"),
        ("XDG_CONFIG_HOME", "/home/ada/.config"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect()
}

fn names(vars: &[(OsString, OsString)]) -> Vec<String> {
    let mut names: Vec<String> = vars
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn minimal_passes_only_the_base_and_named_extras() {
    let vars = ChildEnv::minimal().build_from(parent());
    assert_eq!(names(&vars), ["HOME", "LANG", "PATH"]);
    let vars = ChildEnv::minimal()
        .inherit(["XDG_CONFIG_HOME", "GITHUB_TOKEN"])
        .build_from(parent());
    assert_eq!(
        names(&vars),
        ["HOME", "LANG", "PATH", "XDG_CONFIG_HOME"],
        "a secret is not inherited even when asked for by name"
    );
}

#[test]
fn scrubbed_passes_everything_but_secrets_and_behaviour_changers() {
    let vars = ChildEnv::scrubbed().build_from(parent());
    assert_eq!(
        names(&vars),
        [
            "CARGO_HOME",
            "GIT_AUTHOR_NAME",
            "HOME",
            "LANG",
            "PATH",
            "XDG_CONFIG_HOME"
        ]
    );
}

#[test]
fn only_set_gives_a_child_a_secret_and_set_wins() {
    let vars = ChildEnv::minimal()
        .set("COPILOT_SDK_AUTH_TOKEN", "gho_for_the_cli")
        .set("HOME", "/sandbox")
        .remove(["LANG"])
        .build_from(parent());
    assert_eq!(names(&vars), ["COPILOT_SDK_AUTH_TOKEN", "HOME", "PATH"]);
    assert!(vars.contains(&("HOME".into(), "/sandbox".into())));
}

#[test]
fn secret_variable_names_are_recognised() {
    for name in [
        "GITHUB_TOKEN",
        "gh_token",
        "COPILOT_API_URL",
        "OPENAI_BASE_URL",
        "ANTHROPIC_MODEL",
        "AWS_REGION",
        "AZURE_TENANT",
        "DB_PASSWORD",
        "my_passwd",
        "STRIPE_API_KEY",
        "MAPS_APIKEY",
        "S3_ACCESS_KEY_ID",
        "SSH_PRIVATE_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "Session_Id",
        "COOKIE_JAR",
        "CLIENT_SECRET",
        "OPENCLAW_GATEWAY_TOKEN",
        "TAP_PROVIDER_TOKEN",
        "RIPGREP_CONFIG_PATH",
        "BASH_ENV",
        "LD_PRELOAD",
        "GIT_DIR",
        "GIT_EXTERNAL_DIFF",
        "GIT_CONFIG_GLOBAL",
        "GIT_SSH_COMMAND",
    ] {
        assert!(is_secret_env_name(name), "{name} should be dropped");
    }
    for name in [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TERM",
        "USER",
        "CARGO_HOME",
        "RUST_LOG",
        "TMPDIR",
        "GIT_AUTHOR_NAME",
        "EDITOR",
    ] {
        assert!(!is_secret_env_name(name), "{name} should be kept");
    }
}

#[test]
fn scrub_env_keeps_ordinary_variables_and_drops_secrets() {
    let token = format!("ghp_{}", "a".repeat(36));
    let vars = vec![
        (OsString::from("PATH"), OsString::from("/usr/bin:/bin")),
        (OsString::from("HOME"), OsString::from("/home/dev")),
        (OsString::from("LANG"), OsString::from("C.UTF-8")),
        (
            OsString::from("GITHUB_TOKEN"),
            OsString::from(token.clone()),
        ),
        (OsString::from("COPILOT_HOME"), OsString::from("/x")),
        (OsString::from("innocent_name"), OsString::from(token)),
    ];
    let kept: Vec<String> = ChildEnv::scrubbed()
        .build_from(vars)
        .into_iter()
        .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
        .collect();
    assert_eq!(
        kept,
        vec!["PATH=/usr/bin:/bin", "HOME=/home/dev", "LANG=C.UTF-8"]
    );
}
