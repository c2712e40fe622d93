//! Tests of search.
