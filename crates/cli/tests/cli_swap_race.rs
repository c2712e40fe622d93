//! The symlink swap race against `copilot-bridge tool`: reads and writes
//! through a directory that keeps trading places with a symlink to outside
//! the workspace never read or write outside it.

use bridge_testkit::swap_race::{OUTSIDE_MARKER, SHARED_TEXT};
use bridge_testkit::{SwapRace, TempWorkspace};
use serde_json::json;

use crate::support::Bridge;

#[test]
fn the_tool_command_stays_inside_under_the_swap_race() {
    let ws = TempWorkspace::new();
    let bridge = Bridge::new();
    let mut swap = SwapRace::start(ws.path());
    // A process per call is slow: at least 16 rounds, each read having
    // about even odds of meeting the symlink, and more (up to 128) until
    // the inside file was served once: on a loaded machine the swapper can
    // win many rounds in a row.
    let (mut calls, mut served) = (0, 0);
    while calls < 16 || (served == 0 && calls < 128) {
        let read = bridge
            .tool(&ws, "read_file", &json!({"path": "sub/f.md"}))
            .output()
            .unwrap();
        let write = bridge
            .tool(
                &ws,
                "create_file",
                &json!({"path": format!("sub/cli-{calls}.md"), "content": "c"}),
            )
            .arg("--writable")
            .output()
            .unwrap();
        for output in [&read, &write] {
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(
                !text.contains(OUTSIDE_MARKER),
                "call {calls} leaked outside content: {text}"
            );
        }
        if String::from_utf8_lossy(&read.stdout).contains(SHARED_TEXT) {
            served += 1;
        }
        calls += 1;
    }
    swap.stop();
    swap.assert_outside_untouched();
    assert!(
        served > 0,
        "the inside file was never served in {calls} rounds"
    );
}
