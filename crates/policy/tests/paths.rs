//! Tests of paths.
