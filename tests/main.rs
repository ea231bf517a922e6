//! The library's integration tests, one module per file, in one test binary (each binary links
//! llama.cpp and every dependency, so one link instead of one per file).

mod common;

mod browse;
mod chats;
mod concurrency;
mod conflicts;
mod contexts;
mod crash;
mod endings;
mod extract;
mod facts;
mod forget;
mod framing;
mod notes;
mod onnx;
mod parts;
mod processes;
mod read_path;
mod store;
mod upgrade;
mod write_path;
