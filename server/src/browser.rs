//! What a web browser may make the server do: nothing, unless the operator says so.
//!
//! A page the user opens can send requests to `127.0.0.1` (a "simple" POST goes out without a
//! preflight), and a name the attacker controls can be re-pointed at `127.0.0.1` (DNS
//! rebinding), after which the page reads the answers as its own. Three checks, on every route,
//! close both:
//!
//! - **Host.** A request must name the server by a loopback name (`localhost`, `*.localhost`),
//!   an IP literal (no DNS, so nothing to rebind), or a name the operator allows
//!   (`--allowed-host`).
//! - **Origin.** A request that carries an `Origin` (every cross-origin request from a browser
//!   does, and so does a same-origin one that writes) must come from the server's own origin or
//!   one the operator allows (`--cors-origin`); `null` never passes.
//! - **Content type.** A request with a body must say `application/json` (a chat history to
//!   import may also say `application/jsonl` or `application/x-ndjson`), which a page can only
//!   send after a preflight (that the server answers only for allowed origins).
//!
//! CORS headers go out only for allowed origins.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, Code};

/// The hosts and origins the server answers browsers from.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Host names (optionally `name:port`) besides loopback names and IP literals, lowercase.
    hosts: Vec<String>,
    /// Origins allowed cross-origin (`scheme://host[:port]`), lowercase, without a trailing `/`.
    origins: Vec<String>,
}

/// Request headers a preflight may ask for.
const ALLOW_HEADERS: &str =
    "authorization, content-type, idempotency-key, mcp-session-id, mcp-protocol-version, last-event-id";
/// Methods a preflight may ask for.
const ALLOW_METHODS: &str = "GET, POST, PATCH, DELETE";
/// Response headers a cross-origin script may read.
const EXPOSE_HEADERS: &str = "retry-after, mcp-session-id, www-authenticate";

impl Policy {
    /// A policy from the operator's lists; an origin must be `http://` or `https://` with a host.
    pub fn new(hosts: &[String], origins: &[String]) -> Result<Policy, String> {
        let hosts = hosts
            .iter()
            .map(|h| {
                let h = h.trim().to_ascii_lowercase();
                if h.is_empty() || h.contains(['/', ' ']) {
                    Err(format!("--allowed-host {h:?}: expected a host name, optionally with :port"))
                } else {
                    Ok(h)
                }
            })
            .collect::<Result<_, _>>()?;
        let origins = origins
            .iter()
            .map(|o| {
                let o = o.trim().trim_end_matches('/').to_ascii_lowercase();
                match o.split_once("://") {
                    Some(("http" | "https", rest)) if !rest.is_empty() && !rest.contains('/') => Ok(o),
                    _ => Err(format!("--cors-origin {o:?}: expected http(s)://host[:port]")),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Policy { hosts, origins })
    }

    /// Whether a `Host` value names this server.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let name = host_name(&host);
        if name == "localhost" || name.ends_with(".localhost") || is_ip_literal(name) {
            return true;
        }
        self.hosts.iter().any(|h| *h == host || *h == name)
    }

    /// Whether `origin` may send this request whose `Host` is `host`: the server's own origin,
    /// or one the operator allowed.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if self.cross_origin(&origin) {
            return true;
        }
        let Some((_, authority)) = origin.split_once("://") else { return false };
        host.is_some_and(|h| h.trim().eq_ignore_ascii_case(authority))
    }

    /// Whether the operator allowed `origin` (lowercase) cross-origin.
    fn cross_origin(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o == origin)
    }
}

/// `name` of `name:port`, `[v6]:port` or `[v6]`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_ip_literal(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_ok()
}

fn header(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn has_body(headers: &HeaderMap) -> bool {
    let declared = header(headers, header::CONTENT_LENGTH).and_then(|v| v.trim().parse::<u64>().ok());
    declared.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| {
        let essence = t.split(';').next().unwrap_or("").trim();
        ["application/json", "application/jsonl", "application/x-ndjson"]
            .iter()
            .any(|json| essence.eq_ignore_ascii_case(json))
    })
}

fn forbidden(message: String) -> Response {
    ApiError::new(Code::Forbidden, message).into_response()
}

/// The three checks, and CORS for allowed origins.
/// Why a request's `Host` is refused before anything else (RFC 9112, 3.2): HTTP/1.1 without
/// one, more than one, or an absolute-form target whose authority is another than `Host` (which
/// would let one check the name and another route the request).
fn strict_host(request: &Request) -> Option<&'static str> {
    if request.version() != axum::http::Version::HTTP_11 && request.version() != axum::http::Version::HTTP_10
    {
        return None;
    }
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (_, Some(_)) => return Some("more than one Host header"),
        (None, _) if request.version() == axum::http::Version::HTTP_11 => {
            return Some("an HTTP/1.1 request needs a Host header");
        }
        (None, _) => None,
        (Some(h), None) => Some(h),
    };
    match (request.uri().authority(), host) {
        (Some(target), Some(host))
            if !target.as_str().eq_ignore_ascii_case(host.to_str().unwrap_or("").trim()) =>
        {
            Some("the request target names another host than the Host header")
        }
        (Some(_), None) => Some("an absolute-form target needs a Host header that names the same host"),
        _ => None,
    }
}

pub(crate) async fn guard(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    let policy = &*policy;
    let headers = request.headers();
    if let Some(refused) = strict_host(&request) {
        return ApiError { field: Some("Host".into()), ..ApiError::new(Code::InvalidInput, refused) }
            .into_response();
    }
    let host = header(headers, header::HOST).map(str::to_owned);
    if let Some(h) = &host {
        if !policy.host_allowed(h) {
            return forbidden(format!(
                "Host {h:?} is not allowed: the server answers to loopback names, IP addresses and \
                 the names given with --allowed-host"
            ));
        }
    }
    let origin = match headers.get(header::ORIGIN) {
        None => None,
        Some(v) => match v.to_str() {
            Ok(o) if policy.origin_allowed(o, host.as_deref()) => Some(o.trim().to_owned()),
            _ => {
                let shown = String::from_utf8_lossy(v.as_bytes()).into_owned();
                return forbidden(format!(
                    "requests from origin {shown:?} are refused: only the server's own origin and \
                     those given with --cors-origin may call it from a browser"
                ));
            }
        },
    };
    let cors = origin.filter(|o| policy.cross_origin(&o.to_ascii_lowercase()));
    if request.method() == Method::OPTIONS {
        if let Some(o) = &cors {
            if headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
                let mut r = StatusCode::NO_CONTENT.into_response();
                let h = r.headers_mut();
                allow(h, o);
                h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(ALLOW_METHODS));
                h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
                h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
                return r;
            }
        }
    }
    if has_body(headers) && !is_json(header(headers, header::CONTENT_TYPE)) {
        let given = header(headers, header::CONTENT_TYPE).unwrap_or("none");
        return ApiError {
            field: Some("Content-Type".into()),
            ..ApiError::new(
                Code::UnsupportedMediaType,
                format!("a request body must be sent as `Content-Type: application/json` (got {given})"),
            )
        }
        .into_response();
    }
    let mut response = next.run(request).await;
    if let Some(o) = &cors {
        let h = response.headers_mut();
        allow(h, o);
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
    }
    response
}

fn allow(headers: &mut HeaderMap, origin: &str) {
    if let Ok(v) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_loopback_names_ip_literals_and_allowed_names_pass() {
        let p = Policy::new(&["memory.example".into(), "box:8080".into()], &[]).unwrap();
        for ok in [
            "localhost",
            "localhost:7424",
            "LOCALHOST:1",
            "app.localhost:3000",
            "127.0.0.1:7424",
            "10.0.0.5",
            "[::1]:7424",
            "[::1]",
            "memory.example",
            "memory.example:443",
            "box:8080",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:7424", "localhost.evil.example", "box:8081", "box", ""] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins_pass_when_the_servers_own_or_allowed() {
        let p = Policy::new(&[], &["https://app.example".into()]).unwrap();
        assert!(p.origin_allowed("http://127.0.0.1:7424", Some("127.0.0.1:7424")));
        assert!(p.origin_allowed("https://app.example", Some("127.0.0.1:7424")));
        assert!(p.origin_allowed("HTTPS://APP.EXAMPLE", None));
        assert!(!p.origin_allowed("https://evil.example", Some("127.0.0.1:7424")));
        assert!(!p.origin_allowed("http://127.0.0.1:9999", Some("127.0.0.1:7424")));
        assert!(!p.origin_allowed("null", Some("127.0.0.1:7424")));
        assert!(!p.origin_allowed("http://localhost:7424", None));
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(Policy::new(&["a/b".into()], &[]).is_err());
        assert!(Policy::new(&[], &["app.example".into()]).is_err());
        assert!(Policy::new(&[], &["ftp://app.example".into()]).is_err());
        assert!(Policy::new(&[], &["https://app.example/path".into()]).is_err());
        assert!(Policy::new(&[], &["https://app.example/".into()]).is_ok());
    }

    #[test]
    fn only_json_bodies_pass() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("Application/JSON; charset=utf-8")));
        assert!(is_json(Some("application/x-ndjson")));
        assert!(!is_json(Some("text/plain")));
        assert!(!is_json(Some("application/x-www-form-urlencoded")));
        assert!(!is_json(Some("multipart/form-data; boundary=x")));
        assert!(!is_json(None));
    }
}
