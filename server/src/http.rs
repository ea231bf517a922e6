//! The HTTP server: the REST API under `/v1`, MCP streamable HTTP at `/mcp`, `/health`,
//! `/metrics`, `/openapi.json`, `/docs` and the web page at `/ui`, behind authentication, a body
//! limit, per-token rate limits and request timeouts.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, RawPathParamsRejection};
use axum::extract::{DefaultBodyLimit, RawPathParams, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, MethodFilter, MethodRouter};
use axum::Extension;
use axum::{Json, Router};
use governor::{Quota, RateLimiter};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use serde_json::Value;
use utoipa::OpenApi;

use crate::api::Health;
use crate::conn::Connections;
use crate::error::{ApiError, Code, ErrorBody};
use crate::guards;
use crate::operations::{Http, Operation, Source, OPERATIONS};
use crate::principal::{Grant, Principal};
use crate::service::Service;
use crate::state::AppState;

/// How the HTTP server listens and what it allows. Its `Debug` never shows the token.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen (default `127.0.0.1:7424`).
    pub addr: SocketAddr,
    /// The bearer token every request but `/health`, `/openapi.json` and `/docs` must carry
    /// (it acts for the whole server); a token, or `grants`, is required to bind anything but a
    /// loopback address.
    pub token: Option<String>,
    /// More tokens, each acting for the whole server or bound to one user (and agent): see
    /// [`crate::principal`].
    pub grants: Vec<Grant>,
    /// Largest request body, bytes (default 4 MiB).
    pub body_limit: usize,
    /// Requests per second per token (or per client address without a token), with a burst of
    /// twice that; `None`: no limit.
    pub rate_limit: Option<u32>,
    /// Longest a request may take (default 30 s).
    pub timeout: Duration,
    /// Most requests under `/v1` and `/mcp` served at once (default 24); one more waits for a
    /// place up to `queue_wait`, then is answered `overloaded` (503, `Retry-After`), so that the
    /// admitted ones keep their latency.
    pub max_in_flight: usize,
    /// How long a request past `max_in_flight` may wait for a place (default 20 ms): bursts are
    /// absorbed, sustained overload is shed.
    pub queue_wait: Duration,
    /// Host names (`name` or `name:port`) requests may name in `Host`, besides loopback names
    /// and IP addresses.
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`https://app.example`) allowed to call the server cross-origin; none by
    /// default, and then no CORS headers are sent.
    pub cors_origins: Vec<String>,
    /// Whether MCP offers the destructive tools `forget_user` and `move_memories` (the HTTP
    /// API's routes for them are there either way).
    pub destructive_tools: bool,
    /// Longest a client may take to send a request's headers, and longest a connection may sit
    /// idle between requests (default 10 s): past it the connection is closed.
    pub header_timeout: Duration,
    /// Longest a client may take to send a request's body (default 10 s), read before the
    /// request takes an in-flight place: past it, `408 request_timeout` and the connection closes.
    pub body_timeout: Duration,
    /// Most connections open at once from one client address (default 256); one more is closed
    /// as soon as it is accepted.
    pub max_connections_per_client: usize,
    /// The OpenAI-compatible proxy's upstream: with one, `/openai/v1/chat/completions` and
    /// `/openai/v1/models` (and, with `at_root`, `/v1/chat/completions` and `/v1/models`) answer
    /// chat requests with memory (see [`crate::proxy`]).
    pub upstream: Option<crate::proxy::Upstream>,
    /// Largest chat history `POST /v1/import/chats` takes, bytes (default 512 MiB): read as it
    /// arrives, never held whole.
    pub import_limit: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("grants", &self.grants)
            .field("body_limit", &self.body_limit)
            .field("rate_limit", &self.rate_limit)
            .field("timeout", &self.timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("queue_wait", &self.queue_wait)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cors_origins", &self.cors_origins)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections_per_client", &self.max_connections_per_client)
            .field("destructive_tools", &self.destructive_tools)
            .field("upstream", &self.upstream)
            .field("import_limit", &self.import_limit)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 7424)),
            token: None,
            grants: Vec::new(),
            body_limit: 4 << 20,
            rate_limit: None,
            timeout: Duration::from_secs(30),
            max_in_flight: 24,
            queue_wait: Duration::from_millis(20),
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            destructive_tools: false,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections_per_client: 256,
            upstream: None,
            import_limit: 512 << 20,
        }
    }
}

/// The name of the thread that folds the metrics' histogram samples into their buckets.
pub const METRICS_UPKEEP_THREAD: &str = "mnemon-metrics";

/// The process's metrics recorder (installed once), with its upkeep thread: a histogram keeps
/// every observed sample until upkeep folds it into the buckets, so without one a server that
/// nobody scrapes grows by each request's latency, forever (docs/DECISIONS.md, 2026-12-02).
pub fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let buckets =
                [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
            let builder =
                PrometheusBuilder::new().set_buckets(&buckets).unwrap_or_else(|_| PrometheusBuilder::new());
            let handle = match builder.install_recorder() {
                Ok(handle) => handle,
                // Another recorder is installed (a test harness): render from a private one.
                Err(_) => PrometheusBuilder::new().build_recorder().handle(),
            };
            let upkept = handle.clone();
            let spawned =
                std::thread::Builder::new().name(METRICS_UPKEEP_THREAD.into()).spawn(move || loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkept.run_upkeep();
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no metrics upkeep thread: histograms grow until scraped");
            }
            handle
        })
        .clone()
}

/// Why the server would not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A non-loopback address without a token.
    #[error("refusing to listen on {0} without a bearer token: set MNEMON_TOKEN or --token-file, or bind 127.0.0.1")]
    NoToken(SocketAddr),
    /// A bad option.
    #[error("{0}")]
    Option(String),
    /// Binding or serving failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The whole application: routes, MCP and middleware.
pub fn router(service: Arc<Service>, options: &HttpOptions) -> Result<Router, StartError> {
    let mut grants = options.grants.clone();
    if let Some(t) = &options.token {
        grants.push(Grant { token: t.trim().to_owned(), principal: Principal::Admin });
    }
    if !options.addr.ip().is_loopback() && grants.is_empty() {
        return Err(StartError::NoToken(options.addr));
    }
    if grants.iter().any(|g| g.token.trim().len() < 16) {
        return Err(StartError::Option("the token must be at least 16 characters".into()));
    }
    let limiter = match options.rate_limit {
        None => None,
        Some(n) => {
            let per_second = NonZeroU32::new(n)
                .ok_or_else(|| StartError::Option("rate limit must be at least 1".into()))?;
            let burst = NonZeroU32::new(n.saturating_mul(2)).unwrap_or(per_second);
            Some(Arc::new(RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst))))
        }
    };
    if options.max_in_flight == 0 {
        return Err(StartError::Option("max_in_flight must be at least 1".into()));
    }
    let browser = crate::browser::Policy::new(&options.allowed_hosts, &options.cors_origins)
        .map_err(StartError::Option)?;
    let proxy = match &options.upstream {
        None => None,
        Some(u) => {
            Some(Arc::new(crate::proxy::Proxy::new(u, !grants.is_empty()).map_err(StartError::Option)?))
        }
    };
    let state = AppState {
        service: Arc::clone(&service),
        tokens: Arc::new(
            grants
                .into_iter()
                .map(|g| (*blake3::hash(g.token.trim().as_bytes()).as_bytes(), g.principal))
                .collect(),
        ),
        limiter,
        body_limit: options.body_limit,
        body_timeout: options.body_timeout,
        timeout: options.timeout,
        in_flight: Arc::new(tokio::sync::Semaphore::new(options.max_in_flight)),
        queue_wait: options.queue_wait,
        metrics: metrics_handle(),
        browser: Arc::new(browser),
        proxy,
        imports: Arc::new(tokio::sync::Semaphore::new(crate::import::IMPORTS_AT_ONCE)),
        import_limit: options.import_limit,
    };

    let mut mcp_config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default();
    mcp_config.json_response = true;
    // Stateless: every request stands alone, so any of several servers behind a load balancer
    // answers it, and a restart loses no session.
    mcp_config.legacy_session_mode = false;
    // Host and Origin are checked for every route, MCP's included, in `browser`.
    mcp_config.allowed_hosts.clear();
    let mcp_service = {
        let service = Arc::clone(&service);
        let (timeout, destructive) = (options.timeout, options.destructive_tools);
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            move || {
                Ok(crate::mcp::Mcp::new(Arc::clone(&service))
                    .with_timeout(timeout)
                    .with_destructive_tools(destructive))
            },
            Arc::new(rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default()),
            mcp_config,
        )
    };

    // Every operation's route, from the table; a path's methods on one route.
    let mut v1 = Router::new();
    let mut paths: Vec<&'static str> = OPERATIONS.iter().map(|o| o.http.path).collect();
    paths.dedup();
    for path in paths {
        let mut route = MethodRouter::new();
        for op in OPERATIONS.iter().filter(|o| o.http.path == path) {
            route = route.merge(operation_handler(op));
        }
        v1 = v1.route(path.strip_prefix("/v1").unwrap_or(path), route);
    }
    let v1 = v1.layer(middleware::from_fn_with_state(state.clone(), guards::time_limit));
    let protected = Router::new()
        .nest("/v1", v1)
        .nest_service("/mcp", mcp_service)
        .route("/metrics", get(metrics))
        // After auth, each body is read whole (within its size and time limits) before the
        // request takes an in-flight place: a slow body holds no place (the MCP service reads
        // bodies itself, so it gets them buffered too).
        .layer(middleware::from_fn_with_state(state.clone(), guards::admit))
        .layer(middleware::from_fn_with_state(state.clone(), guards::buffered))
        .layer(middleware::from_fn_with_state(state.clone(), guards::guard));
    // The proxy's routes wait on the upstream (its own timeouts bound them), so they take no
    // in-flight place: slow completions cannot shed the API's requests.
    let mut chat = Router::new();
    if let Some(upstream) = &options.upstream {
        chat = chat.nest("/openai/v1", crate::proxy::routes());
        if upstream.at_root {
            chat = chat.nest("/v1", crate::proxy::routes());
        }
    }
    let chat = chat
        .layer(middleware::from_fn_with_state(state.clone(), guards::buffered))
        .layer(middleware::from_fn_with_state(state.clone(), guards::guard));
    // An import reads its body as it arrives, under its own limits (see `crate::import`).
    let import = Router::new()
        .route(crate::import::PATH, axum::routing::post(crate::import::import_chats))
        .layer(middleware::from_fn_with_state(state.clone(), guards::guard));
    Ok(Router::new()
        .merge(protected)
        .merge(chat)
        .merge(import)
        .route("/health", get(health))
        .route("/openapi.json", get(openapi))
        .route("/docs", get(docs))
        .merge(crate::ui::routes())
        .fallback(|| async { ApiError::new(Code::NotFound, "no such route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(Code::MethodNotAllowed, "this route does not take that method")
        })
        .layer(DefaultBodyLimit::max(options.body_limit))
        .layer(middleware::from_fn_with_state(Arc::clone(&state.browser), crate::browser::guard))
        .layer(middleware::from_fn_with_state(state.clone(), guards::outer))
        .with_state(state))
}

/// Serves until ctrl-c.
/// Every option is checked (a non-loopback address needs a token) before the address is bound,
/// so a refused start never listened.
pub async fn serve(service: Arc<Service>, options: HttpOptions) -> Result<(), StartError> {
    let app = router(service, &options)?;
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let chat = match &options.upstream {
        None => "",
        Some(u) if u.at_root => ", OpenAI-compatible chat with memory at /v1/chat/completions",
        Some(_) => ", OpenAI-compatible chat with memory at /openai/v1/chat/completions",
    };
    eprintln!(
        "mnemon: listening on http://{} (REST under /v1, MCP at /mcp, docs at /docs, web page at /ui{chat})",
        listener.local_addr()?
    );
    crate::conn::run(listener, app, Connections::of(&options), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}

/// Serves on a bound listener until `shutdown` completes. `options.addr` is checked (a
/// non-loopback address needs a token) but not bound again.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    options: &HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    crate::conn::run(listener, router(service, options)?, Connections::of(options), shutdown).await
}

/// A JSON body, or the error that names what is wrong with it.
pub(crate) fn json_body(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(Code::PayloadTooLarge, e.body_text())
        } else {
            ApiError::input("body", e.body_text())
        }
    })?;
    if bytes.is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(&bytes).map_err(|e| ApiError::input("body", format!("not valid JSON: {e}")))
}

/// The `Idempotency-Key` header, moved into the request's `idempotency_key` (a body naming
/// another key is refused).
fn idempotent(headers: &axum::http::HeaderMap, mut value: Value) -> Result<Value, ApiError> {
    let Some(header) = headers.get("idempotency-key") else { return Ok(value) };
    let key =
        header.to_str().map_err(|_| ApiError::input("Idempotency-Key", "must be visible ASCII"))?.to_owned();
    let Value::Object(object) = &mut value else { return Ok(value) };
    match object.get("idempotency_key") {
        Some(Value::String(k)) if *k != key => {
            return Err(ApiError::input("idempotency_key", "differs from the Idempotency-Key header"))
        }
        _ => {}
    }
    object.insert("idempotency_key".into(), Value::String(key));
    Ok(value)
}

/// The query string as a JSON object of strings.
pub(crate) fn query_object(query: Option<String>) -> Result<serde_json::Map<String, Value>, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::input("query", e.to_string()))?;
    Ok(pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

/// The request of an operation over HTTP, as JSON: its source's fields, the path's parameters
/// (refused when the source names them otherwise), booleans read from the query, and the
/// `Idempotency-Key` header.
fn request_value(
    http: &Http,
    params: Vec<(String, String)>,
    query: Option<String>,
    headers: &axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    let mut value = match http.source {
        Source::Body => json_body(body)?,
        Source::Query => Value::Object(query_object(query)?),
        Source::None => Value::Null,
    };
    if !params.is_empty() {
        let Value::Object(object) = &mut value else {
            return Err(ApiError::input("body", "expected a JSON object"));
        };
        for (name, given) in params {
            if object.get(&name).is_some_and(|v| v.as_str() != Some(given.as_str())) {
                return Err(ApiError::input(name.clone(), format!("differs from the {name} in the path")));
            }
            object.insert(name, Value::String(given));
        }
    }
    if let Value::Object(object) = &mut value {
        for &name in http.booleans {
            if let Some(Value::String(flag)) = object.get(name) {
                let flag = match flag.as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(ApiError::input(name, "must be `true` or `false`")),
                };
                object.insert(name.into(), Value::Bool(flag));
            }
        }
    }
    if http.idempotency_header {
        idempotent(headers, value)
    } else {
        Ok(value)
    }
}

/// Serves `op` over HTTP: its request built from the path, query, headers and body, run on the
/// blocking pool for the caller, its result as JSON (an export's text as Markdown or a dump).
fn operation_handler(op: &'static Operation) -> MethodRouter<AppState> {
    let handler = move |State(state): State<AppState>,
                        Extension(caller): Extension<Principal>,
                        params: Result<RawPathParams, RawPathParamsRejection>,
                        RawQuery(query): RawQuery,
                        headers: axum::http::HeaderMap,
                        body: Result<Bytes, BytesRejection>| async move {
        let params = match params {
            Ok(p) => p.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
            Err(RawPathParamsRejection::MissingPathParams(_)) => Vec::new(),
            Err(e) => return Err(ApiError::input("path", e.body_text())),
        };
        let value = request_value(&op.http, params, query, &headers, body)?;
        let dump = op.http.export && value.get("format").and_then(Value::as_str) == Some("jsonl");
        let service = Arc::clone(&state.service);
        let reply = crate::service::blocking(move || op.run(&service, &caller, value)).await?;
        if op.http.export {
            let exported = serde_json::to_value(&*reply).map_err(ApiError::internal)?;
            let text = exported["text"].as_str().unwrap_or_default().to_owned();
            let kind = if dump { "application/jsonl; charset=utf-8" } else { "text/markdown; charset=utf-8" };
            return Ok(([(header::CONTENT_TYPE, kind)], text).into_response());
        }
        let json = serde_json::to_vec(&*reply).map_err(ApiError::internal)?;
        Ok::<Response, ApiError>(([(header::CONTENT_TYPE, "application/json")], json).into_response())
    };
    axum::routing::on(method_filter(op.http.method), handler)
}

fn method_filter(method: &str) -> MethodFilter {
    match method {
        "get" => MethodFilter::GET,
        "patch" => MethodFilter::PATCH,
        "delete" => MethodFilter::DELETE,
        _ => MethodFilter::POST,
    }
}

/// Liveness, and a read of the server's store.
#[utoipa::path(get, path = "/health", tag = "server",
    responses((status = 200, body = Health), (status = 503, body = ErrorBody)))]
async fn health(State(s): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let service = Arc::clone(&s.service);
    let checked = tokio::task::spawn_blocking(move || service.check()).await;
    // Without the token, only whether it is up: no version for a scanner to match.
    let detail = guards::principal(&s, &headers).is_some();
    match checked {
        Ok(Ok(())) => Json(Health {
            status: "ok".into(),
            store: detail.then(|| "ok".into()),
            version: detail.then(|| env!("CARGO_PKG_VERSION").into()),
        })
        .into_response(),
        Ok(Err(e)) => {
            let mut r = e.into_response();
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            r
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "server", responses((status = 200, content_type = "text/plain", body = String)))]
async fn metrics(State(s): State<AppState>, Extension(p): Extension<Principal>) -> Response {
    // Store names and every user's traffic: for the whole server's operators only.
    if p != Principal::Admin {
        return ApiError::new(Code::Forbidden, "metrics need a token that acts for the whole server")
            .into_response();
    }
    let service = Arc::clone(&s.service);
    let _ = tokio::task::spawn_blocking(move || {
        for (path, memory) in service.open_stores() {
            let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if let Ok(n) = memory.pending(None) {
                metrics::gauge!("mnemon_extraction_queue_depth", "store" => label.clone()).set(n as f64);
            }
            let size = |suffix: &str| {
                let mut p = path.clone().into_os_string();
                p.push(suffix);
                std::fs::metadata(p).map_or(0, |m| m.len())
            };
            metrics::gauge!("mnemon_store_bytes", "store" => label.clone())
                .set((size("") + size("-wal")) as f64);
            metrics::gauge!("mnemon_view_cache_bytes", "store" => label).set(memory.view_cache().0 as f64);
        }
        if let Some(budget) = service.memory_budget() {
            metrics::gauge!("mnemon_memory_budget_used_bytes").set(budget.used() as f64);
            metrics::gauge!("mnemon_memory_budget_bytes").set(budget.limit() as f64);
        }
    })
    .await;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.metrics.render()).into_response()
}

/// The document's own part: its description, the two routes outside the table of operations, the
/// error body and the bearer token.
#[derive(OpenApi)]
#[openapi(
    info(title = "mnemon", description = "A deterministic, local-first memory engine for LLM agents: \
        direct memories, conversation rounds and extracted facts, ranked into prompt-ready context. \
        Every error is `{\"error\": {\"code\", \"message\", \"field\"?}}` with a stable code."),
    paths(health, metrics),
    components(schemas(ErrorBody, ApiError, Code)),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        openapi.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
    }
}

/// The OpenAPI document.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let server = ApiDoc::openapi();
    // The operations' routes first, then the server's own.
    let mut doc = crate::operations::OperationsDoc::openapi();
    doc.info = server.info.clone();
    doc.merge(crate::import::ImportDoc::openapi());
    doc.merge(server);
    doc
}

/// The OpenAPI 3.1 document.
async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi_document())
}

/// A documentation page rendered from the OpenAPI document, with nothing loaded from elsewhere.
async fn docs() -> Html<String> {
    static PAGE: OnceLock<String> = OnceLock::new();
    Html(PAGE.get_or_init(|| docs_page(&openapi_document())).clone())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn docs_page(doc: &utoipa::openapi::OpenApi) -> String {
    let value = serde_json::to_value(doc).unwrap_or_default();
    let mut body = String::new();
    if let Some(paths) = value["paths"].as_object() {
        for (path, item) in paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                body.push_str(&format!(
                    "<h2><code>{} {}</code></h2><p>{}</p><details><summary>request and responses</summary><pre>{}</pre></details>\n",
                    method.to_uppercase(),
                    escape(path),
                    escape(op["summary"].as_str().or(op["description"].as_str()).unwrap_or("")),
                    escape(&serde_json::to_string_pretty(op).unwrap_or_default()),
                ));
            }
        }
    }
    let schemas = serde_json::to_string_pretty(&value["components"]["schemas"]).unwrap_or_default();
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mnemon API</title>\
         <style>body{{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}\
         pre{{background:#f4f4f4;padding:1rem;overflow:auto}}</style></head><body>\
         <h1>mnemon HTTP API</h1><p>{}</p><p>The machine-readable document is at \
         <a href=\"/openapi.json\">/openapi.json</a> (OpenAPI 3.1). MCP (streamable HTTP) is at <code>/mcp</code>.</p>\
         {body}<h2>Schemas</h2><pre>{}</pre></body></html>",
        escape(value["info"]["description"].as_str().unwrap_or("")),
        escape(&schemas),
    )
}
