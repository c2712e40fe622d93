//! The write globs of `.agent-policy.yaml`, read the way `.gitignore` is,
//! and how the host filesystem compares file names.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::PolicyError;

/// How the filesystem under the workspace compares names. A deny rule must
/// match every spelling that reaches the same file, or it can be walked
/// around (`.AGENT-POLICY.YAML` is the policy file on macOS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileNames {
    /// Linux and other Unix filesystems: names are bytes, compared exactly.
    Exact,
    /// macOS (APFS, HFS+): case-insensitive; HFS+ also ignores some
    /// invisible code points (`.g\u{200c}it` is `.git`).
    MacOs,
    /// Windows (NTFS): case-insensitive; trailing dots and spaces are
    /// dropped (`.git.` is `.git`), `name:stream` is a stream of `name`, and
    /// `GIT~1` is the short name of `.git`.
    Windows,
}

impl FileNames {
    /// The rules of the filesystem this build runs on.
    pub(crate) const HOST: FileNames = if cfg!(target_os = "macos") {
        FileNames::MacOs
    } else if cfg!(windows) {
        FileNames::Windows
    } else {
        FileNames::Exact
    };

    pub(crate) fn case_insensitive(self) -> bool {
        self != FileNames::Exact
    }

    /// `relative` (with `/` separators) spelled as the filesystem resolves
    /// it, so that globs and protected names see the file actually written.
    pub(crate) fn normalize(self, relative: &str) -> String {
        match self {
            FileNames::Exact => relative.to_owned(),
            FileNames::MacOs => relative
                .chars()
                .filter(|&ch| !is_hfs_ignorable(ch))
                .collect(),
            FileNames::Windows => relative
                .split('/')
                .map(|component| {
                    let without_stream = component.split(':').next().unwrap_or(component);
                    match without_stream.trim_end_matches(['.', ' ']) {
                        // `.` and `..` keep their dots.
                        "" => without_stream,
                        short if short.eq_ignore_ascii_case(GIT_SHORT_NAME) => super::GIT_DIR_NAME,
                        trimmed => trimmed,
                    }
                })
                .collect::<Vec<_>>()
                .join("/"),
        }
    }

    /// Whether two (already normalized) names are the same file name.
    pub(crate) fn same_name(self, left: &str, right: &str) -> bool {
        if self.case_insensitive() {
            left.eq_ignore_ascii_case(right)
        } else {
            left == right
        }
    }
}

/// The 8.3 short name NTFS gives `.git` (git refuses it for the same reason).
const GIT_SHORT_NAME: &str = "git~1";

/// Code points HFS+ leaves out when comparing names (the list git checks
/// for in `is_hfs_dotgit`).
fn is_hfs_ignorable(ch: char) -> bool {
    matches!(
        ch,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// The glob a `.gitignore`-like pattern stands for. As in `.gitignore`, a
/// pattern with no `/` but a trailing one matches at any depth (`*.pem`,
/// `secrets`, `build/` mean `**/*.pem`, …); one with a `/` at the start or
/// in the middle is anchored to the workspace root (a leading `/` is only
/// the anchor); a trailing `/` means "everything inside".
fn gitignore_glob(pattern: &str) -> String {
    let (anchored_by_slash, rest) = match pattern.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let directory = rest.trim_end_matches('/');
    let inside = directory.len() != rest.len();
    let anchored = anchored_by_slash || directory.contains('/');
    let mut glob = String::with_capacity(directory.len() + 6);
    if !anchored && directory != "**" {
        glob.push_str("**/");
    }
    glob.push_str(directory);
    if inside {
        glob.push_str("/**");
    }
    glob
}

/// A list of globs kept with their source text, so a verdict can quote the
/// pattern that fired.
#[derive(Debug, Clone)]
pub(crate) struct GlobList {
    pub(crate) patterns: Vec<String>,
    set: GlobSet,
}

impl Default for GlobList {
    fn default() -> Self {
        Self {
            patterns: Vec::new(),
            set: GlobSet::empty(),
        }
    }
}

impl GlobList {
    /// Compiles `patterns` (the list at `key` in the file `origin`).
    pub(crate) fn compile(
        patterns: Vec<String>,
        key: &str,
        origin: &str,
        case_insensitive: bool,
    ) -> Result<Self, PolicyError> {
        let mut builder = GlobSetBuilder::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let invalid = |reason: String| PolicyError::InvalidPolicyFile {
                path: origin.to_owned(),
                reason: format!("{key}[{index}] {pattern:?}: {reason}"),
            };
            if pattern.trim().is_empty() || pattern.trim_matches('/').is_empty() {
                return Err(invalid("empty pattern".to_owned()));
            }
            let glob = GlobBuilder::new(&gitignore_glob(pattern))
                .literal_separator(true)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|err| invalid(err.kind().to_string()))?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|err| PolicyError::InvalidPolicyFile {
                path: origin.to_owned(),
                reason: format!("{key}: {err}"),
            })?;
        Ok(Self { patterns, set })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The first pattern (as written) that matches `relative`.
    pub(crate) fn first_match(&self, relative: &str) -> Option<&str> {
        self.set
            .matches(relative)
            .first()
            .and_then(|&index| self.patterns.get(index))
            .map(String::as_str)
    }

    /// The first pattern that matches `relative` or one of its parent
    /// directories: a pattern naming a directory covers what is inside.
    pub(crate) fn first_match_with_parents(&self, relative: &str) -> Option<&str> {
        if let Some(pattern) = self.first_match(relative) {
            return Some(pattern);
        }
        relative
            .match_indices('/')
            .find_map(|(slash, _)| self.first_match(&relative[..slash]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_without_a_slash_match_at_any_depth() {
        assert_eq!(gitignore_glob("*.pem"), "**/*.pem");
        assert_eq!(gitignore_glob("secrets"), "**/secrets");
        assert_eq!(gitignore_glob("build/"), "**/build/**");
        assert_eq!(gitignore_glob("**"), "**");
    }

    #[test]
    fn patterns_with_a_slash_stay_anchored() {
        assert_eq!(gitignore_glob("/secrets"), "secrets");
        assert_eq!(gitignore_glob("src/*.ts"), "src/*.ts");
        assert_eq!(gitignore_glob("/dist/"), "dist/**");
        assert_eq!(gitignore_glob("**/node_modules/**"), "**/node_modules/**");
    }

    #[test]
    fn forced_case_insensitive_list_matches_any_case() {
        let patterns = vec!["secret".to_owned(), "/Config/*.yml".to_owned()];
        let insensitive = GlobList::compile(patterns.clone(), "writes.deny", "t.yaml", true)
            .expect("valid globs");
        assert_eq!(
            insensitive.first_match_with_parents("SECRET/x"),
            Some("secret")
        );
        assert_eq!(
            insensitive.first_match_with_parents("a/SeCrEt/b/c"),
            Some("secret")
        );
        assert_eq!(
            insensitive.first_match("config/APP.YML"),
            Some("/Config/*.yml")
        );
        let exact =
            GlobList::compile(patterns, "writes.deny", "t.yaml", false).expect("valid globs");
        assert_eq!(exact.first_match_with_parents("SECRET/x"), None);
        assert_eq!(exact.first_match("config/APP.YML"), None);
        assert_eq!(exact.first_match("Config/app.yml"), Some("/Config/*.yml"));
    }

    #[test]
    fn host_rules_follow_the_target() {
        if cfg!(target_os = "macos") {
            assert_eq!(FileNames::HOST, FileNames::MacOs);
        } else if cfg!(windows) {
            assert_eq!(FileNames::HOST, FileNames::Windows);
        } else {
            assert_eq!(FileNames::HOST, FileNames::Exact);
        }
    }

    #[test]
    fn names_are_normalized_as_each_filesystem_resolves_them() {
        assert_eq!(FileNames::Exact.normalize(".git. /x"), ".git. /x");
        assert_eq!(
            FileNames::MacOs.normalize(".g\u{200c}it/config"),
            ".git/config"
        );
        assert_eq!(
            FileNames::Windows.normalize(".git. /config::$DATA"),
            ".git/config"
        );
        assert_eq!(FileNames::Windows.normalize("a/../b/./c"), "a/../b/./c");
        assert_eq!(
            FileNames::Windows.normalize("sub/GIT~1/hooks"),
            "sub/.git/hooks"
        );
        assert_eq!(FileNames::Exact.normalize("GIT~1/hooks"), "GIT~1/hooks");
        assert!(FileNames::MacOs.same_name(".GIT", ".git"));
        assert!(FileNames::Windows.same_name(".Git", ".git"));
        assert!(!FileNames::Exact.same_name(".GIT", ".git"));
    }
}
