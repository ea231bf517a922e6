//! The `mnemon` binary's tests, one module per file, in one test binary.

mod common;

mod cli;
mod mcp;
mod proxy;
mod serve;
mod ui;
