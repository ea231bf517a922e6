//! Bounded work over real HTTP: a request past the limit in flight is shed at once (503
//! `overloaded` with `Retry-After`) and service resumes when the load goes; a read whose caller
//! timed out stops at its next check instead of running on. An embedder that holds questions
//! containing "hold" until released makes a request slow on demand.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mnemon::config::Config;
use mnemon::embed::{Embedder, EmbedderPins, HashingEmbedder};
use mnemon_server::HttpOptions;
use serde_json::json;

use crate::common;
use common::{raw, settings, start, Raw, Server};

/// Hashing vectors; a question or document containing "hold" waits until [`Gate::release`].
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Questions embedded so far.
    questions: Mutex<Vec<String>>,
}

impl Gate {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }
    fn questions(&self) -> Vec<String> {
        self.questions.lock().unwrap().clone()
    }
}

impl Embedder for Gate {
    fn pins(&self) -> EmbedderPins {
        HashingEmbedder::default().pins()
    }
    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        if texts.iter().any(|t| t.contains("hold")) {
            self.wait();
        }
        HashingEmbedder::default().embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> mnemon::Result<Vec<f32>> {
        self.questions.lock().unwrap().push(text.to_owned());
        if text.contains("hold") {
            self.wait();
        }
        HashingEmbedder::default().embed_query(text)
    }
}

fn post(s: &Server, path: &str, body: serde_json::Value) -> Raw {
    raw(&s.base, "POST", path, &[("Content-Type", "application/json")], &body.to_string())
}

fn server(gate: &Arc<Gate>, options: HttpOptions) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(&dir.path().join("data"), vec![], Config::default());
    settings.embedder = Arc::clone(gate) as Arc<dyn Embedder>;
    (dir, start(settings, options))
}

/// Waits until `done` holds (the server's threads run on their own).
fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never: {what}");
}

#[test]
fn a_request_past_the_limit_is_shed_and_service_resumes() {
    let gate = Arc::new(Gate::default());
    let (_dir, s) = server(&gate, HttpOptions { max_in_flight: 2, ..HttpOptions::default() });
    let saved = post(&s, "/v1/memories", json!({"user_id": "ana", "memories": ["Ana lives in Lisbon."]}));
    assert_eq!(saved.status, 200, "{}", saved.body);

    // Two slow searches fill the server.
    let base = s.base.clone();
    let slow: Vec<_> = (0..2)
        .map(|i| {
            let base = base.clone();
            std::thread::spawn(move || {
                let body = json!({"user_id": "ana", "query": format!("hold {i}: where?")}).to_string();
                raw(&base, "POST", "/v1/memories/search", &[("Content-Type", "application/json")], &body)
            })
        })
        .collect();
    eventually("both slow searches are in flight", || gate.questions().len() == 2);

    // Every route behind the limit sheds at once, in the one error shape, with Retry-After.
    let mcp_headers =
        [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let shed = [
        post(&s, "/v1/memories/search", json!({"user_id": "ana", "query": "where?"})),
        post(&s, "/v1/memories", json!({"user_id": "ana", "memories": ["Ana likes tea."]})),
        raw(&s.base, "GET", "/v1/count?user_id=ana", &[], ""),
        raw(&s.base, "POST", "/mcp", &mcp_headers, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
    ];
    for r in &shed {
        assert_eq!((r.status, r.code()), (503, "overloaded".into()), "{}", r.body);
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    // Health is outside the limit: a probe still sees the server up.
    assert_eq!(raw(&s.base, "GET", "/health", &[], "").status, 200);

    gate.release();
    for t in slow {
        let r = t.join().unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // The shed write stored nothing; service is back.
    let count = raw(&s.base, "GET", "/v1/count?user_id=ana", &[], "");
    assert_eq!((count.status, count.json()["notes"].as_u64()), (200, Some(1)), "{}", count.body);
}

#[test]
fn a_read_whose_caller_timed_out_stops_at_its_next_check() {
    let gate = Arc::new(Gate::default());
    let options = HttpOptions { timeout: Duration::from_millis(200), ..HttpOptions::default() };
    let (_dir, s) = server(&gate, options);
    post(&s, "/v1/memories", json!({"user_id": "ana", "memories": ["Ana lives in Lisbon."]}));

    // A recall with two more angles: the first question holds past the timeout.
    let r = post(
        &s,
        "/v1/recall",
        json!({"user_id": "ana", "query": "hold: where does Ana live?", "angles": ["which city?", "home?"]}),
    );
    assert_eq!((r.status, r.code()), (503, "timeout".into()), "{}", r.body);
    gate.release();
    // Given time to run on, it would embed both angles; it gives up before the first.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(gate.questions(), ["hold: where does Ana live?"], "the abandoned read ran on");

    // The same recall, not held, embeds all three.
    let r = post(&s, "/v1/recall", json!({"user_id": "ana", "query": "where?", "angles": ["a?", "b?"]}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(gate.questions().len(), 4);
}

#[test]
fn a_write_retried_after_a_timeout_stores_nothing_twice() {
    let gate = Arc::new(Gate::default());
    let options = HttpOptions { timeout: Duration::from_millis(1000), ..HttpOptions::default() };
    let (_dir, s) = server(&gate, options);
    // No `ts`: the server stamps its clock. The first attempt is held past the timeout.
    let messages = json!({"user_id": "ana", "messages": [
        {"role": "user", "content": "I hold the lease on the flat in Porto now."},
        {"role": "assistant", "content": "Congratulations on the flat!"}]});
    let send = |key: Option<&str>, body: &serde_json::Value| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(k) = key {
            headers.push(("Idempotency-Key", k));
        }
        raw(&s.base, "POST", "/v1/messages", &headers, &body.to_string())
    };
    let first = send(Some("retry-1"), &messages);
    assert_eq!((first.status, first.code()), (503, "timeout".into()), "{}", first.body);
    gate.release();
    // The retry comes in a later second than the first attempt's stamp.
    std::thread::sleep(Duration::from_millis(1100));
    let retry = send(Some("retry-1"), &messages);
    assert_eq!(retry.status, 200, "{}", retry.body);
    let rounds =
        |s: &Server| raw(&s.base, "GET", "/v1/count?user_id=ana", &[], "").json()["rounds"].as_u64().unwrap();
    assert_eq!(rounds(&s), 1, "the retry stored the round again: {}", retry.body);
    assert_eq!(retry.json()["duplicates"].as_array().map(Vec::len), Some(1), "{}", retry.body);

    // The same key with another request is refused, naming the field; nothing is stored.
    let changed = json!({"user_id": "ana", "messages": [{"role": "user", "content": "Something else."}]});
    let r = send(Some("retry-1"), &changed);
    assert_eq!((r.status, r.code()), (400, "invalid_input".into()), "{}", r.body);
    assert_eq!(r.json()["error"]["field"], "idempotency_key");
    // The body's key works as the header does (MCP clients send it so), and must agree with it.
    let note =
        json!({"user_id": "ana", "memories": ["Ana's lease starts in May."], "idempotency_key": "note-1"});
    assert_eq!(send(None, &note).status, 400, "unknown to /v1/messages");
    let save = |key: Option<&str>, body: &serde_json::Value| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(k) = key {
            headers.push(("Idempotency-Key", k));
        }
        raw(&s.base, "POST", "/v1/memories", &headers, &body.to_string())
    };
    let r = save(None, &note);
    assert_eq!(r.status, 200, "{}", r.body);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(save(None, &note).json()["memories"][0]["stored"], false, "a retried save stored again");
    assert_eq!(save(Some("note-2"), &note).code(), "invalid_input", "header and body disagree");
    // Without a key, a retry in a later second is a new message: the documented behaviour.
    send(None, &messages);
    std::thread::sleep(Duration::from_millis(1100));
    send(None, &messages);
    assert_eq!(rounds(&s), 3);
}
