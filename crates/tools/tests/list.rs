//! Tests of list.
