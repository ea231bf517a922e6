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
use std::sync::atomic::{AtomicU64, Ordering};

use crate::embed::vector::nearest;
use crate::store::ActiveFact;

/// A scope's active facts with their terms, in id order.
pub(crate) struct Ledger {
    /// The user's version whose facts it holds.
    pub(crate) version: i64,
    facts: BTreeMap<i64, Held>,
    /// Term → ids of the facts that have it (ids of facts removed since are skipped on lookup).
    terms: HashMap<String, Vec<i64>>,
    bytes: usize,
}

struct Held {
    fact: ActiveFact,
    bytes: usize,
}

impl Ledger {
    /// An empty ledger at `version`.
    pub(crate) fn new(version: i64) -> Ledger {
        Ledger { version, facts: BTreeMap::new(), terms: HashMap::new(), bytes: 0 }
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
        self.bytes += bytes;
        self.facts.insert(id, Held { fact, bytes });
    }

    /// Removes a fact that is no longer active.
    pub(crate) fn remove(&mut self, id: i64) {
        if let Some(held) = self.facts.remove(&id) {
            self.bytes -= held.bytes;
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

    /// The fact nearest to `vector` by cosine (ties to the lower id), with the cosine.
    pub(crate) fn nearest(&self, vector: &[f32]) -> Option<(f32, i64)> {
        nearest(vector, self.facts.iter().map(|(id, h)| (*id, h.fact.vector.as_slice())))
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

/// The ledgers of a store's scopes, least recently used dropped past a budget of bytes.
pub(crate) struct Ledgers {
    slots: Mutex<Slots>,
    budget: usize,
    loaded: AtomicU64,
    compared: AtomicU64,
    loads: AtomicU64,
}

#[derive(Default)]
struct Slots {
    ledgers: HashMap<(i64, Option<String>), (Ledger, u64)>,
    /// A counter (not a clock) that orders uses, for eviction.
    tick: u64,
}

impl Ledgers {
    /// No ledger yet; at most about `budget` bytes of them.
    pub(crate) fn new(budget: usize) -> Ledgers {
        Ledgers {
            slots: Mutex::default(),
            budget,
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
        let (ledger, _) = self.lock().ledgers.remove(&(user, agent.map(str::to_owned)))?;
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
        while total > self.budget && slots.ledgers.len() > 1 {
            let Some(oldest) = slots.ledgers.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((l, _)) = slots.ledgers.remove(&oldest) {
                total -= l.approx_bytes();
            }
        }
    }

    /// A write at the user's `version` committed without changing any fact of the user: the
    /// user's ledgers at that version move to the next; the others are dropped.
    pub(crate) fn advance(&self, user: i64, version: i64) {
        self.lock().ledgers.retain(|(u, _), (ledger, _)| {
            if *u != user {
                return true;
            }
            if ledger.version != version {
                return false;
            }
            ledger.version = version + 1;
            true
        });
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
        assert_eq!(l.nearest(&[1.0, 0.0]).map(|(_, id)| id), Some(5), "ties to the lower id");
        l.remove(5);
        assert_eq!(l.with_any(["s:porto", "k:user|lives_in"]), [7]);
        assert_eq!(l.nearest(&[1.0, 0.0]).map(|(_, id)| id), Some(9));
    }

    #[test]
    fn a_ledger_is_used_only_at_the_version_it_holds() {
        let ledgers = Ledgers::new(1 << 20);
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
