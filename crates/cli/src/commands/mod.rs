pub mod config;
pub mod daemon;
pub mod remote;
pub mod run;
pub mod serve;
pub mod sessions;
pub mod tool;
pub mod validate;
