//! The text of the user service, as pure functions of what it runs: the
//! systemd user unit (Linux) and the launchd agent (macOS). Tested for
//! content here and, where `systemd-analyze` exists, verified by systemd
//! (crates/cli/tests/cli_install.rs).

/// The systemd unit's name.
pub const SYSTEMD_UNIT: &str = "copilot-bridge.service";
/// The launchd agent's label (its plist is `~/Library/LaunchAgents/LABEL.plist`).
pub const LAUNCHD_LABEL: &str = "io.github.copilot-bridge";

/// What the service runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// This program, an absolute path.
    pub program: String,
    /// Its arguments: the global flags, then `serve` and its flags.
    pub args: Vec<String>,
    /// The user's home: the daemon's working directory (its default
    /// session's workspace).
    pub user_home: String,
}

/// The systemd user unit: `serve` in the user's home, restarted when it
/// fails, its output in the journal (`journalctl --user -u copilot-bridge`).
pub fn systemd_unit(spec: &Spec) -> String {
    let exec: Vec<String> = std::iter::once(&spec.program)
        .chain(&spec.args)
        .map(|word| systemd_quote(word))
        .collect();
    format!(
        "# Written by `copilot-bridge service install`; `copilot-bridge service uninstall`\n\
         # removes it. See docs/install.md.\n\
         [Unit]\n\
         Description=copilot-bridge daemon: one local hub for coding agents, LLM backends and tool providers\n\
         Documentation=https://github.com/copilot-bridge/copilot-bridge/blob/main/docs/install.md\n\
         \n\
         [Service]\n\
         Type=simple\n\
         WorkingDirectory=%h\n\
         ExecStart={exec}\n\
         Restart=on-failure\n\
         RestartSec=2s\n\
         StandardOutput=journal\n\
         StandardError=journal\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exec = exec.join(" ")
    )
}

/// One word of `ExecStart=`, double-quoted: backslash and quote escaped,
/// and the specifier `%` and variable `$` doubled so systemd takes them
/// literally. Control characters (a newline would end the line) are
/// written as C escapes, which systemd reads back.
fn systemd_quote(word: &str) -> String {
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('"');
    for c in word.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' => quoted.push_str("$$"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => quoted.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The words of a unit's `ExecStart=` as [`systemd_unit`] wrote them
/// (`None` for a line it did not write): how `daemon start` reads which
/// state directory an installed service serves.
pub fn exec_start_words(unit: &str) -> Option<Vec<String>> {
    let line = unit
        .lines()
        .find_map(|line| line.strip_prefix("ExecStart="))?;
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        match chars.next() {
            None => return Some(words),
            Some('"') => {}
            Some(_) => return None,
        }
        let mut word = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    'n' => word.push('\n'),
                    't' => word.push('\t'),
                    'x' => {
                        let hex: String = [chars.next()?, chars.next()?].iter().collect();
                        word.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                    }
                    c => word.push(c),
                },
                c @ ('%' | '$') => {
                    if chars.next() != Some(c) {
                        return None;
                    }
                    word.push(c);
                }
                c => word.push(c),
            }
        }
        words.push(word);
    }
}

/// The launchd agent: `serve` in the user's home, loaded at login, started
/// again when it exits with a failure, its output in
/// `~/Library/Logs/copilot-bridge.log` (Console shows ~/Library/Logs).
pub fn launchd_plist(spec: &Spec) -> String {
    let args: String = std::iter::once(&spec.program)
        .chain(&spec.args)
        .map(|word| format!("    <string>{}</string>\n", xml_escape(word)))
        .collect();
    let home = xml_escape(&spec.user_home);
    let log = format!("{home}/Library/Logs/copilot-bridge.log");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <!-- Written by `copilot-bridge service install`; `copilot-bridge service uninstall` removes it. See docs/install.md. -->\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \x20 <key>Label</key>\n\
         \x20 <string>{LAUNCHD_LABEL}</string>\n\
         \x20 <key>ProgramArguments</key>\n\
         \x20 <array>\n\
         {args}\
         \x20 </array>\n\
         \x20 <key>WorkingDirectory</key>\n\
         \x20 <string>{home}</string>\n\
         \x20 <key>RunAtLoad</key>\n\
         \x20 <true/>\n\
         \x20 <key>KeepAlive</key>\n\
         \x20 <dict>\n\
         \x20   <key>SuccessfulExit</key>\n\
         \x20   <false/>\n\
         \x20 </dict>\n\
         \x20 <key>ProcessType</key>\n\
         \x20 <string>Background</string>\n\
         \x20 <key>StandardOutPath</key>\n\
         \x20 <string>{log}</string>\n\
         \x20 <key>StandardErrorPath</key>\n\
         \x20 <string>{log}</string>\n\
         </dict>\n\
         </plist>\n"
    )
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            program: "/opt/odd dir/copilot-bridge".into(),
            args: vec![
                "--home".into(),
                "/home/u/50% \"off\" $HOME\\x".into(),
                "serve".into(),
            ],
            user_home: "/home/u".into(),
        }
    }

    #[test]
    fn the_unit_runs_serve_in_the_home_restarts_on_failure_and_logs_to_the_journal() {
        let unit = systemd_unit(&spec());
        for line in [
            "[Service]",
            "Type=simple",
            "WorkingDirectory=%h",
            "Restart=on-failure",
            "StandardOutput=journal",
            "StandardError=journal",
            "[Install]",
            "WantedBy=default.target",
            r#"ExecStart="/opt/odd dir/copilot-bridge" "--home" "/home/u/50%% \"off\" $$HOME\\x" "serve""#,
        ] {
            assert!(unit.lines().any(|l| l == line), "{line:?} not in\n{unit}");
        }
        // Not the detached daemon that exits when idle.
        assert!(!unit.contains("--detached"), "{unit}");
    }

    #[test]
    fn exec_start_reads_back_what_the_unit_wrote() {
        let mut odd = spec();
        odd.args.push("tab\tnew\nline\u{1}".into());
        let words = exec_start_words(&systemd_unit(&odd)).unwrap();
        let mut expected = vec![odd.program.clone()];
        expected.extend(odd.args.clone());
        assert_eq!(words, expected);
        assert_eq!(exec_start_words("ExecStart=/bin/true"), None);
        assert_eq!(exec_start_words("[Unit]\n"), None);
    }

    #[test]
    fn the_launchd_agent_runs_serve_in_the_home_and_restarts_on_failure() {
        let plist = launchd_plist(&spec());
        for part in [
            "<string>io.github.copilot-bridge</string>",
            "<string>/opt/odd dir/copilot-bridge</string>\n    <string>--home</string>\n    <string>/home/u/50% &quot;off&quot; $HOME\\x</string>\n    <string>serve</string>",
            "<key>WorkingDirectory</key>\n  <string>/home/u</string>",
            "<key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>",
            "<key>RunAtLoad</key>\n  <true/>",
            "<key>StandardErrorPath</key>\n  <string>/home/u/Library/Logs/copilot-bridge.log</string>",
        ] {
            assert!(plist.contains(part), "{part:?} not in\n{plist}");
        }
    }
}
