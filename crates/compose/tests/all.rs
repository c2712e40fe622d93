//! Integration tests of bridge-compose, one binary (see ARCHITECTURE.md):
//! the parts made from a configuration loaded as the binary loads it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

mod parts;
