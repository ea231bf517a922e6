//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use std::sync::Arc;
#[cfg(feature = "onnx")]
use std::sync::OnceLock;

use mnemon::{Config, Embedder, HashingEmbedder, Memory, Message};
#[cfg(feature = "onnx")]
use mnemon::{OnnxConfig, OnnxEmbedder};

pub struct TempStore {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn temp_store() -> TempStore {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    TempStore { dir, path }
}

#[cfg(feature = "onnx")]
/// MiniLM through the real ONNX Runtime, loaded once per test binary. Needs
/// `scripts/fetch-models.sh` (the README's test command runs it); without the files the tests
/// that use it fail with the fix.
pub fn minilm() -> Arc<OnnxEmbedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        let dir = mnemon::models::default_dir();
        match OnnxEmbedder::new(OnnxConfig::from_dir(&dir)) {
            Ok(e) => Arc::new(e),
            Err(e) => panic!("MiniLM is not installed in {}: {e}", dir.display()),
        }
    })
    .clone()
}

/// The embedders the operations are tested on: the hashing test double and, with the `onnx`
/// feature, MiniLM.
pub fn embedders() -> Vec<(&'static str, Arc<dyn Embedder>)> {
    let hashing: (&'static str, Arc<dyn Embedder>) = ("hashing", Arc::new(HashingEmbedder::default()));
    #[cfg(feature = "onnx")]
    return vec![hashing, ("minilm", minilm())];
    #[cfg(not(feature = "onnx"))]
    vec![hashing]
}

/// A store with this embedder and the default configuration.
pub fn open(embedder: &Arc<dyn Embedder>, path: &Path) -> Memory {
    Memory::open_shared(path, embedder.clone(), Config::default()).unwrap()
}

pub fn hashing(path: &Path) -> Memory {
    Memory::open(path, HashingEmbedder::default(), Config::default()).unwrap()
}

/// A store with the hashing embedder ranking by the dense score alone (no BM25 fusion).
pub fn hashing_dense(path: &Path) -> Memory {
    Memory::open(path, HashingEmbedder::default(), Config { rrf_k: None, ..Config::default() }).unwrap()
}

/// The bytes of a closed store (main file; the WAL is checkpointed away on close).
pub fn file_bytes(path: &Path) -> Vec<u8> {
    let wal = path.with_extension("db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0, "store not closed cleanly");
    std::fs::read(path).unwrap()
}

/// A three-session conversation used across tests.
pub fn conversation() -> Vec<Message> {
    let s1 = "2023/05/20 (Sat) 02:21";
    let s2 = "2023/06/02 (Fri) 18:40";
    let s3 = "2023/07/15 (Sat) 09:05";
    vec![
        Message::user("I adopted a beagle named Toby last month.", s1).in_session("a"),
        Message::assistant("Beagles are friendly. How is Toby settling in?", s1).in_session("a"),
        Message::user("I work as a nurse at the city hospital, night shifts mostly.", s1).in_session("a"),
        Message::assistant("Night shifts are hard; sleep hygiene matters.", s1).in_session("a"),
        Message::user("Can you recommend a sci-fi novel? I loved Dune.", s2).in_session("b"),
        Message::assistant("Try Hyperion by Dan Simmons.", s2).in_session("b"),
        Message::user("I started learning the cello this week.", s3).in_session("c"),
        Message::assistant("Great choice. Practice twenty minutes a day.", s3).in_session("c"),
    ]
}

/// A dump's records as JSON values, less what schema 5 added (extractor lines, each record's
/// extractor) and the header: for comparing with a dump made before it.
pub fn dump_before_schema_5(dump: &str) -> Vec<serde_json::Value> {
    dump.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] != "extractor")
        .map(|mut v| {
            v.as_object_mut().unwrap().remove("extractor");
            v
        })
        .collect()
}

/// A text export up to its extractors section (schema 5), without the pins hash line.
pub fn text_before_schema_5(text: &str) -> String {
    let body = text.split("\nextractors:\n").next().unwrap_or_default();
    body.lines().filter(|l| !l.starts_with("pins_hash")).collect::<Vec<_>>().join("\n")
}

/// Every row of every table of the store at `path` (the vec0 and FTS5 shadow tables included:
/// they are plain tables), table by table in name order, rows in primary-key order, values
/// typed (blobs in hex): two stores with equal dumps hold the same bytes in every record.
pub fn canonical_dump(path: &Path) -> String {
    use std::fmt::Write;
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = String::new();
    for (table, sql) in tables {
        let order = if sql.contains("WITHOUT ROWID") { "1" } else { "rowid" };
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY {order}")).unwrap();
        let columns = stmt.column_count();
        let _ = writeln!(out, "## {table}");
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let cells: Vec<String> = (0..columns)
                .map(|i| match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "null".to_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => format!("{:?}", v.to_bits()),
                    rusqlite::types::ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
                    rusqlite::types::ValueRef::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join("\t"));
        }
    }
    out
}
