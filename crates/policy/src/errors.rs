//! Error classification for recovery. (STUB: to be implemented.)

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    RateLimit,
    Transient,
    NotFound,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryAction {
    Retry,
    Skip,
    Abort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorPolicy {
    pub max_retries: u32,
    pub transient_retries: u32,
}
