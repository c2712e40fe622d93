//! Tests of audit.
