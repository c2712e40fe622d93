//! Tests of permission.
