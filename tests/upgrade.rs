//! Upgrades without re-ingesting: stores of older schemas migrate in place (after a backup),
//! reading needs no extractor, facts name the extractor that produced them, `reextract` brings a
//! store up to date after its extractor changed, and `consolidate` settles every fact again.
//! The extractors are `ScriptedExtractor`s: a changed script is a changed prompt, as far as the
//! store can tell (both change the extractor's pins).

use crate::common::{self, ts};

use std::sync::Arc;

use common::temp_store;
use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::extract::{Extractor, ScriptedExtractor};
use mnemon::facts::Reextract;
use mnemon::{Error, Memory, Message};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The gzipped fixture store `name`, unpacked into `dir`.
fn unpack(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let gz = std::fs::read(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut bytes).unwrap();
    let path = dir.join("store.db");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn script(name: &str, json: &str) -> Arc<dyn Extractor> {
    Arc::new(ScriptedExtractor::from_json(name, json).unwrap())
}

fn open_with(path: &std::path::Path, x: Option<&Arc<dyn Extractor>>) -> Memory {
    let config = Config { background_extraction: false, ..Config::default() };
    Memory::builder(path)
        .embedder(HashingEmbedder::default())
        .optional_extractor(x.cloned())
        .config(config)
        .open()
        .unwrap()
}

#[test]
fn a_schema_4_store_migrates_after_a_backup_and_reads_without_its_extractor() {
    let dir = tempfile::tempdir().unwrap();
    let path = unpack(dir.path(), "store-v4.db.gz");
    let original = std::fs::read(&path).unwrap();
    // No extractor: reading needs the embedder only.
    let m = Memory::builder(&path).embedder(HashingEmbedder::default()).open().unwrap();
    let pins = m.pins().unwrap();
    assert_eq!(pins["schema_version"], "5");
    assert_eq!(pins["extraction"], "on");
    assert!(pins.keys().all(|k| !k.starts_with("extractor") && !k.starts_with("facts.")), "{pins:?}");

    // The backup is the file as it was, still schema 4.
    let backup = dir.path().join("store.db.schema-4.bak");
    let conn = rusqlite::Connection::open(&backup).unwrap();
    let version: String =
        conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, "4");
    let rounds: i64 = conn.query_row("SELECT count(*) FROM rounds", [], |r| r.get(0)).unwrap();
    assert_eq!(rounds, 6);
    drop(conn);
    assert!(std::fs::metadata(&backup).unwrap().len() > 0 && !original.is_empty());

    // It exports what it held.
    assert_eq!(m.export(ExportFormat::Markdown, "ana").unwrap(), fixture("store-v4.ana.md"));
    assert_eq!(
        common::text_before_schema_5(&m.export(ExportFormat::Text, "ana").unwrap()),
        common::text_before_schema_5(&fixture("store-v4.ana.text"))
    );
    let dump = m.export(ExportFormat::Jsonl, "ana").unwrap();
    assert_eq!(
        common::dump_before_schema_5(&dump),
        common::dump_before_schema_5(&fixture("store-v4.ana.jsonl"))
    );

    // Its facts name the extractor that made them: the one its pins held.
    let extractors = m.extractors(Some("ana".into())).unwrap();
    assert_eq!(extractors.len(), 1);
    let x = &extractors[0];
    assert_eq!(x.pins["extractor"], "scripted:demo.facts.json");
    let fact_lines: Vec<&str> = dump.lines().filter(|l| l.contains(r#""kind":"fact""#)).collect();
    assert_eq!((x.rounds, x.facts, x.current), (6, fact_lines.len(), false));
    assert!(fact_lines.len() >= 8 && fact_lines.iter().all(|l| l.contains(&x.hash)));

    // Every read path, with no model loaded.
    let context = m.get_context("Where does the user work?", "ana").unwrap();
    assert!(context.text.contains("Northwind"), "{}", context.text);
    assert_eq!(m.count("ana").unwrap().notes, 2);
    assert_eq!(m.count(mnemon::Scope::user("ana").with_agent(Some("planner"))).unwrap().notes, 2);
    assert_eq!(m.count("bo").unwrap().notes, 1);

    // A migrated store's dump imports, and the copy exports the same.
    let copy = dir.path().join("copy.db");
    Memory::builder(&copy).import(&dump).unwrap();
    let copy = Memory::builder(&copy).stored().open().unwrap();
    assert_eq!(copy.export(ExportFormat::Jsonl, "ana").unwrap(), dump);
    assert_eq!(copy.extractors(None).unwrap()[0].hash, x.hash);

    // The fixture's own (version 3) dump imports as well, naming the same extractor.
    let old = dir.path().join("old-dump.db");
    Memory::builder(&old).import(&fixture("store-v4.ana.jsonl")).unwrap();
    let old = Memory::builder(&old).stored().open().unwrap();
    assert_eq!(old.export(ExportFormat::Jsonl, "ana").unwrap(), dump);

    // Opened again: nothing left to migrate, and the backup is not made again.
    drop(m);
    std::fs::remove_file(&backup).unwrap();
    let again = Memory::builder(&path).embedder(HashingEmbedder::default()).open().unwrap();
    assert!(!backup.exists());
    assert_eq!(again.export(ExportFormat::Jsonl, "ana").unwrap(), dump);
}

/// Porto, then a move to Lisbon (superseding it), then a cat; `v2` words the move differently,
/// as a changed prompt would, and finds a second fact in the cat round.
fn scripts() -> (String, String) {
    let fact = |content: &str, raw: &str, s: &str, p: &str, o: &str| {
        serde_json::json!({
            "content": content, "raw": raw, "when": null,
            "subject": s, "predicate": p, "object": o, "salience": 1.0
        })
    };
    let porto = fact("The user lives in Porto.", "user: I live in Porto", "user", "lives in", "Porto");
    let v1 = serde_json::json!({
        "I live in Porto, near the river.": [porto],
        "Big news: I moved to Lisbon last week!": [fact("The user moved to Lisbon.", "user: I moved to Lisbon last week", "user", "moved to", "Lisbon")],
        "I have a cat named Pixel, she is three.": [fact("The user has a cat named Pixel.", "user: I have a cat named Pixel", "user", "has", "a cat")],
    });
    let v2 = serde_json::json!({
        "I live in Porto, near the river.": [porto],
        "Big news: I moved to Lisbon last week!": [fact("The user moved to Lisbon last week.", "user: I moved to Lisbon last week", "user", "lives in", "Lisbon")],
        "I have a cat named Pixel, she is three.": [
            fact("The user has a cat named Pixel.", "user: I have a cat named Pixel", "user", "has", "a cat"),
            fact("The user's cat Pixel is three years old.", "user: she is three", "Pixel", "age is", "three"),
        ],
    });
    (v1.to_string(), v2.to_string())
}

fn history() -> Vec<Message> {
    vec![
        Message::user("I live in Porto, near the river.", "2024-01-10T10:00:00").in_session("a"),
        Message::assistant("Porto is lovely.", "2024-01-10T10:00:05").in_session("a"),
        Message::user("Big news: I moved to Lisbon last week!", "2024-06-02T09:00:00").in_session("b"),
        Message::assistant("Congratulations on the move!", "2024-06-02T09:00:05").in_session("b"),
        Message::user("I have a cat named Pixel, she is three.", "2024-07-01T09:00:00").in_session("c"),
        Message::assistant("Say hi to Pixel.", "2024-07-01T09:00:05").in_session("c"),
    ]
}

#[test]
fn a_store_whose_extractor_changed_reads_and_reextract_brings_it_up_to_date() {
    let (v1, v2) = scripts();
    let (x1, x2) = (script("facts", &v1), script("facts", &v2));
    let t = temp_store();
    open_with(&t.path, Some(&x1)).add(&history(), "maya").unwrap();

    // What a store built under the new extractor from the start holds.
    let fresh = temp_store();
    let direct = open_with(&fresh.path, Some(&x2));
    direct.add(&history(), "maya").unwrap();
    let expected = direct.export(ExportFormat::Markdown, "maya").unwrap();
    assert!(
        expected.contains("three years old") && expected.contains("~~The user lives in Porto.~~"),
        "{expected}"
    );

    // Opened with the changed extractor: no refusal, the old facts are still read.
    let m = open_with(&t.path, Some(&x2));
    let infos = m.extractors(Some("maya".into())).unwrap();
    assert_eq!(infos.len(), 2);
    assert_eq!((infos[0].rounds, infos[0].facts, infos[0].current), (3, 3, false));
    assert_eq!((infos[1].rounds, infos[1].facts, infos[1].current), (0, 0, true));
    assert!(m.get_context("Where does the user live?", "maya").unwrap().text.contains("moved to Lisbon"));

    // A selection by key: the move's round, whose old fact had superseded the home (which is
    // active again until the new fact settles); an unknown key changes nothing.
    let before = m.export(ExportFormat::Jsonl, "maya").unwrap();
    let bad = ["2024-06-02T09:00:00#000000000000"];
    match m.reextract(Reextract::Rounds(&bad), Some("maya".into())) {
        Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "rounds[0]"),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.export(ExportFormat::Jsonl, "maya").unwrap(), before);
    let keys: Vec<String> = m.rounds("maya").unwrap().into_iter().map(|r| r.key).collect();
    let report = m.reextract(Reextract::Rounds(&[keys[1].as_str()]), Some("maya".into())).unwrap();
    assert_eq!((report.users, report.rounds, report.replaced, report.restored), (1, 1, 1, 1), "{report:?}");
    assert_eq!(m.extractors(Some("maya".into())).unwrap()[1].rounds, 1);

    // The stale rest: the two rounds the old extractor made.
    let report = m.reextract(Reextract::Stale, Some("maya".into())).unwrap();
    assert_eq!((report.rounds, report.replaced, report.restored), (2, 2, 0), "{report:?}");
    assert_eq!(report.extractor, infos[1].hash);
    m.consolidate("maya").unwrap();
    let infos = m.extractors(Some("maya".into())).unwrap();
    assert_eq!((infos[0].rounds, infos[0].facts), (0, 0), "nothing left from the old extractor");
    assert_eq!((infos[1].rounds, infos[1].facts), (3, 4));
    // Nothing is stale any more, and settling again changes nothing.
    assert_eq!(m.reextract(Reextract::Stale, Some("maya".into())).unwrap().rounds, 0);
    assert_eq!(m.consolidate("maya").unwrap(), mnemon::facts::ConsolidateReport::default());

    // The same facts, keys and supersessions as a store built under the new extractor.
    assert_eq!(m.export(ExportFormat::Markdown, "maya").unwrap(), expected);
    let log = m.decisions("maya").unwrap();
    let count = |kind: &str| log.iter().filter(|d| d.kind.as_str() == kind).count();
    assert_eq!((count("fact.replaced"), count("round.requeued"), count("round.extracted")), (3, 3, 6));
    let replaced = log
        .iter()
        .find(|d| d.kind == DecisionKind::FactReplaced && d.detail.contains("moved to Lisbon"))
        .unwrap();
    assert!(replaced.detail.contains(&infos[0].hash), "{replaced:?}");
    assert!(
        log.iter().any(|d| d.kind == DecisionKind::FactRestored),
        "Porto came back until Lisbon settled again"
    );

    // A dump carries both extractors and imports losslessly.
    let dump = m.export(ExportFormat::Jsonl, "maya").unwrap();
    assert_eq!(
        dump.lines().filter(|l| l.contains(r#""kind":"extractor""#)).count(),
        1,
        "only those that made records"
    );
    let copy = t.dir.path().join("copy.db");
    Memory::builder(&copy).import(&dump).unwrap();
    assert_eq!(
        Memory::builder(&copy).stored().open().unwrap().export(ExportFormat::Jsonl, "maya").unwrap(),
        dump
    );

    // Without an extractor there is nothing to re-extract with.
    let plain = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    assert!(matches!(plain.reextract(Reextract::All, None), Err(Error::NoExtractor { .. })));
}

#[test]
fn a_handle_without_an_extractor_queues_rounds_for_the_next_one_with_it() {
    let (v1, _) = scripts();
    let x = script("facts", &v1);
    let t = temp_store();
    open_with(&t.path, Some(&x)).add(&history()[..2], "maya").unwrap();
    let plain = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    plain.add(&history()[2..4], "maya").unwrap();
    assert_eq!(plain.pending(Some("maya".into())).unwrap(), 1);
    assert!(matches!(plain.flush(), Err(Error::NoExtractor { pending: 1, .. })));
    assert_eq!(plain.active_facts("maya").unwrap().len(), 1);
    drop(plain);
    let m = open_with(&t.path, Some(&x));
    m.flush().unwrap();
    assert_eq!(m.pending(None).unwrap(), 0);
    let facts = m.active_facts("maya").unwrap();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert!(facts[0].content.contains("Lisbon"), "the move superseded Porto: {facts:?}");
    // A store made without an extractor refuses one, naming the pin.
    let none = temp_store();
    Memory::builder(&none.path).embedder(HashingEmbedder::default()).open().unwrap();
    let config = Config::default();
    match Memory::builder(&none.path).embedder(HashingEmbedder::default()).extractor(x).config(config).open()
    {
        Err(Error::PinMismatch { differences }) => {
            assert_eq!(differences.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(), ["extraction"])
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn consolidate_rekeys_and_resettles_every_fact_as_the_current_rules_would() {
    let (v1, _) = scripts();
    let x = script("facts", &v1);
    let t = temp_store();
    let m = open_with(&t.path, Some(&x));
    m.add(&history(), "maya").unwrap();
    let settled = m.export(ExportFormat::Markdown, "maya").unwrap();
    assert!(settled.contains("~~The user lives in Porto.~~"), "{settled}");
    drop(m);
    // As an older lexicon would have left it: the move keyed apart from the home, so nothing
    // superseded.
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    conn.execute_batch(
        "UPDATE facts SET pair_key = 'user|relocated', supersedes = NULL WHERE content LIKE '%Lisbon%'; \
         UPDATE facts SET superseded_by = NULL, salience = initial_salience WHERE content LIKE '%Porto%';",
    )
    .unwrap();
    drop(conn);
    let m = Memory::builder(&t.path).stored().open().unwrap();
    assert_eq!(m.active_facts("maya").unwrap().len(), 3);
    let report = m.consolidate("maya").unwrap();
    assert_eq!((report.superseded, report.restored, report.rekeyed), (1, 0, 1), "{report:?}");
    assert_eq!(m.export(ExportFormat::Markdown, "maya").unwrap(), settled);
    let log = m.decisions("maya").unwrap();
    let rekeyed = log.iter().find(|d| d.kind == DecisionKind::FactRekeyed).unwrap();
    assert!(
        rekeyed.detail.contains("user|relocated") && rekeyed.detail.contains("user|lives_in"),
        "{rekeyed:?}"
    );
    assert_eq!(m.consolidate("maya").unwrap(), mnemon::facts::ConsolidateReport::default());
}

#[test]
fn deleting_a_reextracted_round_leaves_none_of_its_replaced_facts_in_the_log() {
    let (v1, _) = scripts();
    let t = temp_store();
    open_with(&t.path, Some(&script("facts", &v1))).add(&history(), "maya").unwrap();
    // An extractor that finds nothing: every fact is replaced, and the log quotes each.
    let m = open_with(&t.path, Some(&script("nothing", "{}")));
    assert_eq!(m.reextract(Reextract::All, Some("maya".into())).unwrap().replaced, 3);
    let quoted =
        |m: &Memory, what: &str| m.decisions("maya").unwrap().iter().any(|d| d.detail.contains(what));
    assert!(quoted(&m, "moved to Lisbon"));
    let lisbon = m.rounds("maya").unwrap()[1].key.clone();
    m.delete(&lisbon, "maya").unwrap();
    assert!(!quoted(&m, "Lisbon"), "{:#?}", m.decisions("maya").unwrap());
    assert!(quoted(&m, "The user lives in Porto."), "another round's replaced fact stays quoted");
}

#[test]
fn a_fact_restored_by_a_reextraction_reads_as_current_at_every_time_after_its_round() {
    let (v1, _) = scripts();
    let t = temp_store();
    open_with(&t.path, Some(&script("facts", &v1))).add(&history(), "maya").unwrap();
    // The move's round re-extracted by an extractor that finds no move in it: Porto is restored.
    let v3 = serde_json::json!({
        "I live in Porto, near the river.": [{
            "content": "The user lives in Porto.", "raw": "user: I live in Porto", "when": null,
            "subject": "user", "predicate": "lives in", "object": "Porto", "salience": 1.0
        }],
    });
    let homes = |m: &Memory, at: &str| -> Vec<String> {
        let recall = m
            .recall(mnemon::Query::new("Where does the user live?").top_k(10).as_of(ts(at)), "maya")
            .unwrap();
        recall
            .rounds
            .into_iter()
            .flat_map(|r| r.facts)
            .map(|f| f.content)
            .filter(|c| c.contains("Porto") || c.contains("Lisbon"))
            .collect()
    };
    let m = open_with(&t.path, Some(&script("facts", &v1)));
    assert_eq!(homes(&m, "2024-03-01T00:00:00"), ["The user lives in Porto."]);
    assert_eq!(homes(&m, "2024-06-30T00:00:00"), ["The user moved to Lisbon."]);
    let before = m.export_as_of(ExportFormat::Markdown, &ts("2024-03-01T00:00:00"), "maya").unwrap();

    let m = open_with(&t.path, Some(&script("v3", &v3.to_string())));
    let move_round = m.rounds("maya").unwrap()[1].key.clone();
    let report = m.reextract(Reextract::Rounds(&[move_round.as_str()]), Some("maya".into())).unwrap();
    assert_eq!((report.replaced, report.restored), (1, 1), "{report:?}");
    // What the store holds now is what every time reads: Porto, before and after the move.
    assert_eq!(homes(&m, "2024-03-01T00:00:00"), ["The user lives in Porto."]);
    assert_eq!(homes(&m, "2024-06-30T00:00:00"), ["The user lives in Porto."]);
    assert_eq!(homes(&m, "2025-01-01T00:00:00"), ["The user lives in Porto."]);
    // Before the move nothing changed but the extractor named in the export.
    let after = m.export_as_of(ExportFormat::Markdown, &ts("2024-03-01T00:00:00"), "maya").unwrap();
    let body = |md: &str| md.lines().filter(|l| !l.contains("extractor")).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&after), body(&before));
}

/// A file's schema, as SQLite describes it: every table's columns (name, type, not null,
/// default, key; in order), foreign keys and indexes, each virtual table's definition, and the
/// full-text indexes' settings (`secure-delete`).
fn schema_of(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let rows = |sql: &str| -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect()).unwrap().map(Result::unwrap).collect()
    };
    let tables: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for (name, sql) in tables {
        if sql.to_uppercase().starts_with("CREATE VIRTUAL TABLE") {
            out.push(format!("{name}: {sql}"));
            continue;
        }
        out.push(format!("{name} columns: {:?}", rows(&format!("PRAGMA table_xinfo('{name}')"))));
        out.push(format!("{name} keys: {:?}", rows(&format!("PRAGMA foreign_key_list('{name}')"))));
        for index in rows(&format!("PRAGMA index_list('{name}')")) {
            let rusqlite::types::Value::Text(index_name) = &index[1] else { panic!("{index:?}") };
            out.push(format!(
                "{name} index {index:?}: {:?}",
                rows(&format!("PRAGMA index_xinfo('{index_name}')"))
            ));
        }
        if name.ends_with("_fts_config") {
            out.push(format!("{name} rows: {:?}", rows(&format!("SELECT * FROM {name} ORDER BY k"))));
        }
    }
    out
}

#[test]
fn a_store_migrated_from_every_earlier_schema_has_the_schema_of_a_fresh_one() {
    let fresh = temp_store();
    Memory::builder(&fresh.path).embedder(HashingEmbedder::default()).open().unwrap();
    let want = schema_of(&fresh.path);
    assert!(want.len() > 40, "{want:#?}");
    for fixture in ["store-v3.db.gz", "store-v4.db.gz"] {
        let dir = tempfile::tempdir().unwrap();
        let path = unpack(dir.path(), fixture);
        assert_ne!(schema_of(&path), want, "{fixture} is of an older schema");
        drop(Memory::builder(&path).stored().open().unwrap());
        assert_eq!(schema_of(&path), want, "{fixture}, migrated");
    }
    // Schema 5 from before part records: they are added in place at the next open.
    let before_parts = temp_store();
    Memory::builder(&before_parts.path).embedder(HashingEmbedder::default()).open().unwrap();
    rusqlite::Connection::open(&before_parts.path)
        .unwrap()
        .execute_batch("DROP TABLE round_parts; DROP TABLE rounds_parted;")
        .unwrap();
    drop(Memory::builder(&before_parts.path).stored().open().unwrap());
    assert_eq!(schema_of(&before_parts.path), want, "schema 5 from before part records");
}
