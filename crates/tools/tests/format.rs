//! Tests of format.
