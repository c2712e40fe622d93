//! Integration tests of bridge-config: real files in temp dirs, injected environments.

mod layering;
mod validation;
