//! `mnemon bench`: ingest and recall speed on synthetic rounds (or, with `--notes`, remember,
//! list and search speed on synthetic notes; with `--browse`, the web page's reads), printed as a
//! table.
//!
//! Timing lives here, in the binary, never in the library.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mnemon::browse::Paging;
use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::{Embedder, EmbedderPins};
use mnemon::notes::{Filter, ListNotes, NewNote, NoteKind, Search};
use mnemon::{Memory, Message, Query};
use mnemon_eval::metrics::percentile;

use anyhow::{anyhow, bail, Context as _, Result};

use crate::flags::BenchArgs as Args;

/// Common English words, so that texts tokenize like chat (about one word piece per word).
const VOCABULARY: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "dog",
    "cat",
    "garden",
    "trip",
    "music",
    "movie",
    "recipe",
    "coffee",
    "tea",
    "bike",
    "train",
    "beach",
    "doctor",
    "nurse",
    "guitar",
    "piano",
    "camera",
    "phone",
    "laptop",
    "kitchen",
    "dinner",
    "lunch",
    "breakfast",
    "weekend",
    "holiday",
    "birthday",
    "wedding",
    "flight",
    "hotel",
    "museum",
    "park",
    "river",
    "mountain",
    "lake",
    "forest",
    "snow",
    "rain",
    "summer",
    "winter",
    "spring",
    "autumn",
    "shirt",
    "shoes",
    "jacket",
    "salad",
    "pasta",
    "bread",
    "cheese",
    "apple",
    "orange",
    "yoga",
    "running",
    "swimming",
    "painting",
    "reading",
    "writing",
    "cooking",
    "baking",
    "hiking",
    "camping",
    "fishing",
    "dancing",
];

/// Deterministic pseudo-random words.
pub(crate) struct Words(pub(crate) u64);

impl Words {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    pub(crate) fn word(&mut self) -> &'static str {
        VOCABULARY[(self.next() % VOCABULARY.len() as u64) as usize]
    }
    pub(crate) fn sentence(&mut self, words: usize) -> String {
        (0..words).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

/// Memoizes vectors by text, so a pool of texts is embedded once.
struct Memo {
    inner: Arc<dyn Embedder>,
    cache: Mutex<HashMap<String, Vec<f32>>>,
}

impl Embedder for Memo {
    fn pins(&self) -> EmbedderPins {
        self.inner.pins()
    }
    fn calibration(&self) -> mnemon::embed::Calibration {
        self.inner.calibration()
    }
    fn embed_documents(&self, texts: &[&str]) -> mnemon::Result<Vec<Vec<f32>>> {
        let mut cache = self.cache.lock().map_err(|_| mnemon::Error::Embedder("poisoned".into()))?;
        let missing: Vec<&str> = texts.iter().copied().filter(|t| !cache.contains_key(*t)).collect();
        if !missing.is_empty() {
            for (t, v) in missing.iter().zip(self.inner.embed_documents(&missing)?) {
                cache.insert((*t).to_owned(), v);
            }
        }
        Ok(texts.iter().map(|t| cache[*t].clone()).collect())
    }
    fn embed_query(&self, text: &str) -> mnemon::Result<Vec<f32>> {
        self.inner.embed_query(text)
    }
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// p50 and p95 of `f` over `queries`, in milliseconds.
fn timed<T, E>(queries: &[String], mut f: impl FnMut(&str) -> Result<T, E>) -> Result<(f64, f64)>
where
    anyhow::Error: From<E>,
{
    let mut times = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        std::hint::black_box(f(q)?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((percentile(&times, 0.5), percentile(&times, 0.95)))
}

/// Notes: 12 words each, two of 24 tags drawn at random, the three kinds in turn, one every 10
/// minutes from 2024-01-01. The filter keeps one tag, two kinds and the last three quarters of the
/// time span: about 6 % of the notes.
fn run_notes(args: &Args) -> Result<()> {
    let embedder = args.models.embedder()?;
    println!("embedder: {} ({} dims), notes", embedder.pins().name, embedder.pins().dim);
    println!("| notes | remember notes/s | index load (ms) | search p50 / p95 (ms) | search, filtered p50 / p95 (ms) | search through the service, JSON in and out, p50 / p95 (ms) | list p50 / p95 (ms) | list, filtered p50 / p95 (ms) | peak RSS (MiB) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64 + 7);
        let start =
            chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default().and_time(chrono::NaiveTime::MIN);
        let at = |i: usize| {
            (start + chrono::Duration::minutes(10 * i as i64)).format("%Y-%m-%dT%H:%M:%S").to_string()
        };
        let notes: Vec<NewNote> = (0..size)
            .map(|i| {
                let tags = [format!("t{}", words.next() % 24), format!("t{}", words.next() % 24)];
                NewNote::new(words.sentence(12), at(i))
                    .tags(tags)
                    .kind(NoteKind::ALL[i % 3])
                    .importance((i % 10) as f32 / 10.0)
            })
            .collect();
        let dir = tempfile::tempdir().context("temp dir")?;
        let memory = Memory::builder(dir.path().join("bench.db"))
            .embedder(embedder.clone())
            .config(Config { rrf_k: args.fusion.rrf_k(), ..Config::default() })
            .open()?;
        let t = Instant::now();
        for chunk in notes.chunks(mnemon::notes::MAX_NOTES_PER_CALL) {
            memory.remember(chunk, "bench")?;
        }
        let remember_s = t.elapsed().as_secs_f64();
        let filter = Filter {
            tags_any: vec!["t5".into()],
            kinds: vec![NoteKind::Episodic, NoteKind::Semantic],
            after: Some(at(size / 4)),
            ..Filter::default()
        };
        let queries: Vec<String> = (0..args.queries).map(|_| words.sentence(6)).collect();
        if let Some(out) = &args.workload_out {
            let notes: Vec<_> = notes
                .iter()
                .map(|n| {
                    serde_json::json!({"content": n.content, "ts": n.ts, "tags": n.tags,
                        "kind": n.kind.map(|k| k.as_str()), "importance": n.importance})
                })
                .collect();
            let path = out.with_extension(format!("{size}.json"));
            std::fs::write(&path, serde_json::json!({"notes": notes, "queries": queries}).to_string())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        let t = Instant::now();
        memory.search(&Search::new("warm up the index"), "bench")?;
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        let search = timed(&queries, |q| memory.search(&Search::new(q), "bench"))?;
        let filtered = timed(&queries, |q| memory.search(&Search::new(q).filter(filter.clone()), "bench"))?;
        // The servers' and Python's path: the operation by name on JSON text, its result as text.
        let service = service_on(&dir.path().join("bench.db"), args)?;
        let tool =
            mnemon_server::operations::tool("search_memories").ok_or_else(|| anyhow!("no search tool"))?;
        let call = |q: &str| -> Result<String> {
            let args = serde_json::json!({"user_id": "bench", "query": q}).to_string();
            let value: serde_json::Value = serde_json::from_str(&args)?;
            Ok(tool
                .value(&service, &mnemon_server::Principal::Admin, value)
                .map_err(|e| anyhow!("{}", e.message))?
                .to_string())
        };
        call("warm up the index")?;
        let served = timed(&queries, call)?;
        let list = timed(&queries, |_| memory.list(&ListNotes::default(), "bench"))?;
        let listed = timed(&queries, |_| {
            memory.list(&ListNotes { filter: filter.clone(), ..ListNotes::default() }, "bench")
        })?;
        println!(
            "| {size} | {:.0} | {load_ms:.1} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.0} |",
            size as f64 / remember_s,
            search.0,
            search.1,
            filtered.0,
            filtered.1,
            served.0,
            served.1,
            list.0,
            list.1,
            listed.0,
            listed.1,
            peak_rss_mib()
        );
    }
    Ok(())
}

/// The servers' operations on the store at `path`, with the bench's embedder.
fn service_on(path: &std::path::Path, args: &Args) -> Result<std::sync::Arc<mnemon_server::Service>> {
    crate::service_from_flags(["mnemon", "--store"].into_iter().map(str::to_owned).chain([
        path.to_string_lossy().into_owned(),
        "--embedder".into(),
        match args.models.embedder {
            crate::flags::EmbedderChoice::Hashing => "hashing".into(),
            crate::flags::EmbedderChoice::Minilm => "minilm".into(),
        },
    ]))
}

/// The web page's reads on one user of `size` rounds, one every hour from 2024-01-01 in sessions
/// of `--session-rounds`: each round says one thing the scripted extractor turns into a fact, and
/// every tenth says the user moved (superseding the home before). Pages of 50, as the page asks.
fn run_browse(args: &Args) -> Result<()> {
    let embedder = args.models.embedder()?;
    println!(
        "embedder: {} ({} dims), the web page's reads on one user",
        embedder.pins().name,
        embedder.pins().dim
    );
    println!("| rounds | facts (superseded) | build (s) | timeline page p50 / p95 (ms) | timeline page through the service, as JSON, p50 / p95 (ms) | users (ms) | decisions of one kind, page p50 (ms) | activity (ms) |");
    println!("|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64 + 11);
        let start =
            chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default().and_time(chrono::NaiveTime::MIN);
        let mut script = serde_json::Map::new();
        let mut rounds = Vec::with_capacity(size);
        for i in 0..size {
            let ts = (start + chrono::Duration::hours(i as i64)).format("%Y-%m-%dT%H:%M:%S").to_string();
            let (turn, fact) = if i % 10 == 0 {
                let town = format!("Town{i}");
                let turn = format!("I live in {town} now, {}.", words.sentence(8));
                let fact = serde_json::json!({"content": format!("The user lives in {town}."),
                    "raw": format!("user: I live in {town}"), "when": null, "subject": "user",
                    "predicate": "lives in", "object": town, "salience": 1.0});
                (turn, fact)
            } else {
                let thing = format!("{}{i}", words.word());
                let turn = format!("I bought a {thing} today, {}.", words.sentence(8));
                let fact = serde_json::json!({"content": format!("The user bought a {thing}."),
                    "raw": format!("user: I bought a {thing}"), "when": "today", "subject": "user",
                    "predicate": "bought", "object": thing, "salience": 1.0});
                (turn, fact)
            };
            script.insert(turn.clone(), serde_json::Value::Array(vec![fact]));
            let session = format!("s{}", i / args.session_rounds.max(1));
            rounds.push([
                Message::user(turn, ts.clone()).in_session(session.clone()),
                Message::assistant(words.sentence(args.reply_words), ts).in_session(session),
            ]);
        }
        let script = serde_json::Value::Object(script).to_string();
        let extractor = mnemon::extract::ScriptedExtractor::from_json("bench", &script)?;
        let dir = tempfile::tempdir().context("temp dir")?;
        let path = dir.path().join("bench.db");
        let memory = Memory::builder(&path)
            .embedder(embedder.clone())
            .extractor(extractor)
            .config(Config { background_extraction: false, ..Config::default() })
            .open()?;
        let t = Instant::now();
        for chunk in rounds.chunks(args.session_rounds.max(1)) {
            let messages: Vec<Message> = chunk.iter().flatten().cloned().collect();
            memory.add(&messages, "bench")?;
        }
        let build_s = t.elapsed().as_secs_f64();
        let users = memory.users()?;
        let holds = users.first().map(|u| u.holds).unwrap_or_default();
        // Every page's cursor, then pages drawn across the whole timeline.
        let mut cursors = vec![None];
        loop {
            let cursor = cursors.last().cloned().flatten();
            match memory.timeline(&Paging { limit: 50, cursor }, "bench")?.next {
                Some(next) => cursors.push(Some(next)),
                None => break,
            }
        }
        let picks: Vec<String> =
            (0..args.queries.max(1)).map(|i| (i * 7919 % cursors.len()).to_string()).collect();
        let page = |i: &str| -> Result<mnemon::browse::TimelinePage> {
            let cursor = cursors[i.parse::<usize>()?].clone();
            Ok(memory.timeline(&Paging { limit: 50, cursor }, "bench")?)
        };
        let direct = timed(&picks, page)?;
        let service = service_on(&path, args)?;
        let served = timed(&picks, |i| -> Result<Vec<u8>> {
            let request = mnemon_server::api::ReadTimeline {
                limit: Some(50),
                cursor: cursors[i.parse::<usize>()?].clone(),
                user_id: Some("bench".into()),
                agent_id: None,
                store: None,
            };
            let page = service.timeline(&request).map_err(|e| anyhow!("{}", e.message))?;
            Ok(serde_json::to_vec(&page)?)
        })?;
        let t = Instant::now();
        memory.users()?;
        let users_ms = t.elapsed().as_secs_f64() * 1e3;
        let kinds = [DecisionKind::FactSuperseded];
        let decisions = timed(&picks[..picks.len().min(50)], |_| {
            memory.decision_page(&kinds, &Paging { limit: 50, cursor: None }, "bench")
        })?;
        let t = Instant::now();
        memory.activity("bench")?;
        let activity_ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "| {size} | {} ({}) | {build_s:.1} | {:.2} / {:.2} | {:.2} / {:.2} | {users_ms:.1} | {:.2} | {activity_ms:.1} |",
            holds.facts + holds.superseded,
            holds.superseded,
            direct.0,
            direct.1,
            served.0,
            served.1,
            decisions.0,
        );
    }
    Ok(())
}

/// This machine's memory read bandwidth, bytes per second: one thread summing 256 MiB (far past
/// the caches), the best of five passes.
fn read_bandwidth() -> f64 {
    let data: Vec<u64> = (0..(256usize << 20) / 8).map(|i| i as u64).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let sum = data.iter().fold(0u64, |a, &x| a.wrapping_add(x));
        std::hint::black_box(sum);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (data.len() * 8) as f64 / best
}

/// A fresh database on the benchmark's PostgreSQL server, for one store.
struct BenchDb {
    admin: String,
    url: String,
    name: String,
}

impl BenchDb {
    fn create(admin: &str, size: usize) -> Result<BenchDb> {
        let name = format!("mnemon_bench_{size}_{}", std::process::id());
        let mut client = postgres::Client::connect(admin, postgres::NoTls).context("connect to --scratch")?;
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).context("drop")?;
        client.batch_execute(&format!("CREATE DATABASE {name}")).context("create database")?;
        // Room to build an HNSW index over a million vectors in memory (pgvector slows down a lot
        // once its graph outgrows maintenance_work_mem).
        client
            .batch_execute(&format!("ALTER DATABASE {name} SET maintenance_work_mem = '2GB'"))
            .context("set maintenance_work_mem")?;
        let (base, _) = admin.rsplit_once('/').ok_or_else(|| anyhow!("--scratch: a URL with a database"))?;
        Ok(BenchDb { admin: admin.to_owned(), url: format!("{base}/{name}"), name })
    }

    fn backend(&self, approximate: bool) -> Result<Arc<dyn mnemon::stores::Backend>> {
        Ok(Arc::new(mnemon_postgres::PgBackend::new(&self.url)?.approximate(approximate)))
    }

    fn drop_database(self) -> Result<()> {
        let mut client =
            postgres::Client::connect(&self.admin, postgres::NoTls).context("connect to --scratch")?;
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name))
            .context("drop")?;
        Ok(())
    }
}

pub fn run(args: &Args) -> Result<()> {
    if args.hnsw && args.scratch.is_none() {
        bail!("--hnsw needs --scratch");
    }
    if args.notes {
        return run_notes(args);
    }
    if args.browse {
        return run_browse(args);
    }
    let base = args.models.embedder()?;
    let bandwidth = read_bandwidth();
    println!("embedder: {} ({} dims)", base.pins().name, base.pins().dim);
    println!("memory read bandwidth: {:.1} GB/s (one thread summing 256 MiB, best of 5)", bandwidth / 1e9);
    println!("| rounds | embed only (s) | embed rounds/s | ingest (s) | ingest rounds/s | ingest ÷ embed | index load (ms) | recall p50 (ms) | recall p95 (ms) | query embed p50 (ms) | database KNN p50 (ms) | peak RSS (MiB) | scan KiB / query | rescored of scanned | scan at bandwidth (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64);
        let distinct = args.pool.unwrap_or(size).max(args.session_rounds);
        let pool: Vec<(String, String)> = (0..distinct)
            .map(|_| {
                let user: Vec<String> = (0..args.user_sentences.max(1)).map(|_| words.sentence(15)).collect();
                (user.join(". "), words.sentence(args.reply_words))
            })
            .collect();
        let embedder: Arc<dyn Embedder> = match args.pool {
            Some(_) => Arc::new(Memo { inner: base.clone(), cache: Mutex::default() }),
            None => base.clone(),
        };

        let texts: Vec<String> = pool.iter().map(|(u, a)| format!("user: {u}\nassistant: {a}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let t = Instant::now();
        for chunk in refs.chunks(args.session_rounds) {
            base.embed_documents(chunk)?;
        }
        let embed_s = t.elapsed().as_secs_f64();

        let dir = tempfile::tempdir().context("temp dir")?;
        let config = Config {
            rrf_k: args.fusion.rrf_k(),
            view_cache_bytes: args.view_cache_mib << 20,
            ..Config::default()
        };
        let database = match &args.scratch {
            Some(url) => Some(BenchDb::create(url, size)?),
            None => None,
        };
        let second = embedder.clone();
        let memory = match &database {
            Some(db) => {
                Memory::builder(db.backend(false)?).embedder(embedder).config(config.clone()).open()?
            }
            None => Memory::builder(dir.path().join("bench.db"))
                .embedder(embedder)
                .config(config.clone())
                .open()?,
        };
        let users = args.users.max(1);
        let user = |n: usize| if users == 1 { "bench".to_owned() } else { format!("bench-{}", n % users) };
        let t = Instant::now();
        let mut i = 0;
        let mut session = 0;
        while i < size {
            // Four sessions a day, from 2020-01-01.
            let day = chrono::NaiveDate::from_ymd_opt(2020, 1, 1).unwrap_or_default()
                + chrono::Duration::days(session as i64 / 4);
            let ts = format!("{day}T{:02}:00:00", 8 + session % 4);
            let mut messages = Vec::with_capacity(2 * args.session_rounds);
            for _ in 0..args.session_rounds.min(size - i) {
                let (u, a) = &pool[i % distinct];
                messages.push(Message::user(u.clone(), ts.clone()).in_session(format!("s{session}")));
                messages.push(Message::assistant(a.clone(), ts.clone()).in_session(format!("s{session}")));
                i += 1;
            }
            memory.add(&messages, user(session).as_str())?;
            session += 1;
        }
        let ingest_s = t.elapsed().as_secs_f64();

        let queries: Vec<String> = (0..args.queries).map(|_| words.sentence(8)).collect();
        let t = Instant::now();
        memory.recall(Query::new("warm up the index").top_k(10), user(0).as_str())?;
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut times = Vec::with_capacity(queries.len());
        mnemon::internals::take_scan_stats();
        for (n, q) in queries.iter().enumerate() {
            let t = Instant::now();
            let r = memory.recall(q.as_str(), user(n).as_str())?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(r);
        }
        times.sort_by(f64::total_cmp);
        let scans = mnemon::internals::take_scan_stats();
        let per_query = scans.bytes as f64 / queries.len().max(1) as f64;
        let mut embed_times = Vec::with_capacity(queries.len());
        for q in &queries {
            let t = Instant::now();
            std::hint::black_box(base.embed_query(q)?);
            embed_times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        embed_times.sort_by(f64::total_cmp);
        let mut vec0_times = Vec::with_capacity(queries.len());
        let mut exact = Vec::with_capacity(queries.len());
        for (n, q) in queries.iter().enumerate() {
            let t = Instant::now();
            exact.push(memory.nearest_in_database(q, 10, user(n).as_str())?);
            vec0_times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        vec0_times.sort_by(f64::total_cmp);
        let mut hnsw_line = None;
        if let (true, Some(db)) = (args.hnsw, &database) {
            let t = Instant::now();
            let approx = Memory::builder(db.backend(true)?).embedder(second).config(config).open()?;
            let build_s = t.elapsed().as_secs_f64();
            let (mut times, mut found) = (Vec::with_capacity(queries.len()), 0usize);
            let mut wanted = 0usize;
            for (n, q) in queries.iter().enumerate() {
                let t = Instant::now();
                let near = approx.nearest_in_database(q, 10, user(n).as_str())?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
                let truth: Vec<&String> = exact[n].iter().map(|(k, _)| k).collect();
                wanted += truth.len();
                found += near.iter().filter(|(k, _)| truth.contains(&k)).count();
            }
            times.sort_by(f64::total_cmp);
            hnsw_line = Some(format!(
                "HNSW at {size}: index built in {build_s:.1} s; KNN p50 exact {:.3} ms, HNSW {:.3} ms; recall@10 of HNSW against exact {:.4} ({found}/{wanted})",
                percentile(&vec0_times, 0.5),
                percentile(&times, 0.5),
                found as f64 / wanted.max(1) as f64
            ));
        }
        println!(
            "| {size} | {embed_s:.2} | {:.0} | {ingest_s:.2} | {:.0} | {:.2} | {load_ms:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {:.0} | {:.2} % | {:.3} |",
            distinct as f64 / embed_s,
            size as f64 / ingest_s,
            ingest_s / (embed_s * size as f64 / distinct as f64),
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            percentile(&embed_times, 0.5),
            percentile(&vec0_times, 0.5),
            peak_rss_mib(),
            per_query / 1024.0,
            100.0 * scans.rescored as f64 / scans.scanned.max(1) as f64,
            per_query / bandwidth * 1e3,
        );
        if let Some(line) = hnsw_line {
            println!("{line}");
        }
        drop(memory);
        if let Some(db) = database {
            db.drop_database()?;
        }
    }
    if args.pool.is_some() {
        println!("(texts drawn from a pool: each distinct text was embedded once; 'embed only' covers the pool, and the ingest ÷ embed ratio scales it to the store size)");
    }
    Ok(())
}
