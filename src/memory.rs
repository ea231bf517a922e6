//! `Memory`: the public face of the engine. Write path, read path and export meet here; SQL
//! stays in `store`, scoring in `rank`, formatting in `render`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use serde::Serialize;

use crate::config::Config;
use crate::conflict::{conflict, newer, screen, Rule, Statement};
use crate::embed::vector::cosine;
use crate::embed::{Embedder, EmbedderPins};
use crate::error::{Error, Result};
use crate::extract::{Extractor, ExtractorPins};
use crate::lexical::Bm25;
use crate::rank::{self, Index};
use crate::render::{self, RenderRound, Style};
use crate::round::{form_rounds, normalized_key, Message, Turn};
use crate::store::{write, FactRow, OpenMode, Pins, RoundRow, Store};
use crate::time::{day_number, query_window, split_date_prefix, DateWindow, Timestamp};

/// A memory store: one SQLite file, one embedder, one configuration.
///
/// `Memory` is `Send + Sync`; calls from several threads are serialized on the store.
///
/// ```
/// use mnemon::{Config, HashingEmbedder, Memory, Message};
/// # let dir = tempfile::tempdir().unwrap();
/// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
/// memory.add(&[
///     Message::user("I just adopted a beagle named Toby.", "2026-03-01T10:00:00"),
///     Message::assistant("Congratulations! Beagles love long walks.", "2026-03-01T10:00:05"),
/// ], "alice")?;
/// let context = memory.get_context("What is my dog called?", "alice")?;
/// assert!(context.text.contains("Toby"));
/// assert_eq!(context.rounds.len(), 1);
/// # Ok::<(), mnemon::Error>(())
/// ```
pub struct Memory {
    shared: Arc<Shared>,
    /// The background extraction worker, when there is an extractor and
    /// [`Config::background_extraction`] is on.
    worker: Option<std::thread::JoinHandle<()>>,
}

/// What the caller's threads and the extraction worker share.
struct Shared {
    store: Mutex<Store>,
    embedder: Option<Arc<dyn Embedder>>,
    extractor: Option<Arc<dyn Extractor>>,
    config: Config,
    index: Mutex<HashMap<i64, CachedUser>>,
    /// Held while the extraction queue is being drained: one drainer at a time.
    drain: Mutex<()>,
    /// The worker's wake-up and stop signals.
    signal: Mutex<WorkerSignal>,
    wake: Condvar,
}

#[derive(Default)]
struct WorkerSignal {
    stop: bool,
    wake: bool,
}

/// A user's vectors held in memory, valid while the user's write counter is `version`.
struct CachedUser {
    version: i64,
    index: Index,
    /// Built only when fusion is on.
    words: Option<Bm25>,
}

/// What an [`Memory::add`] call did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AddReport {
    /// Keys of the rounds stored, in input order.
    pub stored: Vec<String>,
    /// Rounds not stored because the same session already holds them.
    pub duplicates: Vec<Duplicate>,
    /// Turns dropped because their content was empty or whitespace.
    pub empty_turns_dropped: usize,
}

/// A round skipped as a duplicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Duplicate {
    /// The key the round would have had.
    pub key: String,
    /// The stored round it duplicates.
    pub of: String,
    /// `None` for an exact (normalized-text) duplicate, else the cosine that matched.
    pub cosine: Option<f32>,
}

/// A question and its per-call options.
///
/// ```
/// let q = mnemon::Query::new("What did I buy last week?").date("2023/05/20 (Sat) 02:21").budget(1500);
/// assert_eq!(q.budget, Some(1500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query<'a> {
    /// The question; may start with `[Current date: <ts>]`.
    pub text: &'a str,
    /// The question's date (overrides a prefix); anchors its time window.
    pub date: Option<&'a str>,
    /// Rounds to return (overrides [`Config::top_k`]).
    pub top_k: Option<usize>,
    /// Token budget for [`Memory::get_context`] (overrides [`Config::context_budget`]).
    pub budget: Option<usize>,
}

impl<'a> Query<'a> {
    /// A question with no options.
    pub fn new(text: &'a str) -> Query<'a> {
        Query { text, date: None, top_k: None, budget: None }
    }
    /// Sets the question's date.
    pub fn date(self, date: &'a str) -> Query<'a> {
        Query { date: Some(date), ..self }
    }
    /// Sets the number of rounds.
    pub fn top_k(self, k: usize) -> Query<'a> {
        Query { top_k: Some(k), ..self }
    }
    /// Sets the token budget.
    pub fn budget(self, tokens: usize) -> Query<'a> {
        Query { budget: Some(tokens), ..self }
    }
}

impl<'a> From<&'a str> for Query<'a> {
    fn from(text: &'a str) -> Query<'a> {
        Query::new(text)
    }
}

impl<'a> From<&'a String> for Query<'a> {
    fn from(text: &'a String) -> Query<'a> {
        Query::new(text)
    }
}

/// The ranked rounds for a question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recall {
    /// Best first.
    pub rounds: Vec<RecalledRound>,
    /// The date the question was anchored on, if any (`YYYY-MM-DD`).
    pub anchor: Option<String>,
    /// The question's time window, if it names one (`[start, end]`, inclusive).
    pub window: Option<[String; 2]>,
}

/// One recalled round. Equality compares the public fields.
#[derive(Debug, Clone, Serialize)]
pub struct RecalledRound {
    /// Stable key: sortable ts + `#` + content hash.
    pub key: String,
    /// The round's session.
    pub session: String,
    /// The round's timestamp, as the caller gave it.
    pub ts: String,
    /// The verbatim turns.
    pub turns: Vec<Turn>,
    /// Final score (cosine plus the time bonus).
    pub score: f32,
    /// Cosine between question and round.
    pub cosine: f32,
    /// Whether the round's date is in the question's window.
    pub time_match: bool,
    /// The round's active facts, in extraction order (empty without an extractor).
    pub facts: Vec<Fact>,
    #[serde(skip)]
    id: i64,
    #[serde(skip)]
    ts_unix: i64,
}

impl PartialEq for RecalledRound {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.key,
            &self.session,
            &self.ts,
            &self.turns,
            self.score,
            self.cosine,
            self.time_match,
            &self.facts,
        ) == (
            &other.key,
            &other.session,
            &other.ts,
            &other.turns,
            other.score,
            other.cosine,
            other.time_match,
            &other.facts,
        )
    }
}

/// A fact extracted from a round and stored (ENGINE §3.5–3.6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    /// `<round key>/<n>`: its round and its place among the round's stored facts.
    pub key: String,
    /// One self-contained sentence.
    pub content: String,
    /// The excerpt of the round it comes from, with its role prefix.
    pub raw: String,
    /// The time mention, as it occurs in the round.
    pub mention: Option<String>,
    /// The mention resolved against the round's date (`YYYY-MM-DD`, `YYYY-MM` or `YYYY`).
    pub valid_time: Option<String>,
    /// Triple subject.
    pub subject: Option<String>,
    /// Triple predicate.
    pub predicate: Option<String>,
    /// Triple object.
    pub object: Option<String>,
    /// Current salience (above 0: superseded facts are never returned).
    pub salience: f32,
}

impl From<FactRow> for Fact {
    fn from(r: FactRow) -> Fact {
        Fact {
            key: r.key,
            content: r.content,
            raw: r.raw,
            mention: r.mention,
            valid_time: r.valid_time,
            subject: r.subject,
            predicate: r.predicate,
            object: r.object,
            salience: r.salience,
        }
    }
}

impl Fact {
    /// The fact as rendered under `facts:`: its sentence, then its date when resolved.
    pub fn line(&self) -> String {
        match &self.valid_time {
            Some(v) => format!("{} ({v})", self.content),
            None => self.content.clone(),
        }
    }
}

/// A rendered context and what went into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Context {
    /// The prompt-ready block (empty when nothing was recalled).
    pub text: String,
    /// Keys of the rounds rendered, best first.
    pub rounds: Vec<String>,
    /// `o200k_base` tokens in `text`.
    pub tokens: usize,
    /// Whether recalled rounds were left out to respect the budget.
    pub truncated: bool,
    /// Keys of the rounds left out, best first.
    pub omitted: Vec<String>,
}

/// A stored round, as listed by [`Memory::rounds`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredRound {
    /// Stable key: sortable ts + `#` + content hash.
    pub key: String,
    /// The round's session.
    pub session: String,
    /// The round's timestamp, as the caller gave it.
    pub ts: String,
    /// The verbatim turns.
    pub turns: Vec<Turn>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Readable Markdown: a heading per session, rounds as quoted blocks.
    Markdown,
    /// Plain text with every field and the decision log.
    Text,
    /// Lossless JSON Lines dump (pins, rounds with vectors, decisions), for [`Memory::import`].
    Jsonl,
}

/// What [`Memory::consolidate`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ConsolidateReport {
    /// Facts superseded by the conflict pass.
    pub superseded: usize,
    /// Facts whose salience decay lowered.
    pub decayed: usize,
}

/// One entry of the decision log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Logical time (sortable timestamp).
    pub at: String,
    /// What was decided (`round.stored`, `fact.superseded`, …).
    pub kind: String,
    /// The record it concerns (a round or fact key, or the user).
    pub record: String,
    /// The other record involved (what it duplicates, what superseded it, …).
    pub other: Option<String>,
    /// Details as JSON.
    pub detail: String,
}

/// What [`Memory::forget_user`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ForgetReport {
    /// Rounds removed, with their vectors and word-index rows.
    pub rounds: usize,
}

pub(crate) fn check_user(user_id: &str) -> Result<()> {
    if user_id.trim().is_empty() {
        return Err(Error::input("user_id", "is empty"));
    }
    if user_id.len() > 256 {
        return Err(Error::input("user_id", "is longer than 256 bytes"));
    }
    if user_id.chars().any(char::is_control) {
        return Err(Error::input("user_id", "contains a control character"));
    }
    Ok(())
}

/// Key of a round: sortable ts, then 12 hex digits of blake3 over session and text.
pub(crate) fn round_key(ts: &Timestamp, session: &str, text: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(session.as_bytes());
    h.update(&[0]);
    h.update(text.as_bytes());
    format!("{}#{}", ts.sortable(), &h.finalize().to_hex()[..12])
}

fn expected_pins(e: &EmbedderPins, x: Option<&ExtractorPins>, config: &Config) -> Pins {
    let mut pins = vec![
        ("embedder.name", e.name.clone()),
        ("embedder.revision", e.revision.clone()),
        ("embedder.dim", e.dim.to_string()),
        ("embedder.template", e.template.clone()),
        ("extractor", x.map_or_else(|| "none".to_owned(), |x| x.name.clone())),
        ("rounds.dedup_cosine", config.dedup_cosine.to_string()),
        ("rounds.normalizer", "v1".to_owned()),
    ];
    if let Some(x) = x {
        pins.extend([
            ("extractor.model_blake3", x.model_blake3.clone()),
            ("extractor.quant", x.quant.clone()),
            ("extractor.runtime", x.runtime.clone()),
            ("extractor.decode", x.decode.clone()),
            ("extractor.prompt", x.prompt.clone()),
            ("extractor.prefilter", crate::prefilter::prefilter_blake3()),
            ("facts.verify", crate::facts::VERIFY_VERSION.to_owned()),
            ("facts.resolver", crate::resolve::RESOLVER_VERSION.to_owned()),
            ("facts.dedup_cosine", config.fact_dedup_cosine.to_string()),
            ("facts.conflict", crate::conflict::CONFLICT_VERSION.to_owned()),
            ("facts.lexicons", crate::normalize::normalize_blake3()),
        ]);
    }
    Pins::new(pins)
}

impl Memory {
    /// Opens the store at `path`, creating it if needed. A store built under another embedder or
    /// write configuration is refused with [`Error::PinMismatch`] naming every differing pin.
    pub fn open(path: impl AsRef<Path>, embedder: impl Embedder + 'static, config: Config) -> Result<Memory> {
        Memory::open_shared(path, Arc::new(embedder), config)
    }

    /// [`Memory::open`] with an embedder shared with other stores.
    pub fn open_shared(
        path: impl AsRef<Path>,
        embedder: Arc<dyn Embedder>,
        config: Config,
    ) -> Result<Memory> {
        Memory::open_with(path, embedder, None, config)
    }

    /// Opens a store that extracts facts from every round with `extractor` (ENGINE §3.5–3.6).
    /// The extractor's pins, the pre-filter's lexicons and the verification rules are pinned: a
    /// store built without an extractor, or with another, is refused. With
    /// [`Config::background_extraction`] (the default) a worker thread drains the extraction queue;
    /// rounds a previous process left queued are resumed at once.
    pub fn open_with(
        path: impl AsRef<Path>,
        embedder: Arc<dyn Embedder>,
        extractor: Option<Arc<dyn Extractor>>,
        config: Config,
    ) -> Result<Memory> {
        config.validate()?;
        let pins = expected_pins(&embedder.pins(), extractor.as_ref().map(|x| x.pins()).as_ref(), &config);
        let store = Store::open(path.as_ref(), &config, OpenMode::Expect(&pins))?;
        let background = extractor.is_some() && config.background_extraction;
        let shared = Arc::new(Shared::new(store, Some(embedder), extractor, config));
        let worker = if background {
            let s = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("mnemon-extract".into())
                .spawn(move || s.work())
                .map_err(Error::Io)?;
            shared.signal();
            Some(handle)
        } else {
            None
        };
        Ok(Memory { shared, worker })
    }

    /// Opens an existing store with the pins it was built with and no models: export, import,
    /// forget and inspection work; [`add`](Memory::add) and [`recall`](Memory::recall) return
    /// [`Error::NoEmbedder`].
    pub fn open_stored(path: impl AsRef<Path>, config: Config) -> Result<Memory> {
        config.validate()?;
        let store = Store::open(path.as_ref(), &config, OpenMode::Stored)?;
        Ok(Memory { shared: Arc::new(Shared::new(store, None, None, config)), worker: None })
    }

    /// Rounds of `user_id` (or of every user, with `None`) that wait for extraction.
    pub fn pending(&self, user_id: Option<&str>) -> Result<usize> {
        let store = self.shared.lock_store();
        match user_id {
            None => store.pending(None),
            Some(name) => {
                check_user(name)?;
                match store.user(name)? {
                    Some((user, _)) => store.pending(Some(user)),
                    None => Ok(0),
                }
            }
        }
    }

    /// Extracts every queued round, in round order, in the calling thread (taking turns with the
    /// worker), and returns when the queue is empty. Without an extractor it is an error if any
    /// round waits ([`Error::NoExtractor`]), else a no-op. The first failure is returned and its
    /// round stays queued.
    pub fn flush(&self) -> Result<()> {
        self.shared.drain()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The store's pins (key → value), including `pins_hash`.
    pub fn pins(&self) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(self.shared.lock_store().pins.with_hash())
    }

    /// SQLite, sqlite-vec and FTS5 versions of this build.
    pub fn versions(&self) -> Result<Vec<(String, String)>> {
        self.shared.lock_store().versions()
    }

    /// Every user with a record in the store, sorted.
    pub fn users(&self) -> Result<Vec<String>> {
        self.shared.lock_store().user_names()
    }

    /// Stores a batch of messages for `user_id`, in one transaction.
    ///
    /// Messages are validated first (a bad one fails the whole call, naming
    /// `messages[i].field`); empty turns are dropped; the rest form rounds. A round whose
    /// normalized text, or whose embedding at cosine ≥ `dedup_cosine`, matches a round of the
    /// same session is not stored. Every decision goes to the log. On any error the store is
    /// left exactly as it was.
    ///
    /// With an extractor, each stored round is queued for extraction in the same transaction.
    /// In the background mode (the default) `add` returns once the rounds are committed; see
    /// [`flush`](Memory::flush) and [`pending`](Memory::pending). Inline
    /// ([`Config::background_extraction`] off), `add` extracts before returning; an extraction
    /// error is returned after the rounds were committed, and they stay queued.
    pub fn add(&self, messages: &[Message], user_id: &str) -> Result<AddReport> {
        check_user(user_id)?;
        let embedder = self.shared.embedder("add")?;
        let (rounds, empty_turns_dropped) = form_rounds(messages)?;
        let mut report = AddReport { empty_turns_dropped, ..AddReport::default() };
        if rounds.is_empty() {
            return Ok(report);
        }
        let texts: Vec<String> = rounds.iter().map(|r| r.text()).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_documents(&refs)?;
        let dim = self.shared.lock_store().pins.dim()?;
        if vectors.len() != rounds.len() || vectors.iter().any(|v| v.len() != dim) {
            return Err(Error::Embedder(format!("expected {} vectors of dimension {dim}", rounds.len())));
        }

        let mut store = self.shared.lock_store();
        let tx = store.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let user = write::ensure_user(&tx, user_id)?;
        let version = write::user_version(&tx, user)?;
        let mut sessions: HashMap<String, Vec<(String, Vec<f32>)>> = HashMap::new();
        let mut added: Vec<(i64, i32, &[f32], &str)> = Vec::new();
        let mut latest: Option<&Timestamp> = None;
        for ((round, text), vector) in rounds.iter().zip(&texts).zip(&vectors) {
            let key = round_key(&round.ts, &round.session, text);
            let at = round.ts.sortable();
            let norm_key = normalized_key(text);
            if let Some(of) = write::exact_duplicate(&tx, user, &round.session, &norm_key)? {
                write::log(&tx, user, &at, "round.duplicate", &key, Some(&of), r#"{"match":"exact"}"#)?;
                report.duplicates.push(Duplicate { key, of, cosine: None });
                continue;
            }
            let members = match sessions.entry(round.session.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(write::session_vectors(&tx, user, &round.session)?)
                }
            };
            // Every round of the session is probed, not only the nearest.
            let best = nearest(vector, members.iter().map(|(k, v)| (k, v.as_slice())));
            if let Some((cos, of)) = best.filter(|(c, _)| *c >= self.shared.config.dedup_cosine) {
                let detail = serde_json::json!({"match": "cosine", "cosine": cos}).to_string();
                write::log(&tx, user, &at, "round.duplicate", &key, Some(of), &detail)?;
                report.duplicates.push(Duplicate { key, of: of.clone(), cosine: Some(cos) });
                continue;
            }
            let row = RoundRow {
                id: 0,
                key: key.clone(),
                session: round.session.clone(),
                ts: round.ts.raw().to_owned(),
                ts_unix: round.ts.unix_seconds(),
                day: day_number(round.ts.date()),
                norm_key,
                turns: round.turns.clone(),
                text: text.clone(),
            };
            let id = write::insert_round(&tx, user, &row, vector)?;
            write::log(&tx, user, &at, "round.stored", &key, None, "{}")?;
            if self.shared.extractor.is_some() {
                write::enqueue(&tx, user, id)?;
            }
            members.push((key.clone(), vector.clone()));
            added.push((id, row.day, vector, text.as_str()));
            if latest.is_none_or(|l| round.ts > *l) {
                latest = Some(&round.ts);
            }
            report.stored.push(key);
        }
        write::touch_user(&tx, user, latest.map(|t| (t.raw(), t.unix_seconds())))?;
        tx.commit()?;
        drop(store);
        tracing::debug!(
            user = user_id,
            stored = report.stored.len(),
            duplicates = report.duplicates.len(),
            empty_turns_dropped = report.empty_turns_dropped,
            "add committed"
        );

        let mut index = self.shared.lock_index();
        match index.get_mut(&user) {
            Some(cached) if cached.version == version => {
                cached.version = version + 1;
                for (id, day, v, text) in added {
                    cached.index.push(id, day, 1.0, v);
                    if let Some(words) = &mut cached.words {
                        words.push(id, text);
                    }
                }
            }
            _ => {
                index.remove(&user);
            }
        }
        drop(index);
        if self.shared.extractor.is_some() && !report.stored.is_empty() {
            match self.worker {
                Some(_) => self.shared.signal(),
                // Inline extraction: the rounds are committed; a failure here leaves them queued
                // for `flush`.
                None => self.shared.drain()?,
            }
        }
        Ok(report)
    }

    /// The `top_k` rounds of `user_id` that best answer `query`, best first.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, Message, Query};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.add(&[Message::user("I bought running shoes.", "2023-05-18T10:00:00"),
    ///              Message::user("I visited my aunt.", "2023-01-02T10:00:00")], "bob")?;
    /// let recall = memory.recall(Query::new("What did I buy in the past week?").date("2023-05-20"), "bob")?;
    /// assert_eq!(recall.window, Some(["2023-05-13".to_string(), "2023-05-20".to_string()]));
    /// assert!(recall.rounds[0].time_match);
    /// assert!(recall.rounds[0].score > recall.rounds[1].score);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    ///
    /// The question is embedded without its `[Current date: …]` prefix; the date (the query's,
    /// else the prefix's, else the user's logical now) anchors its time window. An unknown user
    /// has no rounds.
    pub fn recall<'q>(&self, query: impl Into<Query<'q>>, user_id: &str) -> Result<Recall> {
        let query = query.into();
        check_user(user_id)?;
        let embedder = self.shared.embedder("recall")?;
        let (prefix_date, bare) = split_date_prefix(query.text);
        if bare.is_empty() {
            return Err(Error::input("query", "is empty"));
        }
        let explicit = query
            .date
            .map(|d| {
                Timestamp::parse(d).map_err(|_| Error::input("date", format!("{d:?} is not a timestamp")))
            })
            .transpose()?;
        let k = query.top_k.unwrap_or(self.shared.config.top_k);
        if !(1..=1000).contains(&k) {
            return Err(Error::input("top_k", "must be in 1..=1000"));
        }
        let query_vector = embedder.embed_query(bare)?;

        let store = self.shared.lock_store();
        let Some((user, version)) = store.user(user_id)? else {
            return Ok(Recall { rounds: Vec::new(), anchor: None, window: None });
        };
        let anchor = match explicit.or(prefix_date) {
            Some(ts) => Some(ts.date()),
            None => store
                .user_now(user)?
                .and_then(|(raw, unix)| Timestamp::from_parts(raw, unix))
                .map(|t| t.date()),
        };
        let window: Option<DateWindow> = anchor.and_then(|a| query_window(bare, a));
        let dim = store.pins.dim()?;
        if query_vector.len() != dim {
            return Err(Error::Embedder(format!(
                "query vector has dimension {}, store has {dim}",
                query_vector.len()
            )));
        }
        let scored = {
            let mut index = self.shared.lock_index();
            let fresh = index.get(&user).is_some_and(|c| c.version == version);
            if !fresh {
                tracing::debug!(user = user_id, version, "loading the user's vectors");
                let words = match self.shared.config.rrf_k {
                    Some(_) => {
                        let mut words = Bm25::default();
                        for (id, text) in
                            store.user_texts(user)?.into_iter().chain(store.user_fact_texts(user)?)
                        {
                            words.push(id, &text);
                        }
                        Some(words)
                    }
                    None => None,
                };
                let mut records = Index::new(store.user_vectors(user)?, dim);
                records.extend(store.user_fact_vectors(user)?);
                index.insert(user, CachedUser { version, index: records, words });
            }
            let CachedUser { index, words, .. } = &index[&user];
            match self.shared.config.rrf_k {
                None => index.top_k(&query_vector, window, self.shared.config.time_weight, k),
                Some(rrf) => {
                    let dense = index.top_k(
                        &query_vector,
                        window,
                        self.shared.config.time_weight,
                        rank::FUSION_DEPTH,
                    );
                    // A round's lexical rank is its best document's (the round's text or a fact's).
                    let mut seen = std::collections::HashSet::new();
                    let lexical: Vec<i64> = words
                        .as_ref()
                        .map(|w| {
                            w.top(bare, rank::FUSION_DEPTH)
                                .into_iter()
                                .map(|(id, _)| id)
                                .filter(|id| seen.insert(*id))
                                .collect()
                        })
                        .unwrap_or_default();
                    rank::fuse(&dense, &lexical, rrf, k, |id| {
                        index.score_of(id, &query_vector, window, self.shared.config.time_weight)
                    })
                }
            }
        };
        let ids: Vec<i64> = scored.iter().map(|s| s.id).collect();
        let rows = store.rounds_by_id(user, &ids)?;
        let mut facts = store.active_facts_of(user, &ids)?;
        let rounds = rows
            .into_iter()
            .zip(&scored)
            .map(|(row, s)| RecalledRound {
                facts: facts.remove(&row.id).unwrap_or_default().into_iter().map(Fact::from).collect(),
                key: row.key,
                session: row.session,
                ts: row.ts,
                turns: row.turns,
                score: s.score,
                cosine: s.cosine,
                time_match: s.time_match,
                id: row.id,
                ts_unix: row.ts_unix,
            })
            .collect();
        Ok(Recall {
            rounds,
            anchor: anchor.map(|a| a.to_string()),
            window: window.map(|w| [w.start.to_string(), w.end.to_string()]),
        })
    }

    /// The `k` nearest rounds by sqlite-vec's own KNN over the stored vectors, as `(key, cosine)`,
    /// nearest first (no time bonus). A cross-check of the in-memory index and a baseline for
    /// `mnemon bench`; [`recall`](Memory::recall) is the read path.
    #[doc(hidden)]
    pub fn nearest_by_sqlite_vec(
        &self,
        question: &str,
        user_id: &str,
        k: usize,
    ) -> Result<Vec<(String, f32)>> {
        check_user(user_id)?;
        let query = self.shared.embedder("recall")?.embed_query(question)?;
        let store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(Vec::new());
        };
        let hits = store.knn(user, &query, k)?;
        let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
        let rows = store.rounds_by_id(user, &ids)?;
        Ok(rows
            .into_iter()
            .zip(hits)
            .map(|(r, (_, d))| (r.key, crate::embed::vector::cosine_from_l2(d)))
            .collect())
    }

    /// Recalls and renders a prompt-ready block within the token budget (the query's, else
    /// [`Config::context_budget`]). The best round is always kept; `truncated` says whether
    /// others were left out.
    pub fn get_context<'q>(&self, query: impl Into<Query<'q>>, user_id: &str) -> Result<Context> {
        let query = query.into();
        let budget = query.budget.or(self.shared.config.context_budget);
        if budget == Some(0) {
            return Err(Error::input("budget", "must be at least 1"));
        }
        let recall = self.recall(query, user_id)?;
        let lines: Vec<Vec<String>> =
            recall.rounds.iter().map(|r| r.facts.iter().map(Fact::line).collect()).collect();
        let ranked: Vec<RenderRound<'_>> =
            recall.rounds.iter().zip(&lines).map(|(r, l)| recalled_view(r, l)).collect();
        let kept = match budget {
            Some(b) => render::fit_budget(&ranked, b),
            None => (0..ranked.len()).collect(),
        };
        let chosen: Vec<RenderRound<'_>> = kept.iter().map(|i| ranked[*i].clone()).collect();
        let text = render::render(&chosen, Style::Context);
        let omitted: Vec<String> =
            (0..ranked.len()).filter(|i| !kept.contains(i)).map(|i| recall.rounds[i].key.clone()).collect();
        Ok(Context {
            tokens: render::count_tokens(&text),
            rounds: kept.iter().map(|i| recall.rounds[*i].key.clone()).collect(),
            truncated: !omitted.is_empty(),
            omitted,
            text,
        })
    }

    /// Every round stored for `user_id`, oldest first (an unknown user has none).
    pub fn rounds(&self, user_id: &str) -> Result<Vec<StoredRound>> {
        check_user(user_id)?;
        let store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(Vec::new());
        };
        Ok(store
            .all_rounds(user)?
            .into_iter()
            .map(|r| StoredRound { key: r.key, session: r.session, ts: r.ts, turns: r.turns })
            .collect())
    }

    /// Everything stored for `user_id`, in the given format. Deterministic bytes.
    ///
    /// ```
    /// use mnemon::{Config, ExportFormat, HashingEmbedder, Memory, Message};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let md = memory.export("eve", ExportFormat::Markdown)?;
    /// assert!(md.contains("> **user:** I live in Porto."));
    /// let dump = memory.export("eve", ExportFormat::Jsonl)?;
    /// let copy = dir.path().join("copy.db");
    /// Memory::import(&copy, &dump, Config::default())?;
    /// assert_eq!(Memory::open_stored(&copy, Config::default())?.export("eve", ExportFormat::Markdown)?, md);
    /// assert_eq!(memory.forget_user("eve")?.rounds, 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn export(&self, user_id: &str, format: ExportFormat) -> Result<String> {
        check_user(user_id)?;
        let store = self.shared.lock_store();
        let (user, _) =
            store.user(user_id)?.ok_or_else(|| Error::input("user_id", "no such user in this store"))?;
        let rounds = store.all_rounds(user)?;
        let decisions = store.decisions(user)?;
        let facts = store.all_facts(user)?;
        if format == ExportFormat::Jsonl {
            let dim = store.pins.dim()?;
            let vectors_of =
                |all: crate::store::UserVectors, what: &str, n: usize| -> Result<Vec<Vec<f32>>> {
                    let v: Vec<Vec<f32>> = all.data.chunks_exact(dim).map(<[f32]>::to_vec).collect();
                    if v.len() != n {
                        return Err(Error::Corrupt {
                            path: store.path.clone(),
                            reason: format!("{what} without a vector"),
                        });
                    }
                    Ok(v)
                };
            let all = store.user_vectors(user)?;
            let by_id: HashMap<i64, &[f32]> =
                all.ids.iter().copied().zip(all.data.chunks_exact(dim)).collect();
            let vectors = rounds
                .iter()
                .map(|r| by_id.get(&r.id).map(|v| v.to_vec()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::Corrupt {
                    path: store.path.clone(),
                    reason: "a round has no vector".into(),
                })?;
            let fact_vectors = vectors_of(store.all_fact_vectors(user)?, "a fact", facts.len())?;
            let queued = store.queued_rounds(user)?;
            return crate::export::export_dump(
                &store.pins,
                user_id,
                &crate::export::Records {
                    rounds: &rounds,
                    vectors: &vectors,
                    facts: &facts,
                    fact_vectors: &fact_vectors,
                    queued: &queued,
                    decisions: &decisions,
                },
            );
        }
        let now = store.user_now(user)?.map(|(raw, _)| raw);
        crate::export::export(&store.pins, user_id, now.as_deref(), &rounds, &facts, &decisions, format)
    }

    /// `user_id`'s active facts, in the order they were stored. Superseded facts are on no read
    /// path; the exports and [`decisions`](Memory::decisions) show them and what replaced them.
    pub fn facts(&self, user_id: &str) -> Result<Vec<Fact>> {
        check_user(user_id)?;
        let store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(Vec::new());
        };
        Ok(store.all_facts(user)?.into_iter().filter(|f| f.salience > 0.0).map(Fact::from).collect())
    }

    /// The conflict pass over all of `user_id`'s active facts, in the order they were stored, then
    /// salience decay if [`Config::decay`] is set (ENGINE §7). On a store built by `add` the pass
    /// changes nothing; running `consolidate` twice equals running it once. Every change is
    /// logged at the user's logical now. Needs no model: a store opened with
    /// [`open_stored`](Memory::open_stored) consolidates too.
    pub fn consolidate(&self, user_id: &str) -> Result<ConsolidateReport> {
        check_user(user_id)?;
        let mut store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(ConsolidateReport::default());
        };
        let now = store.user_now(user)?;
        let at = now
            .as_ref()
            .map(|(raw, unix)| {
                Timestamp::from_parts(raw.clone(), *unix).map_or(raw.clone(), |t| t.sortable())
            })
            .unwrap_or_default();
        let tx = store.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut report = ConsolidateReport::default();
        let mut kept: Vec<crate::store::ActiveFact> = Vec::new();
        let mut dates: Vec<String> = Vec::new();
        for fact in write::active_facts(&tx, user)? {
            let date = date_of(fact.round_day);
            let (active, n) = settle(&tx, user, &at, &fact.row, &date, fact.ts_unix, &mut kept, &mut dates)?;
            report.superseded += n;
            if active {
                kept.push(fact);
                dates.push(date);
            }
        }
        if let (Some(decay), Some((_, now_unix))) = (self.shared.config.decay, now) {
            for fact in &kept {
                let days = (now_unix - fact.ts_unix) as f64 / 86_400.0;
                let target = decay.apply(fact.row.initial_salience, days);
                if target < fact.row.salience {
                    write::set_salience(&tx, fact.row.id, target)?;
                    let detail =
                        serde_json::json!({ "from": fact.row.salience, "to": target, "days": days.floor() });
                    write::log(&tx, user, &at, "fact.decayed", &fact.row.key, None, &detail.to_string())?;
                    report.decayed += 1;
                }
            }
        }
        if report.superseded + report.decayed > 0 {
            write::touch_user(&tx, user, None)?;
        }
        tx.commit()?;
        drop(store);
        self.shared.lock_index().remove(&user);
        Ok(report)
    }

    /// `user_id`'s decision log in logical order (an unknown user has none).
    pub fn decisions(&self, user_id: &str) -> Result<Vec<Decision>> {
        check_user(user_id)?;
        let store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(Vec::new());
        };
        Ok(store
            .decisions(user)?
            .into_iter()
            .map(|d| Decision { at: d.at, kind: d.kind, record: d.record, other: d.other, detail: d.detail })
            .collect())
    }

    /// Removes every round of `user_id` (rows, vectors, word index and decision log), keeping one
    /// decision that records the deletion. Unknown users are a no-op.
    pub fn forget_user(&self, user_id: &str) -> Result<ForgetReport> {
        check_user(user_id)?;
        let mut store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(ForgetReport { rounds: 0 });
        };
        let at = store
            .user_now(user)?
            .map(|(raw, unix)| Timestamp::from_parts(raw.clone(), unix).map_or(raw, |t| t.sortable()));
        let tx = store.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let rounds = write::forget_user(&tx, user)?;
        let detail = serde_json::json!({ "rounds": rounds }).to_string();
        write::log(&tx, user, at.as_deref().unwrap_or(""), "user.forgotten", user_id, None, &detail)?;
        write::touch_user(&tx, user, None)?;
        tx.commit()?;
        drop(store);
        self.shared.lock_index().remove(&user);
        Ok(ForgetReport { rounds })
    }

    /// Loads a JSONL dump made by [`export`](Memory::export) with [`ExportFormat::Jsonl`] into
    /// the store at `path`, creating it with the dump's pins if it does not exist. An existing
    /// store must have the same pins, and the dump's users must have no rounds there yet.
    /// Everything is checked before anything is written.
    pub fn import(path: impl AsRef<Path>, dump: &str, config: Config) -> Result<crate::export::ImportReport> {
        config.validate()?;
        crate::export::import(path.as_ref(), dump, &config)
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            {
                let mut signal = self.shared.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                signal.stop = true;
            }
            self.shared.wake.notify_all();
            // The worker stops after the round it is extracting; queued rounds stay queued.
            let _ = worker.join();
        }
    }
}

/// What the worker does with one queued round.
enum Step {
    /// The queue is empty.
    Empty,
    /// A round was handled.
    Done,
}

impl Shared {
    fn new(
        store: Store,
        embedder: Option<Arc<dyn Embedder>>,
        extractor: Option<Arc<dyn Extractor>>,
        config: Config,
    ) -> Shared {
        Shared {
            store: Mutex::new(store),
            embedder,
            extractor,
            config,
            index: Mutex::default(),
            drain: Mutex::new(()),
            signal: Mutex::default(),
            wake: Condvar::new(),
        }
    }

    // A panic inside a call cannot leave the store half-written (every write is a transaction
    // that rolls back on drop), and the index is checked against the store's write counter, so a
    // poisoned lock is safe to take over.
    fn lock_store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_index(&self) -> MutexGuard<'_, HashMap<i64, CachedUser>> {
        self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn embedder(&self, operation: &'static str) -> Result<&Arc<dyn Embedder>> {
        self.embedder.as_ref().ok_or(Error::NoEmbedder { operation })
    }

    /// Wakes the worker.
    fn signal(&self) {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).wake = true;
        self.wake.notify_all();
    }

    fn stopping(&self) -> bool {
        self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).stop
    }

    /// The worker: waits for a signal, drains the queue, until told to stop. A failure leaves its
    /// round queued and waits for the next signal (the next `add`); `flush` reports it.
    fn work(&self) {
        loop {
            {
                let mut signal = self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                while !signal.stop && !signal.wake {
                    signal = self.wake.wait(signal).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if signal.stop {
                    return;
                }
                signal.wake = false;
            }
            if let Err(e) = self.drain() {
                tracing::warn!(error = %e, "background extraction stopped; the round stays queued");
            }
        }
    }

    /// Extracts queued rounds in round order until the queue is empty (or the worker is told to
    /// stop).
    fn drain(&self) -> Result<()> {
        let _turn = self.drain.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if self.stopping() {
                return Ok(());
            }
            match self.extract_next()? {
                Step::Empty => return Ok(()),
                Step::Done => {}
            }
        }
    }

    /// Extracts the first queued round and stores its facts, in one transaction.
    fn extract_next(&self) -> Result<Step> {
        let (round_id, user) = match self.lock_store().next_queued()? {
            None => return Ok(Step::Empty),
            Some(next) => next,
        };
        let Some(extractor) = self.extractor.as_ref() else {
            let pending = self.lock_store().pending(None)?;
            return Err(Error::NoExtractor { operation: "extraction", pending });
        };
        let embedder = self.embedder("extraction")?;
        let round = self.lock_store().rounds_by_id(user, &[round_id])?.remove(0);
        let ts = Timestamp::parse(&round.ts)?;
        let at = ts.sortable();

        // The model runs outside every lock.
        let skipped = crate::prefilter::skip(&round.turns);
        let (facts, notes, truncated) = match skipped {
            Some(_) => (Vec::new(), Vec::new(), false),
            None => {
                let extraction = extractor.extract(&round.turns)?;
                let (kept, notes) = crate::facts::verify(&extraction.facts, &round.turns, ts.date());
                (kept, notes, extraction.truncated)
            }
        };
        let texts: Vec<String> = facts.iter().map(|f| crate::facts::embed_text(&f.fact)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = if refs.is_empty() { Vec::new() } else { embedder.embed_documents(&refs)? };
        if vectors.len() != facts.len() {
            return Err(Error::Embedder(format!("expected {} fact vectors", facts.len())));
        }

        let mut store = self.lock_store();
        let tx = store.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if !write::is_queued(&tx, round_id)? {
            // Forgotten while the model ran.
            return Ok(Step::Done);
        }
        let version = write::user_version(&tx, user)?;
        if let Some(rule) = skipped {
            let detail = serde_json::json!({ "rule": rule.name() }).to_string();
            write::log(&tx, user, &at, "round.prefiltered", &round.key, None, &detail)?;
        }
        let mut existing = write::active_facts(&tx, user)?;
        let mut dates: Vec<String> = existing.iter().map(|f| date_of(f.round_day)).collect();
        let round_date = date_of(round.day);
        let mut added: Vec<FactRow> = Vec::new();
        let mut added_vectors: Vec<&[f32]> = Vec::new();
        let (mut duplicates, mut superseded) = (0, 0);
        for (verified, vector) in facts.iter().zip(&vectors) {
            let f = &verified.fact;
            let norm_key = normalized_key(&f.content);
            let candidate = format!("{}/{}", round.key, added.len() + 1);
            if let Some(of) = write::exact_fact_duplicate(&tx, user, &round.session, &norm_key)? {
                write::log(&tx, user, &at, "fact.duplicate", &candidate, Some(&of), r#"{"match":"exact"}"#)?;
                duplicates += 1;
                continue;
            }
            let mut row = FactRow {
                id: 0,
                round_id,
                key: candidate,
                session: round.session.clone(),
                day: crate::facts::fact_day(verified.valid_time.as_deref(), round.day),
                norm_key,
                content: f.content.clone(),
                raw: f.raw.clone(),
                mention: f.when.clone(),
                valid_time: verified.valid_time.clone(),
                subject: f.subject.clone(),
                predicate: f.predicate.clone(),
                object: f.object.clone(),
                salience: f.salience,
                initial_salience: f.salience,
                pair_key: None,
                supersedes: None,
                superseded_by: None,
            };
            row.pair_key = statement(&row, &round_date, round.ts_unix).normal().map(|n| n.pair_key());
            // The nearest active fact (ties to the earlier one); a cosine duplicate is merged
            // unless a screen keeps the two apart (ENGINE §5).
            let best = nearest(vector, existing.iter().enumerate().map(|(i, a)| (i, a.vector.as_slice())));
            if let Some((cos, i)) = best.filter(|(c, _)| *c >= self.config.fact_dedup_cosine) {
                let old = &existing[i];
                let apart = screen(
                    &statement(&row, &round_date, round.ts_unix),
                    &statement(&old.row, &dates[i], old.ts_unix),
                );
                match apart {
                    None => {
                        let detail = serde_json::json!({ "match": "cosine", "cosine": cos }).to_string();
                        write::log(&tx, user, &at, "fact.merged", &row.key, Some(&old.row.key), &detail)?;
                        duplicates += 1;
                        continue;
                    }
                    Some(why) => {
                        let detail = serde_json::json!({ "screen": why, "cosine": cos }).to_string();
                        write::log(&tx, user, &at, "fact.kept-apart", &row.key, Some(&old.row.key), &detail)?;
                    }
                }
            }
            row.id = write::insert_fact(&tx, user, &row, vector)?;
            write::log(&tx, user, &at, "fact.stored", &row.key, Some(&round.key), "{}")?;

            // Supersession: the new fact against every active fact it conflicts with.
            let (active, n) =
                settle(&tx, user, &at, &row, &round_date, round.ts_unix, &mut existing, &mut dates)?;
            superseded += n;
            if !active {
                continue;
            }
            existing.push(crate::store::ActiveFact {
                row: row.clone(),
                round_day: round.day,
                ts_unix: round.ts_unix,
                vector: vector.clone(),
            });
            dates.push(round_date.clone());
            added.push(row);
            added_vectors.push(vector);
        }
        if skipped.is_none() {
            let dropped = notes.iter().filter(|n| **n == Some(crate::facts::Note::Ungrounded)).count();
            let cleared = notes.iter().filter(|n| **n == Some(crate::facts::Note::MentionNotInRound)).count();
            let detail = serde_json::json!({
                "stored": added.len(),
                "duplicates": duplicates,
                "superseded": superseded,
                "ungrounded": dropped,
                "mentions_cleared": cleared,
                "truncated": truncated,
            })
            .to_string();
            write::log(&tx, user, &at, "round.extracted", &round.key, None, &detail)?;
        }
        write::dequeue(&tx, round_id)?;
        write::touch_user(&tx, user, None)?;
        tx.commit()?;
        drop(store);

        let mut index = self.lock_index();
        match index.get_mut(&user) {
            // A superseded fact must leave the index: rebuild it on the next read.
            Some(cached) if cached.version == version && superseded == 0 => {
                cached.version = version + 1;
                for (row, v) in added.iter().zip(added_vectors) {
                    cached.index.push(round_id, row.day, row.salience, v);
                    if let Some(words) = &mut cached.words {
                        words.push(round_id, &format!("{}\n{}", row.raw, row.content));
                    }
                }
            }
            _ => {
                index.remove(&user);
            }
        }
        Ok(Step::Done)
    }
}

/// Runs the conflict rules for `row` (stored and active) against `existing` (the user's other
/// active facts, in id order, with their rounds' dates in `dates`): supersedes each fact it beats,
/// or hides `row` at once when it reports an older state than one of them (it is kept, never
/// dropped). Every supersession is logged at `at`. Returns whether `row` is still active and how
/// many facts were superseded; superseded facts leave `existing`.
#[allow(clippy::too_many_arguments)]
fn settle(
    tx: &rusqlite::Transaction<'_>,
    user: i64,
    at: &str,
    row: &FactRow,
    date: &str,
    ts_unix: i64,
    existing: &mut Vec<crate::store::ActiveFact>,
    dates: &mut Vec<String>,
) -> Result<(bool, usize)> {
    let new = statement(row, date, ts_unix);
    let key = |r: &FactRow, date: &str, ts: i64| {
        r.pair_key.clone().or_else(|| statement(r, date, ts).normal().map(|n| n.pair_key()))
    };
    let Some(new_key) = key(row, date, ts_unix) else { return Ok((true, 0)) };
    let mut losers = Vec::new();
    let mut lost_to = None;
    for (i, old) in existing.iter().enumerate() {
        // Only facts about the same relation can conflict; the stored key saves normalizing the rest.
        if key(&old.row, &dates[i], old.ts_unix).as_deref() != Some(new_key.as_str()) {
            continue;
        }
        let old_statement = statement(&old.row, &dates[i], old.ts_unix);
        if let Some(rule) = conflict(&new, &old_statement) {
            if newer(&new, &old_statement) == std::cmp::Ordering::Greater {
                losers.push((i, rule));
            } else {
                lost_to = Some((i, rule));
                break;
            }
        }
    }
    let supersede = |loser: &FactRow, winner: &FactRow, rule: Rule| -> Result<()> {
        write::supersede(tx, user, &loser.key, &winner.key)?;
        let detail = serde_json::json!({
            "rule": rule.name(),
            "key": winner.pair_key,
            "old": loser.object,
            "new": winner.object,
        })
        .to_string();
        write::log(tx, user, at, "fact.superseded", &loser.key, Some(&winner.key), &detail)
    };
    if let Some((i, rule)) = lost_to {
        supersede(row, &existing[i].row, rule)?;
        return Ok((false, 1));
    }
    for (i, rule) in losers.iter().rev() {
        supersede(&existing[*i].row, row, *rule)?;
        existing.remove(*i);
        dates.remove(*i);
    }
    Ok((true, losers.len()))
}

/// A day number as `YYYY-MM-DD`.
fn date_of(day: i32) -> String {
    chrono::NaiveDate::from_num_days_from_ce_opt(day).map(|d| d.to_string()).unwrap_or_default()
}

/// A stored fact as the conflict rules see it.
fn statement<'a>(row: &'a FactRow, session_date: &'a str, ts_unix: i64) -> Statement<'a> {
    Statement {
        id: row.id,
        content: &row.content,
        subject: row.subject.as_deref(),
        predicate: row.predicate.as_deref(),
        object: row.object.as_deref(),
        valid_time: row.valid_time.as_deref(),
        session_date,
        ts_unix,
        by_user: row.raw.trim_start().starts_with("user:"),
    }
}

/// The member closest to `vector` by cosine, and that cosine (ties to the earlier member).
fn nearest<'a, K>(vector: &[f32], members: impl Iterator<Item = (K, &'a [f32])>) -> Option<(f32, K)> {
    members.map(|(k, v)| (cosine(vector, v), k)).fold(None, |acc, (c, k)| match acc {
        Some((bc, _)) if bc >= c => acc,
        _ => Some((c, k)),
    })
}

fn recalled_view<'a>(r: &'a RecalledRound, facts: &'a [String]) -> RenderRound<'a> {
    RenderRound {
        id: r.id,
        key: &r.key,
        session: &r.session,
        ts: &r.ts,
        ts_unix: r.ts_unix,
        turns: &r.turns,
        facts,
    }
}
