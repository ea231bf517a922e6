//! A run: ingest each selected haystack into a fresh store, ask its questions, write artifacts.
//!
//! Artifacts in the run directory: `pins.json` (what the run was measured under),
//! `predictions.jsonl` (one line per question, appended as it completes), `timings.jsonl`
//! (measured seconds, kept apart so that the metrics stay a pure function of the predictions),
//! `summary.json` and `report.md`. A run resumes: questions already in `predictions.jsonl` are
//! skipped, and the pins must match.
// Timing is this module's job; the engine it measures never reads a clock.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use mnemon::config::Config;
use mnemon::context::count_tokens;
use mnemon::embed::Embedder;
use mnemon::extract::Extractor;
use mnemon::rounds::Turn;
use mnemon::stores::Location;
use mnemon::{Error, Memory, Query, Result, Timestamp};

use crate::answer;
use crate::data::{self, Benchmark, Dataset, Defects, Question};
use crate::metrics::{self, Budgeted, Prediction, Retrieved, KS};
use crate::qa::{Asker, Calls, LocalAsker, LocalConfig, QaConfig};
use crate::report::{self, FactCounts, Speed, Summary};

/// Version of the harness's scoring; part of the pins.
pub const HARNESS_VERSION: &str = "2";

/// What to run.
#[derive(Clone)]
pub struct RunConfig {
    /// The benchmark file.
    pub dataset: PathBuf,
    /// Which benchmark it is.
    pub benchmark: Benchmark,
    /// The run directory (created if needed).
    pub out: PathBuf,
    /// At most this many questions (after the other filters, in file order).
    pub limit: Option<usize>,
    /// Only these question types (empty: all).
    pub types: Vec<String>,
    /// Only these question ids (empty: all).
    pub questions: Vec<String>,
    /// Haystacks processed in parallel, each with its own embedder.
    pub jobs: usize,
    /// Engine configuration (its `context_budget` is the budget measured).
    pub engine: Config,
    /// The command line, recorded in the pins.
    pub command_line: String,
    /// QA mode: read and judge every question (retrieval metrics are computed either way).
    pub qa: Option<QaConfig>,
    /// Local reading: answer every question from no memory, mnemon's and the oracle's contexts
    /// with a model on this machine ([`crate::qa::LocalConfig`]).
    pub local: Option<LocalConfig>,
    /// Extract facts from every round at ingest (inline, so the ingest time includes it).
    pub extractor: Option<Arc<dyn Extractor>>,
    /// Per-query ranking options (recency, importance), off by default.
    pub ranking: mnemon::context::Ranking,
    /// Store each haystack in this PostgreSQL database (a schema per haystack, dropped after)
    /// instead of a temporary file.
    pub postgres: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Timing {
    Ingest { user: String, rounds: usize, seconds: f64 },
    Recall { id: String, ms: f64 },
    Qa { id: String, calls: Calls },
    Facts { user: String, counts: FactCounts },
}

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::from(std::io::Error::other(format!("{}: {e}", path.display())))
}

/// Reads the JSON lines of `path` that parse (a run killed mid-write leaves a partial last line).
fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(path, e)),
    }
}

fn select<'a>(data: &'a Dataset, cfg: &RunConfig) -> Vec<&'a Question> {
    let mut out: Vec<&Question> = data
        .questions
        .iter()
        .filter(|q| cfg.types.is_empty() || cfg.types.contains(&q.kind))
        .filter(|q| cfg.questions.is_empty() || cfg.questions.contains(&q.id))
        .collect();
    out.truncate(cfg.limit.unwrap_or(usize::MAX));
    out
}

fn pins(cfg: &RunConfig, embedder: &dyn Embedder, dataset_sha256: &str) -> serde_json::Value {
    let e = embedder.pins();
    serde_json::json!({
        "harness_version": HARNESS_VERSION,
        "dataset": { "file": cfg.dataset.file_name().map(|f| f.to_string_lossy().into_owned()), "sha256": dataset_sha256, "benchmark": cfg.benchmark },
        "embedder": { "name": e.name, "revision": e.revision, "dim": e.dim, "template": e.template },
        "extractor": cfg.extractor.as_ref().map_or(serde_json::json!("none"), |x| serde_json::json!(x.pins())),
        "engine": {
            "top_k": cfg.engine.top_k,
            "time_weight": cfg.engine.time_weight,
            "dedup_cosine": cfg.engine.dedup_cosine,
            "context_budget": cfg.engine.context_budget,
            "rrf_k": cfg.engine.rrf_k,
            "lexical": cfg.engine.rrf_k.map(|_| mnemon::internals::LEXICAL_SCHEME),
            "retrieved_depth": KS[KS.len() - 1],
        },
        // Only when an option is on, so default runs keep the pins they always had.
        "ranking": (cfg.ranking != mnemon::context::Ranking::default()).then(|| format!("{:?}", cfg.ranking)),
        "qa": cfg.qa.as_ref().map(QaConfig::pins),
        "local": cfg.local.as_ref().map(LocalConfig::pins),
    })
}

/// Runs (or resumes) the harness; `embedder_for_job` builds one embedder per parallel job;
/// `progress(done, total)` is called after each question. The selection (`limit`, `types`,
/// `questions`) is not pinned: a directory can be resumed with a wider selection.
pub fn run(
    cfg: &RunConfig,
    embedder_for_job: &(dyn Fn() -> Result<Arc<dyn Embedder>> + Sync),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Summary> {
    let data = data::load(&cfg.dataset, cfg.benchmark)?;
    let selected = select(&data, cfg);
    std::fs::create_dir_all(&cfg.out)?;

    let first = embedder_for_job()?;
    let sha = mnemon::model_files::file_sha256(&cfg.dataset)?;
    let pins = pins(cfg, first.as_ref(), &sha);
    let pins_path = cfg.out.join("pins.json");
    if let Ok(existing) = std::fs::read_to_string(&pins_path) {
        let existing: serde_json::Value = serde_json::from_str(&existing).map_err(|e| io(&pins_path, e))?;
        if existing.get("pins") != Some(&pins) {
            return Err(Error::InvalidInput {
                field: "out".into(),
                reason: format!("{} holds a run under other pins; use another directory", cfg.out.display()),
            });
        }
    } else {
        let doc = serde_json::json!({ "pins": pins, "command_line": cfg.command_line });
        std::fs::write(&pins_path, serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n")?;
    }

    let predictions_path = cfg.out.join("predictions.jsonl");
    let done: BTreeSet<String> =
        read_lines::<Prediction>(&predictions_path)?.into_iter().map(|p| p.id).collect();
    let mut pending: BTreeMap<&str, Vec<&Question>> = BTreeMap::new();
    for q in &selected {
        if !done.contains(&q.id) {
            pending.entry(q.user.as_str()).or_default().push(q);
        }
    }
    let haystacks: BTreeMap<&str, &data::Haystack> =
        data.haystacks.iter().map(|h| (h.user.as_str(), h)).collect();
    let work: Vec<(&data::Haystack, Vec<&Question>)> = pending
        .into_iter()
        .map(|(user, qs)| {
            haystacks.get(user).map(|h| (*h, qs)).ok_or_else(|| Error::InvalidInput {
                field: format!("{}: question {}", cfg.dataset.display(), user),
                reason: "has no haystack".into(),
            })
        })
        .collect::<Result<_>>()?;

    let total = selected.len();
    let counter = Mutex::new(done.len());
    let queue = Mutex::new(work.into_iter());
    let writers = Mutex::new((open_append(&predictions_path)?, open_append(&cfg.out.join("timings.jsonl"))?));
    let first = Mutex::new(Some(first));
    let jobs = cfg.jobs.max(1);
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let embedder = match first.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        Some(e) => e,
                        None => embedder_for_job()?,
                    };
                    let mut asker = cfg.qa.as_ref().map(Asker::new).transpose()?;
                    let mut local = cfg.local.as_ref().map(LocalAsker::new).transpose()?;
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((haystack, questions)) = next else { return Ok(()) };
                        run_haystack(
                            cfg,
                            &embedder,
                            (asker.as_mut(), local.as_mut()),
                            haystack,
                            &questions,
                            &writers,
                            &|| {
                                let mut n = counter.lock().unwrap_or_else(|e| e.into_inner());
                                *n += 1;
                                progress(*n, total);
                            },
                        )?;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| Error::Embedder("an eval job panicked".into()))??;
        }
        Ok(())
    })?;
    drop(writers);
    summarize(&cfg.out, cfg.benchmark, &data.defects, &selected)
}

/// Opens a JSON-lines file for appending, first cutting a partial last line (left by a run that
/// was killed mid-write) so that the next line starts clean.
fn open_append(path: &Path) -> Result<std::fs::File> {
    if let Ok(bytes) = std::fs::read(path) {
        if bytes.last().is_some_and(|b| *b != b'\n') {
            let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            std::fs::OpenOptions::new().write(true).open(path)?.set_len(keep as u64)?;
        }
    }
    Ok(std::fs::OpenOptions::new().create(true).append(true).open(path)?)
}

type Writers = Mutex<(std::fs::File, std::fs::File)>;

fn write_line(file: &mut std::fs::File, value: &impl Serialize) -> Result<()> {
    let mut line = serde_json::to_string(value).map_err(|e| Error::Embedder(e.to_string()))?;
    line.push('\n');
    file.write_all(line.as_bytes())?;
    file.flush()?;
    Ok(())
}

/// A haystack's schema in the run's PostgreSQL database, dropped with it.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn create(url: &str, user: &str) -> Result<Schema> {
        let name = format!("h_{}", &blake3::hash(user.as_bytes()).to_hex()[..24]);
        let mut c = postgres::Client::connect(url, postgres::NoTls)
            .map_err(|e| mnemon::Error::Database(format!("--postgres: {e}")))?;
        c.batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"))
            .map_err(|e| mnemon::Error::Database(format!("--postgres: {e}")))?;
        Ok(Schema { url: url.to_owned(), name })
    }

    fn backend(&self) -> Result<Arc<dyn mnemon::stores::Backend>> {
        Ok(Arc::new(mnemon_postgres::PgBackend::new(&self.url)?.schema(&self.name)?))
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// A store holding only `q`'s evidence sessions (LongMemEval: its answer sessions; LoCoMo: the
/// sessions of its evidence rounds), opened and filled as the haystack's store is; with the
/// directory it lives in.
fn oracle_store(
    cfg: &RunConfig,
    embedder: &Arc<dyn Embedder>,
    haystack: &data::Haystack,
    rounds: &[mnemon::rounds::StoredRound],
    evidence: &BTreeMap<String, Vec<Vec<String>>>,
    q: &Question,
) -> Result<(Memory, tempfile::TempDir)> {
    let mut sessions: BTreeSet<&str> = q.evidence_sessions.iter().map(String::as_str).collect();
    for r in rounds {
        if evidence["turn"].iter().any(|u| u.contains(&r.key)) {
            sessions.insert(r.session.as_str());
        }
    }
    let dir = tempfile::tempdir()?;
    let memory = open_store(cfg, embedder, Location::File(dir.path().join("oracle.db")))?;
    ingest(&memory, haystack, |s| s.is_some_and(|s| sessions.contains(s)))?;
    Ok((memory, dir))
}

/// A store for a haystack, under the run's engine configuration and extractor (inline).
fn open_store(cfg: &RunConfig, embedder: &Arc<dyn Embedder>, location: Location) -> Result<Memory> {
    let engine = Config { background_extraction: false, ..cfg.engine.clone() };
    Memory::builder(location)
        .embedder(embedder.clone())
        .optional_extractor(cfg.extractor.clone())
        .config(engine)
        .open()
}

/// Adds the sessions of `haystack` that `keep` keeps (by session id), one transaction per
/// session, as `mnemon ingest` does.
fn ingest(memory: &Memory, haystack: &data::Haystack, keep: impl Fn(Option<&str>) -> bool) -> Result<()> {
    for session in haystack.messages.chunk_by(|a, b| a.session == b.session) {
        if keep(session[0].session.as_deref()) {
            memory.add(session, &haystack.user)?;
        }
    }
    Ok(())
}

fn run_haystack(
    cfg: &RunConfig,
    embedder: &Arc<dyn Embedder>,
    // The remote QA reader and the local one, each if asked for.
    (mut asker, mut local): (Option<&mut Asker<'_>>, Option<&mut LocalAsker<'_>>),
    haystack: &data::Haystack,
    questions: &[&Question],
    writers: &Writers,
    tick: &dyn Fn(),
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let schema = match &cfg.postgres {
        Some(url) => Some(Schema::create(url, &haystack.user)?),
        None => None,
    };
    let location = match &schema {
        Some(s) => Location::Backend(s.backend()?),
        None => Location::File(dir.path().join("store.db")),
    };
    let memory = open_store(cfg, embedder, location)?;
    let started = Instant::now();
    ingest(&memory, haystack, |_| true)?;
    let seconds = started.elapsed().as_secs_f64();
    let rounds = memory.rounds(&haystack.user)?;
    let counts = match cfg.extractor {
        Some(_) => Some(FactCounts::of(&memory.decisions(&haystack.user)?)),
        None => None,
    };
    {
        let mut w = writers.lock().unwrap_or_else(|e| e.into_inner());
        write_line(&mut w.1, &Timing::Ingest { user: haystack.user.clone(), rounds: rounds.len(), seconds })?;
        if let Some(counts) = counts {
            write_line(&mut w.1, &Timing::Facts { user: haystack.user.clone(), counts })?;
        }
    }
    for q in questions {
        let turn_ids: BTreeSet<&str> = q.evidence_turns.iter().map(String::as_str).collect();
        let sessions: BTreeSet<&str> = q.evidence_sessions.iter().map(String::as_str).collect();
        let mut evidence = BTreeMap::new();
        // Turn level: each round holding an evidence message is a unit.
        evidence.insert(
            "turn".to_string(),
            rounds
                .iter()
                .filter(|r| r.turns.iter().any(|t| t.id.as_deref().is_some_and(|id| turn_ids.contains(id))))
                .map(|r| vec![r.key.clone()])
                .collect::<Vec<_>>(),
        );
        // Session level: each evidence session (all of its stored rounds) is a unit.
        if cfg.benchmark == Benchmark::LongMemEval {
            evidence.insert(
                "session".to_string(),
                sessions
                    .iter()
                    .map(|s| rounds.iter().filter(|r| r.session == *s).map(|r| r.key.clone()).collect())
                    .collect(),
            );
        }
        let query = Query {
            date: q.date.as_deref().map(|d| Timestamp::parse_field(d, "date")).transpose()?,
            top_k: Some(KS[KS.len() - 1]),
            ranking: cfg.ranking,
            ..Query::new(&q.question)
        };
        let asked = query.clone();
        let started = Instant::now();
        let recall = memory.recall(asked, &haystack.user)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let context = memory.get_context(
            Query { top_k: None, budget: cfg.engine.context_budget, ..query.clone() },
            &haystack.user,
        )?;
        // The evidence rounds' own tokens, and the answer's forms (dates read against the first
        // evidence round's time).
        let evidence_tokens: BTreeMap<&str, usize> = rounds
            .iter()
            .filter(|r| evidence["turn"].iter().any(|u| u.contains(&r.key)))
            .map(|r| {
                // As the blocks show it: long replies trimmed for the question.
                let shown = mnemon::context::trim(&r.turns, &q.question).unwrap_or_else(|| r.turns.clone());
                (r.key.as_str(), shown.iter().map(|t| count_tokens(&turn_line(t))).sum())
            })
            .collect();
        let first_evidence =
            rounds.iter().find(|r| evidence_tokens.contains_key(r.key.as_str())).map(|r| r.ts.as_str());
        let forms = if q.abstention {
            Err(answer::LeftOut::Abstention)
        } else {
            answer::forms(&q.answer, first_evidence)
        };
        let mut contexts = BTreeMap::new();
        let mut budgets = BTreeMap::new();
        let mut texts: BTreeMap<usize, String> = BTreeMap::new();
        for budget in metrics::BUDGETS {
            let at = Query { top_k: Some(metrics::CONTEXT_DEPTH), budget: Some(budget), ..query.clone() };
            let c = memory.get_context(at, &haystack.user)?;
            budgets.insert(
                budget,
                Budgeted {
                    tokens: c.tokens,
                    evidence_tokens: c.rounds.iter().filter_map(|k| evidence_tokens.get(k.as_str())).sum(),
                    answer: forms.as_ref().ok().map(|f| answer::occurs(f, &c.text)),
                },
            );
            contexts.insert(budget, c.rounds);
            texts.insert(budget, c.text);
        }
        let (qa, calls) = match asker.as_deref_mut() {
            Some(asker) => {
                let before = asker.calls;
                let qa = asker.answer(cfg.benchmark, q, &context.text)?;
                let after = asker.calls;
                let calls = Calls {
                    reader: after.reader - before.reader,
                    reader_cached: after.reader_cached - before.reader_cached,
                    judge: after.judge - before.judge,
                    judge_cached: after.judge_cached - before.judge_cached,
                };
                (qa, Some(calls))
            }
            None => (None, None),
        };
        // An abstention question is read only for a judge (no gold answer to look for), and
        // LoCoMo's adversarial ones never (as in QA mode).
        let read =
            |r: &LocalAsker<'_>| !q.abstention || (r.judged() && cfg.benchmark == Benchmark::LongMemEval);
        let reads = match local.as_deref_mut() {
            Some(reader) if read(reader) => {
                let mut read_from = vec![("none".to_owned(), String::new())];
                let oracle = oracle_store(cfg, embedder, haystack, &rounds, &evidence, q)?;
                for &b in &reader.budgets() {
                    let at = Query { top_k: Some(metrics::CONTEXT_DEPTH), budget: Some(b), ..query.clone() };
                    let text = match texts.get(&b) {
                        Some(t) => t.clone(),
                        None => memory.get_context(at.clone(), &haystack.user)?.text,
                    };
                    read_from.push((format!("mnemon@{b}"), text));
                    read_from.push((format!("oracle@{b}"), oracle.0.get_context(at, &haystack.user)?.text));
                }
                reader.read(cfg.benchmark, q, forms.as_ref().ok().map(Vec::as_slice), &read_from)?
            }
            _ => BTreeMap::new(),
        };
        let prediction = Prediction {
            id: q.id.clone(),
            user: q.user.clone(),
            kind: q.kind.clone(),
            abstention: q.abstention,
            retrieved: recall
                .rounds
                .iter()
                .enumerate()
                .map(|(i, r)| Retrieved { key: r.key.clone(), rank: i + 1, score: r.score })
                .collect(),
            evidence,
            context_tokens: context.tokens,
            context_rounds: context.rounds.len(),
            contexts,
            budgets,
            answer_left_out: forms.err().map(|why| why.as_str().to_owned()),
            qa,
            reads,
        };
        let mut w = writers.lock().unwrap_or_else(|e| e.into_inner());
        write_line(&mut w.0, &prediction)?;
        write_line(&mut w.1, &Timing::Recall { id: q.id.clone(), ms })?;
        if let Some(calls) = calls {
            write_line(&mut w.1, &Timing::Qa { id: q.id.clone(), calls })?;
        }
        drop(w);
        tick();
    }
    Ok(())
}

/// A turn's line as a context shows it: `role: text`, or `Speaker (role): text`.
fn turn_line(t: &Turn) -> String {
    format!("{}: {}\n", mnemon::internals::turn_label(t), t.content)
}

/// Recomputes `summary.json` and `report.md` from the run directory's files.
pub fn summarize(
    out: &Path,
    benchmark: Benchmark,
    defects: &Defects,
    selected: &[&Question],
) -> Result<Summary> {
    let wanted: BTreeSet<&str> = selected.iter().map(|q| q.id.as_str()).collect();
    let mut predictions: Vec<Prediction> = read_lines::<Prediction>(&out.join("predictions.jsonl"))?
        .into_iter()
        .filter(|p| wanted.contains(p.id.as_str()))
        .collect();
    predictions.sort_by(|a, b| a.id.cmp(&b.id));
    predictions.dedup_by(|a, b| a.id == b.id);
    let timings: Vec<Timing> = read_lines(&out.join("timings.jsonl"))?;
    let mut speed = Speed::default();
    let mut ingest_seconds = 0.0;
    let mut recall_ms = Vec::new();
    let mut facts: Option<FactCounts> = None;
    for t in &timings {
        match t {
            Timing::Ingest { rounds, seconds, .. } => {
                speed.haystacks += 1;
                speed.rounds += rounds;
                ingest_seconds += seconds;
            }
            Timing::Recall { ms, .. } => recall_ms.push(*ms),
            Timing::Qa { calls, .. } => {
                let total = speed.qa_calls.get_or_insert_with(Calls::default);
                total.reader += calls.reader;
                total.reader_cached += calls.reader_cached;
                total.judge += calls.judge;
                total.judge_cached += calls.judge_cached;
            }
            Timing::Facts { counts, .. } => facts.get_or_insert_with(FactCounts::default).add(counts),
        }
    }
    recall_ms.sort_by(f64::total_cmp);
    if speed.rounds > 0 {
        speed.ingest_seconds_per_round = ingest_seconds / speed.rounds as f64;
        speed.ingest_seconds_per_haystack = ingest_seconds / speed.haystacks as f64;
    }
    speed.recall_ms_p50 = metrics::percentile(&recall_ms, 0.5);
    speed.recall_ms_p95 = metrics::percentile(&recall_ms, 0.95);
    let summary = Summary {
        benchmark,
        metrics: metrics::metrics(&predictions),
        speed,
        facts,
        defects: defects.clone(),
    };
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n",
    )?;
    std::fs::write(out.join("report.md"), report::report(&summary))?;
    Ok(summary)
}
