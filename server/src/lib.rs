//! mnemon's servers: MCP over stdio and streamable HTTP, and an HTTP API with OpenAPI, over one
//! set of operations ([`Service`]). The library stays free of an async runtime; this crate owns
//! tokio, axum and rmcp.
//!
//! Every operation is one MCP tool ([`tools::TOOLS`]) and one HTTP endpoint, takes one request
//! type ([`api`]) and fails with one error body ([`error::ApiError`]) whose code is stable.

pub mod api;
pub mod error;
pub mod http;
pub mod mcp;
pub mod metered;
pub mod service;
pub mod tools;

pub use error::{ApiError, Code};
pub use http::{serve, HttpOptions};
pub use mcp::serve_stdio;
pub use service::{Service, Settings};
