//! A server on loopback for the HTTP tests: in-process, on its own runtime, stopped when dropped.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use mnemon::config::Config;
use mnemon::embed::HashingEmbedder;
use mnemon_server::{HttpOptions, Service, Settings};

/// A running server; stops when dropped.
pub struct Server {
    pub base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn settings(data: &Path, roots: Vec<std::path::PathBuf>, config: Config) -> Settings {
    Settings {
        data: data.to_path_buf(),
        roots,
        store: None,
        embedder: Arc::new(HashingEmbedder::default()),
        extractor: None,
        config,
        memory_budget: None,
        // Most tests write to stores they name; `hostile.rs` tests the server that does not.
        create_stores: true,
        max_stores: None,
    }
}

pub fn start(settings: Settings, options: HttpOptions) -> Server {
    let service = Arc::new(Service::new(settings).expect("service"));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            mnemon_server::http::serve_on(listener, service, &options, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    let addr = addr_rx.recv().unwrap();
    Server { base: format!("http://{addr}"), stop: Some(stop), thread: Some(thread) }
}

/// A response read off the wire.
pub struct Raw {
    pub status: u16,
    /// Header names lowercase, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Raw {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The error code of the one error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or("(none)").to_owned()
    }
}

/// One HTTP/1.1 request written by hand, every header as given (`Host` included, so a test can
/// send what a browser or an attacker would), then the whole response.
pub fn raw(base: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Raw {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<Vec<_>>();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { unchunk(body) } else { body.to_owned() };
    Raw { status, headers, body }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
