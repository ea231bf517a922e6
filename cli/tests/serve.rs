//! A reader process keeps answering while a writer process ingests into the same file: `mnemon
//! serve` answers recalls over HTTP while `mnemon ingest` writes 2,000 rounds; no request fails, and
//! once the writer has committed, the server's answers include its rounds (no stale view).

use std::io::Write;
use std::process::{Command, Stdio};

use common::Serving;

use crate::common;

fn recall(agent: &ureq::Agent, base: &str, query: &str) -> (u16, serde_json::Value) {
    let mut r = agent
        .post(&format!("{base}/v1/recall"))
        .send_json(serde_json::json!({"user_id": "u", "query": query, "top_k": 5}))
        .expect("the server answers");
    let status = r.status().as_u16();
    (status, r.body_mut().read_json().unwrap_or_default())
}

#[test]
fn a_server_keeps_answering_while_another_process_ingests_into_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let bin = env!("CARGO_BIN_EXE_mnemon");
    let mut seed = std::fs::File::create(dir.path().join("seed.jsonl")).unwrap();
    writeln!(seed, r#"{{"role":"user","content":"My first pet was a goldfish called Bubbles.","ts":"2026-01-01T09:00:00"}}"#).unwrap();
    let ok = Command::new(bin)
        .args(["ingest", "--embedder", "hashing", "--user", "u", "--store"])
        .arg(&db)
        .arg(dir.path().join("seed.jsonl"))
        .status()
        .unwrap();
    assert!(ok.success());

    let data = dir.path().join("data");
    let server = Serving::start([
        "--embedder".as_ref(),
        "hashing".as_ref(),
        "--store".as_ref(),
        db.as_os_str(),
        "--data".as_ref(),
        data.as_os_str(),
    ]);
    let base = format!("http://{}", server.addr);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();

    let mut rounds = std::fs::File::create(dir.path().join("rounds.jsonl")).unwrap();
    for i in 0..2000 {
        let ts = format!("2026-02-{:02}T{:02}:{:02}:00", 1 + i / 60 % 28, i / 3 % 24, i % 60);
        writeln!(rounds, r#"{{"role":"user","content":"Day {i}: I repotted plant number {i} on the balcony.","ts":"{ts}","session":"s{i}"}}"#).unwrap();
        writeln!(
            rounds,
            r#"{{"role":"assistant","content":"Nice work on plant {i}.","ts":"{ts}","session":"s{i}"}}"#
        )
        .unwrap();
    }
    writeln!(rounds, r#"{{"role":"user","content":"Last of all: my new kayak is bright orange.","ts":"2026-03-30T10:00:00","session":"last"}}"#).unwrap();
    drop(rounds);
    let mut writer = Command::new(bin)
        .args(["ingest", "--embedder", "hashing", "--user", "u", "--store"])
        .arg(&db)
        .arg(dir.path().join("rounds.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let mut answered = 0;
    while writer.try_wait().unwrap().is_none() {
        let (status, body) = recall(&agent, &base, "what was my first pet?");
        assert_eq!(status, 200, "a read failed while the other process wrote: {body}");
        assert!(body["context"].as_str().unwrap().contains("Bubbles"));
        answered += 1;
    }
    let out = writer.wait_with_output().unwrap();
    assert!(out.status.success(), "the writer failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(answered > 0);
    // Committed in the other process: the server's next answer has it.
    let (status, body) = recall(&agent, &base, "what colour is my kayak?");
    assert_eq!(status, 200);
    assert!(body["context"].as_str().unwrap().contains("bright orange"), "stale: {body}");
    let r = agent
        .get(&format!("{base}/v1/count?user_id=u"))
        .call()
        .unwrap()
        .body_mut()
        .read_json::<serde_json::Value>()
        .unwrap();
    assert_eq!(r["rounds"], 2002);
}

/// A start refused for its options (a non-loopback address without a token) says why and never
/// said it was listening: the options are checked before the address is bound.
#[test]
fn a_refused_start_never_says_it_listened() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .args(["serve", "--embedder", "hashing", "--addr", "0.0.0.0:0", "--data"])
        .arg(dir.path().join("data"))
        .env_remove("MNEMON_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("token") && !stderr.contains("listening"), "{stderr}");
}

/// `--years FROM-TO` widens (or narrows) the years a server accepts: an archive's 1850 is refused
/// by default, naming the field, and stored under `--years 1800-2200`; a bad range is refused at
/// start.
#[test]
fn the_years_a_server_accepts_are_a_flag() {
    let post = |addr: &str, ts: &str| {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut r = agent
            .post(&format!("http://{addr}/v1/messages"))
            .send_json(serde_json::json!({"user_id": "u", "messages": [{"role": "user", "content": "A letter.", "ts": ts}]}))
            .unwrap();
        (r.status().as_u16(), r.body_mut().read_json::<serde_json::Value>().unwrap_or_default())
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plain =
        Serving::start(["--embedder".as_ref(), "hashing".as_ref(), "--data".as_ref(), data.as_os_str()]);
    let (status, body) = post(&plain.addr, "1850-06-01T00:00:00");
    assert_eq!((status, body["error"]["field"].as_str()), (400, Some("messages[0].ts")), "{body}");
    drop(plain);
    let wide = Serving::start([
        "--embedder".as_ref(),
        "hashing".as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
        "--years".as_ref(),
        "1800-2200".as_ref(),
    ]);
    assert_eq!(post(&wide.addr, "1850-06-01T00:00:00").0, 200);
    drop(wide);
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .args(["serve", "--embedder", "hashing", "--years", "2200-1900", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--years"));
}
