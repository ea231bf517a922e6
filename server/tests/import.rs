//! `POST /v1/import/chats` over real HTTP: the hand-written exports (`tests/fixtures/chats`)
//! uploaded as they are, twice (the second stores nothing), as a chunked stream, past the
//! import limit (declared and undeclared), with a bad format, and by a bound token.

use std::io::{Read, Write};

use mnemon::config::Config;
use mnemon_server::{Grant, HttpOptions, Principal};

use crate::common;
use common::{raw, settings, start, Raw};

const ADMIN: &str = "admin-token-0123456789";
const ANA: &str = "ana-token-0123456789ab";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/chats").join(name),
    )
    .unwrap()
}

fn server(dir: &std::path::Path, import_limit: usize) -> common::Server {
    let grants = vec![
        Grant { token: ADMIN.into(), principal: Principal::Admin },
        Grant { token: ANA.into(), principal: Principal::user("ana", None).unwrap() },
    ];
    start(
        settings(dir, vec![], Config::default()),
        HttpOptions { grants, import_limit, ..HttpOptions::default() },
    )
}

fn upload(base: &str, token: &str, query: &str, body: &str) -> Raw {
    let auth = format!("Bearer {token}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    raw(base, "POST", &format!("/v1/import/chats?{query}"), &headers, body)
}

/// The same upload with `Transfer-Encoding: chunked`, in chunks of `size` bytes.
fn chunked(base: &str, query: &str, body: &str, size: usize) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/import/chats?{query} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ADMIN}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    for chunk in body.as_bytes().chunks(size) {
        // The server may answer and close before the whole body is sent.
        if write!(stream, "{:x}\r\n", chunk.len()).is_err()
            || stream.write_all(chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response)
}

#[test]
fn an_uploaded_export_is_stored_once_and_again_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), 512 << 20);
    let claude = fixture("claude.json");
    let first = upload(&s.base, ADMIN, "format=claude&user_id=zoe", &claude);
    assert_eq!(first.status, 200, "{}", first.body);
    let report = first.json();
    assert_eq!(report["rounds_stored"], 4, "{report}");
    assert_eq!(report["tally"]["conversations"], 2);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3);
    assert!(report["skipped"][0]["entry"].as_str().unwrap().contains("message k5"));
    let again = upload(&s.base, ADMIN, "format=claude&user_id=zoe", &claude).json();
    assert_eq!((again["rounds_stored"].as_u64(), again["rounds_duplicate"].as_u64()), (Some(0), Some(4)));

    // Streamed in small chunks, the ChatGPT export reads the same as whole.
    let (status, response) = chunked(&s.base, "format=chatgpt&user_id=zoe", &fixture("chatgpt.json"), 97);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("\"rounds_stored\":3"), "{response}");

    // A bound token imports for its user only.
    let mine = upload(&s.base, ANA, "format=jsonl", &fixture("chats.jsonl"));
    assert_eq!(mine.json()["rounds_stored"], 2, "{}", mine.body);
    let other = upload(&s.base, ANA, "format=jsonl&user_id=zoe", &fixture("chats.jsonl"));
    assert_eq!((other.status, other.code().as_str()), (403, "forbidden"));

    let bad = upload(&s.base, ADMIN, "format=myspace&user_id=zoe", &claude);
    assert_eq!((bad.status, bad.json()["error"]["field"].as_str()), (400, Some("format")), "{}", bad.body);
    let not_json = upload(&s.base, ADMIN, "format=chatgpt&user_id=zoe", "this is not an export");
    assert_eq!((not_json.status, not_json.json()["error"]["field"].as_str()), (400, Some("file")));
}

#[test]
fn a_file_past_the_import_limit_is_refused_declared_or_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), 1000);
    let claude = fixture("claude.json");
    assert!(claude.len() > 1000);
    let declared = upload(&s.base, ADMIN, "format=claude&user_id=zoe", &claude);
    assert_eq!((declared.status, declared.code().as_str()), (413, "payload_too_large"), "{}", declared.body);
    let (status, response) = chunked(&s.base, "format=claude&user_id=zoe", &claude, 300);
    assert_eq!(status, 413, "{response}");
    // A small file passes the same server, past the API's own body limit's checks.
    let small = upload(&s.base, ADMIN, "format=jsonl&user_id=zoe", &fixture("chats.jsonl")[..400]);
    assert_eq!(small.status, 200, "{}", small.body);
}

#[test]
fn the_route_is_in_the_openapi_document() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), 512 << 20);
    let doc = raw(&s.base, "GET", "/openapi.json", &[], "").json();
    let op = &doc["paths"]["/v1/import/chats"]["post"];
    assert!(op.is_object(), "{}", doc["paths"]);
    assert!(doc["components"]["schemas"]["Imported"].is_object());
}
