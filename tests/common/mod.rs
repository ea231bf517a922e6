//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use std::sync::Arc;
#[cfg(feature = "onnx")]
use std::sync::OnceLock;

use mnemon::config::Config;
use mnemon::embed::{Embedder, HashingEmbedder};
#[cfg(feature = "onnx")]
use mnemon::embed::{OnnxConfig, OnnxEmbedder};
use mnemon::{Memory, Message};

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
        let dir = mnemon::model_files::default_dir();
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

/// The PostgreSQL server the store-facing tests run on instead of files, when
/// `MNEMON_TEST_PG_URL` is set (`scripts/test.sh` sets it for its second pass).
pub fn postgres() -> Option<String> {
    std::env::var("MNEMON_TEST_PG_URL").ok().filter(|u| !u.is_empty())
}

/// Whether this run stores on PostgreSQL (see [`postgres`]).
pub fn on_postgres() -> bool {
    postgres().is_some()
}

/// The PostgreSQL store standing for the file `path` in a PostgreSQL run: a schema of its own
/// in the server's database (created empty the first time a path is opened), so that reopening
/// a path reopens its store.
pub fn backend_for(path: &Path) -> Arc<dyn mnemon::stores::Backend> {
    let url = postgres().expect("a PostgreSQL run");
    let schema = format!("t_{}", &blake3::hash(path.as_os_str().as_encoded_bytes()).to_hex()[..20]);
    Arc::new(mnemon_postgres::PgBackend::new(&url).unwrap().schema(&schema).unwrap())
}

/// Opens the store at `path` (in a PostgreSQL run, its stand-in; see [`backend_for`]).
pub fn open_at(path: &Path, embedder: Arc<dyn Embedder>, config: Config) -> mnemon::Result<Memory> {
    match postgres() {
        Some(_) => Memory::builder(backend_for(path)).embedder(embedder).config(config).open(),
        None => Memory::builder(path).embedder(embedder).config(config).open(),
    }
}

/// A store with this embedder and the default configuration.
pub fn open(embedder: &Arc<dyn Embedder>, path: &Path) -> Memory {
    open_at(path, embedder.clone(), Config::default()).unwrap()
}

pub fn hashing(path: &Path) -> Memory {
    open_at(path, Arc::new(HashingEmbedder::default()), Config::default()).unwrap()
}

/// A store with the hashing embedder ranking by the dense score alone (no BM25 fusion).
pub fn hashing_dense(path: &Path) -> Memory {
    open_at(path, Arc::new(HashingEmbedder::default()), Config { rrf_k: None, ..Config::default() }).unwrap()
}

/// A client on the PostgreSQL stand-in of `path` (its schema first on the search path).
fn pg_client(path: &Path) -> postgres::Client {
    let url = postgres().expect("a PostgreSQL run");
    let schema = format!("t_{}", &blake3::hash(path.as_os_str().as_encoded_bytes()).to_hex()[..20]);
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("SET search_path = {schema}, public")).unwrap();
    c
}

/// Column 0 of the first row of `sql` (an integer), on the store at `path` (either backend).
pub fn count(path: &Path, sql: &str) -> i64 {
    if on_postgres() {
        pg_client(path).query_one(sql, &[]).unwrap().get(0)
    } else {
        rusqlite::Connection::open(path).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
    }
}

/// Column 0 of the first row of `sql` (text), on the store at `path` (either backend).
pub fn text(path: &Path, sql: &str) -> String {
    if on_postgres() {
        pg_client(path).query_one(sql, &[]).unwrap().get(0)
    } else {
        rusqlite::Connection::open(path).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
    }
}

/// The vector of the note with this key, as stored (either backend).
pub fn note_vector(path: &Path, key: &str) -> Vec<f32> {
    let sql = "SELECT v.embedding FROM notes n JOIN note_vectors v ON v.rowid = n.id WHERE n.note_key = ";
    if on_postgres() {
        let v: pgvector::Vector = pg_client(path).query_one(&format!("{sql}$1"), &[&key]).unwrap().get(0);
        v.to_vec()
    } else {
        let blob: Vec<u8> = rusqlite::Connection::open(path)
            .unwrap()
            .query_row(&format!("{sql}?1"), [key], |r| r.get(0))
            .unwrap();
        blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
}

/// Everything the store at `path` holds, to compare before and after a call that must write
/// nothing: a closed file's bytes, or every row of every table of a PostgreSQL store.
pub fn state(path: &Path) -> Vec<u8> {
    if !on_postgres() {
        return file_bytes(path);
    }
    let mut c = pg_client(path);
    let tables: Vec<String> = c
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut out = Vec::new();
    for t in tables {
        out.extend(format!("== {t}\n").into_bytes());
        for row in c.query(&format!("SELECT x::text FROM {t} x ORDER BY 1"), &[]).unwrap() {
            out.extend(row.get::<_, String>(0).into_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// Makes every insert into `table` whose `column` holds `POISON` fail inside the database
/// (either backend): a failure in the middle of a write.
pub fn poison(path: &Path, table: &str, column: &str) {
    if on_postgres() {
        pg_client(path)
            .batch_execute(&format!(
                "CREATE FUNCTION poison_{table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                 IF NEW.{column} LIKE '%POISON%' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$; \
                 CREATE TRIGGER poison BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION poison_{table}();"
            ))
            .unwrap();
    } else {
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TRIGGER poison BEFORE INSERT ON {table} WHEN NEW.{column} LIKE '%POISON%' \
                 BEGIN SELECT RAISE(ABORT, 'poisoned'); END;"
            ))
            .unwrap();
    }
}

/// Imports `dump` into the store at `path` (either backend).
pub fn import(path: &Path, dump: &str) -> mnemon::Result<mnemon::export::ImportReport> {
    if on_postgres() {
        Memory::builder(backend_for(path)).import(dump)
    } else {
        Memory::builder(path).import(dump)
    }
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

/// A timestamp the test knows to be valid.
pub fn ts(raw: &str) -> mnemon::Timestamp {
    mnemon::Timestamp::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
}
