pub mod config;
pub mod tool;
pub mod validate;
