//! Tests of guard.
