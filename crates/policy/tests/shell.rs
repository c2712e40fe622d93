//! Tests of shell.
