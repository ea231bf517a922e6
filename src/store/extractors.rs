//! The extractors that produced a store's facts, and the reads and writes of re-extraction.

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::{Store, View};
use crate::error::{Error, Result};

/// An extractor known to the store, with what it produced for the read's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExtractorRow {
    pub id: i64,
    pub hash: String,
    /// Its pins.
    pub pins: BTreeMap<String, String>,
    /// Rounds whose latest extraction it made.
    pub rounds: usize,
    /// Facts it produced (active or superseded).
    pub facts: usize,
}

impl Store {
    /// Every extractor the store knows, by id, with its rounds and facts in `view` (every
    /// user's with `None`).
    pub(crate) fn extractors(&self, view: Option<View<'_>>) -> Result<Vec<ExtractorRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT e.id, e.pins_hash, e.pins, \
             (SELECT count(*) FROM rounds r WHERE r.extractor = e.id AND (?3 OR (r.user_id = ?1 AND {}))), \
             (SELECT count(*) FROM facts f WHERE f.extractor = e.id AND (?3 OR (f.user_id = ?1 AND {}))) \
             FROM extractors e ORDER BY e.id",
            super::visible("r.agent", 2),
            super::visible("f.agent", 2),
        ))?;
        let (user, agent) = view.map_or((0, None), |v| (v.user, v.agent));
        let rows = stmt.query_map(params![user, agent, view.is_none()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?, r.get::<_, i64>(4)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, hash, pins, rounds, facts) = row?;
            let pins = serde_json::from_str(&pins).map_err(|e| Error::Corrupt {
                path: self.path.clone(),
                reason: format!("extractor {hash}: {e}"),
            })?;
            out.push(ExtractorRow { id, hash, pins, rounds: rounds as usize, facts: facts as usize });
        }
        Ok(out)
    }

    /// The id of the extractor with these pins, if the store knows it.
    pub(crate) fn extractor_id(&self, hash: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM extractors WHERE pins_hash = ?1")?
            .query_row([hash], |r| r.get(0))
            .optional()?)
    }

    /// Every extractor's hash by id.
    pub(crate) fn extractor_hashes(&self) -> Result<BTreeMap<i64, String>> {
        let mut stmt = self.conn.prepare_cached("SELECT id, pins_hash FROM extractors")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

pub(crate) mod write {
    use super::*;
    use crate::store::FactRow;

    /// Records an extractor's pins (once); returns its id.
    pub(crate) fn register(conn: &Connection, pins: &BTreeMap<String, String>) -> Result<i64> {
        let hash = super::super::extractor_hash(pins);
        conn.prepare_cached("INSERT OR IGNORE INTO extractors(pins_hash, pins) VALUES (?1, ?2)")?
            .execute(params![hash, super::super::extractor_json(pins)])?;
        Ok(conn
            .prepare_cached("SELECT id FROM extractors WHERE pins_hash = ?1")?
            .query_row([hash], |r| r.get(0))?)
    }

    /// Records which extractor made a round's latest extraction.
    pub(crate) fn set_round_extractor(
        conn: &Connection,
        round_id: i64,
        extractor: Option<i64>,
    ) -> Result<()> {
        conn.prepare_cached("UPDATE rounds SET extractor = ?2 WHERE id = ?1")?
            .execute(params![round_id, extractor])?;
        Ok(())
    }

    /// Ids of the user's rounds that are not queued and whose latest extraction was not made by
    /// `current` (all of them with `all`), in id order.
    pub(crate) fn rounds_to_reextract(
        conn: &Connection,
        user_id: i64,
        current: i64,
        all: bool,
    ) -> Result<Vec<i64>> {
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM rounds WHERE user_id = ?1 AND (?3 OR extractor IS NOT ?2) \
             AND id NOT IN (SELECT round_id FROM extract_queue) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![user_id, current, all], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every fact of the user and agent (`None`: the shared ones), active or superseded, in id
    /// order, with its round's day and timestamp.
    pub(crate) fn agent_facts(
        conn: &Connection,
        user_id: i64,
        agent: Option<&str>,
    ) -> Result<Vec<(FactRow, i32, i64)>> {
        let (columns, n) = crate::store::rows::fact_columns_of_f();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {columns}, r.day, r.ts_unix FROM facts f JOIN rounds r ON r.id = f.round_id \
             WHERE f.user_id = ?1 AND f.agent IS ?2 ORDER BY f.id"
        ))?;
        let rows = stmt.query_map(params![user_id, agent], |r| {
            Ok((crate::store::rows::fact_from_row(r)?, r.get(n)?, r.get(n + 1)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The agents the user's facts belong to, superseded ones included (`None` first).
    pub(crate) fn all_fact_agents(conn: &Connection, user_id: i64) -> Result<Vec<Option<String>>> {
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT agent FROM facts WHERE user_id = ?1 ORDER BY agent IS NOT NULL, agent",
        )?;
        let rows = stmt.query_map([user_id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The id of the user's round with this key.
    pub(crate) fn round_id(conn: &Connection, user_id: i64, key: &str) -> Result<Option<i64>> {
        Ok(conn
            .prepare_cached("SELECT id FROM rounds WHERE user_id = ?1 AND round_key = ?2")?
            .query_row(params![user_id, key], |r| r.get(0))
            .optional()?)
    }

    /// A round's key, agent and extractor.
    pub(crate) fn round_head(
        conn: &Connection,
        round_id: i64,
    ) -> Result<(String, Option<String>, Option<i64>)> {
        Ok(conn
            .prepare_cached("SELECT round_key, agent, extractor FROM rounds WHERE id = ?1")?
            .query_row([round_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?)
    }

    /// Makes the facts `winner` superseded active again, at their initial salience; returns
    /// their keys, in id order.
    pub(crate) fn restore_superseded_by(
        conn: &Connection,
        user_id: i64,
        winner: &str,
    ) -> Result<Vec<String>> {
        let keys: Vec<String> = conn
            .prepare_cached(
                "SELECT fact_key FROM facts WHERE user_id = ?1 AND superseded_by = ?2 ORDER BY id",
            )?
            .query_map(params![user_id, winner], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        conn.prepare_cached(
            "UPDATE facts SET superseded_by = NULL, salience = initial_salience WHERE user_id = ?1 AND superseded_by = ?2",
        )?
        .execute(params![user_id, winner])?;
        Ok(keys)
    }

    /// Removes `loser` from the keys `winner` supersedes.
    pub(crate) fn drop_supersedes(conn: &Connection, user_id: i64, winner: &str, loser: &str) -> Result<()> {
        let list: Option<String> = conn
            .prepare_cached("SELECT supersedes FROM facts WHERE user_id = ?1 AND fact_key = ?2")?
            .query_row(params![user_id, winner], |r| r.get(0))
            .optional()?
            .flatten();
        let kept: Vec<&str> =
            list.as_deref().unwrap_or_default().split(' ').filter(|k| !k.is_empty() && *k != loser).collect();
        let kept = (!kept.is_empty()).then(|| kept.join(" "));
        conn.prepare_cached("UPDATE facts SET supersedes = ?3 WHERE user_id = ?1 AND fact_key = ?2")?
            .execute(params![user_id, winner, kept])?;
        Ok(())
    }

    /// Sets what a re-settle decided for a fact: its pair key, the fact that supersedes it (and
    /// then salience 0), the facts it supersedes, and its salience.
    pub(crate) fn resettle_fact(conn: &Connection, f: &FactRow) -> Result<()> {
        conn.prepare_cached(
            "UPDATE facts SET pair_key = ?2, superseded_by = ?3, supersedes = ?4, salience = ?5 WHERE id = ?1",
        )?
        .execute(params![f.id, f.pair_key, f.superseded_by, f.supersedes, f64::from(f.salience)])?;
        Ok(())
    }
}
