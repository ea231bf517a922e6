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

mod browse;
mod notes;
mod words;

use browse::{run_browse, service_on};
use notes::run_notes;
pub(crate) use words::Words;
use words::{Text, ZipfWords};

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

/// The fused (`fused`) and the dense-only (`dense`) recall p50 over `queries`, each question
/// asked of both in turn (which first alternates), each handle's view of every user asked loaded
/// first: the ratio of the two rankings' work, not of loading views (which the table's recall
/// columns include wherever a question meets a user the process has not read yet).
fn alternated(
    fused: &Memory,
    dense: &Memory,
    queries: &[String],
    user: &dyn Fn(usize) -> String,
) -> Result<String> {
    let users: std::collections::BTreeSet<String> = (0..queries.len()).map(user).collect();
    for m in [fused, dense] {
        for u in &users {
            m.recall(Query::new("warm up the index").top_k(10), u.as_str())?;
        }
    }
    let (mut f, mut d) = (Vec::with_capacity(queries.len()), Vec::with_capacity(queries.len()));
    for (n, q) in queries.iter().enumerate() {
        let order =
            if n % 2 == 0 { [(fused, &mut f), (dense, &mut d)] } else { [(dense, &mut d), (fused, &mut f)] };
        for (m, times) in order {
            let t = Instant::now();
            std::hint::black_box(m.recall(q.as_str(), user(n).as_str())?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    f.sort_by(f64::total_cmp);
    d.sort_by(f64::total_cmp);
    let (fp, dp) = (percentile(&f, 0.5), percentile(&d, 0.5));
    Ok(format!(
        "alternating, one process: fused p50 {fp:.3} ms (p95 {:.3}), dense-only p50 {dp:.3} ms (p95 {:.3}); fused ÷ dense {:.2}",
        percentile(&f, 0.95),
        percentile(&d, 0.95),
        fp / dp
    ))
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
        let mut words = match args.zipf {
            Some(vocabulary) => Text::Zipf(ZipfWords::new(size as u64, vocabulary)),
            None => Text::Uniform(Words(size as u64)),
        };
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
        // The dense-only handle of --alternate: the same embedder, fusion off.
        let dense_only = args.alternate.then(|| (embedder.clone(), Config { rrf_k: None, ..config.clone() }));
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
        if let Some((dense_embedder, dense_config)) = dense_only {
            let dense = match &database {
                Some(db) => Memory::builder(db.backend(false)?),
                None => Memory::builder(dir.path().join("bench.db")),
            }
            .embedder(dense_embedder)
            .config(dense_config)
            .open()?;
            println!("{}", alternated(&memory, &dense, &queries, &user)?);
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
