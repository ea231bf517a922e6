//! The HTTP server's middleware: metrics of every request, the body limit, authentication, rate
//! limits and timeouts. Each answers with the one error body.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, Code};
use crate::principal::Principal;
use crate::state::AppState;

/// The longest request target (path and query) read; hyper's own limit (64 KiB) answers with
/// an empty body, this one in the one error shape.
const MAX_TARGET: usize = 16 << 10;
/// The most headers, and header bytes, a request may carry (below hyper's own 100 and ~400 KB,
/// for the same reason).
const MAX_HEADERS: usize = 64;
const MAX_HEADER_BYTES: usize = 32 << 10;

/// Metrics of every request, and the body limit checked before a body is read.
pub(crate) async fn outer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = crate::stopwatch();
    let route = request.extensions().get::<MatchedPath>().map_or_else(
        || if request.uri().path().starts_with("/mcp") { "/mcp".to_owned() } else { "unmatched".to_owned() },
        |p| p.as_str().to_owned(),
    );
    // Label values come from closed sets, whatever a client sends: the route's template, a
    // known method or `other`, the status code.
    let method = known_method(request.method()).to_owned();
    let docs = request.uri().path() == "/docs";
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let target = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    // An import streams a file under its own limit; every other body is read whole under this.
    let limit =
        if request.uri().path() == crate::import::PATH { state.import_limit } else { state.body_limit };
    let header_bytes: usize = request.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
    let response = if target > MAX_TARGET {
        ApiError::new(Code::UriTooLong, format!("the request target is over {MAX_TARGET} bytes"))
            .into_response()
    } else if request.headers().len() > MAX_HEADERS || header_bytes > MAX_HEADER_BYTES {
        let message = format!("at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES} bytes in all");
        ApiError::new(Code::HeadersTooLarge, message).into_response()
    } else if declared.is_some_and(|n| n > limit) {
        too_large(limit).into_response()
    } else {
        let response = next.run(request).await;
        // A body without a length that grows past the limit is cut by a layer that answers 413 in
        // its own shape (the MCP service's too): every 413 gets ours.
        if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(state.body_limit).into_response()
        } else {
            in_our_shape(response).await
        }
    };
    let mut response = response;
    secure(response.headers_mut(), docs);
    let status = response.status().as_u16().to_string();
    metrics::counter!("mnemon_http_requests_total", "route" => route.clone(), "method" => method.clone(), "status" => status.clone()).increment(1);
    metrics::histogram!("mnemon_http_request_seconds", "route" => route, "method" => method, "status" => status)
        .record(started.elapsed().as_secs_f64());
    response
}

/// What no response goes without (the web page's assets set their own, stricter for scripts):
/// the browser never sniffs a type, never frames the response, and loads nothing it names, so a
/// stored text served back (an export, an error echoing input) cannot run as a page. `/docs` is
/// a static page with an inline style sheet and nothing else.
fn secure(headers: &mut HeaderMap, docs: bool) {
    use axum::http::HeaderValue;
    const CSP: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
    const DOCS_CSP: &str =
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    };
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::CONTENT_SECURITY_POLICY, if docs { DOCS_CSP } else { CSP });
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::REFERRER_POLICY, "no-referrer");
}

/// The method as a metric label: one of HTTP's own, else `other` (a client may send any token).
fn known_method(m: &axum::http::Method) -> &'static str {
    match m.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => "other",
    }
}

/// Reads a request's body within the limit (answering our 413 past it), so that no service
/// behind it reads more.
pub(crate) async fn buffered(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(read) =
        tokio::time::timeout(state.body_timeout, axum::body::to_bytes(body, state.body_limit)).await
    else {
        metrics::counter!("mnemon_slow_bodies_total").increment(1);
        let message =
            format!("the request body took longer than {} s to arrive", state.body_timeout.as_secs_f32());
        let mut r = ApiError::new(Code::RequestTimeout, message).into_response();
        r.headers_mut().insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
        return r;
    };
    match read {
        Ok(bytes) => {
            // A JSON-RPC message rmcp would skip without a reply, or misread, is answered here.
            if parts.method == axum::http::Method::POST && parts.uri.path().starts_with("/mcp") {
                if let Some((code, reply)) = crate::jsonrpc::precheck(&bytes) {
                    // A parse error is the request's fault (400); wrong params are the method's
                    // answer, as rmcp gives its errors (200).
                    let status = if code == crate::jsonrpc::INVALID_PARAMS {
                        StatusCode::OK
                    } else {
                        StatusCode::BAD_REQUEST
                    };
                    return (status, [(header::CONTENT_TYPE, "application/json")], reply).into_response();
                }
            }
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
        }
        Err(e) => {
            if e.into_inner().downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                too_large(state.body_limit).into_response()
            } else {
                ApiError::input("body", "the request body could not be read").into_response()
            }
        }
    }
}

/// A client error some layer answered in its own shape (the MCP service's plain-text 400, 404,
/// 405, 406, 415), answered again in the one error body, its text kept as the message.
async fn in_our_shape(response: Response) -> Response {
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let upstream = response.extensions().get::<crate::proxy::Upstreamed>().is_some();
    let code = match status {
        _ if json || upstream || !status.is_client_error() => return response,
        StatusCode::BAD_REQUEST => Code::InvalidInput,
        StatusCode::FORBIDDEN => Code::Forbidden,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::NOT_ACCEPTABLE => Code::NotAcceptable,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
        _ => return response,
    };
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 << 10).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let message =
        if text.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { text };
    let mut ours = ApiError::new(code, message).into_response();
    // The MCP service's own headers (a session id, `Allow`) stay.
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            ours.headers_mut().insert(name.clone(), value.clone());
        }
    }
    *ours.status_mut() = status;
    ours
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(Code::PayloadTooLarge, format!("the request body is larger than {limit} bytes"))
}

/// Whom the request acts for: the principal of the token it carries, or the whole server when
/// the server has no token; `None` without a valid token. Every token is compared, in constant
/// time, so the time taken says nothing about which one nearly matched.
pub(crate) fn principal(state: &AppState, headers: &HeaderMap) -> Option<Principal> {
    use subtle::ConstantTimeEq;
    if state.tokens.is_empty() {
        return Some(Principal::Admin);
    }
    let presented = *blake3::hash(bearer(headers)?.as_bytes()).as_bytes();
    let mut found = None;
    for (expected, principal) in state.tokens.iter() {
        if bool::from(presented.ct_eq(expected)) {
            found = Some(principal.clone());
        }
    }
    found
}

/// Authentication (the principal goes into the request's extensions), then the rate limit.
pub(crate) async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(principal) = principal(&state, request.headers()) else {
        let mut r =
            ApiError::new(Code::Unauthorized, "a valid `Authorization: Bearer <token>` header is required")
                .into_response();
        r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return r;
    };
    if let Some(limiter) = &state.limiter {
        let key = match bearer(request.headers()).filter(|_| !state.tokens.is_empty()) {
            Some(p) => format!("token:{}", blake3::hash(p.as_bytes()).to_hex()),
            None => request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map_or_else(|| "anonymous".to_owned(), |c| format!("addr:{}", c.0.ip())),
        };
        if let Err(not_until) = limiter.check_key(&key) {
            let wait = not_until
                .wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return ApiError {
                retry_after: Some(seconds.max(1)),
                ..ApiError::new(Code::RateLimited, "too many requests; retry later")
            }
            .into_response();
        }
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// The token of an `Authorization: Bearer TOKEN` header; the scheme's name is case-insensitive
/// (RFC 9110, 11.1), so `bearer` and `BEARER` name it too.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

/// Load shedding: a request past the limit of requests in flight waits for a place up to the
/// queue wait (a burst passes), then is answered `overloaded` rather than queued behind work it
/// would only wait on.
pub(crate) async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let permit = match state.in_flight.try_acquire() {
        Ok(p) => Some(p),
        Err(_) => match tokio::time::timeout(state.queue_wait, state.in_flight.acquire()).await {
            Ok(Ok(p)) => Some(p),
            _ => None,
        },
    };
    let Some(_permit) = permit else {
        metrics::counter!("mnemon_shed_total").increment(1);
        return ApiError {
            retry_after: Some(1),
            ..ApiError::new(Code::Overloaded, "the server is at its limit of requests in flight; retry later")
        }
        .into_response();
    };
    next.run(request).await
}

pub(crate) async fn time_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(state.timeout, next.run(request)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            Code::Timeout,
            format!(
                "the request took longer than {} s; a write that had begun completes",
                state.timeout.as_secs_f32()
            ),
        )
        .into_response(),
    }
}
