//! Real MCP clients against the real binary: the official MCP Python SDK (`mcp` 2.3.0, in a venv
//! this test makes on first use) drives `mnemon mcp` over stdio and `mnemon serve` over
//! streamable HTTP (with a bearer token): initialize, list tools, save, recall, search, delete,
//! and the error codes, each checked by `mcp_client.py`.

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Serving;

use crate::common;

const MCP_SDK: &str = "mcp==2.3.0";

fn python() -> PathBuf {
    common::venv(MCP_SDK)
}

fn client(args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new(python()).arg(script).args(args).output().expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "client failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_sdk_drives_mcp_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    client(&["stdio", env!("CARGO_BIN_EXE_mnemon"), dir.path().to_str().unwrap()]);
}

#[test]
fn the_python_sdk_drives_mcp_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let token = "a-test-token-of-some-length";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let data = dir.path().join("data");
    let server = Serving::start([
        "--embedder".as_ref(),
        "hashing".as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
        "--token-file".as_ref(),
        token_file.as_os_str(),
    ]);
    let addr = &server.addr;
    client(&["http", &format!("http://{addr}/mcp"), token]);
    drop(server);
}

/// Raw lines on `mnemon mcp`'s stdin: every line that is not JSON (garbage, truncated, binary,
/// invalid UTF-8, 100,000 levels of nesting) gets a -32700 reply with `id: null`, a 20 MB line
/// gets -32600, a tool call whose arguments are not an object gets -32602 with its id, and the
/// server reads on: a request after them all is answered. Before, none of these got a reply.
#[test]
fn every_bad_line_on_stdio_gets_a_json_rpc_error_and_the_server_reads_on() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .args(["mcp", "--embedder", "hashing", "--data"])
        .arg(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout).lines().map(|l| l.unwrap()).collect::<Vec<String>>()
    });
    let mut send = |line: &[u8]| {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(b"garbage");
    send(br#"{"jsonrpc":"2.0","id":5,"#);
    send(b"\x00\x01\x02\xff\xfe");
    send(b"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\",\"x\":\"\xff\"}");
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    send(deep.as_bytes());
    send(&vec![b'x'; 20 << 20]);
    send(br#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"count_memories","arguments":"notanobject"}}"#);
    send(br#"{"jsonrpc":"2.0","id":30,"method":"tools/list"}"#);
    drop(stdin);
    let lines = reader.join().unwrap();
    let _ = child.wait();
    let replies: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let errors: Vec<(serde_json::Value, i64)> =
        replies.iter().filter_map(|r| Some((r["id"].clone(), r["error"]["code"].as_i64()?))).collect();
    let null = serde_json::Value::Null;
    assert_eq!(
        errors,
        [
            (null.clone(), -32700),
            (null.clone(), -32700),
            (null.clone(), -32700),
            (null.clone(), -32700),
            (null.clone(), -32700),
            (null, -32600),
            (serde_json::json!(20), -32602),
        ],
        "{lines:?}"
    );
    let listed = replies.iter().find(|r| r["id"] == 30).expect("the last request is answered");
    assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{listed}");
}
