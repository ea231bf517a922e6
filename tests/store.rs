//! Store files: pins, schema version, foreign files, models-free opening.

mod common;

use common::{conversation, hashing, temp_store};
use mnemon::{Config, Error, ExportFormat, HashingEmbedder, Memory};

/// A fresh, closed store with `sql` applied to it behind mnemon's back.
fn edited_store(sql: &str) -> common::TempStore {
    let t = temp_store();
    drop(hashing(&t.path));
    rusqlite::Connection::open(&t.path).unwrap().execute_batch(sql).unwrap();
    t
}

fn reopen(t: &common::TempStore) -> mnemon::Result<Memory> {
    Memory::open(&t.path, HashingEmbedder::default(), Config::default())
}

#[test]
fn a_store_opened_with_another_embedder_is_refused_naming_every_differing_pin() {
    let t = temp_store();
    hashing(&t.path).add(&conversation(), "u").unwrap();
    let other = HashingEmbedder::new(128).unwrap();
    match Memory::open(&t.path, other, Config::default()) {
        Err(Error::PinMismatch { differences }) => {
            let keys: Vec<&str> = differences.iter().map(|d| d.key.as_str()).collect();
            assert_eq!(keys, vec!["embedder.dim"]);
            assert_eq!(differences[0].stored.as_deref(), Some("384"));
            assert_eq!(differences[0].expected.as_deref(), Some("128"));
            let message = Error::PinMismatch { differences }.to_string();
            assert!(message.contains("embedder.dim: stored 384, expected 128"), "{message}");
        }
        other => panic!("expected a pin mismatch, got {:?}", other.err()),
    }
}

#[test]
fn a_write_setting_change_is_a_pin_mismatch_too() {
    let t = temp_store();
    drop(hashing(&t.path));
    let config = Config { dedup_cosine: 0.9, ..Config::default() };
    match Memory::open(&t.path, HashingEmbedder::default(), config) {
        Err(Error::PinMismatch { differences }) => {
            assert_eq!(differences.len(), 1);
            assert_eq!(differences[0].key, "rounds.dedup_cosine");
        }
        other => panic!("{:?}", other.err()),
    }
    // Read-path settings are not pinned.
    let config = Config { top_k: 3, time_weight: 0.2, context_budget: Some(300), ..Config::default() };
    Memory::open(&t.path, HashingEmbedder::default(), config).unwrap();
}

#[test]
fn several_differing_pins_are_all_listed() {
    let t = temp_store();
    drop(hashing(&t.path));
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    // Rewrite two pins and the hash consistently, as a store from another configuration would be.
    conn.execute("UPDATE meta SET value = 'other-model' WHERE key = 'embedder.name'", []).unwrap();
    conn.execute("UPDATE meta SET value = 'abc' WHERE key = 'embedder.revision'", []).unwrap();
    let pins: std::collections::BTreeMap<String, String> = conn
        .prepare("SELECT key, value FROM meta WHERE key != 'pins_hash'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let hash = blake3::hash(serde_json::to_string(&pins).unwrap().as_bytes()).to_hex().to_string();
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'pins_hash'", [&hash]).unwrap();
    drop(conn);
    match Memory::open(&t.path, HashingEmbedder::default(), Config::default()) {
        Err(Error::PinMismatch { differences }) => {
            let keys: Vec<&str> = differences.iter().map(|d| d.key.as_str()).collect();
            assert_eq!(keys, vec!["embedder.name", "embedder.revision"]);
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_hand_edited_pin_without_its_hash_is_reported_as_corruption() {
    let t = edited_store("UPDATE meta SET value = '999' WHERE key = 'embedder.dim'");
    assert!(matches!(reopen(&t), Err(Error::Corrupt { .. })));
}

#[test]
fn an_unknown_schema_version_is_refused() {
    let t = edited_store("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    match reopen(&t) {
        Err(Error::UnsupportedSchema { found, supported }) => {
            assert_eq!(found, "99");
            assert_eq!(supported, 5);
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_alone() {
    let t = temp_store();
    std::fs::write(&t.path, b"this is a text file, not a database\n".repeat(200)).unwrap();
    let before = std::fs::read(&t.path).unwrap();
    match Memory::open(&t.path, HashingEmbedder::default(), Config::default()) {
        Err(Error::NotAStore { path, reason }) => {
            assert_eq!(path, t.path);
            assert!(reason.contains("not a SQLite database"), "{reason}");
        }
        other => panic!("{:?}", other.err()),
    }
    assert_eq!(std::fs::read(&t.path).unwrap(), before);
}

#[test]
fn a_foreign_sqlite_database_is_refused() {
    let t = temp_store();
    rusqlite::Connection::open(&t.path).unwrap().execute_batch("CREATE TABLE notes(x)").unwrap();
    assert!(matches!(reopen(&t), Err(Error::NotAStore { .. })));
}

#[test]
fn open_stored_exports_without_models_but_refuses_to_embed() {
    let t = temp_store();
    hashing(&t.path).add(&conversation(), "u").unwrap();
    let stored = Memory::open_stored(&t.path, Config::default()).unwrap();
    assert!(stored.export("u", ExportFormat::Markdown).unwrap().contains("Toby"));
    assert!(matches!(stored.add(&conversation(), "u"), Err(Error::NoEmbedder { operation: "add" })));
    assert!(matches!(stored.recall("dog", "u"), Err(Error::NoEmbedder { operation: "recall" })));
    assert!(matches!(
        Memory::open_stored(t.dir.path().join("missing.db"), Config::default()),
        Err(Error::NotAStore { .. })
    ));
}

#[test]
fn pins_are_stored_with_their_hash() {
    let t = temp_store();
    let memory = hashing(&t.path);
    let pins = memory.pins().unwrap();
    for key in [
        "schema_version",
        "embedder.name",
        "embedder.dim",
        "embedder.revision",
        "embedder.template",
        "extraction",
        "pins_hash",
    ] {
        assert!(pins.contains_key(key), "missing {key}");
    }
    assert_eq!(pins["extraction"], "off");
    assert_eq!(pins["embedder.name"], "hashing-v1");
}

#[test]
fn invalid_config_is_refused_before_touching_the_file() {
    let t = temp_store();
    let config = Config { top_k: 0, ..Config::default() };
    assert!(matches!(
        Memory::open(&t.path, HashingEmbedder::default(), config),
        Err(Error::InvalidConfig { field: "top_k", .. })
    ));
    assert!(!t.path.exists());
}
