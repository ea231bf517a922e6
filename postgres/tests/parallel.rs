//! Several processes on one database: writes for different users run side by side, writes for
//! one user wait for each other, and extraction is claimed per user, so two handles extract
//! different users' rounds at the same time and no round twice.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemon::config::Config;
use mnemon::embed::HashingEmbedder;
use mnemon::extract::{Extraction, Extractor, ExtractorPins};
use mnemon::internals::backend::{Backend, Connection};
use mnemon::rounds::{Role, Turn};
use mnemon::{Error, Memory, Message, Scope};
use mnemon_postgres::PgBackend;

/// A connection whose lock waits give up after `ms` (as `Error::Busy`).
fn impatient(backend: &PgBackend, ms: u32) -> Box<dyn Connection> {
    let c = backend.connect().unwrap();
    c.batch(&format!("SET lock_timeout = '{ms}ms'")).unwrap();
    c
}

#[test]
fn writes_for_different_users_run_side_by_side_and_writes_for_one_user_wait() {
    let url = common::fresh_db("user_locks");
    let backend = PgBackend::new(&url).unwrap();
    let alice = backend.connect().unwrap();
    let other = impatient(&backend, 300);

    alice.begin_user_write(&["alice"]).unwrap();
    // Another user's write goes on beside alice's.
    other.begin_user_write(&["bob"]).unwrap();
    other.commit().unwrap();
    // A write that includes alice waits for hers, as does a write on the whole store.
    assert!(matches!(other.begin_user_write(&["carol", "alice"]), Err(Error::Busy)));
    assert!(matches!(other.begin_write(), Err(Error::Busy)));
    // The failed begin left the connection usable.
    other.begin_user_write(&["carol"]).unwrap();
    other.rollback().unwrap();
    alice.commit().unwrap();
    other.begin_user_write(&["alice"]).unwrap();
    other.commit().unwrap();

    // A write on the whole store keeps every user's out.
    let whole = backend.connect().unwrap();
    whole.begin_write().unwrap();
    assert!(matches!(other.begin_user_write(&["dave"]), Err(Error::Busy)));
    whole.commit().unwrap();
    other.begin_user_write(&["dave"]).unwrap();
    other.commit().unwrap();
    drop((alice, other, whole));
    common::drop_db(&url);
}

#[test]
fn a_claim_is_one_holders_until_released_or_its_connection_ends() {
    let url = common::fresh_db("claims");
    let backend = PgBackend::new(&url).unwrap();
    let mut a = backend.extraction_claims().unwrap();
    let mut b = backend.extraction_claims().unwrap();
    assert!(a.try_claim(1).unwrap());
    assert!(!b.try_claim(1).unwrap());
    assert!(b.try_claim(2).unwrap());
    a.release(1).unwrap();
    assert!(b.try_claim(1).unwrap());
    drop(b);
    // The server ends the dropped session's locks as it notices the disconnect.
    for user in [1, 2] {
        // Each claimed once: a session's advisory locks count, and each claim needs its release.
        let mut looks = 0;
        while !a.try_claim(user).unwrap() {
            looks += 1;
            assert!(looks < 500, "a closed connection's claims were never released");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // A claims connection the server ends while it holds no claim is replaced at the next claim.
    a.release(1).unwrap();
    a.release(2).unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .unwrap();
    assert!(a.try_claim(3).unwrap());
    drop((a, admin));
    common::drop_db(&url);
}

/// States the user's turn as a fact, and records every round it is given. Its first call waits
/// (up to a minute) until a second call runs beside it, and `met` says whether one did: two
/// holders extracted at the same time.
#[derive(Default)]
struct Rendezvous {
    seen: Mutex<Vec<String>>,
    running: AtomicUsize,
    met: AtomicBool,
}

fn pins() -> ExtractorPins {
    ExtractorPins {
        name: "parallel-test rendezvous".into(),
        model_blake3: "0".repeat(64),
        quant: "none".into(),
        runtime: "test".into(),
        decode: "the user turn".into(),
        prompt: "none".into(),
    }
}

/// The same extractor, failing every round: its rounds stay queued.
struct Refusing;

impl Extractor for Refusing {
    fn pins(&self) -> ExtractorPins {
        pins()
    }

    fn extract(&self, _turns: &[Turn]) -> mnemon::Result<Extraction> {
        Err(Error::Extractor("not now".into()))
    }
}

impl Extractor for Rendezvous {
    fn pins(&self) -> ExtractorPins {
        pins()
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        let said = turns.iter().find(|t| t.role == Role::User).map(|t| t.content.clone()).unwrap_or_default();
        let first = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(said.clone());
            seen.len() == 1
        };
        if self.running.fetch_add(1, Ordering::SeqCst) >= 1 {
            self.met.store(true, Ordering::SeqCst);
        }
        for _ in 0..if first { 12_000 } else { 0 } {
            if self.met.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        let facts = serde_json::json!([{
            "content": said, "raw": format!("user: {said}"),
            "when": null, "subject": null, "predicate": null, "object": null, "salience": 1.0
        }]);
        Ok(Extraction::from_output(facts.to_string(), false, 10, 5))
    }
}

/// What each user said on days 1, 2 and 3 (each naming something, so the pre-filter passes it).
const DAYS: [&str; 3] = [
    "planted tomatoes in the Estrela garden",
    "adopted a grey cat named Miso",
    "started a job at the Lisbon bakery",
];

#[test]
fn two_handles_extract_different_users_at_once_and_no_round_twice() {
    let url = common::fresh_db("claimed_extraction");
    let backend = Arc::new(PgBackend::new(&url).unwrap());
    let config = Config { queue_poll_ms: None, ..Config::default() };
    let embedder = || Arc::new(HashingEmbedder::default());
    let users = ["ann", "ben", "cai", "dee"];
    let mut said = Vec::new();
    {
        // Rounds queued by a handle whose extractor fails them all.
        let writer = Memory::builder(backend.clone())
            .embedder(embedder())
            .extractor(Arc::new(Refusing))
            .config(config.clone())
            .open()
            .unwrap();
        for user in users {
            for (day, what) in (1..).zip(DAYS) {
                let text = format!("{user} {what}");
                writer.add(&[Message::user(&text, format!("2026-03-0{day}T10:00:00"))], user).unwrap();
                said.push(text);
            }
        }
        assert_eq!(writer.pending(None).unwrap(), 12);
    }
    let extractor = Arc::new(Rendezvous::default());
    let open = || {
        Memory::builder(backend.clone())
            .embedder(embedder())
            .extractor(extractor.clone())
            .config(config.clone())
            .open()
            .unwrap()
    };
    let (a, b) = (open(), open());
    std::thread::scope(|s| {
        let a = s.spawn(|| a.flush());
        let b = s.spawn(|| b.flush());
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    assert!(extractor.met.load(Ordering::SeqCst), "the two handles never extracted at the same time");
    let mut seen = extractor.seen.lock().unwrap().clone();
    seen.sort();
    said.sort();
    assert_eq!(seen, said, "every round extracted exactly once");
    assert_eq!(a.pending(None).unwrap(), 0);
    for user in users {
        // One fact per round, settled in round order.
        let facts: Vec<String> =
            a.active_facts(Scope::user(user)).unwrap().into_iter().map(|f| f.content).collect();
        let expected: Vec<String> = DAYS.iter().map(|what| format!("{user} {what}")).collect();
        assert_eq!(facts, expected);
    }
    drop((a, b));
    common::drop_db(&url);
}

#[test]
fn stores_in_schemas_of_one_database_are_apart_and_lock_apart() {
    let url = common::fresh_db("schemas");
    let open = |schema: &str| {
        let backend = PgBackend::new(&url).unwrap().schema(schema).unwrap();
        assert!(backend.location().ends_with(&format!("?schema={schema}")));
        Memory::builder(Arc::new(backend)).embedder(HashingEmbedder::default()).open().unwrap()
    };
    let (ann, ben) = (open("project_ann"), open("project_ben"));
    ann.add(&[Message::user("I keep bees on the roof in Porto.", "2026-03-01T10:00:00")], "u").unwrap();
    assert_eq!(ann.rounds("u").unwrap().len(), 1);
    assert!(ben.rounds("u").unwrap().is_empty(), "a store saw another schema's rounds");
    // One user's write in one store does not hold up the same user's in the other.
    let (in_ann, in_ben) = (
        PgBackend::new(&url).unwrap().schema("project_ann").unwrap().connect().unwrap(),
        impatient(&PgBackend::new(&url).unwrap().schema("project_ben").unwrap(), 300),
    );
    in_ann.begin_user_write(&["u"]).unwrap();
    in_ben.begin_user_write(&["u"]).unwrap();
    in_ben.commit().unwrap();
    in_ann.commit().unwrap();
    for bad in ["", "Project", "pg_x", "1x", "a;drop", &"x".repeat(64)] {
        let e = PgBackend::new(&url).unwrap().schema(bad).unwrap_err();
        assert!(matches!(&e, Error::InvalidInput { field, .. } if field == "schema"), "{bad:?}: {e}");
    }
    drop((ann, ben, in_ann, in_ben));
    common::drop_db(&url);
}
