//! Tests of errors.
