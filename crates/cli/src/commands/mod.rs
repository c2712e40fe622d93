pub mod config;
pub mod daemon;
pub mod remote;
pub mod serve;
pub mod tool;
pub mod validate;
