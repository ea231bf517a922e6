//! The HTTP server's connection loop: hyper's HTTP/1 with a header-read timeout (which also
//! bounds how long a connection may sit idle between requests; axum's own loop sets none), at
//! most a number of connections per client address, and a graceful stop that lets open
//! connections finish their requests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::http::{HttpOptions, StartError};

/// How connections are held: [`HttpOptions::header_timeout`] and
/// [`HttpOptions::max_connections_per_client`].
#[derive(Clone, Copy)]
pub(crate) struct Connections {
    header_timeout: Duration,
    per_client: usize,
}

impl Connections {
    pub(crate) fn of(options: &HttpOptions) -> Connections {
        Connections {
            header_timeout: options.header_timeout,
            per_client: options.max_connections_per_client.max(1),
        }
    }
}

/// One client address's open connections; the count goes down when the slot is dropped.
struct Slot {
    counts: Arc<std::sync::Mutex<HashMap<std::net::IpAddr, usize>>>,
    ip: std::net::IpAddr,
}

impl Slot {
    fn take(
        counts: &Arc<std::sync::Mutex<HashMap<std::net::IpAddr, usize>>>,
        ip: std::net::IpAddr,
        most: usize,
    ) -> Option<Slot> {
        let mut all = counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = all.entry(ip).or_default();
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(Slot { counts: Arc::clone(counts), ip })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut all = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = all.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                all.remove(&self.ip);
            }
        }
    }
}

/// Accepts connections until `shutdown`, then lets those open finish their requests. Each is
/// served by hyper's HTTP/1 with a header-read timeout that also bounds the idle time between
/// requests (axum's own loop sets none), at most `per_client` at once per client address.
pub(crate) async fn run(
    listener: tokio::net::TcpListener,
    app: Router,
    connections: Connections,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;
    let counts = Arc::new(std::sync::Mutex::new(HashMap::new()));
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let (open, all_closed) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                // Out of descriptors, or a connection reset before it was taken: wait, go on.
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = Slot::take(&counts, addr.ip(), connections.per_client) else {
            drop(stream);
            continue;
        };
        // A response written in parts (a streamed answer, an event at a time) goes out as each
        // part is written, not held by Nagle's algorithm until the client acknowledges the last
        // (up to its delayed-ACK timer, 40 ms on Linux).
        let _ = stream.set_nodelay(true);
        let service =
            app.clone().map_request(move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(axum::extract::ConnectInfo(addr));
                request.map(axum::body::Body::new)
            });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let mut stopping = stopping.clone();
        let all_closed = all_closed.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _open = all_closed;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(connections.header_timeout);
            let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                // The only change ever sent is the stop.
                _ = stopping.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    let _ = stop.send(true);
    drop(all_closed);
    open.closed().await;
    Ok(())
}
