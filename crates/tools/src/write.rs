//! (STUB: to be implemented.)

use std::sync::Arc;

use crate::Tool;

pub fn tools() -> Vec<Arc<dyn Tool>> {
    Vec::new()
}
