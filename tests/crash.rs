//! The crash test: a writer process ingests a real conversation (the first LoCoMo dev
//! conversation, about 210 rounds) one round per `add`, with a background extractor so that the
//! extraction queue is always in use, and prints `ack N` only after `add` returned. The harness
//! kills it with SIGKILL at a seeded pseudo-random moment, again and again on the same store.
//! After every kill the file passes `PRAGMA integrity_check`, every acknowledged round is there,
//! no record is half-written (every round has its vector and its word-index row, every queue
//! entry and fact its round), and the next writer resumes the queue. At the end an uninterrupted
//! writer finishes the conversation, and the store's exports equal, byte for byte, those of one
//! uninterrupted run.
//!
//! `MNEMON_CRASH_KILLS` (default 10) and `MNEMON_CRASH_SEED` (default 1) set the run;
//! `MNEMON_CRASH_EXTRACTOR=smollm` extracts with the real SmolLM2-135M GGUF through llama.cpp
//! instead of the quoting double. The full runs and their last results are in
//! docs/RELIABILITY.md.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::extract::{Extraction, Extractor, ExtractorPins};
use mnemon::rounds::{Role, Turn};
use mnemon::{Memory, Message};

/// Set (to the store's path) only in the writer process.
const WRITER: &str = "MNEMON_CRASH_WRITER";
const USER: &str = "caroline";

/// The first LoCoMo dev conversation as rounds: each first speaker's turn with the reply after it.
fn rounds() -> Vec<Vec<Message>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/locomo.dev.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let data: serde_json::Value = serde_json::from_str(&text).unwrap();
    let conv = &data[0]["conversation"];
    let first = conv["speaker_a"].as_str().unwrap();
    let mut out: Vec<Vec<Message>> = Vec::new();
    for n in 1.. {
        let Some(turns) = conv[format!("session_{n}")].as_array() else { break };
        let ts = conv[format!("session_{n}_date_time")].as_str().unwrap();
        for t in turns {
            let speaker = t["speaker"].as_str().unwrap();
            let text = t["text"].as_str().unwrap();
            let role = if speaker == first { Role::User } else { Role::Assistant };
            let mut m = match role {
                Role::User => Message::user(text, ts),
                Role::Assistant => Message::assistant(text, ts),
            }
            .in_session(format!("session_{n}"));
            m.speaker = Some(speaker.to_owned());
            // One round per add: a reply joins the turn before it only inside its session.
            match out.last_mut() {
                Some(round)
                    if role == Role::Assistant
                        && round.len() == 1
                        && round[0].role == Role::User
                        && round[0].session == m.session =>
                {
                    round.push(m)
                }
                _ => out.push(vec![m]),
            }
        }
    }
    out
}

/// An extractor that takes a few milliseconds per round (so that rounds wait in the queue when
/// the writer is killed) and states what the user's turn begins with, quoting it: facts that
/// pass verification and go through dedup like a model's.
struct Quoting;

impl Extractor for Quoting {
    fn pins(&self) -> ExtractorPins {
        ExtractorPins {
            name: "crash-test quoting".into(),
            model_blake3: "0".repeat(64),
            quant: "none".into(),
            runtime: "test".into(),
            decode: "first words of the user turn".into(),
            prompt: "none".into(),
        }
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        std::thread::sleep(std::time::Duration::from_millis(4));
        let facts = match turns.iter().find(|t| t.role == Role::User) {
            Some(user) => {
                let quote = user.content.split_whitespace().take(10).collect::<Vec<_>>().join(" ");
                serde_json::json!([{
                    "content": format!("The user said {quote}"), "raw": format!("user: {quote}"),
                    "when": null, "subject": null, "predicate": null, "object": null, "salience": 1.0
                }])
            }
            None => serde_json::json!([]),
        };
        Ok(Extraction::from_output(facts.to_string(), false, 10, 5))
    }
}

/// The extractor of this run: the quoting double, or the real SmolLM2 GGUF.
fn extractor() -> Arc<dyn Extractor> {
    match std::env::var("MNEMON_CRASH_EXTRACTOR").as_deref() {
        #[cfg(feature = "llama")]
        Ok("smollm") => {
            use mnemon::extract::{Contract, LlamaConfig, LlamaExtractor, default_gguf};
            let config = LlamaConfig {
                threads: 2,
                max_tokens: 160,
                contract: Contract::Open,
                ..LlamaConfig::default()
            };
            Arc::new(LlamaExtractor::load(default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf"), config).unwrap())
        }
        Ok(other) => panic!("MNEMON_CRASH_EXTRACTOR={other}: only smollm (with the llama feature)"),
        Err(_) => Arc::new(Quoting),
    }
}

fn open(path: &Path) -> Memory {
    Memory::builder(path).embedder(HashingEmbedder::default()).extractor(extractor()).open().unwrap()
}

/// Rounds the store has decided on (stored or skipped as a duplicate): where a writer resumes.
fn processed(m: &Memory) -> usize {
    m.decisions(USER)
        .unwrap()
        .iter()
        .filter(|d| d.kind == DecisionKind::RoundStored || d.kind == DecisionKind::RoundDuplicate)
        .count()
}

/// The writer process: ingests the rest of the conversation, one acknowledged round at a time.
/// A child process's entry point, not a test: the harness runs it in a process of its own.
#[test]
#[ignore = "a child process's entry point (run by the test beside it), not a test"]
fn crash_writer() {
    let Ok(path) = std::env::var(WRITER) else { return };
    let m = open(Path::new(&path));
    let rounds = rounds();
    let start = processed(&m);
    let mut out = std::io::stdout().lock();
    // The test harness has printed `test crash::crash_writer ... ` without a line break: end its line.
    writeln!(out).unwrap();
    for (i, round) in rounds.iter().enumerate().skip(start) {
        m.add(round, USER).unwrap();
        writeln!(out, "ack {i}").unwrap();
        out.flush().unwrap();
    }
    m.flush().unwrap();
    writeln!(out, "done").unwrap();
    out.flush().unwrap();
}

/// xorshift64*: the seeded pseudo-random kill moments.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

type Lines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// Starts a writer; returns it with its stdout as lines.
fn writer(path: &Path, stderr: Stdio) -> (std::process::Child, Lines) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash::crash_writer", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(WRITER, path)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

fn ack(line: &str) -> Option<usize> {
    line.strip_prefix("ack ").map(|n| n.parse().unwrap())
}

/// What must hold after any kill. Returns the rounds decided on and the rounds still queued.
fn check(path: &Path, acknowledged: usize) -> (usize, usize) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    // Killed before the schema's transaction committed: an empty file, and nothing acknowledged.
    if count("SELECT count(*) FROM sqlite_master WHERE name = 'rounds'") == 0 {
        assert_eq!((acknowledged, count("SELECT count(*) FROM sqlite_master")), (0, 0));
        return (0, 0);
    }
    let rounds = count("SELECT count(*) FROM rounds");
    assert_eq!(count("SELECT count(*) FROM round_vectors_rowids"), rounds, "a round without its vector");
    assert_eq!(count("SELECT count(*) FROM round_fts_docsize"), rounds, "a round without its words");
    assert_eq!(count("SELECT count(*) FROM extract_queue WHERE round_id NOT IN (SELECT id FROM rounds)"), 0);
    assert_eq!(count("SELECT count(*) FROM facts WHERE round_id NOT IN (SELECT id FROM rounds)"), 0);
    assert_eq!(count("SELECT count(*) FROM fact_vectors_rowids"), count("SELECT count(*) FROM facts"));
    drop(conn);
    let m = Memory::builder(path).stored().open().unwrap();
    let decided = processed(&m);
    assert!(decided >= acknowledged, "{acknowledged} acknowledged, {decided} in the store");
    for r in m.rounds(USER).unwrap() {
        assert!(!r.turns.is_empty() && r.turns.len() <= 2);
    }
    (decided, m.pending(None).unwrap())
}

#[test]
fn a_writer_killed_at_random_moments_loses_nothing_and_ends_where_an_uninterrupted_run_does() {
    if std::env::var(WRITER).is_ok() {
        return;
    }
    let kills: usize = std::env::var("MNEMON_CRASH_KILLS").map_or(10, |k| k.parse().unwrap());
    let seed: u64 = std::env::var("MNEMON_CRASH_SEED").map_or(1, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let total = rounds().len();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut acknowledged, mut survived, mut queued) = (0usize, 0usize, 0usize);
    for _ in 0..kills {
        let (mut child, mut lines) = writer(&path, Stdio::null());
        // Kill after a few acknowledgements and a few milliseconds more: inside an add, a
        // commit, the worker's extraction or the open itself.
        let wait_acks = rng.below(6);
        let extra = std::time::Duration::from_micros(rng.below(15_000));
        let mut seen = 0;
        while seen < wait_acks {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(i) = ack(&line) {
                        acknowledged = acknowledged.max(i + 1);
                        seen += 1;
                    } else if line == "done" {
                        break;
                    }
                }
                _ => break,
            }
        }
        std::thread::sleep(extra);
        child.kill().unwrap();
        child.wait().unwrap();
        // Acknowledgements printed before the kill count too.
        for line in lines.map_while(Result::ok) {
            if let Some(i) = ack(&line) {
                acknowledged = acknowledged.max(i + 1);
            }
        }
        let (decided, waiting) = check(&path, acknowledged);
        assert!(decided <= total);
        queued += waiting;
        survived += 1;
    }
    // An uninterrupted writer finishes the conversation and drains the queue.
    let (mut child, lines) = writer(&path, Stdio::piped());
    // Read to the end: a closed pipe would fail the writer's last lines.
    let finished = lines.map_while(Result::ok).filter(|l| l == "done").count() == 1;
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success() && finished, "the last writer failed ({status}, done: {finished}):\n{said}");
    assert_eq!(check(&path, total), (total, 0));
    let crashed = Memory::builder(&path).stored().open().unwrap();

    let reference = open(&dir.path().join("reference.db"));
    for round in rounds() {
        reference.add(&round, USER).unwrap();
    }
    reference.flush().unwrap();
    for format in [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl] {
        let (a, b) = (crashed.export(format, USER).unwrap(), reference.export(format, USER).unwrap());
        if a != b {
            let keep = std::env::temp_dir().join("mnemon-crash");
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::write(keep.join("crashed.txt"), &a).unwrap();
            std::fs::write(keep.join("reference.txt"), &b).unwrap();
            let kinds = |m: &Memory| {
                let mut k = std::collections::BTreeMap::new();
                for d in m.decisions(USER).unwrap() {
                    *k.entry(d.kind).or_insert(0) += 1;
                }
                k
            };
            panic!(
                "{format:?} export differs from the uninterrupted run's (both in {}): decisions {:?} vs {:?}",
                keep.display(),
                kinds(&crashed),
                kinds(&reference)
            );
        }
    }
    eprintln!(
        "crash test (seed {seed}): {survived}/{kills} kills survived, {acknowledged} of {total} rounds \
         acknowledged before the last writer, 0 lost, 0 integrity failures, {queued} rounds found \
         queued after the kills (summed); final exports equal the uninterrupted run's"
    );
}
