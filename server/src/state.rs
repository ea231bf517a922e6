//! What every request's middleware and handler reads: the service and the server's limits, its
//! tokens and its web policy.

use std::sync::Arc;
use std::time::Duration;

use governor::DefaultKeyedRateLimiter;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::principal::Principal;
use crate::service::Service;

/// The HTTP server's state, shared by its routes and middleware.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) service: Arc<Service>,
    /// blake3 of each token, with whom it acts for: compared in constant time, whatever the
    /// presented token's length. Empty: no authentication (loopback only).
    pub(crate) tokens: Arc<Vec<([u8; 32], Principal)>>,
    pub(crate) limiter: Option<Arc<DefaultKeyedRateLimiter<String>>>,
    pub(crate) body_limit: usize,
    /// Longest a request's body may take to arrive (it is read before admission).
    pub(crate) body_timeout: Duration,
    pub(crate) timeout: Duration,
    /// Permits for requests in flight, and how long one may be waited for.
    pub(crate) in_flight: Arc<tokio::sync::Semaphore>,
    pub(crate) queue_wait: Duration,
    pub(crate) metrics: PrometheusHandle,
    pub(crate) browser: Arc<crate::browser::Policy>,
    /// Places for imports running at once, and the largest file one may send.
    pub(crate) imports: Arc<tokio::sync::Semaphore>,
    pub(crate) import_limit: usize,
    /// The OpenAI-compatible proxy, when the server has an upstream.
    pub(crate) proxy: Option<Arc<crate::proxy::Proxy>>,
}
