//! Tests of patch.
