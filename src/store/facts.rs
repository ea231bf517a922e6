//! Fact rows: reads under the visibility rule, and the writes used inside a caller's
//! transaction (a fact with its vector, supersession, salience, deletion).

use std::collections::HashMap;

use super::db::{Db, Row};
use super::rows::UserVectors;
use super::{AsOf, Store, View, visible};
use crate::error::Result;
use crate::model::fact::fact_struct;
use mnemon_backend::p;

fact_struct! {
    /// A stored fact (`salience` 0: superseded, hidden from every read path).
    #[derive(Debug, Clone, PartialEq, Default)]
    pub(crate) struct FactRow {
        pub id: i64,
        pub round_id: i64,
        /// `<round key>/<n>`: the round's key and the fact's place among the round's stored facts.
        pub key: String,
        pub session: String,
        /// The day it ranks under for time windows: its `valid_time` when that is a whole date, else
        /// its round's day.
        pub day: i32,
        pub norm_key: String,
        @statement,
        pub salience: f32,
        pub initial_salience: f32,
        /// `subject|predicate` in normal form, when the fact has a triple.
        pub pair_key: Option<String>,
        /// Keys of the facts it superseded, space-separated.
        pub supersedes: Option<String>,
        /// The key of the fact that superseded it (its salience is then 0).
        pub superseded_by: Option<String>,
        /// Its round's agent.
        pub agent: Option<String>,
        /// The extractor (its id in `extractors`) that produced it.
        pub extractor: Option<i64>,
    }
}

/// An active fact with what the conflict rules need from its round.
pub(crate) struct ActiveFact {
    pub row: FactRow,
    /// Its round's date and timestamp.
    pub round_day: i32,
    pub ts_unix: i64,
    pub vector: Vec<f32>,
}

pub(crate) const FACT_COLUMNS: &str = "id, round_id, fact_key, session, day, norm_key, content, raw, mention, valid_time, \
     subject, predicate, object, salience, initial_salience, pair_key, supersedes, superseded_by, agent, extractor";

/// [`FACT_COLUMNS`] qualified by the alias `f` (for joins), and how many there are: the columns a
/// join adds after them start at that index.
pub(crate) fn fact_columns_of_f() -> (String, usize) {
    let columns: Vec<String> = FACT_COLUMNS.split(',').map(|c| format!("f.{}", c.trim())).collect();
    let n = columns.len();
    (columns.join(", "), n)
}

pub(crate) fn fact_from_row(r: &dyn Row) -> Result<FactRow> {
    Ok(FactRow {
        id: r.get(0)?,
        round_id: r.get(1)?,
        key: r.get(2)?,
        session: r.get(3)?,
        day: r.get(4)?,
        norm_key: r.get(5)?,
        content: r.get(6)?,
        raw: r.get(7)?,
        mention: r.get(8)?,
        valid_time: r.get(9)?,
        subject: r.get(10)?,
        predicate: r.get(11)?,
        object: r.get(12)?,
        salience: r.get(13)?,
        initial_salience: r.get(14)?,
        pair_key: r.get(15)?,
        supersedes: r.get(16)?,
        superseded_by: r.get(17)?,
        agent: r.get(18)?,
        extractor: r.get(19)?,
    })
}

impl Store {
    /// The vectors of the active facts (salience above 0) the view sees, in fact id order, each
    /// under its round's id, with the fact's day and salience.
    pub(crate) fn user_fact_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors_of(
            "f.round_id, f.day, f.salience",
            "facts f",
            "fact_vectors",
            "f.id",
            &format!("WHERE f.user_id = ?1 AND f.salience > 0 AND {} ORDER BY f.id", visible("f.agent", 2)),
            view,
        )
    }

    /// The vectors of every fact the view sees (active or not), in fact id order.
    pub(crate) fn all_fact_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors_of(
            "f.round_id, f.day, f.salience",
            "facts f",
            "fact_vectors",
            "f.id",
            &format!("WHERE f.user_id = ?1 AND {} ORDER BY f.id", visible("f.agent", 2)),
            view,
        )
    }

    /// Every fact the view sees (active or not), in id order.
    pub(crate) fn all_facts(&self, view: View<'_>) -> Result<Vec<FactRow>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ?1 AND {} ORDER BY id",
            visible("agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], fact_from_row)
    }

    /// The active facts (salience above 0) the view sees, in id order: the rows of
    /// [`user_fact_vectors`](Store::user_fact_vectors), in the same order.
    pub(crate) fn active_facts(&self, view: View<'_>) -> Result<Vec<FactRow>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ?1 AND salience > 0 AND {} ORDER BY id",
            visible("agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], fact_from_row)
    }

    /// The fact with this key, if the view sees it (superseded facts included).
    pub(crate) fn fact_by_key(&self, view: View<'_>, key: &str) -> Result<Option<FactRow>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ?1 AND fact_key = ?3 AND {}",
            visible("agent", 2)
        );
        self.db().row(&sql, p![view.user, view.agent, key], fact_from_row)
    }

    /// The facts of each of `rounds`, in id order: the active ones, or with `as_of` those current
    /// then (see [`AsOf`]).
    pub(crate) fn current_facts_of(
        &self,
        view: View<'_>,
        rounds: &[i64],
        as_of: Option<&AsOf>,
    ) -> Result<HashMap<i64, Vec<FactRow>>> {
        // Superseded facts are read only for a time they may have been current at.
        let active = if as_of.is_some() { "" } else { "AND salience > 0 " };
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE round_id = ?3 AND user_id = ?1 {active}AND {} ORDER BY id",
            visible("agent", 2)
        );
        let mut out = HashMap::new();
        for id in rounds {
            let mut facts = self.db().rows(&sql, p![view.user, view.agent, id], fact_from_row)?;
            if let Some(a) = as_of {
                facts = facts.into_iter().filter_map(|f| a.fact(f)).filter(AsOf::current).collect();
            }
            if !facts.is_empty() {
                out.insert(*id, facts);
            }
        }
        Ok(out)
    }
}

/// Writes inside one transaction (`conn` is the open transaction).
pub(crate) mod write {
    use super::*;

    /// The key of an active fact of the same session and agent with the same normalized text, if
    /// any.
    pub(crate) fn exact_fact_duplicate(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        session: &str,
        norm_key: &str,
    ) -> Result<Option<String>> {
        conn.opt(
            "SELECT fact_key FROM facts WHERE user_id = ?1 AND session = ?2 AND norm_key = ?3 AND salience > 0 \
             AND agent IS NOT DISTINCT FROM ?4 ORDER BY id LIMIT 1",
            p![user_id, session, norm_key, agent],
        )
    }

    /// The user's active facts (salience above 0) of one agent (or the shared ones), with their
    /// rounds' dates and their vectors, in id order. Facts only ever meet facts of the same agent.
    pub(crate) fn active_facts(conn: &dyn Db, user_id: i64, agent: Option<&str>) -> Result<Vec<ActiveFact>> {
        let (columns, n) = fact_columns_of_f();
        let sql = format!(
            "SELECT {columns}, r.day, r.ts_unix, v.embedding FROM facts f \
             JOIN rounds r ON r.id = f.round_id JOIN fact_vectors v ON v.rowid = f.id \
             WHERE f.user_id = ?1 AND f.salience > 0 AND f.agent IS NOT DISTINCT FROM ?2 ORDER BY f.id"
        );
        conn.rows(&sql, p![user_id, agent], |r| {
            Ok(ActiveFact {
                row: fact_from_row(r)?,
                round_day: r.get(n)?,
                ts_unix: r.get(n + 1)?,
                vector: r.get(n + 2)?,
            })
        })
    }

    /// Sets a fact's current salience.
    pub(crate) fn set_salience(conn: &dyn Db, fact_id: i64, salience: f32) -> Result<()> {
        conn.execute("UPDATE facts SET salience = ?2 WHERE id = ?1", p![fact_id, salience])?;
        Ok(())
    }

    /// Marks fact `loser` superseded by `winner`: salience 0, the winner recorded on both sides.
    pub(crate) fn supersede(conn: &dyn Db, user_id: i64, loser: &str, winner: &str) -> Result<()> {
        conn.execute(
            "UPDATE facts SET salience = 0, superseded_by = ?3 WHERE user_id = ?1 AND fact_key = ?2",
            p![user_id, loser, winner],
        )?;
        conn.execute(
            "UPDATE facts SET supersedes = CASE WHEN supersedes IS NULL THEN ?3 ELSE supersedes || ' ' || ?3 END \
             WHERE user_id = ?1 AND fact_key = ?2",
            p![user_id, winner, loser],
        )?;
        Ok(())
    }

    /// Stores a fact and its vector; returns its id.
    pub(crate) fn insert_fact(conn: &dyn Db, user_id: i64, f: &FactRow, vector: &[f32]) -> Result<i64> {
        let id: i64 = conn.one(
            "INSERT INTO facts(user_id, round_id, fact_key, session, day, norm_key, content, raw, mention, \
             valid_time, subject, predicate, object, salience, initial_salience, pair_key, supersedes, superseded_by, \
             agent, extractor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
             ?19, ?20) RETURNING id",
            p![
                user_id,
                f.round_id,
                &f.key,
                &f.session,
                f.day,
                &f.norm_key,
                &f.content,
                &f.raw,
                &f.mention,
                &f.valid_time,
                &f.subject,
                &f.predicate,
                &f.object,
                f.salience,
                f.initial_salience,
                &f.pair_key,
                &f.supersedes,
                &f.superseded_by,
                &f.agent,
                &f.extractor
            ],
        )?;
        conn.execute(
            "INSERT INTO fact_vectors(rowid, user_id, embedding) VALUES (?1, ?2, ?3)",
            p![id, user_id, vector],
        )?;
        Ok(id)
    }

    /// The facts of one round, in id order.
    pub(crate) fn round_facts(conn: &dyn Db, round_id: i64) -> Result<Vec<FactRow>> {
        conn.rows(
            &format!("SELECT {FACT_COLUMNS} FROM facts WHERE round_id = ?1 ORDER BY id"),
            p![round_id],
            fact_from_row,
        )
    }

    /// Removes a fact and its vector.
    pub(crate) fn delete_fact(conn: &dyn Db, fact_id: i64) -> Result<()> {
        conn.execute("DELETE FROM fact_vectors WHERE rowid = ?1", p![fact_id])?;
        conn.execute("DELETE FROM facts WHERE id = ?1", p![fact_id])?;
        Ok(())
    }
}
