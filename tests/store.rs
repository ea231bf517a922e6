//! Store files: pins, schema version, foreign files, models-free opening.

use crate::common;

use common::{conversation, hashing, temp_store};
use mnemon::config::Config;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::{Error, Memory};

/// A fresh, closed store with `sql` applied to it behind mnemon's back.
fn edited_store(sql: &str) -> common::TempStore {
    let t = temp_store();
    drop(hashing(&t.path));
    rusqlite::Connection::open(&t.path).unwrap().execute_batch(sql).unwrap();
    t
}

fn reopen(t: &common::TempStore) -> mnemon::Result<Memory> {
    Memory::builder(&t.path).embedder(HashingEmbedder::default()).open()
}

#[test]
fn a_store_opened_with_another_embedder_is_refused_naming_every_differing_pin() {
    let t = temp_store();
    hashing(&t.path).add(&conversation(), "u").unwrap();
    let other = HashingEmbedder::new(128).unwrap();
    match Memory::builder(&t.path).embedder(other).open() {
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
    match Memory::builder(&t.path).embedder(HashingEmbedder::default()).config(config).open() {
        Err(Error::PinMismatch { differences }) => {
            assert_eq!(differences.len(), 1);
            assert_eq!(differences[0].key, "rounds.dedup_cosine");
        }
        other => panic!("{:?}", other.err()),
    }
    // Read-path settings are not pinned.
    let config = Config { top_k: 3, time_weight: 0.2, context_budget: Some(300), ..Config::default() };
    Memory::builder(&t.path).embedder(HashingEmbedder::default()).config(config).open().unwrap();
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
    match Memory::builder(&t.path).embedder(HashingEmbedder::default()).open() {
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
    match Memory::builder(&t.path).embedder(HashingEmbedder::default()).open() {
        Err(Error::NotAStore { path, reason }) => {
            assert_eq!(path, t.path);
            assert!(reason.contains("not a SQLite database"), "{reason}");
        }
        other => panic!("{:?}", other.err()),
    }
    assert_eq!(std::fs::read(&t.path).unwrap(), before);
}

#[test]
fn a_foreign_sqlite_database_is_refused_untouched() {
    // Another application's databases: tables of mnemon's names, a `meta` table of its own, a
    // `meta(key, value)` without a schema version; and an empty SQLite file, which only a
    // reading open refuses (an opening that may create makes the store there).
    let apps = [
        ("notes", "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);"),
        ("meta", "CREATE TABLE meta(name TEXT, data BLOB); INSERT INTO meta VALUES ('v', x'00');"),
        ("key-value", "CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES ('theme', 'dark');"),
        ("empty", "PRAGMA user_version = 7;"),
    ];
    for (name, sql) in apps {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let listing = |d: &std::path::Path| {
            let mut names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
            names.sort();
            names
        };
        let files = listing(dir.path());
        let mut opens = vec![("stored", Memory::builder(&path).stored().open().map(drop))];
        if name != "empty" {
            opens.push((
                "create",
                Memory::builder(&path).embedder(HashingEmbedder::default()).open().map(drop),
            ));
        }
        for (how, opened) in opens {
            match opened {
                Err(Error::NotAStore { path: p, reason }) => {
                    assert_eq!(p, path, "{name} {how}");
                    assert!(!reason.contains("no such column"), "{name} {how}: {reason}");
                }
                other => panic!("{name} {how}: {other:?}"),
            }
            assert_eq!(std::fs::read(&path).unwrap(), before, "{name} {how}: the file changed");
            assert_eq!(listing(dir.path()), files, "{name} {how}: a file appeared beside it");
        }
    }
}

#[test]
fn open_stored_exports_without_models_but_refuses_to_embed() {
    let t = temp_store();
    hashing(&t.path).add(&conversation(), "u").unwrap();
    let stored = Memory::builder(&t.path).stored().open().unwrap();
    assert!(stored.export(ExportFormat::Markdown, "u").unwrap().contains("Toby"));
    assert!(matches!(stored.add(&conversation(), "u"), Err(Error::NoEmbedder { operation: "add" })));
    assert!(matches!(stored.recall("dog", "u"), Err(Error::NoEmbedder { operation: "recall" })));
    assert!(matches!(
        Memory::builder(t.dir.path().join("missing.db")).stored().open(),
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
        Memory::builder(&t.path).embedder(HashingEmbedder::default()).config(config).open(),
        Err(Error::InvalidConfig { field: "top_k", .. })
    ));
    assert!(!t.path.exists());
}

fn tulips(i: usize) -> Vec<mnemon::Message> {
    let ts = format!("2026-01-{:02}T10:{:02}:00", 1 + i % 28, i % 60);
    vec![
        mnemon::Message::user(format!("Round {i}: I planted {i} tulips and {} roses.", i * 7), ts.clone()),
        mnemon::Message::assistant(
            format!("Noted: {i} tulips. {}", "Gardens need patience. ".repeat(20)),
            ts,
        ),
    ]
}

#[test]
fn a_backup_taken_while_another_handle_writes_is_one_consistent_snapshot() {
    let t = temp_store();
    let writer = std::sync::Arc::new(hashing(&t.path));
    let reader = hashing(&t.path);
    writer.add(&tulips(0), "u").unwrap();
    let w = std::sync::Arc::clone(&writer);
    let writing = std::thread::spawn(move || {
        for i in 1..200 {
            // Two rounds per call: a snapshot holds an odd count (1 + 2k) or it cut a commit.
            let mut both = tulips(i * 2);
            both.extend(tulips(i * 2 + 1));
            w.add(&both, "u").unwrap();
        }
    });
    let mut copies = Vec::new();
    for n in 0..5 {
        let out = t.dir.path().join(format!("copy-{n}.db"));
        assert!(reader.backup(&out).unwrap() > 0);
        copies.push(out);
    }
    writing.join().unwrap();
    for out in &copies {
        let copy = hashing(out);
        assert!(copy.check(true).unwrap().is_empty());
        let rounds = copy.rounds("u").unwrap().len();
        assert_eq!(rounds % 2, 1, "{rounds} rounds: a commit was cut");
        assert_eq!(copy.recall(mnemon::Query::new("tulips").top_k(1000), "u").unwrap().rounds.len(), rounds);
    }
    let again = reader.backup(&copies[0]);
    assert!(matches!(again, Err(Error::InvalidInput { ref field, .. }) if field == "out"), "{again:?}");
}

#[test]
fn a_truncated_store_is_refused_naming_its_file_and_a_damaged_one_fails_its_check_without_a_panic() {
    let t = temp_store();
    let m = hashing(&t.path);
    for i in 0..100 {
        m.add(&tulips(i), "u").unwrap();
    }
    assert!(m.check(false).unwrap().is_empty());
    drop(m);
    let whole = std::fs::read(&t.path).unwrap();
    assert!(whole.len() > 64 * 1024, "{} bytes", whole.len());

    let truncated = t.dir.path().join("truncated.db");
    std::fs::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    match Memory::builder(&truncated).stored().open() {
        Err(Error::Corrupt { path, reason }) => {
            assert_eq!(path, truncated);
            assert!(reason.contains("truncated"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(std::fs::read(&truncated).unwrap().len(), whole.len() / 2, "left as it was");

    // Garbage over pages early and late in the file: refused at open by name, or opened with a
    // check that lists problems and reads that answer or fail by name; never a panic.
    let page = 4096;
    let pages = whole.len() / page;
    let mut opened_damaged = 0;
    for (n, range) in [(3, 9), (pages - 8, pages - 2), (pages / 2, pages / 2 + 3)].into_iter().enumerate() {
        let damaged = t.dir.path().join(format!("damaged-{n}.db"));
        let mut bytes = whole.clone();
        for b in &mut bytes[page * range.0..page * range.1] {
            *b = 0xA5;
        }
        std::fs::write(&damaged, &bytes).unwrap();
        let named = |e: &Error| matches!(e, Error::Corrupt { path, .. } if *path == damaged);
        let m = match Memory::builder(&damaged).embedder(HashingEmbedder::default()).open() {
            Err(e) => {
                assert!(named(&e), "{e}");
                continue;
            }
            Ok(m) => m,
        };
        opened_damaged += 1;
        let problems = m.check(false);
        assert!(problems.as_ref().map_or_else(named, |p| !p.is_empty()), "{problems:?}");
        if let Err(e) = m.recall("tulips", "u") {
            assert!(named(&e), "{e}");
        }
        if let Err(e) = m.export(ExportFormat::Jsonl, "u") {
            assert!(named(&e), "{e}");
        }
        if let Err(e) = m.add(&tulips(500), "u") {
            assert!(named(&e), "{e}");
        }
        if let Err(e) = m.consolidate("u") {
            assert!(named(&e), "{e}");
        }
        if let Ok(rounds) = m.rounds("u")
            && let Err(e) = m.delete(&rounds[rounds.len() / 2].key, "u")
        {
            assert!(named(&e), "{e}");
        }
    }
    assert!(opened_damaged > 0, "no damage let the store open: the read paths went untested");
}

#[test]
fn a_full_store_fails_the_write_cleanly_and_keeps_everything_committed() {
    let t = temp_store();
    let config = Config { max_store_bytes: Some(8 << 20), ..Config::default() };
    let m = Memory::builder(&t.path).embedder(HashingEmbedder::default()).config(config).open().unwrap();
    let mut acknowledged = 0;
    let big = |i: usize| {
        let mut round = tulips(i);
        round[1].content.push_str(&"Gardens need patience. ".repeat(1000));
        round
    };
    let full = loop {
        match m.add(&big(acknowledged), "u") {
            Ok(_) => acknowledged += 1,
            Err(e) => break e,
        }
        assert!(acknowledged < 10_000, "the limit never bit");
    };
    assert!(matches!(full, Error::StoreFull { ref path, .. } if *path == t.path), "{full}");
    let before = m.export(ExportFormat::Jsonl, "u").unwrap();
    assert_eq!(m.rounds("u").unwrap().len(), acknowledged);
    // The failed call changed nothing, and the next one fails the same way.
    assert!(matches!(m.add(&big(acknowledged), "u"), Err(Error::StoreFull { .. })));
    assert_eq!(m.export(ExportFormat::Jsonl, "u").unwrap(), before);
    drop(m);
    let reopened = hashing(&t.path);
    assert!(reopened.check(true).unwrap().is_empty());
    assert_eq!(reopened.export(ExportFormat::Jsonl, "u").unwrap(), before);
    reopened.add(&tulips(acknowledged), "u").unwrap();
}
