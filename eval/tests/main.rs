//! The harness's tests, one module per file, in one test binary.

mod common;

mod qa;
mod run;
