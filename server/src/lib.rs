//! mnemon's servers: MCP over stdio and streamable HTTP, and an HTTP API with OpenAPI, over one
//! set of operations ([`Service`]). The library stays free of an async runtime; this crate owns
//! tokio, axum and rmcp.
//!
//! Every operation is one entry of [`operations::OPERATIONS`]: its MCP tool (when agents get
//! it), its HTTP route and OpenAPI description, its request type ([`api`]) and its dispatch; it
//! fails with one error body ([`error::ApiError`]) whose code is stable. The reads for people browsing a store (stores, users, a timeline, the decision log,
//! activity) are HTTP endpoints only, and the web page at `/ui` ([`ui`]) is built on them.

pub mod api;
pub mod browser;
mod conn;
pub mod embedding;
pub mod error;
mod guards;
pub mod http;
pub mod idempotency;
pub mod import;
mod jsonrpc;
pub mod mcp;
pub mod operations;
pub mod principal;
pub mod proxy;
pub mod service;
mod state;
pub mod ui;

pub use error::{ApiError, Code};

/// Starts a latency measurement for the metrics. The servers, unlike the library, read the clock:
/// for metrics, timeouts and default timestamps, never for anything a store computes from.
#[allow(clippy::disallowed_methods)]
pub(crate) fn stopwatch() -> std::time::Instant {
    std::time::Instant::now()
}
pub use http::{serve, HttpOptions, StartError};
pub use mcp::serve_stdio;

/// The async runtime the servers run on: this crate's alone (the library and the `mnemon`
/// command have none).
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()
}

/// [`serve`]: the HTTP server until ctrl-c, on a runtime of its own.
pub fn run_http(service: std::sync::Arc<Service>, options: HttpOptions) -> Result<(), StartError> {
    runtime()?.block_on(serve(service, options))
}

/// [`serve_stdio`]: MCP on stdin/stdout until the client closes it, on a runtime of its own.
pub fn run_stdio(mcp: mcp::Mcp) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    runtime()?.block_on(serve_stdio(mcp))
}
pub use principal::{Grant, Principal};
pub use service::{Service, Settings};
