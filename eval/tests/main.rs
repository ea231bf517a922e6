//! The harness's tests, one module per file, in one test binary.

mod common;

mod local;
mod qa;
mod run;
