//! `mnemon fuzz`: hostile and malformed input for every parser that takes outside text, on
//! stable Rust. Each target starts from valid seeds and feeds its parser mutations of them
//! (bytes flipped, inserted, deleted, repeated, cut; JSON punctuation, huge and negative numbers,
//! odd dates, control and non-ASCII characters spliced in; seeds crossed), each call inside
//! `catch_unwind`. A rejection must be a typed error; a panic is a failure, and its input is
//! written to `fuzz-panic-<target>.txt` in the current folder. The generator is xorshift64*,
//! seeded: the same seed gives the same cases.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use chrono::NaiveDate;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::notes::NewNote;
use mnemon::{Memory, Message, Timestamp};
use mnemon_eval::data::{load_bytes, Benchmark};

/// What one target did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub cases: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub panics: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Fragments spliced into inputs: the shapes parsers trip on.
const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "NaN",
    "18446744073709551616",
    "99999999999999999999999",
    "-9223372036854775809",
    "\\u0000",
    "\\ud800",
    "\u{0}",
    "\u{7f}",
    "\u{85}",
    "\u{2028}",
    "\u{feff}",
    "\u{10ffff}",
    "🦫",
    "é",
    "\n",
    "\r",
    "\t",
    " ",
    "2023/02/30",
    "2024/02/29 (Thu) 25:61",
    "0000-00-00T00:00:00",
    "9999-12-31T23:59:59",
    "+275760-09-13",
    "1:56 pm on 8 May, 2023",
    "31 February",
    "last",
    "next",
    "ago",
    "before",
    "after",
    "the first time",
    "weekend of",
    "3 days ago",
    "in March",
    "yesterday",
    "tomorrow",
    "week",
    "month",
    "year",
    "ordinal",
    "user:",
    "assistant:",
    "role",
    "content",
    "ts",
    "session",
    "speaker",
    "{\"kind\":\"round\"}",
    "\"header\"",
    "mnemon-dump",
    "lives in",
    "moved to",
    "not",
    "never",
    "|",
    "<memory>",
    "</memory>",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut b = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(b.len() + 1);
        match rng.below(9) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 => b.insert(at, rng.next() as u8),
            2 if !b.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(b.len());
                b.drain(at.min(end)..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            4 if !b.is_empty() => {
                let start = rng.below(b.len());
                let end = (start + 1 + rng.below(32)).min(b.len());
                let piece = b[start..end].to_vec();
                for _ in 0..1 + rng.below(4) {
                    b.splice(at..at, piece.iter().copied());
                }
            }
            5 => b.truncate(at),
            6 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                b.truncate(at);
                b.extend_from_slice(&other[from..]);
            }
            7 if !b.is_empty() => {
                let i = rng.below(b.len());
                if b[i].is_ascii_digit() {
                    b[i] = b'0' + rng.below(10) as u8;
                }
            }
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let end = (at + t.len()).min(b.len());
                b.splice(at..end, t.iter().copied());
            }
        }
        if b.len() > 64 << 10 {
            b.truncate(64 << 10);
        }
    }
    b
}

/// One case of a target: `true` when the input was accepted.
type Case = Box<dyn Fn(&[u8]) -> bool>;

/// A target: its seeds and what one case runs (`Ok(true)` accepted, `Ok(false)` rejected with
/// a typed error).
struct Target {
    name: &'static str,
    seeds: Vec<Vec<u8>>,
    run: Case,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn anchor() -> NaiveDate {
    NaiveDate::from_ymd_opt(2023, 5, 20).unwrap_or_default()
}

fn seeds(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
}

const LONGMEMEVAL: &str = r#"[{"question_id":"q1","question_type":"multi-session","question":"What did I adopt?","answer":"a beagle","question_date":"2023/05/30 (Tue) 10:00","haystack_dates":["2023/05/20 (Sat) 02:21","2023/05/25 (Thu) 09:00"],"haystack_session_ids":["s1","s2"],"haystack_sessions":[[{"role":"user","content":"I adopted a beagle.","has_answer":true},{"role":"assistant","content":"Congrats!"}],[{"role":"user","content":"Walks are long."}]],"answer_session_ids":["s1"]}]"#;
const LOCOMO: &str = r#"[{"sample_id":"conv-1","conversation":{"speaker_a":"Ann","speaker_b":"Bo","session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[{"speaker":"Ann","dia_id":"D1:1","text":"I paint."},{"speaker":"Bo","dia_id":"D1:2","text":"Nice!","blip_caption":"a photo"}],"session_2_date_time":"2:00 pm on 9 May, 2023","session_2":[{"speaker":"Ann","dia_id":"D2:1","text":"I ran."}]},"qa":[{"question":"What does Ann do?","answer":"paint","evidence":["D1:1"],"category":4}]}]"#;

/// A dump of a small store with a round, a fact-free note and two users: the importer's seed.
fn dump_seed() -> Result<String, mnemon::Error> {
    let dir = tempfile::tempdir()?;
    let m = Memory::builder(dir.path().join("seed.db")).embedder(HashingEmbedder::default()).open()?;
    m.add(
        &[
            Message::user("I moved to Lisbon in March.", "2023/05/20 (Sat) 02:21"),
            Message::assistant("Lisbon is lovely.", "2023/05/20 (Sat) 02:21"),
        ],
        "ana",
    )?;
    let mut note = NewNote::new("Ana prefers window seats.", "2023-05-21T10:00:00");
    note.tags = vec!["travel".into()];
    m.remember(&[note], "ana")?;
    m.export(ExportFormat::Jsonl, "ana")
}

fn targets(parse_jsonl: fn(&str) -> bool) -> Result<Vec<Target>, mnemon::Error> {
    let dump = dump_seed()?;
    let import_dir = tempfile::tempdir()?;
    let imports = std::cell::Cell::new(0u64);
    Ok(vec![
        Target {
            name: "timestamp",
            seeds: seeds(&[
                "2023/05/20 (Sat) 02:21",
                "2026-01-02T09:00:00",
                "2026-01-02T09:00:00+02:00",
                "2026-01-02",
                "1:56 pm on 8 May, 2023",
            ]),
            run: Box::new(|b| Timestamp::parse(&text(b)).is_ok()),
        },
        Target {
            name: "jsonl messages",
            seeds: seeds(&[
                "{\"role\":\"user\",\"content\":\"I adopted a beagle.\",\"ts\":\"2023/05/20 (Sat) 02:21\",\"session\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"Congrats!\",\"ts\":\"2023/05/20 (Sat) 02:21\",\"speaker\":\"Bo\",\"id\":\"D1:2\"}\n",
            ]),
            run: Box::new(move |b| {
                String::from_utf8(b.to_vec()).is_ok_and(|t| parse_jsonl(&t))
            }),
        },
        Target {
            name: "dump import",
            seeds: vec![dump.into_bytes()],
            run: Box::new(move |b| {
                let t = text(b);
                let ok = Memory::check_dump(&t).is_ok();
                // A dump that passes the check goes through the whole import, into a new file.
                if ok {
                    imports.set(imports.get() + 1);
                    let path = import_dir.path().join(format!("import-{}.db", imports.get()));
                    let imported = Memory::builder(&path).import(&t).is_ok();
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(path.with_extension("db-wal"));
                    let _ = std::fs::remove_file(path.with_extension("db-shm"));
                    return imported;
                }
                false
            }),
        },
        Target {
            name: "longmemeval loader",
            seeds: seeds(&[LONGMEMEVAL]),
            run: Box::new(|b| load_bytes(b, "fuzz", Benchmark::LongMemEval).is_ok()),
        },
        Target {
            name: "locomo loader",
            seeds: seeds(&[LOCOMO]),
            run: Box::new(|b| load_bytes(b, "fuzz", Benchmark::LoCoMo).is_ok()),
        },
        Target {
            name: "extractor output",
            seeds: seeds(&[
                r#"[{"content":"The user lives in Lisbon.","raw":"user: I live in Lisbon","when":"last March","subject":"user","predicate":"lives in","object":"Lisbon","salience":0.5}]"#,
                r#"[{"content":"The user adopted a dog.","raw":"user: I adopted a dog","when":null,"subject":null,"predicate":null,"object":null,"salience":1.0},{"content":"x","raw":"assistant: x","when":"","subject":"","predicate":"other","object":"","salience":1.0}]"#,
                "[]",
            ]),
            run: Box::new(|b| {
                let t = text(b);
                let parsed = mnemon::internals::extract::parse(&t).is_some();
                let _ = mnemon::extract::Extraction::from_output(t, false, 10, 5);
                parsed
            }),
        },
        Target {
            name: "query window",
            seeds: seeds(&[
                "[Current date: 2023/05/20 (Sat) 02:21]\nWhat did I buy last week?",
                "What happened 3 days ago?",
                "What did I do in March 2023?",
                "What did I cook yesterday?",
                "Which books did I finish last month?",
            ]),
            run: Box::new(|b| {
                let t = text(b);
                let (date, question) = mnemon::internals::time::split_date_prefix(&t);
                let at = date.map_or(anchor(), |d| d.date());
                mnemon::internals::time::query_window(question, at).is_some()
            }),
        },
        Target {
            name: "normalizer",
            seeds: seeds(&["user|lives in|Lisbon", "The user's sister|moved to|Porto, Portugal", "I|don't like|never sushi"]),
            run: Box::new(|b| {
                let t = text(b);
                let mut parts = t.splitn(3, '|');
                let (s, p, o) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let n = mnemon::internals::normalize::normalize(s, p, o);
                let _ = n.pair_key();
                !mnemon::internals::normalize::text(&t).is_empty()
            }),
        },
        Target {
            name: "date resolver",
            seeds: seeds(&[
                "last March|The user moved in last March.",
                "3 days ago|The user ran 3 days ago.",
                "next Friday|The user flies next Friday.",
                "on 8 May, 2023|The user painted on 8 May, 2023.",
                "yesterday|The user baked bread yesterday.",
            ]),
            run: Box::new(|b| {
                let t = text(b);
                let (mention, fact) = t.split_once('|').unwrap_or((&t, ""));
                mnemon::internals::resolve::resolve(mention, anchor(), fact).is_some()
            }),
        },
    ])
}

/// Runs `cases` cases per target (or only `only`), from `seed`. Returns each target's tally.
pub fn run(
    cases: u64,
    seed: u64,
    only: Option<&str>,
    parse_jsonl: fn(&str) -> bool,
) -> Result<BTreeMap<&'static str, Tally>, mnemon::Error> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut out = BTreeMap::new();
    for (t, target) in targets(parse_jsonl)?.into_iter().enumerate() {
        if only.is_some_and(|o| o != target.name) {
            continue;
        }
        for (i, s) in target.seeds.iter().enumerate() {
            if !matches!(catch_unwind(AssertUnwindSafe(|| (target.run)(s))), Ok(true)) {
                std::panic::set_hook(previous);
                return Err(mnemon::Error::InvalidInput {
                    field: format!("fuzz seed {i} of {}", target.name),
                    reason: "a seed must be accepted".into(),
                });
            }
        }
        let mut rng = Rng((seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        let mut tally = Tally::default();
        for _ in 0..cases {
            let input = mutate(&mut rng, &target.seeds);
            tally.cases += 1;
            match catch_unwind(AssertUnwindSafe(|| (target.run)(&input))) {
                Ok(true) => tally.accepted += 1,
                Ok(false) => tally.rejected += 1,
                Err(_) => {
                    if tally.panics == 0 {
                        let name = format!("fuzz-panic-{}.txt", target.name.replace(' ', "-"));
                        let _ = std::fs::write(name, &input);
                    }
                    tally.panics += 1;
                }
            }
        }
        out.insert(target.name, tally);
    }
    std::panic::set_hook(previous);
    Ok(out)
}
