//! Bad references and faults on a PostgreSQL store: each a clear error, nothing half-written.

use crate::common;

use std::sync::Arc;

use mnemon::embed::{Embedder, HashingEmbedder};
use mnemon::export::ExportFormat;
use mnemon::{Error, Memory, Message};
use mnemon_postgres::PgBackend;

fn hashing() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::default())
}

fn open(url: &str) -> mnemon::Result<Memory> {
    Memory::builder(Arc::new(PgBackend::new(url)?)).embedder(hashing()).open()
}

#[test]
fn an_unreachable_server_is_a_clear_error_naming_it_without_its_password() {
    let err = open("postgres://ann:secret@127.0.0.1:1/nowhere").err().expect("an error");
    let text = err.to_string();
    assert!(text.contains("cannot connect to postgres://ann@127.0.0.1:1/nowhere"), "{text}");
    assert!(!text.contains("secret"), "{text}");
    let err = PgBackend::new("postgres://ann@host:notaport/db").unwrap_err();
    assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "db"), "{err}");
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let url = common::fresh_db("foreign");
    let mut db = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    db.batch_execute("CREATE TABLE meta(name text, data bytea); INSERT INTO meta VALUES ('v', '\\x00');")
        .unwrap();
    let snapshot = |db: &mut postgres::Client| -> Vec<String> {
        db.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' \
             UNION ALL SELECT name || '=' || encode(data, 'hex') FROM meta ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let before = snapshot(&mut db);
    for opened in [Memory::builder(Arc::new(PgBackend::new(&url).unwrap())).stored().open(), open(&url)] {
        match opened {
            Err(Error::NotAStore { reason, .. }) => assert!(!reason.contains("column"), "{reason}"),
            Err(e) => panic!("expected not a store, got {e}"),
            Ok(_) => panic!("expected not a store, got a store"),
        }
        assert_eq!(snapshot(&mut db), before);
    }
    drop(db);
    common::drop_db(&url);
}

#[test]
fn a_database_that_is_not_a_store_or_of_another_schema_or_configuration_is_refused() {
    let url = common::fresh_db("refused");
    // Opened to read only, an empty database is not a store, and stays empty.
    let err =
        Memory::builder(Arc::new(PgBackend::new(&url).unwrap())).stored().open().err().expect("an error");
    assert!(
        matches!(err, Error::NotAStore { ref reason, .. } if reason.contains("without mnemon's tables")),
        "{err}"
    );
    let mut db = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let tables: i64 =
        db.query_one("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", &[]).unwrap().get(0);
    assert_eq!(tables, 0);

    let m = open(&url).unwrap();
    m.add(&[Message::user("I keep bees.", "2026-01-01T10:00:00")], "u").unwrap();
    drop(m);
    // Another embedder: every differing pin named.
    let other = Memory::builder(Arc::new(PgBackend::new(&url).unwrap()))
        .embedder(HashingEmbedder::new(64).unwrap())
        .open();
    match other {
        Err(Error::PinMismatch { differences }) => {
            assert!(differences.iter().any(|d| d.key == "embedder.dim"), "{differences:?}")
        }
        Err(e) => panic!("expected a pin mismatch, got {e}"),
        Ok(_) => panic!("expected a pin mismatch, got a store"),
    }
    // A schema of another version.
    for version in ["4", "6"] {
        db.execute("UPDATE meta SET value = $1 WHERE key = 'schema_version'", &[&version]).unwrap();
        match open(&url) {
            Err(Error::UnsupportedSchema { found, supported: 5 }) => assert_eq!(found, version),
            Err(e) => panic!("expected an unsupported schema, got {e}"),
            Ok(_) => panic!("expected an unsupported schema, got a store"),
        }
    }
    db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'", &[]).unwrap();
    assert_eq!(open(&url).unwrap().rounds("u").unwrap().len(), 1);
    drop(db);
    common::drop_db(&url);
}

#[test]
fn a_database_without_the_vector_extension_that_the_role_cannot_create_is_refused_and_left_as_it_was() {
    let url = common::fresh_db("novector");
    let db = url.rsplit_once('/').unwrap().1.to_owned();
    let mut admin = common::admin();
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS mnemon_plain; CREATE ROLE mnemon_plain LOGIN; \
             REVOKE CREATE ON DATABASE {db} FROM PUBLIC; GRANT CONNECT ON DATABASE {db} TO mnemon_plain"
        ))
        .unwrap();
    let plain = url.replacen("postgres@", "mnemon_plain@", 1);
    let err = open(&plain).err().expect("an error");
    let text = err.to_string();
    assert!(text.contains("no `vector` extension") && text.contains("CREATE EXTENSION vector"), "{text}");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let tables: i64 =
        c.query_one("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", &[]).unwrap().get(0);
    assert_eq!(tables, 0, "nothing was created");
    // Once the owner creates the extension (and lets the role create tables), the same role
    // creates the store.
    c.batch_execute("CREATE EXTENSION vector; GRANT CREATE ON SCHEMA public TO mnemon_plain").unwrap();
    drop(c);
    let m = open(&plain).unwrap();
    m.add(&[Message::user("I keep bees.", "2026-01-01T10:00:00")], "u").unwrap();
    assert_eq!(m.rounds("u").unwrap().len(), 1);
    drop(m);
    common::drop_db(&url);
    let _ = admin.batch_execute("DROP ROLE IF EXISTS mnemon_plain");
}

#[test]
fn a_connection_dropped_in_the_middle_of_a_write_loses_that_write_only_and_the_next_call_reconnects() {
    let url = common::fresh_db("dropped");
    let m = open(&url).unwrap();
    m.add(&[Message::user("Kept: I live in Porto.", "2026-01-01T10:00:00")], "u").unwrap();
    let before = m.export(ExportFormat::Jsonl, "u").unwrap();
    // A round holding SLOW makes the insert wait inside the write transaction.
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.text LIKE '%SLOW%' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON rounds FOR EACH ROW EXECUTE FUNCTION slow();",
        )
        .unwrap();
    let killer = std::thread::spawn(move || {
        // Wait until the write sleeps in the trigger, then end its session: only in this test's
        // database, as the other tests write beside it on the same server. (An add writes its
        // rounds in one statement that begins with the lists it inserts.)
        for _ in 0..300 {
            let n: i64 = admin
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND application_name = 'mnemon' \
                     AND query LIKE '%INSERT INTO rounds(%' AND state = 'active'",
                    &[],
                )
                .unwrap()
                .get(0);
            if n > 0 {
                return n;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        0
    });
    let ts = "2026-01-02T10:00:00";
    let err = m
        .add(&[Message::user("First of two.", ts), Message::user("SLOW: second of two.", ts)], "u")
        .unwrap_err();
    assert_eq!(killer.join().unwrap(), 1, "the writing session was terminated");
    assert!(matches!(err, Error::Database(_)), "{err}");
    // Nothing of the lost call was written; the next call reconnects and writes.
    assert_eq!(m.export(ExportFormat::Jsonl, "u").unwrap(), before);
    m.add(&[Message::user("After the drop: I moved to Lisbon.", "2026-01-03T10:00:00")], "u").unwrap();
    let rounds = m.rounds("u").unwrap();
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(m.recall("moved to Lisbon", "u").unwrap().rounds[0].turns[0].content.contains("Lisbon"));
    drop(m);
    common::drop_db(&url);
}
