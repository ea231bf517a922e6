//! Ledgers: the active facts of a scope (a user and one agent) that a new fact is settled
//! against, in memory. Each fact is held with its vector (for the nearest-fact check) and the
//! terms the caller derived from it (a key, the stems of its sentence, the words around its
//! numbers); a new fact meets only the facts that share a term with it, so settling a round reads
//! no more of the user's history than the facts it can conflict with.
//!
//! A ledger is loaded from the store once and then kept at the user's version by the writes, in
//! commit order, as the views are: a write that changes none of the user's facts moves the
//! user's ledgers to its version ([`Ledgers::advance`]); settling takes the scope's ledger out
//! for its transaction and puts it back, changed, only once the transaction has committed. Any
//! other change to the user (another process, an edit, an upgrade) leaves the ledger at an older
//! version, and the next settle loads it again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::views::MemoryBudget;
use crate::embed::vector::{cosine, dot_i8_rows, quantize, quantize_into};
use crate::store::ActiveFact;

/// Slack for float rounding in the byte pass's bound (as in the ranking's scan).
const ROUNDING_SLACK: f32 = 1e-4;

/// A scope's active facts with their terms, in id order.
pub(crate) struct Ledger {
    /// The user's version whose facts it holds.
    pub(crate) version: i64,
    facts: BTreeMap<i64, Held>,
    /// Term → ids of the facts that have it (ids of facts removed since are skipped on lookup).
    terms: HashMap<String, Vec<i64>>,
    bytes: usize,
    /// The facts' vectors as bytes, one row of `dim` per fact in id order, for the first pass of
    /// the nearest-fact check; a removed fact's row stays until the rows are compacted.
    quantized: Vec<i8>,
    rows: Vec<Row>,
    dead: usize,
    dim: usize,
}

struct Held {
    fact: ActiveFact,
    bytes: usize,
    /// Its place in `rows`.
    row: usize,
}

/// A row of the byte pass: the fact, its vector's scale, and the norms that bound its error.
struct Row {
    id: i64,
    scale: f32,
    error_norm: f32,
    norm: f32,
    alive: bool,
}

impl Ledger {
    /// An empty ledger at `version`.
    pub(crate) fn new(version: i64) -> Ledger {
        Ledger {
            version,
            facts: BTreeMap::new(),
            terms: HashMap::new(),
            bytes: 0,
            quantized: Vec::new(),
            rows: Vec::new(),
            dead: 0,
            dim: 0,
        }
    }

    /// Adds an active fact (ids only grow: a fact is added once) under `terms`.
    pub(crate) fn insert(&mut self, fact: ActiveFact, terms: Vec<String>) {
        let id = fact.row.id;
        let bytes = fact.vector.len() * 4
            + fact.row.content.len()
            + fact.row.raw.len()
            + terms.iter().map(|t| t.len() + 8).sum::<usize>()
            + 256;
        for term in terms {
            self.terms.entry(term).or_default().push(id);
        }
        self.bytes += bytes + fact.vector.len();
        if self.rows.is_empty() {
            self.dim = fact.vector.len();
        }
        let row = self.push_row(id, &fact.vector);
        self.facts.insert(id, Held { fact, bytes, row });
    }

    fn push_row(&mut self, id: i64, vector: &[f32]) -> usize {
        let (scale, error_norm, norm) = if vector.len() == self.dim {
            quantize_into(vector, &mut self.quantized)
        } else {
            // Another length (never from one embedder): no byte row; always checked in full.
            self.quantized.extend(std::iter::repeat_n(0, self.dim));
            (0.0, f32::INFINITY, 0.0)
        };
        self.rows.push(Row { id, scale, error_norm, norm, alive: true });
        self.rows.len() - 1
    }

    /// Removes a fact that is no longer active.
    pub(crate) fn remove(&mut self, id: i64) {
        if let Some(held) = self.facts.remove(&id) {
            self.bytes -= held.bytes + held.fact.vector.len();
            self.rows[held.row].alive = false;
            self.dead += 1;
            if self.dead > 64 && self.dead * 2 > self.rows.len() {
                self.compact();
            }
        }
    }

    /// Drops the rows of removed facts.
    fn compact(&mut self) {
        let (quantized, rows) = (std::mem::take(&mut self.quantized), std::mem::take(&mut self.rows));
        self.dead = 0;
        for (i, row) in rows.into_iter().enumerate().filter(|(_, r)| r.alive) {
            self.quantized.extend_from_slice(&quantized[i * self.dim..(i + 1) * self.dim]);
            if let Some(held) = self.facts.get_mut(&row.id) {
                held.row = self.rows.len();
            }
            self.rows.push(row);
        }
    }

    /// The fact of `id`, if active.
    pub(crate) fn get(&self, id: i64) -> Option<&ActiveFact> {
        self.facts.get(&id).map(|h| &h.fact)
    }

    /// The facts that have any of `terms`, in id order.
    pub(crate) fn with_any<'a>(&self, terms: impl IntoIterator<Item = &'a str>) -> Vec<i64> {
        let ids: BTreeSet<i64> =
            terms.into_iter().filter_map(|t| self.terms.get(t)).flatten().copied().collect();
        ids.into_iter().filter(|id| self.facts.contains_key(id)).collect()
    }

    /// The fact nearest to `vector` by cosine (ties to the lower id), with the cosine, if that
    /// cosine is at least `threshold`. Exact: a first pass over the facts' vectors as bytes bounds
    /// each cosine (the error of the bytes, by its norm), and only the facts whose bound reaches
    /// `threshold` are scored in full precision, the same `cosine` as a full scan's.
    pub(crate) fn nearest_at_least(&self, vector: &[f32], threshold: f32) -> Option<(f32, i64)> {
        let q = quantize(vector);
        let qnorm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        let same_dim = vector.len() == self.dim;
        let mut dots = Vec::with_capacity(self.rows.len());
        if same_dim {
            dot_i8_rows(&q.q, &self.quantized, &mut dots);
        }
        let mut best: Option<(f32, i64)> = None;
        for (i, row) in self.rows.iter().enumerate().filter(|(_, r)| r.alive) {
            if same_dim && row.error_norm.is_finite() {
                let approx = q.scale * row.scale * dots[i] as f32;
                let bound = qnorm * row.error_norm + q.error_norm * row.norm + ROUNDING_SLACK;
                if approx + bound < threshold {
                    continue;
                }
            }
            let Some(held) = self.facts.get(&row.id) else { continue };
            let c = cosine(vector, &held.fact.vector);
            if best.is_none_or(|(b, _)| c > b) {
                best = Some((c, row.id));
            }
        }
        best.filter(|(c, _)| *c >= threshold)
    }

    fn approx_bytes(&self) -> usize {
        self.bytes + self.terms.len() * 48
    }
}

/// What settling read, counted per store since it was opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SettleStats {
    /// Facts loaded from the store into a ledger.
    pub loaded: u64,
    /// Facts a new fact was compared with by the conflict rules (the nearest-fact check aside).
    pub compared: u64,
    /// Ledgers loaded (a scope seen for the first time, or changed by another write).
    pub loads: u64,
}

/// The ledgers of a store's scopes, least recently used dropped past a budget of bytes (the
/// store's, and the [`MemoryBudget`] several stores share, where the views count too).
pub(crate) struct Ledgers {
    slots: Mutex<Slots>,
    budget: usize,
    shared: Option<MemoryBudget>,
    /// The bytes counted in `shared` now.
    counted: AtomicUsize,
    loaded: AtomicU64,
    compared: AtomicU64,
    loads: AtomicU64,
}

impl Drop for Ledgers {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.recount(self.counted.load(Ordering::Relaxed), 0);
        }
    }
}

#[derive(Default)]
struct Slots {
    ledgers: HashMap<(i64, Option<String>), (Ledger, u64)>,
    /// A counter (not a clock) that orders uses, for eviction.
    tick: u64,
}

impl Ledgers {
    /// No ledger yet; at most about `budget` bytes of them, and within `shared` if given.
    pub(crate) fn new(budget: usize, shared: Option<MemoryBudget>) -> Ledgers {
        Ledgers {
            slots: Mutex::default(),
            budget,
            shared,
            counted: AtomicUsize::new(0),
            loaded: AtomicU64::new(0),
            compared: AtomicU64::new(0),
            loads: AtomicU64::new(0),
        }
    }

    // A panic inside a call leaves at worst a ledger at an old version, which is never used.
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The scope's ledger, taken out, if it holds the facts of the user's `version`.
    pub(crate) fn take(&self, user: i64, agent: Option<&str>, version: i64) -> Option<Ledger> {
        let mut slots = self.lock();
        let (ledger, _) = slots.ledgers.remove(&(user, agent.map(str::to_owned)))?;
        self.account(slots.ledgers.values().map(|(l, _)| l.approx_bytes()).sum());
        (ledger.version == version).then_some(ledger)
    }

    /// Puts a scope's ledger back after its transaction committed (it carries the version the
    /// commit made).
    pub(crate) fn keep(&self, user: i64, agent: Option<&str>, ledger: Ledger) {
        let mut slots = self.lock();
        slots.tick += 1;
        let tick = slots.tick;
        slots.ledgers.insert((user, agent.map(str::to_owned)), (ledger, tick));
        let mut total: usize = slots.ledgers.values().map(|(l, _)| l.approx_bytes()).sum();
        self.account(total);
        let over =
            |total: usize| total > self.budget || self.shared.as_ref().is_some_and(|s| s.used() > s.limit());
        // The least recently used go first; the one just kept stays.
        while over(total) && slots.ledgers.len() > 1 {
            let Some(oldest) = slots.ledgers.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((l, _)) = slots.ledgers.remove(&oldest) {
                total -= l.approx_bytes();
                self.account(total);
            }
        }
    }

    /// Counts the ledgers' `total` bytes in the shared budget, in place of what was counted.
    fn account(&self, total: usize) {
        let before = self.counted.swap(total, Ordering::Relaxed);
        if let Some(shared) = &self.shared {
            shared.recount(before, total);
        }
    }

    /// A write at the user's `version` committed without changing any fact of the user: the
    /// user's ledgers at that version move to the next; the others are dropped.
    pub(crate) fn advance(&self, user: i64, version: i64) {
        let mut slots = self.lock();
        slots.ledgers.retain(|(u, _), (ledger, _)| {
            if *u != user {
                return true;
            }
            if ledger.version != version {
                return false;
            }
            ledger.version = version + 1;
            true
        });
        self.account(slots.ledgers.values().map(|(l, _)| l.approx_bytes()).sum());
    }

    /// Counts a ledger loaded with `facts` facts.
    pub(crate) fn count_load(&self, facts: usize) {
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.loaded.fetch_add(facts as u64, Ordering::Relaxed);
    }

    /// Counts facts compared by the rules.
    pub(crate) fn count_compared(&self, facts: usize) {
        self.compared.fetch_add(facts as u64, Ordering::Relaxed);
    }

    /// What settling read since the store was opened.
    pub(crate) fn stats(&self) -> SettleStats {
        SettleStats {
            loaded: self.loaded.load(Ordering::Relaxed),
            compared: self.compared.load(Ordering::Relaxed),
            loads: self.loads.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::FactRow;

    fn fact(id: i64, vector: Vec<f32>) -> ActiveFact {
        let row = FactRow { id, ..FactRow::default() };
        ActiveFact { row, round_day: 0, ts_unix: 0, vector }
    }

    #[test]
    fn a_fact_meets_the_facts_that_share_a_term_in_id_order() {
        let mut l = Ledger::new(3);
        l.insert(fact(5, vec![1.0, 0.0]), vec!["k:user|lives_in".into(), "s:porto".into()]);
        l.insert(fact(7, vec![0.0, 1.0]), vec!["s:porto".into()]);
        l.insert(fact(9, vec![1.0, 0.0]), vec!["s:lisbon".into()]);
        assert_eq!(l.with_any(["s:porto", "k:user|lives_in"]), [5, 7]);
        assert_eq!(l.with_any(["s:madrid"]), Vec::<i64>::new());
        assert_eq!(l.nearest_at_least(&[1.0, 0.0], 0.9).map(|(_, id)| id), Some(5), "ties to the lower id");
        assert_eq!(l.nearest_at_least(&[0.6, 0.8], 0.9), None, "none near enough");
        l.remove(5);
        assert_eq!(l.with_any(["s:porto", "k:user|lives_in"]), [7]);
        assert_eq!(l.nearest_at_least(&[1.0, 0.0], 0.9).map(|(_, id)| id), Some(9));
    }

    /// The byte pass never changes the answer: on random unit vectors, with facts removed (and
    /// the rows compacted), the same fact and cosine as a full scan in full precision.
    #[test]
    fn the_nearest_fact_is_the_full_scans_at_every_threshold() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let mut unit = |base: Option<&[f32]>| {
            let mut v: Vec<f32> = (0..48).map(|i| base.map_or(0.0, |b| b[i]) + next()).collect();
            crate::embed::vector::normalize(&mut v);
            v
        };
        let mut l = Ledger::new(0);
        let mut all: Vec<(i64, Vec<f32>)> = Vec::new();
        let anchor = unit(None);
        for id in 0..400 {
            // Some near the anchor, so that thresholds near 1 have members.
            let v = if id % 3 == 0 {
                unit(Some(&anchor.iter().map(|x| x * 8.0).collect::<Vec<_>>()))
            } else {
                unit(None)
            };
            l.insert(fact(id, v.clone()), Vec::new());
            all.push((id, v));
        }
        for id in (0..400).filter(|id| id % 5 == 1) {
            l.remove(id);
        }
        all.retain(|(id, _)| id % 5 != 1);
        for _ in 0..50 {
            let q = unit(Some(&anchor.iter().map(|x| x * 12.0).collect::<Vec<_>>()));
            let full = all.iter().map(|(id, v)| (cosine(&q, v), *id)).fold(
                None,
                |acc: Option<(f32, i64)>, (c, id)| match acc {
                    Some((b, _)) if b >= c => acc,
                    _ => Some((c, id)),
                },
            );
            for threshold in [0.0, 0.5, 0.8, 0.9, 0.95, 0.99] {
                assert_eq!(l.nearest_at_least(&q, threshold), full.filter(|(c, _)| *c >= threshold));
            }
        }
    }

    #[test]
    fn ledgers_count_in_a_shared_budget_and_give_their_bytes_back() {
        let shared = MemoryBudget::new(1 << 30);
        let ledgers = Ledgers::new(1 << 30, Some(shared.clone()));
        let mut l = Ledger::new(1);
        l.insert(fact(1, vec![1.0; 64]), vec!["s:lamp".into()]);
        ledgers.keep(1, None, l);
        assert!(shared.used() > 64 * 4, "{}", shared.used());
        assert!(ledgers.take(1, None, 1).is_some());
        assert_eq!(shared.used(), 0, "taken out: not counted");
        let mut l = Ledger::new(2);
        l.insert(fact(1, vec![1.0; 64]), Vec::new());
        ledgers.keep(1, None, l);
        drop(ledgers);
        assert_eq!(shared.used(), 0, "dropped: given back");
    }

    #[test]
    fn a_ledger_is_used_only_at_the_version_it_holds() {
        let ledgers = Ledgers::new(1 << 20, None);
        ledgers.keep(1, None, Ledger::new(4));
        ledgers.keep(1, Some("a"), Ledger::new(2));
        ledgers.advance(1, 4);
        assert!(ledgers.take(1, Some("a"), 2).is_none(), "a stale ledger is dropped");
        assert!(ledgers.take(1, None, 4).is_none(), "moved on to 5");
        ledgers.keep(1, None, Ledger::new(5));
        assert_eq!(ledgers.take(1, None, 5).map(|l| l.version), Some(5));
        assert!(ledgers.take(1, None, 5).is_none(), "taken out");
    }
}
