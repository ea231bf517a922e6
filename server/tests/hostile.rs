//! Attacks on the HTTP server from the second hardening round, each kept as a test that failed
//! before its fix: unbounded metric labels, look-alike user ids, timestamps far outside any
//! conversation. The server runs in-process on loopback; requests are written by hand
//! ([`common::raw`]) so that a test can send what no well-behaved client would.

use mnemon::config::Config;
use mnemon_server::HttpOptions;

use crate::common::{raw, settings, start};

/// 300 requests with 2,000-character methods grew `/metrics` by one series each (11 MB): a
/// label's values now come from closed sets, so garbage methods share the one `other` series.
#[test]
fn garbage_methods_share_one_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(dir.path(), Vec::new(), Config::default()), HttpOptions::default());
    let metrics = || raw(&s.base, "GET", "/metrics", &[], "").body;
    raw(&s.base, "GET", "/health", &[], "");
    let before = metrics();
    for i in 0..40 {
        let method: String = format!("X{i}{}", "Q".repeat(2000));
        let r = raw(&s.base, &method, "/v1/count?user_id=ana", &[], "");
        assert!(r.status >= 400, "{}", r.status);
    }
    let after = metrics();
    assert!(!after.contains("QQQQ"), "a client's method became a label");
    // (The recorder is the process's: other tests' requests add their own series meanwhile.)
    let methods: std::collections::BTreeSet<&str> =
        after.split("method=\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    let known = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "other"];
    assert!(methods.iter().all(|m| known.contains(m)), "{methods:?}");
    assert!(methods.contains("other"), "{after}");
    assert!(after.len() < before.len() + 20_000, "{} → {} bytes", before.len(), after.len());
}

/// `an\u200ba` looks like `ana` and `\u202eana` reads backwards: refused by field, as are
/// timestamps outside the years a memory accepts; nothing is stored for either.
#[test]
fn look_alike_user_ids_and_far_timestamps_are_refused_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(dir.path(), Vec::new(), Config::default()), HttpOptions::default());
    let post = |path: &str, body: serde_json::Value| {
        raw(&s.base, "POST", path, &[("Content-Type", "application/json")], &body.to_string())
    };
    for user in ["an\u{200b}a", "\u{202e}ana", "ana\u{feff}", "cafe\u{301}"] {
        let r = post(
            "/v1/messages",
            serde_json::json!({"user_id": user, "messages": [{"role": "user", "content": "hi", "ts": "2026-01-01"}]}),
        );
        assert_eq!(
            (r.status, r.json()["error"]["field"].as_str()),
            (400, Some("user_id")),
            "{user:?}: {}",
            r.body
        );
    }
    for ts in
        ["9999-12-31T23:59:59", "0001-01-01T00:00:00", "-5000-01-01", "2026-01-01T00:00:00.123456789123Z"]
    {
        let r = post(
            "/v1/messages",
            serde_json::json!({"user_id": "ana", "messages": [{"role": "user", "content": "hi", "ts": ts}]}),
        );
        assert_eq!(
            (r.status, r.json()["error"]["field"].as_str()),
            (400, Some("messages[0].ts")),
            "{ts}: {}",
            r.body
        );
    }
    let r = raw(&s.base, "GET", "/v1/count?user_id=ana", &[], "");
    assert_eq!(r.json()["rounds"].as_u64(), Some(0), "{}", r.body);
}

/// The auth scheme is case-insensitive (RFC 9110): `bearer` and `BEARER` carry the token too.
#[test]
fn the_bearer_scheme_is_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let token = "hostile-token-0123456789abcdef";
    let options = HttpOptions { token: Some(token.into()), ..HttpOptions::default() };
    let s = start(settings(dir.path(), Vec::new(), Config::default()), options);
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let auth = format!("{scheme} {token}");
        let r = raw(&s.base, "GET", "/v1/count?user_id=ana", &[("Authorization", auth.as_str())], "");
        assert_eq!(r.status, 200, "{scheme}: {}", r.body);
    }
    for wrong in [format!("Basic {token}"), format!("Bearer{token}"), format!("bearer x{token}")] {
        let r = raw(&s.base, "GET", "/v1/count?user_id=ana", &[("Authorization", wrong.as_str())], "");
        assert_eq!(r.status, 401, "{wrong}: {}", r.body);
    }
}

/// Every response, a page, a download or an error, tells the browser not to sniff its type, not
/// to frame it and to load nothing it names: an export of stored markup cannot run as a page.
#[test]
fn every_response_carries_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(dir.path(), Vec::new(), Config::default()), HttpOptions::default());
    let post =
        |path: &str, body: &str| raw(&s.base, "POST", path, &[("Content-Type", "application/json")], body);
    post(
        "/v1/messages",
        r#"{"user_id":"ana","messages":[{"role":"user","content":"<script>alert(1)</script>","ts":"2026-01-01"}]}"#,
    );
    let replies = [
        ("docs", raw(&s.base, "GET", "/docs", &[], "")),
        ("openapi", raw(&s.base, "GET", "/openapi.json", &[], "")),
        ("health", raw(&s.base, "GET", "/health", &[], "")),
        ("export", raw(&s.base, "GET", "/v1/export?user_id=ana&format=markdown", &[], "")),
        ("export text", raw(&s.base, "GET", "/v1/export?user_id=ana&format=text", &[], "")),
        ("not found", raw(&s.base, "GET", "/nowhere", &[], "")),
        ("bad body", post("/v1/messages", "{")),
        ("ui", raw(&s.base, "GET", "/ui", &[], "")),
    ];
    for (name, r) in &replies {
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{name}");
        let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("{name}: no CSP"));
        assert!(
            csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"),
            "{name}: {csp}"
        );
        assert!(!csp.contains("script-src 'unsafe"), "{name}: {csp}");
    }
    assert!(replies[3].1.body.contains("<script>"), "the export is verbatim; the headers make it inert");
}

/// Errors never carry a path, SQL or a token: a file that is not a store, references outside the
/// data directory, bad bodies and bad fields, each scanned for the data directory's path, the
/// server's token and SQL words.
#[test]
fn no_error_body_carries_a_path_sql_or_a_token() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notastore.db"), b"this is not a database, only text").unwrap();
    let token = "hostile-token-0123456789abcdef";
    let options = HttpOptions { token: Some(token.into()), ..HttpOptions::default() };
    let s = start(settings(dir.path(), Vec::new(), Config::default()), options);
    let auth = format!("Bearer {token}");
    let call = |method: &str, path: &str, body: &str| {
        let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
        raw(&s.base, method, path, &headers, body)
    };
    let replies = [
        call("POST", "/v1/memories/list", r#"{"user_id":"ana","store":"notastore.db"}"#),
        call("GET", "/v1/count?user_id=ana&store=notastore.db", ""),
        call("GET", "/v1/count?user_id=ana&store=../../etc/passwd.db", ""),
        call("GET", "/v1/count?user_id=ana&store=/etc/passwd.db", ""),
        call(
            "POST",
            "/v1/messages",
            r#"{"user_id":"ana","messages":[{"role":"user","content":"x","ts":"soon"}]}"#,
        ),
        call("POST", "/v1/messages", "{"),
        call("POST", "/v1/recall", r#"{"user_id":"ana","query":"x","top_k":"all"}"#),
        call("GET", "/v1/memories/n-0000000000000000?user_id=ana", ""),
        raw(
            &s.base,
            "GET",
            "/v1/count?user_id=ana",
            &[("Authorization", "Bearer wrong-token-0123456789")],
            "",
        ),
    ];
    let home = dir.path().to_string_lossy().into_owned();
    for (i, r) in replies.iter().enumerate() {
        assert!(r.status >= 400, "{i}: {} {}", r.status, r.body);
        assert!(r.json()["error"]["code"].is_string(), "{i}: {}", r.body);
        let lower = r.body.to_lowercase();
        for secret in [home.as_str(), token, "/tmp", "select ", "insert ", "sqlite_"] {
            assert!(!lower.contains(&secret.to_lowercase()), "{i} shows {secret:?}: {}", r.body);
        }
    }
    assert!(replies[0].body.contains("not a mnemon store"), "{}", replies[0].body);
}

/// The store files in a data directory, by name (SQLite's `-wal` and `-shm` left out).
fn store_files(data: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect();
    names.sort();
    names
}

/// A read never creates a store, and by default neither does a write to a store that does not
/// exist: 70 GETs naming new stores made 70 files (and 300 MiB of RSS) before.
#[test]
fn no_read_and_no_unasked_write_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let closed = mnemon_server::Settings {
        create_stores: false,
        ..settings(dir.path(), Vec::new(), Config::default())
    };
    let s = start(closed, HttpOptions::default());
    let json = [("Content-Type", "application/json")];
    for i in 0..10 {
        let r = raw(&s.base, "GET", &format!("/v1/count?user_id=ana&store=pwned{i}.db"), &[], "");
        assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{}", r.body);
    }
    let r =
        raw(&s.base, "POST", "/v1/memories/search", &json, r#"{"user_id":"ana","query":"x","store":"s.db"}"#);
    assert_eq!(r.status, 404, "{}", r.body);
    let r =
        raw(&s.base, "POST", "/v1/memories", &json, r#"{"user_id":"ana","memories":["x"],"store":"new.db"}"#);
    assert_eq!(
        (r.status, r.code().as_str(), r.json()["error"]["field"].as_str()),
        (403, "forbidden", Some("store")),
        "{}",
        r.body
    );
    assert!(r.body.contains("--create-stores"), "{}", r.body);
    // The default store takes writes; reaching the global one too reads nothing more.
    let r = raw(&s.base, "POST", "/v1/memories", &json, r#"{"user_id":"ana","memories":["Ana likes tea."]}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(store_files(dir.path()), ["global.db"]);

    // A server whose default is another store: reading its global store too creates none.
    let other = tempfile::tempdir().unwrap();
    let settings = mnemon_server::Settings {
        create_stores: false,
        store: Some(other.path().join("work.db")),
        ..settings(other.path(), Vec::new(), Config::default())
    };
    let s = start(settings, HttpOptions::default());
    let r = raw(
        &s.base,
        "POST",
        "/v1/memories/search",
        &json,
        r#"{"user_id":"ana","query":"tea","reach":"all"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = raw(
        &s.base,
        "POST",
        "/v1/memories/search",
        &json,
        r#"{"user_id":"ana","query":"tea","reach":"global"}"#,
    );
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(store_files(other.path()), ["work.db"]);
}

/// With `--create-stores`, a write makes a store while the data directory holds fewer than
/// `--max-stores`; past it, `store_full` naming `store`. A copy that fails (its key is not
/// there) leaves no target behind: before, `x.db` stayed after a 404.
#[test]
fn creating_stores_is_bounded_and_a_failed_copy_makes_none() {
    let dir = tempfile::tempdir().unwrap();
    let open = mnemon_server::Settings {
        create_stores: true,
        max_stores: Some(2),
        ..settings(dir.path(), Vec::new(), Config::default())
    };
    let s = start(open, HttpOptions::default());
    let json = [("Content-Type", "application/json")];
    let r = raw(
        &s.base,
        "POST",
        "/v1/memories/copy",
        &json,
        r#"{"user_id":"ana","keys":["n-0000000000000000"],"to":"x.db"}"#,
    );
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(store_files(dir.path()), ["global.db"], "the failed copy made no target");
    let save = |store: &str| {
        let body = format!(r#"{{"user_id":"ana","memories":["Ana likes tea."],"store":"{store}"}}"#);
        raw(&s.base, "POST", "/v1/memories", &json, &body)
    };
    assert_eq!(save("a.db").status, 200);
    let r = save("b.db");
    assert_eq!(
        (r.status, r.code().as_str(), r.json()["error"]["field"].as_str()),
        (507, "store_full", Some("store")),
        "{}",
        r.body
    );
    assert_eq!(save("a.db").status, 200, "an existing store still takes writes");
    assert_eq!(store_files(dir.path()), ["a.db", "global.db"]);
}

/// JSON-RPC over HTTP: a body that is not JSON (text, invalid UTF-8, 100,000 levels of nesting)
/// is a 400 with the parse error (-32700, `id: null`), not 415; a tool call whose arguments are
/// not an object is -32602 with its id, not "method not found".
#[test]
fn mcp_over_http_answers_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(dir.path(), Vec::new(), Config::default()), HttpOptions::default());
    let headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let bodies: [&[u8]; 3] = [b"not json", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"x\":\"\xff\"}", deep.as_bytes()];
    for body in bodies {
        let r = raw_bytes(&s.base, "/mcp", &headers, body);
        let reply = r.json();
        assert_eq!(
            (r.status, reply["id"].clone(), reply["error"]["code"].as_i64()),
            (400, serde_json::Value::Null, Some(-32700)),
            "{}",
            r.body
        );
    }
    let call = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"count_memories","arguments":"notanobject"}}"#;
    let r = raw_bytes(&s.base, "/mcp", &headers, call);
    assert_eq!(
        (r.json()["id"].as_i64(), r.json()["error"]["code"].as_i64()),
        (Some(9), Some(-32602)),
        "{}",
        r.body
    );
}

/// [`raw`] with a body of any bytes (a POST).
fn raw_bytes(base: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> crate::common::Raw {
    let addr = base.trim_start_matches("http://");
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    wire(base, &bytes)
}

/// Exactly these bytes on a fresh connection, and the response.
fn wire(base: &str, request: &[u8]) -> crate::common::Raw {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    crate::common::Raw { status, headers: Vec::new(), body: body.to_owned() }
}

/// Strict HTTP: no `Host` on HTTP/1.1, two of them, or an absolute-form target naming another
/// host than `Host` is a 400 naming `Host` (each answered 200 before); a target or headers past
/// the server's limits get 414 and 431 in the one error shape.
#[test]
fn hosts_must_be_one_and_the_same_and_limits_answer_in_the_error_shape() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(dir.path(), Vec::new(), Config::default()), HttpOptions::default());
    let addr = s.base.trim_start_matches("http://").to_owned();
    let get = "/v1/count?user_id=ana";
    let refused = [
        format!("GET {get} HTTP/1.1\r\nConnection: close\r\n\r\n"),
        format!("GET {get} HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nConnection: close\r\n\r\n"),
        format!("GET http://evil.example{get} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    ];
    for request in &refused {
        let r = wire(&s.base, request.as_bytes());
        assert_eq!(
            (r.status, r.json()["error"]["field"].as_str()),
            (400, Some("Host")),
            "{request:?}: {}",
            r.body
        );
    }
    let fine = format!("GET http://{addr}{get} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let r = wire(&s.base, fine.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    let long = format!("/v1/count?user_id=ana&pad={}", "x".repeat(20_000));
    let r = raw(&s.base, "GET", &long, &[], "");
    assert_eq!((r.status, r.code().as_str()), (414, "uri_too_long"), "{}", r.body);
    let many: Vec<(String, String)> = (0..80).map(|i| (format!("X-Pad-{i}"), "y".to_owned())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let r = raw(&s.base, "GET", "/v1/count?user_id=ana", &many, "");
    assert_eq!((r.status, r.code().as_str()), (431, "headers_too_large"), "{}", r.body);
}

/// Slow bodies no longer take the in-flight places: the body is read (under its own deadline)
/// before admission. With 2 places and 6 clients each sending a body one byte at a time, every
/// other request is answered 200 (before: 503 `overloaded` for 40 s), and each slow client gets
/// `408 request_timeout` once its deadline passes.
#[test]
fn slow_bodies_take_no_place_and_get_408() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions {
        max_in_flight: 2,
        body_timeout: std::time::Duration::from_secs(2),
        ..HttpOptions::default()
    };
    let s = start(settings(dir.path(), Vec::new(), Config::default()), options);
    let addr = s.base.trim_start_matches("http://").to_owned();
    let slow: Vec<std::thread::JoinHandle<String>> = (0..6)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(&addr).unwrap();
                let head = format!(
                    "POST /v1/memories/list HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 2017\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).unwrap();
                for _ in 0..8 {
                    if stream.write_all(b" ").is_err() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(400));
                }
                let mut response = String::new();
                let _ = stream.read_to_string(&mut response);
                response
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    for _ in 0..10 {
        let r = raw(
            &s.base,
            "POST",
            "/v1/memories/list",
            &[("Content-Type", "application/json")],
            r#"{"user_id":"ana"}"#,
        );
        assert_eq!(r.status, 200, "a well-behaved request beside slow bodies: {}", r.body);
    }
    for t in slow {
        let response = t.join().unwrap();
        assert!(response.starts_with("HTTP/1.1 408"), "{response}");
        assert!(response.contains("request_timeout"), "{response}");
    }
}

/// A client that sends its headers a byte at a time, or opens a connection and says nothing, is
/// closed once the header timeout passes (before: held forever); one address may hold at most
/// `max_connections_per_client` connections, and a well-behaved client is served meanwhile.
#[test]
fn slowloris_is_closed_and_connections_per_client_are_capped() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions {
        header_timeout: std::time::Duration::from_secs(1),
        max_connections_per_client: 8,
        ..HttpOptions::default()
    };
    let s = start(settings(dir.path(), Vec::new(), Config::default()), options);
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut idle: Vec<std::net::TcpStream> =
        (0..8).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    idle[0].write_all(b"GET /v1/count?user_id=ana HTTP/1.1\r\nHo").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // The ninth from the same address is closed at once.
    let mut ninth = std::net::TcpStream::connect(&addr).unwrap();
    ninth.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    assert!(closed(ninth.read(&mut buf)), "past the cap a connection is closed");
    // Past the header timeout every idle and half-sent connection is closed (a read that waits
    // 10 s instead, ten times the timeout, fails the test)...
    for c in &mut idle {
        c.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        assert!(closed(c.read(&mut buf)));
    }
    // ...which frees the address's places.
    let r = raw(&s.base, "GET", "/v1/count?user_id=ana", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Whether a read ended because the server closed the connection (not because the read timed out).
fn closed(read: std::io::Result<usize>) -> bool {
    match read {
        Ok(n) => n == 0,
        Err(e) => {
            matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted)
        }
    }
}
