//! Engine configuration: every threshold in one validated struct.

pub use crate::index::views::MemoryBudget;
pub use crate::model::time::YEARS;

use crate::error::{Error, Result};

/// The smallest token budget a context accepts: the frame and the cut marker take about 70.
pub const MIN_BUDGET: usize = 200;

/// Settings of a [`Memory`](crate::Memory).
///
/// Read-path settings (`top_k`, `time_weight`, `context_budget`) may differ between opens of the
/// same store. Write-path settings that change what gets stored (`dedup_cosine`) are pinned in the
/// store: a store built with one value refuses to open with another.
///
/// ```
/// let config = mnemon::config::Config { top_k: 5, context_budget: Some(2_000), ..Default::default() };
/// config.validate().unwrap();
/// assert!(mnemon::config::Config { top_k: 0, ..Default::default() }.validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Rounds returned by recall and considered for a context. Default 10, range 1..=1000.
    pub top_k: usize,
    /// Bonus added to a round's cosine when its date falls in the question's time window.
    /// Default 0.05, range 0..=1.
    pub time_weight: f32,
    /// Cosine at or above which a round is a duplicate of a round of the same session and is not
    /// stored. Default 0.95, range (0, 1]. Pinned in the store.
    pub dedup_cosine: f32,
    /// Token budget of a rendered context, a hard cap (`None`: unbounded). Default 4,000 tokens:
    /// a quarter of a 16k window, and more than most questions' evidence needs (docs/EVAL.md).
    /// At least [`MIN_BUDGET`](crate::config::MIN_BUDGET) (200) if set.
    pub context_budget: Option<usize>,
    /// How long a writer waits for another process's lock before [`Error::Busy`]. Default 5000 ms.
    pub busy_timeout_ms: u32,
    /// How often an idle extraction worker looks for rounds other processes queued (a CLI writer
    /// without an extractor, another server), in milliseconds. It is scheduling only: what is
    /// extracted, and how, does not depend on it. Default 1000; `None`: only this handle's own
    /// writes and its open wake the worker.
    pub queue_poll_ms: Option<u32>,
    /// The most read connections the store keeps open at once (each a file handle, or a
    /// PostgreSQL connection). A read that finds them all in use waits for one up to
    /// `busy_timeout_ms`, then fails with [`Error::Busy`]. Default 64, at least 1.
    pub max_readers: usize,
    /// Read connections a store file opens with the store and keeps (at most `max_readers`): a
    /// server opens as many as it serves requests at once, so that its descriptors and memory
    /// are what they will be from the start, not grown by the first burst. Idle connections are
    /// taken in turn (the one idle longest first), so each stays warm. A PostgreSQL store opens
    /// its connections as reads need them. Default 0.
    pub min_readers: usize,
    /// SQLite page cache of the write connection in KiB; each read connection gets a hundredth
    /// (the views in memory, not the page cache, serve the ranking; a read fetches a few rows).
    /// Default 200 000 (about 200 MB at most).
    pub cache_kib: u32,
    /// The most bytes the store file may grow to (`None`: as far as the disk allows; SQLite's
    /// `max_page_count`). A write that would pass it fails with [`Error::StoreFull`](crate::Error::StoreFull)
    /// and changes nothing; what was committed stays. Default `None`; at least 1 MiB if set.
    pub max_store_bytes: Option<u64>,
    /// Memory for the scopes' in-memory views (vectors, word indexes), in bytes: past it the
    /// least recently used views are dropped (and loaded again when next read). A single view
    /// larger than this is still kept while it is the one in use. Default 2 GiB.
    pub view_cache_bytes: usize,
    /// Fuse the dense ranking (top 100) with the user's BM25 ranking (top 100) by reciprocal
    /// rank, with this constant; `None` ranks by the dense score alone and builds no word index.
    /// Default `Some(10)`: fusion lifts ALL@10 on both development benchmarks for well under a
    /// millisecond per recall, and 10 beat 20, 60 and 100 (docs/DECISIONS.md, "BM25 fused with
    /// dense" and "the fusion constant is 10 now"). The constant also sets how fast a note's
    /// relevance falls with its ranks (second in both lists: 0.917). At least 1 if set.
    pub rrf_k: Option<u32>,
    /// Cosine at or above which an extracted fact duplicates one of the user's stored facts and
    /// is merged into it (not stored again; logged). Default 0.95, range (0, 1]. Pinned in stores
    /// built with an extractor.
    pub fact_dedup_cosine: f32,
    /// With an extractor: `true` (default) has [`Memory::add`](crate::Memory::add) return once its
    /// rounds are committed while a background worker extracts them; `false` extracts inside
    /// `add`. The store ends the same either way.
    pub background_extraction: bool,
    /// Salience decay applied by [`Memory::consolidate`](crate::Memory::consolidate); `None`
    /// (default) leaves salience alone: the reference design measured a loss with it on
    /// (docs/DECISIONS.md, "defaults taken from the reference design").
    pub decay: Option<Decay>,
    /// Condensing of old episodic notes by [`Memory::consolidate`](crate::Memory::consolidate);
    /// `None` (default) never condenses.
    pub condense: Option<Condense>,
    /// The years a timestamp may name: a message's or note's `ts`, a question's `date` and
    /// `as_of`; any other is refused with its field named. Default [`YEARS`] (1900–2200), within
    /// 1..=9999.
    pub years: std::ops::RangeInclusive<i32>,
}

/// Condensing (memex's background summariser, made deterministic and extractive): when a scope
/// holds more than `keep` episodic notes on read paths, its oldest ones are condensed, at most
/// `batch` at a time (at least 2), each batch into one semantic note made of one line per
/// original (its date and first sentence). The originals are kept, linked to it and hidden from
/// every read path; each step is a decision in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condense {
    /// Episodic notes left as they are, newest first. Default 50.
    pub keep: usize,
    /// Originals per condensed note, 2 to 200. Default 20.
    pub batch: usize,
}

impl Default for Condense {
    fn default() -> Self {
        Condense { keep: 50, batch: 20 }
    }
}

/// Salience decay of facts with age: `max(min(floor, initial), initial · 0.5^(days / half_life))`, with
/// `days` the logical days from a fact's round to the user's logical now. Reads never write, so
/// no access time is kept: age is counted from the round. It never raises a salience and never
/// reaches 0, and applying it twice equals once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// Days for the salience to halve. Default 30, above 0.
    pub half_life_days: f32,
    /// The lowest salience decay leaves (or the initial one, if lower). Default 0.15, in (0, 1].
    pub floor: f32,
}

impl Default for Decay {
    fn default() -> Self {
        Decay { half_life_days: 30.0, floor: 0.15 }
    }
}

impl Decay {
    /// The decayed salience of a fact of salience `initial` that is `days` logical days old.
    ///
    /// ```
    /// let d = mnemon::config::Decay::default();
    /// assert_eq!(d.apply(1.0, 0.0), 1.0);
    /// assert_eq!(d.apply(1.0, 30.0), 0.5);
    /// assert_eq!(d.apply(1.0, 3000.0), 0.15);
    /// assert_eq!(d.apply(0.1, 3000.0), 0.1, "never below a lower initial salience");
    /// ```
    pub fn apply(&self, initial: f32, days: f64) -> f32 {
        let decayed = f64::from(initial) * 0.5f64.powf(days.max(0.0) / f64::from(self.half_life_days));
        (decayed as f32).max(self.floor.min(initial)).min(initial)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            top_k: 10,
            time_weight: 0.05,
            dedup_cosine: 0.95,
            context_budget: Some(4_000),
            busy_timeout_ms: 5_000,
            queue_poll_ms: Some(1_000),
            max_readers: 64,
            min_readers: 0,
            cache_kib: 200_000,
            max_store_bytes: None,
            view_cache_bytes: 2 << 30,
            rrf_k: Some(10),
            fact_dedup_cosine: 0.95,
            background_extraction: true,
            decay: None,
            condense: None,
            years: YEARS,
        }
    }
}

impl Config {
    /// Checks every field; the error names the first field out of range.
    pub fn validate(&self) -> Result<()> {
        let bad = |field, reason: &str| Err(Error::InvalidConfig { field, reason: reason.to_owned() });
        if !(1..=1000).contains(&self.top_k) {
            return bad("top_k", "must be in 1..=1000");
        }
        if !self.time_weight.is_finite() || !(0.0..=1.0).contains(&self.time_weight) {
            return bad("time_weight", "must be a number in 0..=1");
        }
        if !self.dedup_cosine.is_finite() || self.dedup_cosine <= 0.0 || self.dedup_cosine > 1.0 {
            return bad("dedup_cosine", "must be a number in (0, 1]");
        }
        if !self.fact_dedup_cosine.is_finite()
            || self.fact_dedup_cosine <= 0.0
            || self.fact_dedup_cosine > 1.0
        {
            return bad("fact_dedup_cosine", "must be a number in (0, 1]");
        }
        if let Some(d) = self.decay {
            if !d.half_life_days.is_finite() || d.half_life_days <= 0.0 {
                return bad("decay.half_life_days", "must be a number above 0");
            }
            if !d.floor.is_finite() || d.floor <= 0.0 || d.floor > 1.0 {
                return bad("decay.floor", "must be a number in (0, 1]");
            }
        }
        if let Some(c) = self.condense
            && !(2..=200).contains(&c.batch)
        {
            return bad("condense.batch", "must be in 2..=200");
        }
        if self.years.is_empty() || *self.years.start() < 1 || *self.years.end() > 9999 {
            return bad("years", "must be a non-empty range within 1..=9999");
        }
        if self.context_budget.is_some_and(|b| b < MIN_BUDGET) {
            return bad("context_budget", "must be at least 200 tokens when set");
        }
        if self.max_store_bytes.is_some_and(|b| b < 1 << 20) {
            return bad("max_store_bytes", "must be at least 1 MiB when set");
        }
        if self.rrf_k == Some(0) {
            return bad("rrf_k", "must be at least 1 when set");
        }
        if self.queue_poll_ms == Some(0) {
            return bad("queue_poll_ms", "must be at least 1");
        }
        if self.busy_timeout_ms == 0 {
            return bad("busy_timeout_ms", "must be at least 1");
        }
        if self.max_readers == 0 {
            return bad("max_readers", "must be at least 1");
        }
        if self.min_readers > self.max_readers {
            return bad("min_readers", "must be at most max_readers");
        }
        Ok(())
    }
}
