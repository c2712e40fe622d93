use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Limits and commands of the workspace tools (`[tools]` in config.toml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "snake_case", deny_unknown_fields)]
pub struct ToolSettings {
    /// Largest file `read_file` returns whole (a line range may read larger ones).
    pub read_max_bytes: u64,
    /// Largest file `symbols` outlines. Smaller than `read_max_bytes` because
    /// parsing costs far more per byte than reading, and hostile input (deep
    /// runs of unclosed brackets) makes it superlinear.
    pub symbols_max_bytes: u64,
    /// Files larger than this are skipped by `search_code`.
    pub search_max_file_bytes: u64,
    /// Longest line snippet `search_code` returns; longer lines are cut.
    pub search_max_line_chars: usize,
    /// Default and upper bound of `maxResults` in `search_code`.
    pub search_max_results: usize,
    /// Default and upper bound of `limit` in `list_files`.
    pub list_max_results: usize,
    /// Default timeout of `shell` and `run_task`.
    pub shell_timeout_secs: u64,
    /// Bytes of stdout and of stderr kept from a command.
    pub shell_output_cap_bytes: usize,
    /// Formatter per file extension (without dot): argv, the file path appended
    /// (or substituted for a `{file}` argument).
    pub formatters: BTreeMap<String, Vec<String>>,
    /// Import organizer per file extension, same form as `formatters`.
    pub import_organizers: BTreeMap<String, Vec<String>>,
    /// Named tasks for `run_task`.
    pub tasks: BTreeMap<String, TaskSettings>,
}

/// A named task: a command line run by `sh -c` in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct TaskSettings {
    pub command: String,
    /// Working directory relative to the workspace root.
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            read_max_bytes: 4 * 1024 * 1024,
            symbols_max_bytes: 1024 * 1024,
            search_max_file_bytes: 16 * 1024 * 1024,
            search_max_line_chars: 500,
            search_max_results: 1000,
            list_max_results: 5000,
            shell_timeout_secs: 60,
            shell_output_cap_bytes: 64 * 1024,
            formatters: BTreeMap::new(),
            import_organizers: BTreeMap::new(),
            tasks: BTreeMap::new(),
        }
    }
}
