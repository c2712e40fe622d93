//! Integration tests of bridge-util, one binary (see ARCHITECTURE.md).

mod batch;
mod owner_only;
mod recovery;
