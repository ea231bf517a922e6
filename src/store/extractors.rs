//! The extractors that produced a store's facts, and the reads and writes of re-extraction.

use std::collections::BTreeMap;

use super::db::Db;
use super::{Store, View};
use crate::error::{Error, Result};
use mnemon_backend::p;

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
        let sql = format!(
            "SELECT e.id, e.pins_hash, e.pins, \
             (SELECT count(*) FROM rounds r WHERE r.extractor = e.id AND (?3 = 1 OR (r.user_id = ?1 AND {}))), \
             (SELECT count(*) FROM facts f WHERE f.extractor = e.id AND (?3 = 1 OR (f.user_id = ?1 AND {}))) \
             FROM extractors e ORDER BY e.id",
            super::visible("r.agent", 2),
            super::visible("f.agent", 2),
        );
        let (user, agent) = view.map_or((0, None), |v| (v.user, v.agent));
        let rows: Vec<(i64, String, String, i64, i64)> =
            self.db().rows(&sql, p![user, agent, i64::from(view.is_none())], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?;
        let mut out = Vec::new();
        for (id, hash, pins, rounds, facts) in rows {
            let pins = serde_json::from_str(&pins).map_err(|e| Error::Corrupt {
                path: self.path.clone(),
                reason: format!("extractor {hash}: {e}"),
            })?;
            out.push(ExtractorRow {
                id,
                hash,
                pins,
                rounds: rounds.unsigned_abs() as usize,
                facts: facts.unsigned_abs() as usize,
            });
        }
        Ok(out)
    }

    /// The id of the extractor with these pins, if the store knows it.
    pub(crate) fn extractor_id(&self, hash: &str) -> Result<Option<i64>> {
        self.db().opt("SELECT id FROM extractors WHERE pins_hash = ?1", p![hash])
    }

    /// Every extractor's hash by id.
    pub(crate) fn extractor_hashes(&self) -> Result<BTreeMap<i64, String>> {
        Ok(self
            .db()
            .rows("SELECT id, pins_hash FROM extractors", &[], |r| Ok((r.get(0)?, r.get(1)?)))?
            .into_iter()
            .collect())
    }
}

pub(crate) mod write {
    use super::*;
    use crate::store::FactRow;

    /// Records an extractor's pins (once); returns its id.
    pub(crate) fn register(conn: &dyn Db, pins: &BTreeMap<String, String>) -> Result<i64> {
        let hash = super::super::extractor_hash(pins);
        conn.execute(
            "INSERT INTO extractors(pins_hash, pins) VALUES (?1, ?2) ON CONFLICT(pins_hash) DO NOTHING",
            p![&hash, &super::super::extractor_json(pins)],
        )?;
        conn.one("SELECT id FROM extractors WHERE pins_hash = ?1", p![&hash])
    }

    /// Records which extractor made a round's latest extraction.
    pub(crate) fn set_round_extractor(conn: &dyn Db, round_id: i64, extractor: Option<i64>) -> Result<()> {
        conn.execute("UPDATE rounds SET extractor = ?2 WHERE id = ?1", p![round_id, extractor])?;
        Ok(())
    }

    /// Ids of the user's rounds that are not queued and whose latest extraction was not made by
    /// `current` (all of them with `all`), in id order.
    pub(crate) fn rounds_to_reextract(
        conn: &dyn Db,
        user_id: i64,
        current: i64,
        all: bool,
    ) -> Result<Vec<i64>> {
        conn.rows(
            "SELECT id FROM rounds WHERE user_id = ?1 AND (?3 = 1 OR extractor IS DISTINCT FROM ?2) \
             AND id NOT IN (SELECT round_id FROM extract_queue) ORDER BY id",
            p![user_id, current, i64::from(all)],
            |r| r.get(0),
        )
    }

    /// Every fact of the user and agent (`None`: the shared ones), active or superseded, in id
    /// order, with its round's day and timestamp.
    pub(crate) fn agent_facts(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
    ) -> Result<Vec<(FactRow, i32, i64)>> {
        let (columns, n) = crate::store::facts::fact_columns_of_f();
        conn.rows(
            &format!(
                "SELECT {columns}, r.day, r.ts_unix FROM facts f JOIN rounds r ON r.id = f.round_id \
                 WHERE f.user_id = ?1 AND f.agent IS NOT DISTINCT FROM ?2 ORDER BY f.id"
            ),
            p![user_id, agent],
            |r| Ok((crate::store::facts::fact_from_row(r)?, r.get(n)?, r.get(n + 1)?)),
        )
    }

    /// The agents the user's facts belong to, superseded ones included (`None` first).
    pub(crate) fn all_fact_agents(conn: &dyn Db, user_id: i64) -> Result<Vec<Option<String>>> {
        conn.rows(
            "SELECT DISTINCT agent, agent IS NOT NULL FROM facts WHERE user_id = ?1 ORDER BY agent IS NOT NULL, agent",
            p![user_id],
            |r| r.get(0),
        )
    }

    /// The id of the user's round with this key.
    pub(crate) fn round_id(conn: &dyn Db, user_id: i64, key: &str) -> Result<Option<i64>> {
        conn.opt("SELECT id FROM rounds WHERE user_id = ?1 AND round_key = ?2", p![user_id, key])
    }

    /// A round's key, agent and extractor.
    pub(crate) fn round_head(conn: &dyn Db, round_id: i64) -> Result<(String, Option<String>, Option<i64>)> {
        conn.row("SELECT round_key, agent, extractor FROM rounds WHERE id = ?1", p![round_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .ok_or_else(|| Error::Database(format!("round id {round_id} is missing")))
    }

    /// Makes the facts `winner` superseded active again, at their initial salience; returns
    /// their keys, in id order.
    pub(crate) fn restore_superseded_by(conn: &dyn Db, user_id: i64, winner: &str) -> Result<Vec<String>> {
        let keys = conn.rows(
            "SELECT fact_key FROM facts WHERE user_id = ?1 AND superseded_by = ?2 ORDER BY id",
            p![user_id, winner],
            |r| r.get(0),
        )?;
        conn.execute(
            "UPDATE facts SET superseded_by = NULL, salience = initial_salience WHERE user_id = ?1 AND superseded_by = ?2",
            p![user_id, winner],
        )?;
        Ok(keys)
    }

    /// Removes `loser` from the keys `winner` supersedes.
    pub(crate) fn drop_supersedes(conn: &dyn Db, user_id: i64, winner: &str, loser: &str) -> Result<()> {
        let list: Option<String> = conn
            .opt::<Option<String>>(
                "SELECT supersedes FROM facts WHERE user_id = ?1 AND fact_key = ?2",
                p![user_id, winner],
            )?
            .flatten();
        let kept: Vec<&str> =
            list.as_deref().unwrap_or_default().split(' ').filter(|k| !k.is_empty() && *k != loser).collect();
        let kept = (!kept.is_empty()).then(|| kept.join(" "));
        conn.execute(
            "UPDATE facts SET supersedes = ?3 WHERE user_id = ?1 AND fact_key = ?2",
            p![user_id, winner, &kept],
        )?;
        Ok(())
    }

    /// Sets what a re-settle decided for a fact: its pair key, the fact that supersedes it (and
    /// then salience 0), the facts it supersedes, and its salience.
    pub(crate) fn resettle_fact(conn: &dyn Db, f: &FactRow) -> Result<()> {
        conn.execute(
            "UPDATE facts SET pair_key = ?2, superseded_by = ?3, supersedes = ?4, salience = ?5 WHERE id = ?1",
            p![f.id, &f.pair_key, &f.superseded_by, &f.supersedes, f.salience],
        )?;
        Ok(())
    }
}
