//! The names agents give the tools they run, read as ours before any rule
//! matches: whatever the dialect, an MCP tool is `server__tool` at every
//! door, so `blocked_tools = ["github__*"]` holds for each spelling.
//!
//! - Claude Code (and Codex, in Claude's payload shape): `mcp__server__tool`;
//! - the Copilot CLI: `server-tool` in its hooks, `server/tool` in some
//!   payloads.
//!
//! The separator may also occur inside a server's or a tool's name
//! (`github-mcp-server-list_issues`), so a name can read several ways; each
//! reading is decided and the strictest verdict wins. The server a name
//! carries is the server: a payload field naming another never overrides
//! it. An MCP-shaped name that reads no way (`mcp__github`) is refused.

use bridge_policy::agent_tools::Agent;

use crate::mcp_client::exposed_name;
use crate::tools::ToolOwner;

/// One way to read an agent's tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The tool in our naming.
    pub name: String,
    pub owner: ToolOwner,
}

/// Every reading of `raw`, the likeliest first; empty when `raw` is
/// MCP-shaped but names no server and tool (refuse it).
pub fn readings(agent: Agent, raw: &str) -> Vec<Reading> {
    let splits: Vec<(&str, &str)> = match agent {
        Agent::ClaudeCode | Agent::Codex => match raw.strip_prefix("mcp__") {
            Some(rest) => return mcp_readings(splits_at(rest, "__")),
            None => Vec::new(),
        },
        Agent::CopilotCli => {
            let separator = if raw.contains('/') { "/" } else { "-" };
            splits_at(raw, separator)
        }
    };
    if splits.is_empty() {
        return vec![Reading {
            name: raw.to_owned(),
            owner: ToolOwner::Agent(agent),
        }];
    }
    mcp_readings(splits)
}

/// The likeliest reading's name (what a post-tool-use record is filed
/// under); `raw` itself when it reads no way.
pub fn likeliest_name(agent: Agent, raw: &str) -> String {
    readings(agent, raw)
        .into_iter()
        .next()
        .map_or_else(|| raw.to_owned(), |reading| reading.name)
}

fn mcp_readings(splits: Vec<(&str, &str)>) -> Vec<Reading> {
    splits
        .into_iter()
        .map(|(server, tool)| Reading {
            name: exposed_name(server, tool),
            owner: ToolOwner::Mcp(server.to_owned()),
        })
        .collect()
}

/// `text` split in two at each `separator`, both sides non-empty, the
/// first split first.
fn splits_at<'a>(text: &'a str, separator: &str) -> Vec<(&'a str, &'a str)> {
    text.match_indices(separator)
        .map(|(at, _)| (&text[..at], &text[at + separator.len()..]))
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(agent: Agent, raw: &str) -> Vec<String> {
        readings(agent, raw).into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn every_spelling_of_an_mcp_tool_reads_as_ours() {
        assert_eq!(
            names(Agent::ClaudeCode, "mcp__github__delete_repo"),
            ["github__delete_repo"]
        );
        assert_eq!(
            names(Agent::CopilotCli, "github-delete_repo"),
            ["github__delete_repo"]
        );
        assert_eq!(
            names(Agent::CopilotCli, "github/delete_repo"),
            ["github__delete_repo"]
        );
        assert_eq!(
            names(Agent::CopilotCli, "github-mcp-server-list_issues"),
            [
                "github__mcp-server-list_issues",
                "github-mcp__server-list_issues",
                "github-mcp-server__list_issues"
            ]
        );
        assert_eq!(
            names(Agent::ClaudeCode, "mcp__a__b__c"),
            ["a__b__c", "a__b__c"],
            "server a tool b__c, or server a__b tool c"
        );
        assert_eq!(
            readings(Agent::ClaudeCode, "mcp__a__b__c")[1].owner,
            ToolOwner::Mcp("a__b".into())
        );
    }

    #[test]
    fn the_agents_own_tools_keep_their_names_and_broken_mcp_names_read_no_way() {
        assert_eq!(names(Agent::ClaudeCode, "Bash"), ["Bash"]);
        assert_eq!(
            readings(Agent::ClaudeCode, "Bash")[0].owner,
            ToolOwner::Agent(Agent::ClaudeCode)
        );
        assert_eq!(
            names(Agent::CopilotCli, "str_replace_editor"),
            ["str_replace_editor"]
        );
        assert!(readings(Agent::ClaudeCode, "mcp__github").is_empty());
        assert!(readings(Agent::ClaudeCode, "mcp____tool").is_empty());
        assert_eq!(
            names(Agent::CopilotCli, "-tool"),
            ["-tool"],
            "no server: the CLI's own"
        );
    }
}
