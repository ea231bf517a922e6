//! The servers' tests, one module per file, in one test binary.

mod common;

mod browse;
mod browser;
mod forget;
mod hostile;
mod http;
mod import;
mod load;
mod principals;
mod proxy;
