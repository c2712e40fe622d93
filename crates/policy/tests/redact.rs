//! Tests of redact.
