//! Real MCP clients against the real binary: the official MCP Python SDK (`mcp` 2.3.0, in a venv
//! this test makes on first use) drives `mnemon mcp` over stdio and `mnemon serve` over
//! streamable HTTP (with a bearer token): initialize, list tools, save, recall, search, delete,
//! and the error codes, each checked by `mcp_client.py`.

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Serving;

use crate::common;

const MCP_SDK: &str = "mcp==2.3.0";

/// The venv's Python, made once per machine under the cache folder (`MNEMON_TEST_VENV`
/// overrides the place).
fn python() -> PathBuf {
    let venv = std::env::var_os("MNEMON_TEST_VENV").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
        cache.join("mnemon").join(format!("venv-{}", MCP_SDK.replace("==", "-")))
    });
    let python = venv.join("bin").join("python");
    let ready = venv.join(".installed");
    // The tests of this file run on threads: one makes the venv, the others wait.
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !ready.exists() {
        let run = |cmd: &mut Command| {
            let out = cmd.output().expect("run python3");
            assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", MCP_SDK]));
        std::fs::write(&ready, MCP_SDK).unwrap();
    }
    python
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
