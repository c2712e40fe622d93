//! A linear pre-check that refuses syntax trees on which tree-sitter's query
//! cursor would take quadratic time.
//!
//! On entering each visible node the query cursor looks ahead through the
//! node's later siblings until it meets a named one. A long run of anonymous
//! siblings (what error recovery makes of tens of thousands of unclosed
//! brackets: one flat ERROR node of `{` tokens) therefore costs the square of
//! its length. The cursor only consults its progress callback every thousand
//! steps, each of which can scan a million siblings, so a time budget alone
//! overshoots by seconds; counting the scans up front costs one tree walk.

use tree_sitter::Tree;

/// Sibling look-aheads allowed for one query: about 0.2 s in a release build.
/// Real code has runs of a handful of anonymous tokens (`(`, `,`, `;`), so
/// only runs of over ~14,000 consecutive anonymous tokens reach it.
pub(crate) const MAX_SIBLING_SCANS: u64 = 100_000_000;

/// The longest run of anonymous siblings found, when the tree would cost the
/// query cursor more than [`MAX_SIBLING_SCANS`] look-aheads.
pub(crate) fn too_tangled(tree: &Tree) -> Option<u64> {
    let mut cursor = tree.walk();
    // The current run of anonymous siblings at each depth of the walk.
    let mut runs: Vec<u64> = vec![0];
    let mut longest_run = 0;
    let mut scans: u64 = 0;
    loop {
        let run = runs.last_mut()?;
        if cursor.node().is_named() {
            *run = 0;
        } else {
            *run += 1;
            scans = scans.saturating_add(*run);
            longest_run = longest_run.max(*run);
            if scans > MAX_SIBLING_SCANS {
                return Some(longest_run);
            }
        }
        if cursor.goto_first_child() {
            runs.push(0);
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
            runs.pop();
        }
    }
}
