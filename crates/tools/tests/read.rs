//! Tests of read.
