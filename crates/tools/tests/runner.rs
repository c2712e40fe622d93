//! Tests of runner.
