//! The engine under concurrent use: reads on their own connections and snapshots (never queued
//! behind a write), views evicted past their byte budget and loaded again with the same results,
//! readers and writers on many threads with no error and no other user's record, and
//! concurrent notes sharing commits without one failing call undoing another.

use std::sync::Arc;

use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::notes::{NewNote, Search};
use mnemon::records::Record;
use mnemon::{Memory, Message, Query};

fn round(i: usize, user: &str) -> Vec<Message> {
    let ts = format!("2026-01-{:02}T10:{:02}:00", 1 + i % 28, i % 60);
    vec![
        Message::user(format!("{user} note {i}: I planted {i} tulips in the garden."), ts.clone()),
        Message::assistant(format!("Lovely, {i} tulips!"), ts),
    ]
}

#[test]
fn a_read_does_not_wait_for_a_write_that_waits_for_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let config = Config { busy_timeout_ms: 20_000, ..Config::default() };
    let memory =
        Arc::new(Memory::builder(&path).embedder(HashingEmbedder::default()).config(config).open().unwrap());
    memory.add(&round(1, "ana"), "ana").unwrap();
    // Another process holds the write lock: this process's next write waits for it.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let writer = {
        let memory = Arc::clone(&memory);
        std::thread::spawn(move || memory.add(&round(2, "ana"), "ana"))
    };
    // Give the writer time to take the write connection and wait on the lock.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let recall = memory.recall(Query::new("how many tulips?"), "ana").unwrap();
    assert_eq!(recall.rounds.len(), 1, "the read answered from its snapshot");
    assert!(!writer.is_finished(), "the write is still waiting: the read did not queue behind it");
    other.execute_batch("ROLLBACK").unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(
        memory.recall(Query::new("how many tulips?"), "ana").unwrap().rounds.len(),
        2,
        "no stale read"
    );
}

#[test]
fn views_evicted_past_their_budget_give_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let roomy = Memory::builder(dir.path().join("a.db")).embedder(HashingEmbedder::default()).open().unwrap();
    let tight_config = Config { view_cache_bytes: 1, ..Config::default() };
    let tight = Memory::builder(dir.path().join("b.db"))
        .embedder(HashingEmbedder::default())
        .config(tight_config)
        .open()
        .unwrap();
    let users = ["ana", "bo", "cy"];
    for (i, user) in users.iter().enumerate() {
        for j in 0..20 {
            roomy.add(&round(i * 100 + j, user), *user).unwrap();
            tight.add(&round(i * 100 + j, user), *user).unwrap();
        }
    }
    // Round-robin over the users: with a one-byte budget every read evicts the others.
    for pass in 0..3 {
        for user in users {
            let q = Query::new("tulips in the garden").top_k(5);
            let a = roomy.recall(q.clone(), user).unwrap();
            let b = tight.recall(q.clone(), user).unwrap();
            let keys =
                |r: &mnemon::rounds::Recall| r.rounds.iter().map(|x| x.key.clone()).collect::<Vec<_>>();
            assert_eq!(keys(&a), keys(&b), "pass {pass}, {user}");
            assert!(b.rounds.iter().all(|r| r.turns[0].content.starts_with(user)));
        }
    }
}

#[test]
fn many_readers_and_writers_on_threads() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(
        Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open().unwrap(),
    );
    let users = ["ana", "bo", "cy", "di"];
    let mut handles = Vec::new();
    for (w, user) in users.iter().enumerate() {
        let memory = Arc::clone(&memory);
        let user = user.to_string();
        handles.push(std::thread::spawn(move || {
            for i in 0..50 {
                memory.add(&round(w * 1000 + i, &user), user.as_str()).unwrap();
            }
        }));
    }
    for r in 0..4 {
        let memory = Arc::clone(&memory);
        let user = users[r % users.len()].to_string();
        handles.push(std::thread::spawn(move || {
            for _ in 0..100 {
                let recall = memory.recall(Query::new("tulips").top_k(10), user.as_str()).unwrap();
                for round in &recall.rounds {
                    assert!(
                        round.turns[0].content.starts_with(&user),
                        "{user} saw {:?}",
                        round.turns[0].content
                    );
                    assert_eq!(round.turns.len(), 2, "a round is never half-written");
                }
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    for user in users {
        assert_eq!(memory.rounds(user).unwrap().len(), 50, "{user}: no lost write");
        assert_eq!(memory.recall(Query::new("tulips").top_k(100), user).unwrap().rounds.len(), 50);
    }
}

/// A trigger in the file that refuses any note containing "poison": a real failure inside the
/// write, after validation and embedding.
fn poison(path: &std::path::Path) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON notes WHEN NEW.content LIKE '%poison%' \
             BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
        )
        .unwrap();
}

#[test]
fn calls_queued_behind_a_write_share_one_commit_and_a_failing_one_undoes_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let config = Config { busy_timeout_ms: 20_000, ..Config::default() };
    let memory =
        Arc::new(Memory::builder(&path).embedder(HashingEmbedder::default()).config(config).open().unwrap());
    memory.remember(&[NewNote::new("First of all.", "2026-01-01")], "ana").unwrap();
    poison(&path);
    // Another process holds the write lock: the first call waits on it holding the write
    // connection, and the calls after it queue, to be written together once it is through.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let call = |content: &'static str, user: &'static str| {
        let memory = Arc::clone(&memory);
        std::thread::spawn(move || memory.remember(&[NewNote::new(content, "2026-01-02")], user))
    };
    let first = call("The first waits on the lock.", "ana");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let queued = [
        call("Ana likes green tea.", "ana"),
        call("This one is poison.", "ana"),
        call("Bo likes black coffee.", "bo"),
        call("Ana also likes oolong.", "ana"),
    ];
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!first.is_finished() && queued.iter().all(|q| !q.is_finished()), "all wait on the lock");
    other.execute_batch("ROLLBACK").unwrap();
    first.join().unwrap().unwrap();
    let outcomes: Vec<_> = queued.into_iter().map(|q| q.join().unwrap()).collect();
    assert!(matches!(&outcomes[1], Err(mnemon::Error::Sqlite(e)) if e.to_string().contains("poisoned")));
    for (i, outcome) in outcomes.iter().enumerate().filter(|(i, _)| *i != 1) {
        let key = &outcome.as_ref().unwrap().notes[0].key;
        let user = if i == 2 { "bo" } else { "ana" };
        assert!(matches!(memory.get(key, user), Ok(Record::Note(_))), "call {i} was stored");
    }
    assert_eq!(memory.count("ana").unwrap().notes, 4, "three for ana, the poisoned one gone");
    assert_eq!(memory.count("bo").unwrap().notes, 1);
    let hits = memory.search(&Search::new("poison"), "ana").unwrap().hits;
    assert!(hits.iter().all(|h| !h.note.content.contains("poison")));
    let logged = memory.decisions("ana").unwrap();
    assert_eq!(
        logged.iter().filter(|d| d.kind == DecisionKind::NoteStored).count(),
        4,
        "nothing logged for the failed call"
    );
}

#[test]
fn concurrent_notes_are_each_visible_when_their_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let memory = Arc::new(Memory::builder(&path).embedder(HashingEmbedder::default()).open().unwrap());
    memory.remember(&[NewNote::new("Seed.", "2026-01-01")], "ana").unwrap();
    poison(&path);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let memory = Arc::clone(&memory);
            std::thread::spawn(move || {
                let mut stored = 0;
                for i in 0..40 {
                    let user = ["ana", "bo"][(t + i) % 2];
                    let bad = i % 7 == 3;
                    let content = format!("thread{t} item{i} {}", if bad { "poison" } else { "fine" });
                    let outcome = memory.remember(&[NewNote::new(content.clone(), "2026-01-02")], user);
                    if bad {
                        assert!(outcome.is_err(), "{content}");
                        continue;
                    }
                    let key = outcome.unwrap().notes[0].key.clone();
                    stored += 1;
                    // The views grew before the call returned: a search right after finds it.
                    let hits = memory.search(&Search::new(&content).limit(5), user).unwrap().hits;
                    assert_eq!(hits.first().map(|h| &h.note.key), Some(&key), "{content}");
                }
                stored
            })
        })
        .collect();
    let stored: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let counted = memory.count("ana").unwrap().notes + memory.count("bo").unwrap().notes;
    assert_eq!(counted, stored + 1, "every acknowledged note, and no failed one");
}

#[test]
fn reads_racing_another_handles_forget_and_rewrites_never_see_a_half_forgotten_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    // Two handles on one file: two connections and two sets of views, as two processes have.
    let writer = Memory::builder(&path).embedder(HashingEmbedder::default()).open().unwrap();
    let reader = Arc::new(Memory::builder(&path).embedder(HashingEmbedder::default()).open().unwrap());
    for i in 0..20 {
        writer.add(&round(i, "ana"), "ana").unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (reader, stop) = (Arc::clone(&reader), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut reads = 0usize;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let recall = reader.recall(Query::new("tulips").top_k(100), "ana").unwrap();
                    // Either the user as one of the writer's commits left it, or no user.
                    assert!(matches!(recall.rounds.len(), 0 | 10 | 20), "{} rounds", recall.rounds.len());
                    let context = reader.get_context("tulips", "ana").unwrap();
                    assert!(context.rounds.len() <= 20);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for cycle in 0..30 {
        writer.forget_user("ana").unwrap();
        for i in 0..20 {
            if i % 10 == 0 {
                let batch: Vec<Message> = (i..i + 10).flat_map(|j| round(cycle * 100 + j, "ana")).collect();
                writer.add(&batch, "ana").unwrap();
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let reads: usize = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(reads > 0);
    assert_eq!(reader.rounds("ana").unwrap().len(), 20);
}
