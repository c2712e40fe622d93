//! Launching a coding agent's CLI from inside the hub (`copilot-bridge
//! launch` with a prompt, the orchestrator's sub-tasks): the command line
//! normalized the way nested runs need it, large values passed through
//! private files, and the agent's output read strictly.
//!
//! The rules (docs/hooks.md, "Nested launches"):
//! - **One prompt.** `--system-prompt X`, `--append-system-prompt X`,
//!   `-p X`, `--prompt X` and their `=` forms are taken out and merged, in
//!   order, into one `-p` payload, parts joined by a blank line.
//! - **No widening.** Explicit tool permission flags (`--allow-all-tools`,
//!   `--allow-tool`, `--deny-tool`) and path permission flags
//!   (`--allow-all-paths`, `--allow-path`, `--deny-path`) are kept as given;
//!   only when none of them appears is the command prefixed with
//!   `--allow-all-tools --allow-all-paths` (our hooks still guard every
//!   call).
//! - **Spillover.** A context value of 32,768 UTF-8 bytes or more goes to a
//!   file in a private directory made for the launch (mode 0700, an
//!   unpredictable name) and is passed as its `file://` URI.
//! - **Strict results.** The agent must print JSON on stdout: a death by
//!   signal, a non-zero exit and output that is not JSON are each their own
//!   error.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

use serde_json::Value;

/// Where a value stops being passed inline.
pub const SPILL_BYTES: usize = 32_768;

/// Flags that say which tools the agent may use.
const TOOL_PERMISSION_FLAGS: &[&str] = &["--allow-all-tools", "--allow-tool", "--deny-tool"];
/// Flags that say which paths it may touch.
const PATH_PERMISSION_FLAGS: &[&str] = &["--allow-all-paths", "--allow-path", "--deny-path"];
/// Flags whose value is part of the prompt.
const PROMPT_FLAGS: &[&str] = &[
    "--system-prompt",
    "--append-system-prompt",
    "-p",
    "--prompt",
];

/// A nested agent's command line could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NestedError {
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("cannot spill a large value to a file: {0}")]
    Spill(String),
    #[error("the agent was killed by signal {signal}{}", excerpt(.stderr))]
    Signal { signal: i32, stderr: String },
    #[error("the agent exited with status {code}{}", excerpt(.stderr))]
    Failed { code: i32, stderr: String },
    #[error("the agent's output is not JSON ({reason}): {}", shown(.stdout))]
    Unparseable { reason: String, stdout: String },
}

fn excerpt(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {}", bridge_policy::redact::shorten(stderr, 400))
    }
}

fn shown(stdout: &str) -> String {
    if stdout.trim().is_empty() {
        "(empty)".to_owned()
    } else {
        bridge_policy::redact::shorten(stdout.trim(), 400)
    }
}

/// `args` normalized for a nested launch (see the module documentation):
/// prompt flags merged into one trailing `-p`, permissive defaults only
/// when the caller gave no permission flag of either kind.
pub fn normalize_args(args: &[String]) -> Result<Vec<String>, NestedError> {
    let mut prompt_parts = Vec::new();
    let mut kept = Vec::new();
    let mut explicit_permissions = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
            _ => (arg.as_str(), None),
        };
        if PROMPT_FLAGS.contains(&flag) {
            let value = match inline {
                Some(value) => value.to_owned(),
                None => rest
                    .next()
                    .cloned()
                    .ok_or_else(|| NestedError::MissingValue {
                        flag: flag.to_owned(),
                    })?,
            };
            if !value.trim().is_empty() {
                prompt_parts.push(value);
            }
            continue;
        }
        if TOOL_PERMISSION_FLAGS.contains(&flag) || PATH_PERMISSION_FLAGS.contains(&flag) {
            explicit_permissions = true;
        }
        kept.push(arg.clone());
    }
    let mut normalized = Vec::with_capacity(kept.len() + 4);
    if !explicit_permissions {
        normalized.push("--allow-all-tools".to_owned());
        normalized.push("--allow-all-paths".to_owned());
    }
    normalized.extend(kept);
    if !prompt_parts.is_empty() {
        normalized.push("-p".to_owned());
        normalized.push(prompt_parts.join("\n\n"));
    }
    Ok(normalized)
}

/// A directory of one launch (spilled values, staged configuration) under
/// the system's temporary directory: mode 0700, a name nobody can predict,
/// removed when dropped.
pub fn private_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    // tempfile makes directories with the umask's mode unless told.
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// Whether `args` give the agent a prompt (a flag [`normalize_args`]
/// merges).
pub fn has_prompt(args: &[String]) -> bool {
    args.iter().any(|arg| {
        let flag = arg.split_once('=').map_or(arg.as_str(), |(flag, _)| flag);
        PROMPT_FLAGS.contains(&flag)
    })
}

/// A private directory for one launch's spilled values, removed when
/// dropped.
#[derive(Debug)]
pub struct SpillDir {
    dir: tempfile::TempDir,
    count: usize,
}

impl SpillDir {
    /// See [`private_dir`].
    pub fn new() -> Result<Self, NestedError> {
        let dir = private_dir("copilot-bridge-spill-")
            .map_err(|err| NestedError::Spill(err.to_string()))?;
        Ok(Self { dir, count: 0 })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `value` itself below [`SPILL_BYTES`], else the `file://` URI of a
    /// file (mode 0600) holding it.
    pub fn inline_or_spilled(&mut self, name: &str, value: &str) -> Result<String, NestedError> {
        if value.len() < SPILL_BYTES {
            return Ok(value.to_owned());
        }
        use std::io::Write;
        self.count += 1;
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let file = self.dir.path().join(format!("{}-{safe}.txt", self.count));
        let mut out = bridge_util::owner_only::create_new(&file)
            .map_err(|err| NestedError::Spill(format!("{}: {err}", file.display())))?;
        out.write_all(value.as_bytes())
            .map_err(|err| NestedError::Spill(format!("{}: {err}", file.display())))?;
        Ok(format!("file://{}", file.display()))
    }
}

/// The agent's JSON answer, or the error its end says.
pub fn read_output(status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> Result<Value, NestedError> {
    let stderr = String::from_utf8_lossy(stderr).into_owned();
    if let Some(signal) = status.signal() {
        return Err(NestedError::Signal { signal, stderr });
    }
    let stdout = String::from_utf8_lossy(stdout).into_owned();
    let parsed = serde_json::from_str::<Value>(stdout.trim());
    match (status.code(), parsed) {
        (Some(0), Ok(value)) => Ok(value),
        (Some(0), Err(err)) => Err(NestedError::Unparseable {
            reason: err.to_string(),
            stdout,
        }),
        (code, _) => Err(NestedError::Failed {
            code: code.unwrap_or(-1),
            stderr,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn prompt_flags_merge_into_one_trailing_p_joined_by_a_blank_line() {
        let args = strings(&[
            "--system-prompt",
            "You are careful.",
            "--model",
            "gpt-4.1",
            "--append-system-prompt=Be brief.",
            "-p",
            "Fix the bug.",
            "--prompt=Then run the tests.",
        ]);
        assert_eq!(
            normalize_args(&args).unwrap(),
            strings(&[
                "--allow-all-tools",
                "--allow-all-paths",
                "--model",
                "gpt-4.1",
                "-p",
                "You are careful.\n\nBe brief.\n\nFix the bug.\n\nThen run the tests.",
            ])
        );
    }

    #[test]
    fn explicit_permission_flags_are_kept_and_never_widened() {
        for explicit in [
            vec!["--allow-tool", "shell(git)"],
            vec!["--deny-tool", "shell(rm)"],
            vec!["--allow-all-tools"],
            vec!["--allow-path", "/w"],
            vec!["--deny-path=/etc"],
            vec!["--allow-all-paths"],
        ] {
            let mut args = strings(&explicit);
            args.extend(strings(&["-p", "go"]));
            let normalized = normalize_args(&args).unwrap();
            let mut expected = strings(&explicit);
            expected.extend(strings(&["-p", "go"]));
            assert_eq!(normalized, expected, "{explicit:?}");
        }
    }

    #[test]
    fn no_permission_flag_means_the_permissive_prefix() {
        assert_eq!(
            normalize_args(&strings(&["--model", "m"])).unwrap(),
            strings(&["--allow-all-tools", "--allow-all-paths", "--model", "m"])
        );
    }

    #[test]
    fn a_command_line_has_a_prompt_in_any_of_its_forms() {
        assert!(has_prompt(&strings(&["-p", "x"])));
        assert!(has_prompt(&strings(&["--prompt=x"])));
        assert!(has_prompt(&strings(&[
            "--model",
            "m",
            "--system-prompt",
            "s"
        ])));
        assert!(!has_prompt(&strings(&["--model", "m"])));
    }

    #[test]
    fn a_prompt_flag_without_its_value_is_an_error() {
        assert_eq!(
            normalize_args(&strings(&["-p"])),
            Err(NestedError::MissingValue { flag: "-p".into() })
        );
    }

    #[test]
    fn values_from_32_kib_spill_to_private_files() {
        use std::os::unix::fs::PermissionsExt;
        let mut spill = SpillDir::new().unwrap();
        let small = "x".repeat(SPILL_BYTES - 1);
        assert_eq!(spill.inline_or_spilled("ctx", &small).unwrap(), small);
        // Counted in UTF-8 bytes, not characters.
        let large = "é".repeat(SPILL_BYTES / 2);
        let uri = spill.inline_or_spilled("dep result", &large).unwrap();
        let path = uri.strip_prefix("file://").unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), large);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(Path::new(path)), 0o600);
        assert_eq!(mode(spill.path()), 0o700);
        let dir = spill.path().to_path_buf();
        drop(spill);
        assert!(!dir.exists(), "the spill directory goes with the launch");
    }

    #[test]
    fn each_way_an_agent_can_end_badly_is_its_own_error() {
        let exited = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(
            read_output(exited(0), br#"{"result": "ok"}"#, b"").unwrap(),
            serde_json::json!({"result": "ok"})
        );
        assert!(matches!(
            read_output(exited(0), b"", b""),
            Err(NestedError::Unparseable { .. })
        ));
        assert!(matches!(
            read_output(exited(0), b"Done!", b""),
            Err(NestedError::Unparseable { .. })
        ));
        let failed = read_output(exited(3), b"{}", b"boom").unwrap_err();
        assert_eq!(
            failed,
            NestedError::Failed {
                code: 3,
                stderr: "boom".into()
            }
        );
        assert!(failed.to_string().contains("status 3: boom"));
        let killed = read_output(ExitStatus::from_raw(9), b"", b"").unwrap_err();
        assert_eq!(
            killed,
            NestedError::Signal {
                signal: 9,
                stderr: String::new()
            }
        );
    }
}
