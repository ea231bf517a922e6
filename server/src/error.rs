//! The one error body of the HTTP API and the MCP tools: a stable code, a message, and the field
//! at fault where there is one.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// A stable error code. Each has one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// A memory's content is empty or whitespace (400).
    EmptyMemory,
    /// A field is missing, of the wrong type or out of range; `field` names it (400).
    InvalidInput,
    /// The token budget is unusable (400).
    Budget,
    /// No such record in this scope, no such route, or no such store (404).
    NotFound,
    /// The store was built under another configuration (409).
    PinMismatch,
    /// The store is locked by another writer past the busy timeout; retry (503).
    Busy,
    /// Too many requests for this token; retry after `Retry-After` seconds (429).
    RateLimited,
    /// A bearer token is required and was missing or wrong (401).
    Unauthorized,
    /// The store reference names a place outside the server's data directory and roots, or a
    /// new store on a server that creates none for requests, or the request's `Host` or `Origin`
    /// is not one the server answers (403).
    Forbidden,
    /// The request body is larger than the server accepts (413).
    PayloadTooLarge,
    /// The request target is longer than the server reads (414).
    UriTooLong,
    /// The request's headers are more or larger than the server reads (431).
    HeadersTooLarge,
    /// A request body not sent as `application/json` (415).
    UnsupportedMediaType,
    /// The route exists but not with this method (405).
    MethodNotAllowed,
    /// The request's `Accept` does not admit what the route answers (406; MCP wants
    /// `application/json, text/event-stream`).
    NotAcceptable,
    /// The request took longer than the server's request timeout (503).
    Timeout,
    /// The request's body took longer than the server waits for one (408); the connection is
    /// closed.
    RequestTimeout,
    /// The server is at its limit of requests in flight; retry after `Retry-After` seconds (503).
    Overloaded,
    /// The store reached its size limit or the disk is full; nothing was written (507).
    StoreFull,
    /// A model file the engine needs is missing or unreadable; the message says what is wrong
    /// and the command that fetches it, the server's log the file (503).
    ModelUnavailable,
    /// The OpenAI-compatible proxy could not reach its upstream, or the upstream's answer broke
    /// off or could not be read (502). Nothing was stored.
    Upstream,
    /// Anything else: the server's log has the details (500).
    Internal,
}

impl Code {
    /// The HTTP status of this code.
    pub fn status(self) -> StatusCode {
        match self {
            Code::EmptyMemory | Code::InvalidInput | Code::Budget => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::PinMismatch => StatusCode::CONFLICT,
            Code::Busy | Code::Timeout | Code::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            Code::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Code::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::Forbidden => StatusCode::FORBIDDEN,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::UriTooLong => StatusCode::URI_TOO_LONG,
            Code::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Code::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Code::StoreFull => StatusCode::INSUFFICIENT_STORAGE,
            Code::ModelUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Upstream => StatusCode::BAD_GATEWAY,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The code as it appears in bodies and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::EmptyMemory => "empty_memory",
            Code::InvalidInput => "invalid_input",
            Code::Budget => "budget",
            Code::NotFound => "not_found",
            Code::PinMismatch => "pin_mismatch",
            Code::Busy => "busy",
            Code::RateLimited => "rate_limited",
            Code::Unauthorized => "unauthorized",
            Code::Forbidden => "forbidden",
            Code::PayloadTooLarge => "payload_too_large",
            Code::UriTooLong => "uri_too_long",
            Code::HeadersTooLarge => "headers_too_large",
            Code::UnsupportedMediaType => "unsupported_media_type",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::NotAcceptable => "not_acceptable",
            Code::Timeout => "timeout",
            Code::RequestTimeout => "request_timeout",
            Code::Overloaded => "overloaded",
            Code::StoreFull => "store_full",
            Code::ModelUnavailable => "model_unavailable",
            Code::Upstream => "upstream",
            Code::Internal => "internal",
        }
    }
}

/// An error as clients see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApiError {
    /// The stable code.
    pub code: Code,
    /// What went wrong, for a person.
    pub message: String,
    /// The request field at fault (e.g. `memories[2].content`), where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Seconds to wait before retrying (`rate_limited`, `busy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// For `pin_mismatch`: every differing pin, with the store's value and this server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differences: Option<Vec<PinDifferenceOut>>,
}

/// One pin that differs between a store and the configuration opening it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PinDifferenceOut {
    /// The pin, e.g. `embedder.name`.
    pub key: String,
    /// The store's value (`null`: the store lacks it).
    pub stored: Option<String>,
    /// This configuration's value (`null`: it has no such pin).
    pub expected: Option<String>,
}

/// The body of every error response: `{"error": {...}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ApiError,
}

impl ApiError {
    /// An error with a code and a message.
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), field: None, retry_after: None, differences: None }
    }

    /// `internal`: the client gets a correlation id and no detail (no SQL, no path); the server's
    /// log holds `detail` under the same id.
    pub fn internal(detail: impl std::fmt::Display) -> ApiError {
        let id = correlation_id();
        tracing::error!(id = %id, error = %detail, "internal error");
        ApiError::new(Code::Internal, format!("internal error {id}: the server's log holds the details"))
    }

    /// `invalid_input` naming `field`.
    pub fn input(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError { field: Some(field.into()), ..ApiError::new(Code::InvalidInput, message) }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        serde_json::to_value(ErrorBody { error: self.clone() }).unwrap_or_default()
    }
}

impl From<mnemon::Error> for ApiError {
    fn from(e: mnemon::Error) -> ApiError {
        use mnemon::Error as E;
        let message = e.to_string();
        match e {
            E::InvalidInput { field, .. } if field == "budget" => {
                ApiError { field: Some(field), ..ApiError::new(Code::Budget, message) }
            }
            E::InvalidInput { field, .. } => ApiError::input(field, message),
            E::EmptyMemory { field } => {
                ApiError { field: Some(field), ..ApiError::new(Code::EmptyMemory, message) }
            }
            E::NotFound { .. } => ApiError::new(Code::NotFound, message),
            E::PinMismatch { differences } => ApiError {
                differences: Some(
                    differences
                        .into_iter()
                        .map(|d| PinDifferenceOut { key: d.key, stored: d.stored, expected: d.expected })
                        .collect(),
                ),
                ..ApiError::new(Code::PinMismatch, message)
            },
            E::UnsupportedSchema { .. } => ApiError::new(Code::PinMismatch, message),
            // Never a path in a response: the file the client named is its own reference.
            E::NotAStore { reason, .. } => {
                ApiError::input("store", format!("the store named is not a mnemon store: {reason}"))
            }
            E::Import { .. } => ApiError::input("dump", message),
            E::Busy => ApiError { retry_after: Some(1), ..ApiError::new(Code::Busy, message) },
            E::StoreFull { reason, .. } => {
                ApiError::new(Code::StoreFull, format!("the store is full: {reason}"))
            }
            // The command that fixes it; the file and what is wrong with it (a runtime's message
            // may hold a path) only in the log.
            E::ModelUnavailable { path, reason, fix } => {
                tracing::error!(file = %path.display(), %reason, "a model is unusable");
                ApiError::new(
                    Code::ModelUnavailable,
                    format!("a model file is missing or unusable (the server's log says which); fix: {fix}"),
                )
            }
            // Work given up: in a server, because its caller stopped waiting.
            E::Cancelled => {
                metrics::counter!("mnemon_abandoned_total", "stage" => "running").increment(1);
                ApiError::new(Code::Timeout, message)
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<serde_path_to_error::Error<serde_json::Error>> for ApiError {
    fn from(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
        let path = e.path().to_string();
        let field = if path == "." { "body".to_owned() } else { path };
        ApiError::input(field, e.into_inner().to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let retry = self.retry_after;
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(s) = retry {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                response.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// Parses a request from JSON, naming the field at fault.
pub fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    Ok(serde_path_to_error::deserialize(value)?)
}

/// A new id for an internal error: this process's start (so ids of two runs differ) and a count.
fn correlation_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static START: OnceLock<u64> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    // The server may read the clock (the library never does).
    #[allow(clippy::disallowed_methods)]
    let start = *START.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (now.as_micros() as u64) ^ u64::from(std::process::id()) << 40
    });
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("{:08x}-{n}", start & 0xffff_ffff)
}
