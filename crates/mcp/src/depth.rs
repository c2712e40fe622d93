//! Cycle detection: every tool of our servers takes `_depth`; at
//! [`MAX_CALL_DEPTH`] or more it answers an error result instead of
//! running, and calls the bridge makes onward carry `_depth + 1`.

/// Calls this deep (or deeper) are refused.
pub const MAX_CALL_DEPTH: u64 = 3;
