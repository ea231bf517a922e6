//! Many processes on one store file (or, in a PostgreSQL run, one database schema): 4 writer
//! processes, each adding rounds for its own user, and 2 reader processes recalling and
//! rendering contexts in a loop. Every process is this
//! test binary run again in one role. Required: no process fails (0 errors; a writer that waits
//! on another's lock waits up to `Config::busy_timeout_ms`, then would fail with `Error::Busy`),
//! no write is lost, and no reader ever sees another user's round or a round missing a turn.
//!
//! `MNEMON_PROCS_ADDS` (default 100) sets the adds per writer; the full run (1,000) and its last
//! result are in docs/RELIABILITY.md.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::{Memory, Message, Query};

/// `writer <user> <adds>` or `reader <user>,<user>`, with the store's path in `MNEMON_PROCS_DB`.
const ROLE: &str = "MNEMON_PROCS_ROLE";
const DB: &str = "MNEMON_PROCS_DB";
const WRITERS: usize = 4;

fn round(user: &str, i: usize) -> Vec<Message> {
    let ts = format!("2026-{:02}-{:02}T{:02}:{:02}:00", 1 + i / 600 % 12, 1 + i / 24 % 28, i % 24, i % 60);
    vec![
        Message::user(format!("{user} round {i}: today I repotted {i} basil plants and a fern."), ts.clone()),
        Message::assistant(format!("{user} reply {i}: {i} basil plants is a lot of pesto."), ts),
    ]
}

fn open(path: &Path) -> Memory {
    common::open_at(path, Arc::new(HashingEmbedder::default()), Config::default()).unwrap()
}

/// The process roles: a child process's entry point, not a test (the tests below run it in
/// processes of their own). Without `MNEMON_PROCS_ROLE` it does nothing.
#[test]
#[ignore = "a child process's entry point, not a test"]
fn process_role() {
    let (Ok(role), Ok(db)) = (std::env::var(ROLE), std::env::var(DB)) else { return };
    let path = Path::new(&db);
    let mut out = std::io::stdout().lock();
    writeln!(out).unwrap();
    let parts: Vec<&str> = role.split(' ').collect();
    match parts.as_slice() {
        ["writer", user, adds] => {
            let m = open(path);
            for i in 0..adds.parse::<usize>().unwrap() {
                let report = m.add(&round(user, i), *user).unwrap();
                assert_eq!(report.stored.len(), 1);
            }
            writeln!(out, "wrote").unwrap();
        }
        ["reader", users] => {
            let m = open(path);
            let users: Vec<&str> = users.split(',').collect();
            let stop = path.with_extension("stop");
            let (mut reads, mut seen) = (0usize, 0usize);
            while !stop.exists() {
                for user in &users {
                    let recall = m.recall(Query::new("basil plants pesto").top_k(20), *user).unwrap();
                    for r in &recall.rounds {
                        assert_eq!(r.turns.len(), 2, "a round missing a turn");
                        let (q, a) = (&r.turns[0].content, &r.turns[1].content);
                        assert!(q.starts_with(&format!("{user} round ")), "{user} saw {q:?}");
                        let i = q.split([' ', ':']).nth(2).unwrap();
                        assert!(a.starts_with(&format!("{user} reply {i}:")), "a torn round: {q:?} / {a:?}");
                    }
                    seen += recall.rounds.len();
                    let context = m.get_context(Query::new("basil").top_k(5), *user).unwrap();
                    assert!(
                        users
                            .iter()
                            .filter(|u| *u != user)
                            .all(|u| !context.text.contains(&format!("{u} round")))
                    );
                    reads += 1;
                }
            }
            writeln!(out, "read {reads} {seen}").unwrap();
        }
        _ => panic!("unknown role {role:?}"),
    }
    out.flush().unwrap();
}

fn spawn(path: &Path, role: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["processes::process_role", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DB, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a process; returns its result line, or fails with what it said.
fn finish(child: std::process::Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("wrote") || l.starts_with("read "))
        .unwrap_or("")
        .to_owned()
}

#[test]
fn four_writer_processes_and_two_readers_on_one_store_lose_nothing_and_never_mix_users() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let adds: usize = std::env::var("MNEMON_PROCS_ADDS").map_or(100, |n| n.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    // The store exists before the processes race to open it.
    open(&path).add(&round("seed", 0), "seed").unwrap();
    let users: Vec<String> = (0..WRITERS).map(|w| format!("writer{w}")).collect();
    let readers = [
        spawn(&path, &format!("reader {},{}", users[0], users[1])),
        spawn(&path, &format!("reader {},{},seed", users[2], users[3])),
    ];
    let writers: Vec<_> = users.iter().map(|u| spawn(&path, &format!("writer {u} {adds}"))).collect();
    for (w, child) in writers.into_iter().enumerate() {
        assert_eq!(finish(child, &format!("writer {w}")), "wrote");
    }
    std::fs::write(path.with_extension("stop"), b"").unwrap();
    let mut reads = Vec::new();
    for (r, child) in readers.into_iter().enumerate() {
        let line = finish(child, &format!("reader {r}"));
        let n: Vec<usize> = line.split(' ').skip(1).map(|x| x.parse().unwrap()).collect();
        reads.push((n[0], n[1]));
    }
    let m = open(&path);
    for user in &users {
        assert_eq!(m.rounds(user.as_str()).unwrap().len(), adds, "{user}: a lost write");
        let stored = m
            .decisions(user.as_str())
            .unwrap()
            .iter()
            .filter(|d| d.kind == DecisionKind::RoundStored)
            .count();
        assert_eq!(stored, adds);
    }
    if common::on_postgres() {
        let rounds = common::count(&path, "SELECT count(*) FROM rounds");
        assert_eq!(
            common::count(&path, "SELECT count(*) FROM round_vectors"),
            rounds,
            "a round without its vector"
        );
    } else {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(integrity, "ok");
    }
    eprintln!(
        "processes: {WRITERS} writers x {adds} adds, 0 errors, 0 lost; \
         2 readers: {} recalls+contexts, {} rounds checked, 0 of another user, 0 torn",
        reads.iter().map(|r| r.0).sum::<usize>(),
        reads.iter().map(|r| r.1).sum::<usize>()
    );
}
