//! Forgetting a user leaves no trace: a unique marker written into a round, its fact and a note
//! (and the user's own name) is searched for, byte by byte, in the store file, its WAL and every
//! cache file after `forget_user`, and so are the bytes of every vector the user had.

use std::path::Path;
use std::sync::Arc;

use mnemon::config::Config;
use mnemon::embed::CachedEmbedder;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::extract::{CachedExtractor, Extractor, ScriptedExtractor};
use mnemon::notes::NewNote;
use mnemon::{Memory, Message, Query};

const MARKER: &str = "Quorblaxian";
const USER: &str = "Xanthor-Pelliwig";
const TS: &str = "2026-03-04T10:00:00";

fn secret_turn() -> String {
    // Over 100 words with the reply, so the round also has part records.
    format!(
        "My secret codename is {MARKER} and nobody else may know it. I chose it years ago when I \
         started working on the lighthouse restoration project near the old harbour, and I have \
         used it for every private account since then. Please keep it in mind whenever we talk \
         about the harbour, the lighthouse or the accounts, because I forget which one I used \
         where. It matters more than it sounds, and I would rather you remind me of it than have \
         me guess again next winter when the harbour office asks for the same details once more."
    )
}

fn open(dir: &Path) -> Memory {
    let embedder =
        CachedEmbedder::open(dir.join("vectors.db"), Arc::new(HashingEmbedder::default())).unwrap();
    let script = serde_json::json!({
        secret_turn(): [{
            "content": format!("The user's secret codename is {MARKER}."),
            "raw": format!("user: My secret codename is {MARKER}"),
            "when": null, "subject": "user", "predicate": "codename is", "object": MARKER, "salience": 1.0
        }]
    });
    let inner = ScriptedExtractor::from_json("forget", &script.to_string()).unwrap();
    let extractor = CachedExtractor::open(dir.join("extract.db"), inner).unwrap();
    let config = Config { background_extraction: false, ..Config::default() };
    Memory::builder(dir.join("store.db"))
        .embedder(embedder)
        .extractor(Arc::new(extractor) as Arc<dyn Extractor>)
        .config(config)
        .open()
        .unwrap()
}

/// Every file in `dir` (the store, the caches, their WAL and shared-memory files), with its name, in name order.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// Whether `needle` occurs in `haystack`, ASCII case ignored (bytes mapped one to one onto
/// chars, so the standard library's substring search does the work).
fn found(haystack: &[u8], needle: &[u8]) -> bool {
    let chars = |b: &[u8]| -> String { b.iter().map(|c| char::from(c.to_ascii_lowercase())).collect() };
    !needle.is_empty() && chars(haystack).contains(&chars(needle))
}

/// The files in `dir` that hold `needle`.
fn holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    files(dir).into_iter().filter(|(_, bytes)| found(bytes, needle)).map(|(name, _)| name).collect()
}

/// The stored vectors (as blobs) of the user's records.
fn vectors(store: &Path, user: &str) -> Vec<Vec<u8>> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT v.embedding FROM round_vectors v JOIN rounds r ON r.id = v.rowid JOIN users u ON u.id = r.user_id WHERE u.name = ?1",
        "SELECT v.embedding FROM fact_vectors v JOIN facts f ON f.id = v.rowid JOIN users u ON u.id = f.user_id WHERE u.name = ?1",
        "SELECT v.embedding FROM note_vectors v JOIN notes n ON n.id = v.rowid JOIN users u ON u.id = n.user_id WHERE u.name = ?1",
        "SELECT p.embedding FROM round_parts p JOIN users u ON u.id = p.user_id WHERE u.name = ?1",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        out.extend(stmt.query_map([user], |r| r.get::<_, Vec<u8>>(0)).unwrap().map(Result::unwrap));
    }
    out
}

#[test]
fn forgetting_a_user_leaves_no_byte_of_them_in_the_store_its_log_or_any_cache() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    m.add(
        &[
            Message::user(secret_turn(), TS),
            Message::assistant(format!("Understood, {MARKER} stays between us."), TS),
        ],
        USER,
    )
    .unwrap();
    let mut note = NewNote::new(format!("Backup phrase: {MARKER} harbour lamp"), TS);
    note.title = Some(format!("{MARKER} backup"));
    note.tags = vec![MARKER.to_lowercase()];
    m.remember(&[note], USER).unwrap();
    m.add(&[Message::user("Bob keeps bees on the roof.", TS)], "bob").unwrap();
    let hits = m.recall(Query::new(&format!("What is my codename {MARKER}?")).top_k(3), USER).unwrap();
    assert_eq!(m.active_facts(USER).unwrap().len(), 1, "the fact was extracted");
    assert!(!hits.rounds.is_empty());

    let store = dir.path().join("store.db");
    let vecs = vectors(&store, USER);
    assert!(vecs.len() >= 4, "a round, its parts, a fact and a note: {}", vecs.len());
    // The test can fail: before forgetting, every trace is where it is looked for.
    for needle in [MARKER.as_bytes(), USER.as_bytes()] {
        assert!(!holding(dir.path(), needle).is_empty());
    }
    assert!(holding(dir.path(), MARKER.as_bytes()).iter().any(|f| f.starts_with("extract.db")));

    let report = m.forget_user(USER).unwrap();
    assert_eq!((report.rounds, report.notes, report.scrubbed), (1, 1, true));

    // While the store is still open: the call itself left nothing behind.
    for needle in [MARKER.as_bytes(), USER.as_bytes()] {
        assert_eq!(holding(dir.path(), needle), Vec::<String>::new(), "{}", String::from_utf8_lossy(needle));
    }
    for (i, v) in vecs.iter().enumerate() {
        assert_eq!(holding(dir.path(), v), Vec::<String>::new(), "vector {i}");
    }
    // Nothing visible either, and the other user is whole.
    assert!(matches!(m.export(ExportFormat::Text, USER), Err(mnemon::Error::InvalidInput { .. })));
    assert!(m.recall(MARKER, USER).unwrap().rounds.is_empty());
    assert_eq!(m.user_names().unwrap(), vec!["bob".to_string()]);
    assert_eq!(m.recall("bees", "bob").unwrap().rounds.len(), 1);
    // The name can be used again, as a new user with nothing.
    m.add(&[Message::user("A fresh start.", TS)], USER).unwrap();
    assert_eq!(m.rounds(USER).unwrap().len(), 1);
    drop(m);
    assert!(holding(dir.path(), MARKER.as_bytes()).is_empty());
}

/// The hashing embedder, whose `forget` fails while `failing` is set.
struct Flaky {
    failing: std::sync::atomic::AtomicBool,
    forgotten: std::sync::Mutex<Vec<String>>,
}

impl mnemon::embed::Embedder for Flaky {
    fn pins(&self) -> mnemon::embed::EmbedderPins {
        HashingEmbedder::default().pins()
    }
    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        HashingEmbedder::default().embed_documents(texts)
    }
    fn forget(&self, texts: &[&str]) -> mnemon::Result<()> {
        if self.failing.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(mnemon::Error::Embedder("the cache file is read-only".into()));
        }
        self.forgotten.lock().unwrap().extend(texts.iter().map(|t| t.to_string()));
        Ok(())
    }
}

#[test]
fn a_forget_whose_cache_step_failed_is_completed_by_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let flaky = Arc::new(Flaky { failing: true.into(), forgotten: Default::default() });
    let m = Memory::builder(dir.path().join("store.db")).embedder(Arc::clone(&flaky)).open().unwrap();
    m.add(&[Message::user(format!("My codename is {MARKER}."), TS)], USER).unwrap();
    m.remember(&[NewNote::new(format!("Codename {MARKER}"), TS)], USER).unwrap();
    let before = m.export(ExportFormat::Jsonl, USER).unwrap();

    assert!(matches!(m.forget_user(USER), Err(mnemon::Error::Embedder(_))));
    assert_eq!(m.export(ExportFormat::Jsonl, USER).unwrap(), before, "a failed forget changed the store");

    flaky.failing.store(false, std::sync::atomic::Ordering::Relaxed);
    let report = m.forget_user(USER).unwrap();
    assert_eq!((report.rounds, report.notes), (1, 1));
    let forgotten = flaky.forgotten.lock().unwrap().clone();
    assert!(forgotten.iter().filter(|t| t.contains(MARKER)).count() >= 2, "{forgotten:?}");
    assert!(m.user_names().unwrap().is_empty());
}
