//! Tool names as the model sees them (`server__tool`, only `[A-Za-z0-9_-]`,
//! at most 64 characters) and the per-server include/exclude filters.

use bridge_config::mcp::{MAX_TOOL_NAME_CHARS, TOOL_NAME_SEPARATOR};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// `server__tool`, with every character outside `[A-Za-z0-9_-]` replaced by
/// `_`. A name too long for model APIs is cut and given a short hash of the
/// original, so distinct long names stay distinct and stable across runs.
pub(crate) fn exposed_name(server: &str, tool: &str) -> String {
    let sanitised: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("{server}{TOOL_NAME_SEPARATOR}{sanitised}");
    if full.len() <= MAX_TOOL_NAME_CHARS {
        return full;
    }
    let suffix = format!("_{:08x}", fnv1a(tool.as_bytes()));
    // Everything here is ASCII, so byte lengths are character counts.
    let keep = MAX_TOOL_NAME_CHARS - suffix.len();
    format!("{}{suffix}", &full[..keep])
}

/// FNV-1a: a stable hash (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// `tools` (empty: all) minus `exclude_tools`, by the server's own names.
pub(crate) struct ToolFilter {
    include: Option<GlobSet>,
    exclude: GlobSet,
    include_patterns: Vec<String>,
}

impl ToolFilter {
    pub(crate) fn new(include: &[String], exclude: &[String]) -> Result<Self, String> {
        let build = |patterns: &[String]| -> Result<GlobSet, String> {
            let mut set = GlobSetBuilder::new();
            for pattern in patterns {
                let glob =
                    Glob::new(pattern).map_err(|err| format!("tool pattern {pattern:?}: {err}"))?;
                set.add(glob);
            }
            set.build().map_err(|err| format!("tool patterns: {err}"))
        };
        Ok(Self {
            include: if include.is_empty() {
                None
            } else {
                Some(build(include)?)
            },
            exclude: build(exclude)?,
            include_patterns: include.to_vec(),
        })
    }

    pub(crate) fn allows(&self, tool: &str) -> bool {
        self.include.as_ref().is_none_or(|set| set.is_match(tool)) && !self.exclude.is_match(tool)
    }

    /// Include patterns that matched none of `tools` (a typo, or a tool the
    /// server no longer has).
    pub(crate) fn unmatched_includes<'a>(&'a self, tools: &[&str]) -> Vec<&'a str> {
        self.include_patterns
            .iter()
            .filter(|pattern| {
                Glob::new(pattern)
                    .map(|glob| glob.compile_matcher())
                    .is_ok_and(|matcher| !tools.iter().any(|tool| matcher.is_match(tool)))
            })
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitised_and_bounded() {
        assert_eq!(exposed_name("gh", "list_issues"), "gh__list_issues");
        assert_eq!(exposed_name("gh", "a.b c/é"), "gh__a_b_c__");
        let long = "t".repeat(100);
        let name = exposed_name("server", &long);
        assert_eq!(name.len(), 64);
        assert!(name.starts_with("server__ttt"));
        assert_ne!(name, exposed_name("server", &format!("{long}x")));
        assert_eq!(name, exposed_name("server", &long), "stable");
    }

    #[test]
    fn filters_include_then_exclude() {
        let filter = ToolFilter::new(&["read_*".into(), "echo".into()], &["read_secret".into()])
            .unwrap_or_else(|err| panic!("{err}"));
        assert!(filter.allows("echo"));
        assert!(filter.allows("read_file"));
        assert!(!filter.allows("read_secret"));
        assert!(!filter.allows("write_file"));
        assert_eq!(filter.unmatched_includes(&["echo"]), ["read_*"]);
        let all = ToolFilter::new(&[], &[]).unwrap_or_else(|err| panic!("{err}"));
        assert!(all.allows("anything"));
    }
}
