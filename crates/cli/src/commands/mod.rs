pub mod config;
pub mod tool;
