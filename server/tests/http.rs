//! The HTTP API over real HTTP on loopback: every route, every error code a client can cause,
//! auth on and off, the rate limit, the body limit, store references outside the roots. The
//! server runs in-process on its own runtime; the client is `ureq`, a separate HTTP stack.

use std::sync::Arc;
use std::time::Duration;

use mnemon::config::Config;
use mnemon::embed::HashingEmbedder;
use mnemon_server::{HttpOptions, Service};
use serde_json::{json, Value};

use crate::common;
use common::{settings, start, Server};

const TOKEN: &str = "test-token-0123456789abcdef";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

/// Status, headers we check, and the body as JSON (or a string).
struct Reply {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

fn send(method: &str, url: &str, body: Option<&str>, token: Option<&str>) -> Reply {
    let agent = agent();
    let mut req = ureq::http::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    req = req.header("Content-Type", "application/json");
    let response = match body {
        Some(b) => agent.run(req.body(b.to_owned()).unwrap()),
        None => agent.run(req.body(()).unwrap()),
    }
    .expect("request");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    let text = response.into_body().read_to_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply { status, retry_after, body }
}

impl Server {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        send(method, &format!("{}{path}", self.base), body.map(|b| b.to_string()).as_deref(), None)
    }
}

fn code(r: &Reply) -> &str {
    r.body["error"]["code"].as_str().unwrap_or("(none)")
}

#[test]
fn every_route_answers_over_real_http() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), HttpOptions::default());

    let r = s.call("GET", "/health", None);
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("ok")));

    let r = s.call(
        "POST",
        "/v1/memories",
        Some(json!({"user_id": "ana", "memories": [
            {"content": "Ana is vegetarian.", "ts": "2026-03-01T10:00:00", "tags": ["food"]},
            {"content": "Ana deploys on Fridays.", "ts": "2026-03-02T10:00:00", "kind": "procedural"}]})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let veg = r.body["memories"][0]["key"].as_str().unwrap().to_owned();
    let deploy = r.body["memories"][1]["key"].as_str().unwrap().to_owned();

    let r = s.call(
        "POST",
        "/v1/messages",
        Some(json!({"user_id": "ana", "messages": [
            {"role": "user", "content": "My dog Toby loves the beach.", "ts": "2026-03-03T09:00:00"},
            {"role": "assistant", "content": "Toby sounds lovely!", "ts": "2026-03-03T09:00:05"}]})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["stored"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["pending_extraction"], 0);
    let round = r.body["stored"][0].as_str().unwrap().to_owned();

    let r = s.call(
        "POST",
        "/v1/recall",
        Some(json!({"user_id": "ana", "query": "what is my dog called?", "angles": ["what does Ana eat?"]})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let context = r.body["context"].as_str().unwrap();
    assert!(context.contains("Toby") && context.contains("vegetarian"), "{context}");
    assert_eq!(r.body["rounds"], json!([round]));
    // As of a time before the round and the second note: neither is there.
    let r = s.call(
        "POST",
        "/v1/recall",
        Some(json!({"user_id": "ana", "query": "what is my dog called?", "as_of": "2026-03-01T12:00:00"})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let then = r.body["context"].as_str().unwrap();
    assert!(then.contains("vegetarian") && !then.contains("Toby") && !then.contains("Fridays"), "{then}");
    assert_eq!((r.body["rounds"].clone(), r.body["memories"].clone()), (json!([]), json!([veg])));
    let r = s.call("POST", "/v1/recall", Some(json!({"user_id": "ana", "query": "x", "as_of": "soon"})));
    assert_eq!((r.status, r.body["error"]["field"].as_str()), (400, Some("as_of")), "{}", r.body);
    let r = s.call("POST", "/v1/recall", Some(json!({"user_id": "ana", "query": "x", "date": "someday"})));
    assert_eq!((r.status, r.body["error"]["field"].as_str()), (400, Some("date")), "{}", r.body);
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(json!({"user_id": "ana", "query": "x", "date": "someday"})),
    );
    assert_eq!((r.status, r.body["error"]["field"].as_str()), (400, Some("date")), "{}", r.body);
    let r = s.call("GET", "/v1/export?user_id=ana&as_of=soon", None);
    assert_eq!((r.status, r.body["error"]["field"].as_str()), (400, Some("as_of")), "{}", r.body);

    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(json!({"user_id": "ana", "query": "food", "filter": {"tags_any": ["food"]}})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["hits"][0]["note"]["key"], veg.as_str());
    // Scores are relevance: a query unrelated to every note gets `none`, and the floor of `low`
    // (`min_score` 0.5) leaves nothing.
    let r = s.call("POST", "/v1/memories/search", Some(json!({"user_id": "ana", "query": "xyzzy plugh"})));
    let hits = r.body["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["relevance"] == "none"), "{}", r.body);
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(json!({"user_id": "ana", "query": "xyzzy plugh", "min_score": 0.5})),
    );
    assert_eq!((r.status, r.body["hits"].clone()), (200, json!([])), "{}", r.body);

    let r = s.call("POST", "/v1/memories/list", Some(json!({"user_id": "ana", "limit": 1})));
    assert_eq!((r.status, r.body["notes"][0]["key"].as_str()), (200, Some(deploy.as_str())), "newest first");
    let r = s.call("POST", "/v1/memories/list", Some(json!({"user_id": "ana", "cursor": r.body["next"]})));
    assert_eq!(r.body["notes"][0]["key"], veg.as_str(), "the cursor pages on");

    let r = s.call("GET", &format!("/v1/memories/{veg}?user_id=ana"), None);
    assert_eq!(
        (r.status, r.body["record"].as_str(), r.body["content"].as_str()),
        (200, Some("note"), Some("Ana is vegetarian."))
    );
    // A round key holds `#`: percent-encoded in a path.
    let r = s.call("GET", &format!("/v1/memories/{}?user_id=ana", round.replace('#', "%23")), None);
    assert_eq!(r.body["record"], "round");

    let r = s.call(
        "PATCH",
        &format!("/v1/memories/{veg}"),
        Some(json!({"user_id": "ana", "importance": 0.9, "title": "Diet"})),
    );
    assert_eq!((r.status, r.body["title"].as_str()), (200, Some("Diet")), "{}", r.body);
    let r = s.call("PATCH", &format!("/v1/memories/{veg}"), Some(json!({"user_id": "ana", "title": null})));
    assert_eq!(r.body["title"], Value::Null, "a null title removes it");

    let r = s.call("GET", "/v1/count?user_id=ana", None);
    assert_eq!((r.status, r.body["notes"].as_u64(), r.body["rounds"].as_u64()), (200, Some(2), Some(1)));

    let r = s.call(
        "POST",
        "/v1/memories/copy",
        Some(json!({"user_id": "ana", "keys": [deploy], "to": "team.db"})),
    );
    assert_eq!((r.status, r.body["copied"].clone()), (200, json!([deploy])), "{}", r.body);
    let r = s.call("GET", "/v1/count?user_id=ana&store=team.db", None);
    assert_eq!(r.body["notes"], 1);
    let r =
        s.call("POST", "/v1/memories/move", Some(json!({"user_id": "ana", "keys": [veg], "to": "team.db"})));
    assert_eq!((r.status, r.body["removed"].clone()), (200, json!([veg])));
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(json!({"user_id": "ana", "query": "vegetarian", "store": "team.db", "reach": "all"})),
    );
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 2, "team store and global store merged: {}", r.body);

    let r = s.call("GET", "/v1/export?user_id=ana", None);
    assert_eq!(r.status, 200);
    assert!(r.body.as_str().unwrap().contains("Toby loves the beach"), "{}", r.body);
    let r = s.call("GET", "/v1/export?user_id=ana&format=text&as_of=2026-03-02T12:00:00", None);
    assert_eq!(r.status, 200);
    assert!(!r.body.as_str().unwrap().contains("Toby loves the beach"), "{}", r.body);

    let r = s.call("DELETE", &format!("/v1/memories/{deploy}?user_id=ana"), None);
    assert_eq!((r.status, r.body["record"].as_str()), (200, Some("note")));
    let r = s.call("DELETE", "/v1/users/ana", None);
    assert_eq!((r.status, r.body["rounds"].as_u64()), (200, Some(1)));
    let r = s.call("GET", "/v1/count?user_id=ana", None);
    assert_eq!((r.body["notes"].as_u64(), r.body["rounds"].as_u64()), (Some(0), Some(0)));

    let r = s.call("GET", "/openapi.json", None);
    assert_eq!(r.body["openapi"], "3.1.0");
    assert!(r.body["paths"]["/v1/memories/{key}"]["patch"].is_object());
    assert!(r.body["components"]["schemas"]["SaveMemories"].is_object());
    let r = s.call("GET", "/docs", None);
    assert!(r.body.as_str().unwrap().contains("/v1/memories/search"));
    let r = s.call("GET", "/metrics", None);
    let metrics = r.body.as_str().unwrap();
    assert!(
        metrics.contains("mnemon_http_requests_total{route=\"/v1/memories\",method=\"POST\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("mnemon_store_bytes") && metrics.contains("mnemon_extraction_queue_depth"));
}

#[test]
fn each_bad_request_gets_its_code_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("project")).unwrap();
    // A store built under another embedder (another dimension): its pins differ.
    std::fs::create_dir_all(&data).unwrap();
    mnemon::Memory::builder(data.join("other.db"))
        .embedder(HashingEmbedder::new(64).unwrap())
        .open()
        .unwrap();
    let options = HttpOptions { body_limit: 1 << 20, ..HttpOptions::default() };
    let s = start(settings(&data, vec![root.clone()], Config::default()), options);
    let save = |body: Value| s.call("POST", "/v1/memories", Some(body));
    assert_eq!(save(json!({"user_id": "bo", "memories": ["kept"]})).status, 200);

    let cases: Vec<(Reply, u16, &str, Option<&str>)> = vec![
        (
            save(json!({"user_id": "bo", "memories": ["fine", "  "]})),
            400,
            "empty_memory",
            Some("memories[1].content"),
        ),
        (
            save(json!({"user_id": "bo", "memories": [{"content": "x", "importance": "high"}]})),
            400,
            "invalid_input",
            Some("memories[0].importance"),
        ),
        (
            save(json!({"user_id": "bo", "memories": [{"content": "x", "importance": 7.0}]})),
            400,
            "invalid_input",
            Some("memories[0].importance"),
        ),
        (save(json!({"user_id": "bo", "memorys": ["typo"]})), 400, "invalid_input", None),
        (save(json!({"user_id": "", "memories": ["x"]})), 400, "invalid_input", Some("user_id")),
        (
            send("POST", &format!("{}/v1/memories", s.base), Some("{\"memories\": ["), None),
            400,
            "invalid_input",
            Some("body"),
        ),
        (
            s.call("POST", "/v1/recall", Some(json!({"user_id": "bo", "query": "x", "budget": 0}))),
            400,
            "budget",
            Some("budget"),
        ),
        (s.call("GET", "/v1/memories/n-0123456789abcdef?user_id=bo", None), 404, "not_found", None),
        (s.call("GET", "/v1/no/such/route", None), 404, "not_found", None),
        (s.call("GET", "/v1/count?user_id=bo&store=other.db", None), 409, "pin_mismatch", None),
        (s.call("GET", "/v1/count?user_id=bo&store=/etc/passwd.db", None), 403, "forbidden", Some("store")),
        (s.call("GET", "/v1/count?user_id=bo&store=../escape.db", None), 403, "forbidden", Some("store")),
        (s.call("GET", "/v1/count?user_id=bo&store=/tmp", None), 403, "forbidden", Some("store")),
        (raw(&s, "/v1/memories", 10 << 20, false), 413, "payload_too_large", None),
        (raw(&s, "/v1/memories", 10 << 20, true), 413, "payload_too_large", None),
        (raw(&s, "/mcp", 10 << 20, true), 413, "payload_too_large", None),
    ];
    for (i, (reply, status, expected, field)) in cases.iter().enumerate() {
        assert_eq!((reply.status, code(reply)), (*status, *expected), "case {i}: {}", reply.body);
        if let Some(f) = field {
            assert_eq!(reply.body["error"]["field"].as_str(), Some(*f), "case {i}: {}", reply.body);
        }
        assert!(reply.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "case {i}");
    }

    // A store of other pins names each differing pin.
    let r = s.call("GET", "/v1/count?user_id=bo&store=other.db", None);
    let differences = r.body["error"]["differences"].as_array().expect("differences");
    assert!(differences.iter().any(|d| d["key"] == "embedder.dim" && d["stored"] == "64"), "{}", r.body);

    // A link inside the data directory that leads out is refused too.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("outside.db"), data.join("link.db")).unwrap();
        let r = s.call("GET", "/v1/count?user_id=bo&store=link.db", None);
        assert_eq!((r.status, code(&r)), (403, "forbidden"), "{}", r.body);
    }
    // A project inside a root is fine; a read finds no store there until a write makes one.
    let project = root.join("project").display().to_string();
    let r = s.call("GET", &format!("/v1/count?user_id=bo&store={project}"), None);
    assert_eq!((r.status, code(&r)), (404, "not_found"), "{}", r.body);
    let r =
        s.call("POST", "/v1/memories", Some(json!({"user_id": "bo", "memories": ["p"], "store": project})));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = s.call("GET", &format!("/v1/count?user_id=bo&store={project}"), None);
    assert_eq!(r.status, 200, "{}", r.body);

    // Nothing above changed the store, and the server keeps serving.
    let r = s.call("POST", "/v1/memories/list", Some(json!({"user_id": "bo"})));
    let contents: Vec<&str> =
        r.body["notes"].as_array().unwrap().iter().map(|n| n["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["kept"]);
    assert_eq!(s.call("GET", "/health", None).status, 200);
    assert!(!dir.path().join("outside.db").exists() && !dir.path().join("escape.db").exists());
}

/// POSTs a `len`-byte body by hand (declared, or chunked without a length), sending only as much
/// as the server reads before it answers.
fn raw(s: &Server, path: &str, len: usize, chunked: bool) -> Reply {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let framing =
        if chunked { "Transfer-Encoding: chunked".to_owned() } else { format!("Content-Length: {len}") };
    write!(stream, "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{framing}\r\nConnection: close\r\n\r\n").unwrap();
    let chunk = vec![b'x'; 64 << 10];
    let mut sent = 0;
    while sent < len {
        let ok = if chunked {
            write!(stream, "{:x}\r\n", chunk.len())
                .and_then(|_| stream.write_all(&chunk))
                .and_then(|_| stream.write_all(b"\r\n"))
        } else {
            stream.write_all(&chunk)
        };
        if ok.is_err() {
            break; // the server answered and closed
        }
        sent += chunk.len();
    }
    if chunked && sent >= len {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    // A chunked response body: the JSON is the line that starts with `{`.
    let json = body.lines().find(|l| l.starts_with('{')).unwrap_or("");
    Reply { status, retry_after: None, body: serde_json::from_str(json).unwrap_or(Value::Null) }
}

#[test]
fn a_token_guards_everything_but_health_and_docs() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions { token: Some(TOKEN.into()), ..HttpOptions::default() };
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), options);
    let url = |p: &str| format!("{}{p}", s.base);
    for (token, status) in [(None, 401), (Some("wrong-token-0123456789abcdef"), 401), (Some(TOKEN), 200)] {
        let r = send("GET", &url("/v1/count"), None, token);
        assert_eq!(r.status, status, "{token:?}: {}", r.body);
        if status == 401 {
            assert_eq!(code(&r), "unauthorized");
        }
        assert_eq!(send("GET", &url("/metrics"), None, token).status, status);
        assert_eq!(
            send("POST", &url("/mcp"), Some("{}"), token).status == 401,
            status == 401,
            "MCP is guarded"
        );
    }
    // Health answers anyone, with its detail (the version) only to the token's holder.
    let open = send("GET", &url("/health"), None, None);
    assert_eq!((open.status, open.body["status"].as_str()), (200, Some("ok")));
    assert!(open.body.get("version").is_none() && open.body.get("store").is_none(), "{}", open.body);
    let full = send("GET", &url("/health"), None, Some(TOKEN));
    assert_eq!(full.body["version"].as_str(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(send("GET", &url("/openapi.json"), None, None).status, 200);
}

#[test]
fn binding_beyond_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let service =
        Arc::new(Service::new(settings(&dir.path().join("data"), vec![], Config::default())).unwrap());
    let open = HttpOptions { addr: "0.0.0.0:0".parse().unwrap(), ..HttpOptions::default() };
    let Err(err) = mnemon_server::http::router(Arc::clone(&service), &open) else { panic!("not refused") };
    assert!(err.to_string().contains("without a bearer token"), "{err}");
    let guarded = HttpOptions { token: Some(TOKEN.into()), ..open };
    assert!(mnemon_server::http::router(service, &guarded).is_ok());
}

#[test]
fn the_rate_limit_answers_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions { rate_limit: Some(1), ..HttpOptions::default() };
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), options);
    // A burst of 2 is allowed; the third request in the same second is not.
    let replies: Vec<Reply> = (0..4).map(|_| s.call("GET", "/v1/count", None)).collect();
    assert_eq!(replies[0].status, 200);
    let limited = replies.iter().find(|r| r.status == 429).expect("a request is limited");
    assert_eq!(code(limited), "rate_limited");
    let wait: u64 = limited.retry_after.as_deref().unwrap().parse().unwrap();
    assert!(wait >= 1);
    assert_eq!(limited.body["error"]["retry_after"], wait);
    assert_eq!(s.call("GET", "/health", None).status, 200, "health is never limited");
}

#[test]
fn a_busy_store_answers_busy_and_a_slow_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = Config { busy_timeout_ms: 200, ..Config::default() };
    let s = start(settings(&data, vec![], config), HttpOptions::default());
    assert_eq!(s.call("POST", "/v1/memories", Some(json!({"memories": ["one"]}))).status, 200);
    // Another process's writer holds the lock.
    let other = rusqlite::Connection::open(data.join("global.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = s.call("POST", "/v1/memories", Some(json!({"memories": ["two"]})));
    assert_eq!((r.status, code(&r), r.retry_after.as_deref()), (503, "busy", Some("1")), "{}", r.body);
    other.execute_batch("ROLLBACK").unwrap();
    let r = s.call("POST", "/v1/memories/list", None);
    assert_eq!(r.body["notes"].as_array().unwrap().len(), 1, "the busy write left nothing");

    // A request still waiting for the lock when its time is up answers `timeout`.
    let quick = HttpOptions { timeout: Duration::from_millis(100), ..HttpOptions::default() };
    let patient = Config { busy_timeout_ms: 3_000, ..Config::default() };
    let t = start(settings(&dir.path().join("data2"), vec![], patient), quick);
    let other = rusqlite::Connection::open(dir.path().join("data2/global.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = t.call("POST", "/v1/memories", Some(json!({"memories": ["three"]})));
    assert_eq!((r.status, code(&r)), (503, "timeout"), "{}", r.body);
    other.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn a_fault_inside_the_store_answers_internal_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = start(settings(&data, vec![], Config::default()), HttpOptions::default());
    assert_eq!(s.call("POST", "/v1/memories", Some(json!({"memories": ["one"]}))).status, 200);
    // A trigger in the file fails the insert: a real SQLite error inside the write.
    rusqlite::Connection::open(data.join("global.db"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER fault BEFORE INSERT ON notes WHEN NEW.content = 'two' \
             BEGIN SELECT RAISE(ABORT, 'disk fault'); END;",
        )
        .unwrap();
    let r = s.call("POST", "/v1/memories", Some(json!({"memories": ["zero", "two"]})));
    assert_eq!((r.status, code(&r)), (500, "internal"), "{}", r.body);
    // The client learns an id to quote, not the SQL or the file behind it.
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("internal error ") && message.contains("log"), "{message}");
    assert!(!message.contains("disk fault") && !message.contains(".db"), "{message}");
    let r = s.call("POST", "/v1/memories/list", None);
    let contents: Vec<&str> =
        r.body["notes"].as_array().unwrap().iter().map(|n| n["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["one"], "the failed call wrote nothing, not even its first memory");
    assert_eq!(s.call("POST", "/v1/memories", Some(json!({"memories": ["three"]}))).status, 200);
}

#[test]
fn many_requests_opening_new_stores_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), HttpOptions::default());
    std::thread::scope(|scope| {
        for i in 0..8 {
            let s = &s;
            scope.spawn(move || {
                let store = format!("shop-{}.db", i % 2);
                let r = s.call(
                    "POST",
                    "/v1/memories",
                    Some(json!({"user_id": "ana", "store": store, "memories": [format!("note {i}")]})),
                );
                assert_eq!(r.status, 200, "{}", r.body);
            });
        }
    });
    for store in ["shop-0.db", "shop-1.db"] {
        let r = s.call("GET", &format!("/v1/count?user_id=ana&store={store}"), None);
        assert_eq!(r.body["notes"], 4, "{store}: every write landed");
    }
}

/// Histograms keep every sample until upkeep folds it into their buckets: the recorder comes with
/// the thread that does it, or a server nobody scrapes grows by every request it answers.
#[test]
fn the_metrics_recorder_runs_its_upkeep() {
    let _handle = mnemon_server::http::metrics_handle();
    let threads: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect();
    assert!(threads.iter().any(|t| t == mnemon_server::http::METRICS_UPKEEP_THREAD), "{threads:?}");
}
