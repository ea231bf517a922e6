//! The OpenAI-compatible proxy's refusals and identities, over real HTTP, in front of an upstream
//! written here by hand (a thread answering one canned completion per connection and recording
//! what it was sent). The `openai` package's own run is in the CLI's tests (`cli/tests/proxy.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use mnemon::config::Config;
use mnemon_server::proxy::Upstream;
use mnemon_server::{Grant, HttpOptions, Principal};
use serde_json::{json, Value};

use crate::common;
use common::{raw, settings, start, Raw, Server};

const ADMIN: &str = "admin-token-0123456789";
const ANA: &str = "ana-token-0123456789ab";

/// What the upstream was sent: each request's headers (names lowercase) and body.
type Seen = Arc<Mutex<Vec<(Vec<(String, String)>, Value)>>>;

/// An upstream on a free port answering every chat request with "Noted." (a plain completion).
fn upstream() -> (String, Seen) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = Vec::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((n, v)) = line.trim_end().split_once(':') {
                    let (n, v) = (n.to_ascii_lowercase(), v.trim().to_owned());
                    if n == "content-length" {
                        length = v.parse().unwrap_or(0);
                    }
                    headers.push((n, v));
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            record.lock().unwrap().push((headers, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            let reply = json!({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}, "finish_reason": "stop"}]})
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

fn proxy(dir: &std::path::Path, url: &str, key: Option<&str>) -> Server {
    let grants = vec![
        Grant { token: ADMIN.into(), principal: Principal::Admin },
        Grant { token: ANA.into(), principal: Principal::user("ana", None).unwrap() },
    ];
    let upstream = Upstream { key: key.map(str::to_owned), at_root: true, ..Upstream::new(url) };
    start(
        settings(dir, vec![], Config::default()),
        HttpOptions { grants, upstream: Some(upstream), ..HttpOptions::default() },
    )
}

fn chat(s: &Server, path: &str, token: &str, headers: &[(&str, &str)], body: Value) -> Raw {
    let auth = format!("Bearer {token}");
    let mut all = vec![("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    raw(&s.base, "POST", path, &all, &body.to_string())
}

fn exported(s: &Server, user: &str) -> String {
    let auth = format!("Bearer {ADMIN}");
    raw(&s.base, "GET", &format!("/v1/export?user_id={user}"), &[("Authorization", auth.as_str())], "").body
}

#[test]
fn a_bound_token_chats_as_its_user_and_no_mnemon_token_goes_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = upstream();
    let s = proxy(dir.path(), &url, None);
    let ask = json!({"model": "m", "messages": [{"role": "user", "content": "I keep bees on the roof."}]});
    let r = chat(&s, "/v1/chat/completions", ANA, &[], ask.clone());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["choices"][0]["message"]["content"], "Noted.");
    assert!(exported(&s, "ana").contains("I keep bees on the roof."), "stored under the token's user");
    let sent = seen.lock().unwrap()[0].0.clone();
    assert!(
        !sent.iter().any(|(n, _)| n == "authorization"),
        "a server with tokens sends none of them upstream"
    );

    // The token decides: another user by header or by the `user` field is refused, unsent.
    for (headers, body) in [
        (vec![("X-Mnemon-User", "bob")], ask.clone()),
        (vec![], json!({"model": "m", "user": "bob", "messages": ask["messages"]})),
    ] {
        let r = chat(&s, "/openai/v1/chat/completions", ANA, &headers, body);
        assert_eq!((r.status, r.code().as_str()), (403, "forbidden"), "{}", r.body);
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "a refused request never reaches the upstream");
}

#[test]
fn the_upstream_key_goes_upstream_and_the_admin_names_any_user() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = upstream();
    let s = proxy(dir.path(), &url, Some("sk-upstream-key"));
    let ask = json!({"model": "m", "messages": [{"role": "user", "content": "My sister is called Ines."}]});
    let r = chat(
        &s,
        "/openai/v1/chat/completions",
        ADMIN,
        &[("X-Mnemon-User", "zoe"), ("X-Mnemon-Session", "s-1")],
        ask,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let export = exported(&s, "zoe");
    assert!(export.contains("My sister is called Ines.") && export.contains("Session `s-1`"), "{export}");
    let sent = seen.lock().unwrap()[0].0.clone();
    assert!(sent.contains(&("authorization".into(), "Bearer sk-upstream-key".into())), "{sent:?}");
}

#[test]
fn bad_requests_and_a_missing_upstream_are_answered_in_the_error_shape_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let s = proxy(dir.path(), &format!("http://{closed}/v1"), None);
    let cases = [
        (json!({"model": "m"}), "messages"),
        (json!({"model": "m", "messages": []}), "messages"),
        (json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": "yes"}), "stream"),
        (json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": 7}), "user"),
    ];
    for (body, field) in cases {
        let r = chat(&s, "/v1/chat/completions", ADMIN, &[], body);
        assert_eq!((r.status, r.code().as_str()), (400, "invalid_input"), "{}", r.body);
        assert_eq!(r.json()["error"]["field"], field);
    }
    let dated = [("X-Mnemon-Date", "yesterday")];
    let ask = json!({"model": "m", "messages": [{"role": "user", "content": "Remember the plums."}]});
    let r = chat(&s, "/v1/chat/completions", ADMIN, &dated, ask.clone());
    assert_eq!(r.json()["error"]["field"], "X-Mnemon-Date", "{}", r.body);
    let r = chat(&s, "/v1/chat/completions", ADMIN, &[("X-Mnemon-User", "max")], ask);
    assert_eq!((r.status, r.code().as_str()), (502, "upstream"), "{}", r.body);
    assert!(
        !r.body.contains(&closed.port().to_string()),
        "the upstream's address stays in the log: {}",
        r.body
    );
    assert!(!exported(&s, "max").contains("plums"), "nothing stored for an upstream that is not there");
}
