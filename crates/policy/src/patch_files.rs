//! The files a patch in the `*** Begin Patch` format names (Codex's
//! `apply_patch`, the Copilot CLI's), so a patch is checked as writes of
//! those files rather than as a write of nothing in particular; and Codex's
//! shell form of it (`apply_patch <<'EOF' … EOF`, optionally after
//! `cd DIR &&`), which Codex applies itself instead of running.

/// The headers that name a file the patch writes (a deleted file and a
/// moved file's new place are written too).
const FILE_HEADERS: &[&str] = &[
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
];

/// The files `patch` names, in order; `None` when it is not a patch of
/// this format or names no file.
pub fn files(patch: &str) -> Option<Vec<String>> {
    if !patch.trim_start().starts_with("*** Begin Patch") {
        return None;
    }
    let named: Vec<String> = patch
        .lines()
        .filter_map(|line| {
            FILE_HEADERS
                .iter()
                .find_map(|header| line.strip_prefix(header))
        })
        .map(|path| path.trim().to_owned())
        .filter(|path| !path.is_empty())
        .collect();
    (!named.is_empty()).then_some(named)
}

/// A shell command that is exactly Codex's `apply_patch` with a heredoc
/// (optionally after `cd DIR &&`): the files it writes, relative to the
/// command's directory. `None` for anything else, which is then a command
/// like any other: text after the heredoc, or a command around it, is not
/// taken as a patch.
pub fn shell_apply_patch(command: &str) -> Option<Vec<String>> {
    let (first, rest) = command.trim_start().split_once('\n')?;
    let (dir, invocation) = match first.trim().strip_prefix("cd ") {
        Some(after) => {
            let (dir, invocation) = after.split_once("&&")?;
            (Some(unquote(dir.trim())?), invocation.trim())
        }
        None => (None, first.trim()),
    };
    let heredoc = ["apply_patch", "applypatch"]
        .iter()
        .find_map(|name| invocation.strip_prefix(name))?
        .trim_start()
        .strip_prefix("<<")?
        .trim();
    let delimiter = unquote(heredoc)?;
    if delimiter.is_empty() || delimiter.contains(char::is_whitespace) {
        return None;
    }
    let mut body = Vec::new();
    let mut lines = rest.lines();
    loop {
        let line = lines.next()?;
        if line == delimiter {
            break;
        }
        body.push(line);
    }
    // Nothing may follow the heredoc.
    if lines.any(|line| !line.trim().is_empty()) {
        return None;
    }
    let named = files(&body.join("\n"))?;
    Some(match dir {
        Some(dir) => named
            .into_iter()
            .map(|path| {
                if path.starts_with('/') {
                    path
                } else {
                    format!("{}/{path}", dir.trim_end_matches('/'))
                }
            })
            .collect(),
        None => named,
    })
}

/// `word` without one pair of surrounding quotes; `None` when it has
/// shell syntax a plain word does not (so a command is not misread).
fn unquote(word: &str) -> Option<String> {
    let inner = ['\'', '"']
        .iter()
        .find_map(|quote| {
            word.strip_prefix(*quote)
                .and_then(|rest| rest.strip_suffix(*quote))
        })
        .unwrap_or(word);
    let plain = inner.chars().all(|c| {
        !matches!(
            c,
            '$' | '`' | ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '\\'
        )
    });
    plain.then(|| inner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** Delete File: old.txt\n*** End Patch";

    #[test]
    fn every_file_header_is_a_write() {
        assert_eq!(
            files(PATCH).unwrap(),
            ["hello.txt", "src/a.rs", "src/b.rs", "old.txt"]
        );
        assert_eq!(files("--- a/x\n+++ b/x\n"), None, "a unified diff");
        assert_eq!(files("*** Begin Patch\n*** End Patch"), None);
    }

    #[test]
    fn codexs_shell_form_is_read_only_when_it_is_exactly_that() {
        let heredoc = format!("apply_patch <<'EOF'\n{PATCH}\nEOF\n");
        assert_eq!(shell_apply_patch(&heredoc).unwrap().len(), 4);
        let in_dir = format!("cd sub && apply_patch <<\"PATCH\"\n{PATCH}\nPATCH");
        assert_eq!(shell_apply_patch(&in_dir).unwrap()[0], "sub/hello.txt");
        for other in [
            format!("apply_patch <<'EOF'\n{PATCH}\nEOF\nrm -rf ~"),
            format!("cd $(evil) && apply_patch <<'EOF'\n{PATCH}\nEOF"),
            format!("echo hi; apply_patch <<'EOF'\n{PATCH}\nEOF"),
            format!("apply_patch <<'EOF'\n{PATCH}\n"),
            "apply_patch".to_owned(),
            "ls\n".to_owned(),
        ] {
            assert_eq!(shell_apply_patch(&other), None, "{other}");
        }
    }
}
