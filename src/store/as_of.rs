//! The records as they stood at a time: the rule of as-of reading, beside the visibility rule.
//!
//! Time here is the conversation's own: the timestamps callers gave their rounds and notes, never
//! when a write happened. At `t` (inclusive):
//!
//! - a round is known when its timestamp is at or before `t`;
//! - a fact is known when its round is, and it is current at `t` unless the fact that superseded
//!   it is known at `t` too (a supersession happens at its successor's round). A fact superseded
//!   later therefore reads as current, at its first salience, and a fact a later round replaced
//!   twice reads as each value in turn;
//! - a note is known when its timestamp is at or before `t`, with its text as it is now (notes
//!   keep no earlier versions);
//! - a decision is known when it was logged at or before `t`.
//!
//! The rule reads the store as it is: a re-extraction that restored a fact changes what every
//! time reads, exactly as it changed the store.

use std::collections::HashMap;

use super::{DecisionRow, FactRow, NoteRow, RoundRow, Store, UserVectors, View, visible};
use crate::error::Result;
use crate::model::time::Timestamp;
use mnemon_backend::p;

/// What a scope's records were at one time (see the module's rule).
#[derive(Debug, Clone)]
pub(crate) struct AsOf {
    /// The time, as the caller gave it.
    pub at: Timestamp,
    unix: i64,
    /// Each round's timestamp by id.
    rounds: HashMap<i64, i64>,
    /// Each fact's round's timestamp by the fact's key.
    facts: HashMap<String, i64>,
}

impl AsOf {
    /// Reads the times of every round and fact `view` sees.
    pub(crate) fn read(store: &Store, view: View<'_>, at: Timestamp) -> Result<AsOf> {
        let rounds = store.db().rows(
            &format!("SELECT id, ts_unix FROM rounds WHERE user_id = ?1 AND {}", visible("agent", 2)),
            p![view.user, view.agent],
            |r| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?)),
        )?;
        let facts = store.db().rows(
            &format!(
                "SELECT f.fact_key, r.ts_unix FROM facts f JOIN rounds r ON r.id = f.round_id \
                 WHERE f.user_id = ?1 AND {}",
                visible("f.agent", 2)
            ),
            p![view.user, view.agent],
            |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
        )?;
        Ok(AsOf {
            unix: at.unix_seconds(),
            at,
            rounds: rounds.into_iter().collect(),
            facts: facts.into_iter().collect(),
        })
    }

    /// Whether the round with this id was known.
    pub(crate) fn round(&self, id: i64) -> bool {
        self.rounds.get(&id).is_some_and(|&ts| ts <= self.unix)
    }

    /// Whether the fact with this key was known.
    fn fact_known(&self, key: &str) -> bool {
        self.facts.get(key).is_some_and(|&ts| ts <= self.unix)
    }

    /// The fact as it stood, if it was known: current (its first salience back, no successor)
    /// when what superseded it came later, and naming only the facts it had superseded by then.
    pub(crate) fn fact(&self, mut fact: FactRow) -> Option<FactRow> {
        if !self.round(fact.round_id) {
            return None;
        }
        if fact.superseded_by.as_deref().is_some_and(|winner| !self.fact_known(winner)) {
            fact.superseded_by = None;
            if fact.salience <= 0.0 {
                fact.salience = fact.initial_salience;
            }
        }
        if let Some(lost) = fact.supersedes.take() {
            let known: Vec<&str> = lost.split(' ').filter(|k| self.fact_known(k)).collect();
            fact.supersedes = (!known.is_empty()).then(|| known.join(" "));
        }
        Some(fact)
    }

    /// Whether a fact (as [`AsOf::fact`] made it) was current: known and not superseded.
    pub(crate) fn current(fact: &FactRow) -> bool {
        fact.superseded_by.is_none() && fact.salience > 0.0
    }

    /// Whether a note written at `ts_unix` was known.
    pub(crate) fn note(&self, ts_unix: i64) -> bool {
        ts_unix <= self.unix
    }

    /// The vectors of the facts current at this time that `view` sees, in fact id order, each
    /// under its round's id with the fact's day and its salience then.
    pub(crate) fn fact_vectors(&self, store: &Store, view: View<'_>) -> Result<UserVectors> {
        let dim = store.pins.dim()?;
        let rows = store.all_facts(view)?;
        let vectors = store.all_fact_vectors(view)?;
        if vectors.ids.len() != rows.len() {
            return Err(store.corrupt("a fact without a vector"));
        }
        let then: Vec<Option<FactRow>> =
            rows.into_iter().map(|f| self.fact(f).filter(AsOf::current)).collect();
        let mut kept = vectors.retain(dim, |i, _| then[i].is_some());
        kept.saliences = then.into_iter().flatten().map(|f| f.salience).collect();
        Ok(kept)
    }

    /// Keeps what was known of an export's records, facts as they stood.
    pub(crate) fn records(
        &self,
        rounds: &mut Vec<RoundRow>,
        facts: &mut Vec<FactRow>,
        notes: &mut Vec<NoteRow>,
        decisions: &mut Vec<DecisionRow>,
    ) {
        rounds.retain(|r| self.round(r.id));
        *facts = std::mem::take(facts).into_iter().filter_map(|f| self.fact(f)).collect();
        notes.retain(|n| self.note(n.ts_unix));
        // Decisions are logged at a sortable time; the empty one (logged before the user had a
        // timestamp) sorts first.
        let until = self.at.sortable();
        decisions.retain(|d| d.at.as_str() <= until.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(key: &str, round_id: i64, superseded_by: Option<&str>, supersedes: Option<&str>) -> FactRow {
        FactRow {
            id: round_id,
            round_id,
            key: key.into(),
            session: "s".into(),
            day: 0,
            norm_key: key.into(),
            content: key.into(),
            raw: key.into(),
            mention: None,
            valid_time: None,
            subject: None,
            predicate: None,
            object: None,
            salience: if superseded_by.is_some() { 0.0 } else { 0.7 },
            initial_salience: 0.9,
            pair_key: None,
            supersedes: supersedes.map(str::to_owned),
            superseded_by: superseded_by.map(str::to_owned),
            agent: None,
            extractor: None,
        }
    }

    /// Rounds 1, 2, 3 at 10, 20, 30 s; facts a (round 1) ← b (round 2) ← c (round 3).
    fn chain(at: i64) -> AsOf {
        AsOf {
            at: Timestamp::from_parts("t".into(), at).unwrap(),
            unix: at,
            rounds: [(1, 10), (2, 20), (3, 30)].into_iter().collect(),
            facts: [("a".to_owned(), 10), ("b".to_owned(), 20), ("c".to_owned(), 30)].into_iter().collect(),
        }
    }

    fn facts() -> Vec<FactRow> {
        vec![fact("a", 1, Some("b"), None), fact("b", 2, Some("c"), Some("a")), fact("c", 3, None, Some("b"))]
    }

    fn current_at(at: i64) -> Vec<String> {
        let as_of = chain(at);
        facts().into_iter().filter_map(|f| as_of.fact(f)).filter(AsOf::current).map(|f| f.key).collect()
    }

    #[test]
    fn a_value_replaced_twice_reads_as_each_value_in_turn() {
        assert!(current_at(9).is_empty());
        assert_eq!(current_at(10), ["a"]);
        assert_eq!(current_at(19), ["a"]);
        assert_eq!(current_at(20), ["b"]);
        assert_eq!(current_at(30), ["c"]);
        assert_eq!(current_at(1_000), ["c"]);
    }

    #[test]
    fn a_fact_current_then_has_its_first_salience_and_no_later_links() {
        let as_of = chain(20);
        let [a, b, c]: [Option<FactRow>; 3] =
            facts().into_iter().map(|f| as_of.fact(f)).collect::<Vec<_>>().try_into().unwrap();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.superseded_by.as_deref(), a.salience), (Some("b"), 0.0));
        assert_eq!((b.superseded_by, b.salience, b.supersedes.as_deref()), (None, 0.9, Some("a")));
        assert!(c.is_none());
    }

    #[test]
    fn a_current_fact_keeps_its_salience() {
        let f = chain(40).fact(fact("c", 3, None, Some("b"))).unwrap();
        assert_eq!(f.salience, 0.7);
    }

    #[test]
    fn a_fact_of_an_unknown_round_is_not_known() {
        assert!(chain(40).fact(fact("x", 9, None, None)).is_none());
    }
}
