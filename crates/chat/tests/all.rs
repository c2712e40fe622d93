//! bridge-chat's screens as a terminal shows them: snapshots of the
//! rendered buffer (ratatui's `TestBackend`) at 40, 80 and 120 columns.

mod screens;
