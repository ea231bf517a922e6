//! The PostgreSQL store's tests, one module per file, in one test binary.

mod common;

mod faults;
mod identity;
mod parallel;
mod tls;
