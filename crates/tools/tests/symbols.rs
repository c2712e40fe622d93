//! Tests of symbols.
