//! `mnemon proxy` driven by the official `openai` Python package (in a venv this test makes on
//! first use), in front of a small OpenAI-compatible upstream that `proxy_client.py` starts (the
//! test double; the proxy is the real binary): the recalled block reaches the upstream, answers
//! come back unchanged (streamed and not), each round is stored once (also on retries with an
//! `Idempotency-Key`), and nothing is stored for an upstream error, a broken or an abandoned
//! stream.

use std::path::Path;
use std::process::Command;

use crate::common;

const OPENAI: &str = "openai==3.63.0";

#[test]
fn the_openai_package_chats_through_the_proxy_with_memory() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/proxy_client.py");
    let out = Command::new(common::venv(OPENAI))
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_mnemon"))
        .arg(dir.path().join("data"))
        .output()
        .expect("run the openai client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "client failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
