//! Row-level reads and writes. Every function takes the user's row id and filters on it.

use std::collections::HashMap;

use super::db::{Db, Dialect, Param, Row};
use super::{visible, Store, View};
use crate::error::{Error, Result};
use crate::p;
use crate::round::Turn;

/// A stored round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoundRow {
    pub id: i64,
    pub key: String,
    pub session: String,
    pub ts: String,
    pub ts_unix: i64,
    pub day: i32,
    pub norm_key: String,
    pub turns: Vec<Turn>,
    pub text: String,
    /// The agent it is private to; `None`: shared by every agent of the user.
    pub agent: Option<String>,
    /// The extractor (its id in `extractors`) that made its latest extraction; `None` while it
    /// waits, or in a store that does not extract.
    pub extractor: Option<i64>,
}

/// A logged write-path decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecisionRow {
    pub id: i64,
    pub agent: Option<String>,
    pub at: String,
    pub kind: String,
    pub record: String,
    pub other: Option<String>,
    pub detail: String,
}

/// A stored fact (`salience` 0: superseded, hidden from every read path).
#[derive(Debug, Clone, PartialEq)]
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
    pub content: String,
    pub raw: String,
    pub mention: Option<String>,
    pub valid_time: Option<String>,
    pub subject: Option<String>,
    pub predicate: Option<String>,
    pub object: Option<String>,
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

/// An active fact with what the conflict rules need from its round.
pub(crate) struct ActiveFact {
    pub row: FactRow,
    /// Its round's date and timestamp.
    pub round_day: i32,
    pub ts_unix: i64,
    pub vector: Vec<f32>,
}

/// A user's vectors in id order, as one flat array; `ids` are the rounds they rank for.
pub(crate) struct UserVectors {
    pub ids: Vec<i64>,
    pub days: Vec<i32>,
    pub saliences: Vec<f32>,
    pub data: Vec<f32>,
}

/// A round whose derived records (named text, part records) are missing or follow another rule.
pub(crate) struct StaleRound {
    pub id: i64,
    pub user: i64,
    pub turns: Vec<Turn>,
    /// The text it is stored, embedded and word-indexed as.
    pub text: String,
    /// The rule its derived records were made under, if any.
    pub rule: Option<String>,
}

pub(crate) const FACT_COLUMNS: &str =
    "id, round_id, fact_key, session, day, norm_key, content, raw, mention, valid_time, \
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

pub(crate) fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn blob_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

const ROUND_COLUMNS: &str =
    "id, round_key, session, ts, ts_unix, day, norm_key, turns, text, agent, extractor";

impl Store {
    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::Corrupt { path: self.path.clone(), reason: reason.into() }
    }

    fn round_from_row(&self, r: &dyn Row) -> Result<RoundRow> {
        let turns: String = r.get(7)?;
        let key: String = r.get(1)?;
        Ok(RoundRow {
            id: r.get(0)?,
            session: r.get(2)?,
            ts: r.get(3)?,
            ts_unix: r.get(4)?,
            day: r.get(5)?,
            norm_key: r.get(6)?,
            turns: serde_json::from_str(&turns)
                .map_err(|e| self.corrupt(format!("round {key}: turns: {e}")))?,
            text: r.get(8)?,
            agent: r.get(9)?,
            extractor: r.get(10)?,
            key,
        })
    }

    /// The user's row id and write counter, if the user exists.
    pub(crate) fn user(&self, name: &str) -> Result<Option<(i64, i64)>> {
        self.db()
            .row("SELECT id, version FROM users WHERE name = ?1", p![name], |r| Ok((r.get(0)?, r.get(1)?)))
    }

    /// Every user name, sorted (a forgotten user's tombstone left out).
    pub(crate) fn user_names(&self) -> Result<Vec<String>> {
        self.db().rows(
            "SELECT name FROM users WHERE substr(name, 1, 1) <> ?1 ORDER BY name",
            p![TOMBSTONE_MARK],
            |r| r.get(0),
        )
    }

    /// The user's logical now: the verbatim and numeric form of the greatest `ts` stored.
    pub(crate) fn user_now(&self, user_id: i64) -> Result<Option<(String, i64)>> {
        self.db().row(
            "SELECT now_ts, now_unix FROM users WHERE id = ?1 AND now_ts IS NOT NULL",
            p![user_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn rounds_where(&self, sql: &str, args: &[Param<'_>]) -> Result<Vec<RoundRow>> {
        self.db().rows(sql, args, |r| self.round_from_row(r))
    }

    /// Rounds with the given ids that the view sees, in the order of `ids`.
    pub(crate) fn rounds_by_id(&self, view: View<'_>, ids: &[i64]) -> Result<Vec<RoundRow>> {
        let sql = format!(
            "SELECT {ROUND_COLUMNS} FROM rounds WHERE id = ?3 AND user_id = ?1 AND {}",
            visible("agent", 2)
        );
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match self.rounds_where(&sql, p![view.user, view.agent, id])?.pop() {
                Some(r) => out.push(r),
                None => return Err(self.corrupt(format!("round id {id} is indexed but missing"))),
            }
        }
        Ok(out)
    }

    /// The round with this key, if the view sees it.
    pub(crate) fn round_by_key(&self, view: View<'_>, key: &str) -> Result<Option<RoundRow>> {
        let sql = format!(
            "SELECT {ROUND_COLUMNS} FROM rounds WHERE user_id = ?1 AND round_key = ?3 AND {}",
            visible("agent", 2)
        );
        Ok(self.rounds_where(&sql, p![view.user, view.agent, key])?.pop())
    }

    /// All the rounds the view sees, oldest first (ties by insertion order).
    pub(crate) fn all_rounds(&self, view: View<'_>) -> Result<Vec<RoundRow>> {
        let sql = format!(
            "SELECT {ROUND_COLUMNS} FROM rounds WHERE user_id = ?1 AND {} ORDER BY ts_unix, id",
            visible("agent", 2)
        );
        self.rounds_where(&sql, p![view.user, view.agent])
    }

    /// Vectors from `sql`, whose rows are (round id, day, salience, embedding) for user `?1` and
    /// agent `?2`.
    fn vectors(&self, sql: &str, view: View<'_>) -> Result<UserVectors> {
        let mut out =
            UserVectors { ids: Vec::new(), days: Vec::new(), saliences: Vec::new(), data: Vec::new() };
        self.db().query(sql, p![view.user, view.agent], &mut |r| {
            out.ids.push(r.get(0)?);
            out.days.push(r.get(1)?);
            out.saliences.push(r.get(2)?);
            r.extend_vector(3, &mut out.data)
        })?;
        Ok(out)
    }

    /// The vector of every round the view sees, in round id order, with each round's day number.
    pub(crate) fn user_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors(
            &format!(
                "SELECT r.id, r.day, CAST(1 AS REAL), v.embedding FROM rounds r JOIN round_vectors v ON v.rowid = r.id \
                 WHERE r.user_id = ?1 AND {} ORDER BY r.id",
                visible("r.agent", 2)
            ),
            view,
        )
    }

    /// The vectors of the part records of every round the view sees (see `crate::parts`), in
    /// round then part order, each under its round's id with the round's day.
    pub(crate) fn user_part_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors(
            &format!(
                "SELECT r.id, r.day, CAST(1 AS REAL), p.embedding FROM rounds r JOIN round_parts p ON p.round_id = r.id \
                 WHERE r.user_id = ?1 AND {} ORDER BY r.id, p.id",
                visible("r.agent", 2)
            ),
            view,
        )
    }

    /// Every round (of every user) whose derived records (text, parts) were not made under `rule`,
    /// in id order. The ids come from an index (no round's text is read unless it is returned), so
    /// a store that is up to date answers without reading its rounds.
    pub(crate) fn stale_rounds(&self, rule: &str) -> Result<Vec<StaleRound>> {
        // Sorted here: an ORDER BY would make SQLite scan the table itself instead of an index.
        let mut ids: Vec<i64> = self.db().rows(
            "SELECT r.id FROM rounds r WHERE NOT EXISTS \
             (SELECT 1 FROM rounds_parted d WHERE d.round_id = r.id AND d.rule = ?1)",
            p![rule],
            |r| r.get(0),
        )?;
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let (user, turns, text, rule): (i64, String, String, Option<String>) = self
                .db()
                .row(
                    "SELECT r.user_id, r.turns, r.text, d.rule FROM rounds r \
                     LEFT JOIN rounds_parted d ON d.round_id = r.id WHERE r.id = ?1",
                    p![id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?
                .ok_or_else(|| self.corrupt(format!("round id {id} vanished while read")))?;
            let turns: Vec<Turn> =
                serde_json::from_str(&turns).map_err(|e| self.corrupt(format!("rounds.turns: {e}")))?;
            out.push(StaleRound { id, user, turns, text, rule });
        }
        Ok(out)
    }

    /// The vectors of the active facts (salience above 0) the view sees, in fact id order, each
    /// under its round's id, with the fact's day and salience.
    pub(crate) fn user_fact_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors(
            &format!(
                "SELECT f.round_id, f.day, f.salience, v.embedding FROM facts f JOIN fact_vectors v ON v.rowid = f.id \
                 WHERE f.user_id = ?1 AND f.salience > 0 AND {} ORDER BY f.id",
                visible("f.agent", 2)
            ),
            view,
        )
    }

    /// The vectors of every fact the view sees (active or not), in fact id order.
    pub(crate) fn all_fact_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors(
            &format!(
                "SELECT f.round_id, f.day, f.salience, v.embedding FROM facts f JOIN fact_vectors v ON v.rowid = f.id \
                 WHERE f.user_id = ?1 AND {} ORDER BY f.id",
                visible("f.agent", 2)
            ),
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

    /// The fact with this key, if the view sees it (superseded facts included).
    pub(crate) fn fact_by_key(&self, view: View<'_>, key: &str) -> Result<Option<FactRow>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ?1 AND fact_key = ?3 AND {}",
            visible("agent", 2)
        );
        self.db().row(&sql, p![view.user, view.agent, key], fact_from_row)
    }

    /// The active facts of each of `rounds`, in id order.
    pub(crate) fn active_facts_of(
        &self,
        view: View<'_>,
        rounds: &[i64],
    ) -> Result<HashMap<i64, Vec<FactRow>>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE round_id = ?3 AND user_id = ?1 AND salience > 0 AND {} \
             ORDER BY id",
            visible("agent", 2)
        );
        let mut out = HashMap::new();
        for id in rounds {
            let facts = self.db().rows(&sql, p![view.user, view.agent, id], fact_from_row)?;
            if !facts.is_empty() {
                out.insert(*id, facts);
            }
        }
        Ok(out)
    }

    /// The rounds and active facts the view sees.
    pub(crate) fn record_counts(&self, view: View<'_>) -> Result<(usize, usize)> {
        let count = |sql: String| -> Result<usize> {
            Ok(self.db().one::<i64>(&sql, p![view.user, view.agent])?.unsigned_abs() as usize)
        };
        Ok((
            count(format!("SELECT count(*) FROM rounds WHERE user_id = ?1 AND {}", visible("agent", 2)))?,
            count(format!(
                "SELECT count(*) FROM facts WHERE user_id = ?1 AND salience > 0 AND {}",
                visible("agent", 2)
            ))?,
        ))
    }

    /// Keys of the rounds the view sees that wait for extraction, in queue order.
    pub(crate) fn queued_rounds(&self, view: View<'_>) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT r.round_key FROM extract_queue q JOIN rounds r ON r.id = q.round_id \
             WHERE q.user_id = ?1 AND {} ORDER BY q.round_id",
            visible("r.agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], |r| r.get(0))
    }

    /// Rounds waiting for extraction: the user's, or everyone's.
    pub(crate) fn pending(&self, user_id: Option<i64>) -> Result<usize> {
        let n: i64 = match user_id {
            Some(u) => self.db().one("SELECT count(*) FROM extract_queue WHERE user_id = ?1", p![u])?,
            None => self.db().one("SELECT count(*) FROM extract_queue", &[])?,
        };
        Ok(n.unsigned_abs() as usize)
    }

    /// The first `limit` queued rounds (lowest ids) of users not in `skip`, with their users.
    pub(crate) fn next_queued(&self, skip: &[i64], limit: usize) -> Result<Vec<(i64, i64)>> {
        let sql = match self.db().dialect() {
            Dialect::Sqlite => {
                "SELECT round_id, user_id FROM extract_queue \
                 WHERE user_id NOT IN (SELECT value FROM json_each(?1)) ORDER BY round_id LIMIT ?2"
            }
            Dialect::Postgres => {
                "SELECT round_id, user_id FROM extract_queue \
                 WHERE user_id <> ALL(?1) ORDER BY round_id LIMIT ?2"
            }
        };
        self.db().rows(sql, &[Param::Ints(skip), Param::from(limit)], |r| Ok((r.get(0)?, r.get(1)?)))
    }

    /// The first `limit` queued rounds (lowest ids) of `users`: `(round id, user id, user name)`.
    pub(crate) fn queued_of(&self, users: &[i64], limit: usize) -> Result<Vec<(i64, i64, String)>> {
        let sql = match self.db().dialect() {
            Dialect::Sqlite => {
                "SELECT q.round_id, q.user_id, u.name FROM extract_queue q JOIN users u ON u.id = q.user_id \
                 WHERE q.user_id IN (SELECT value FROM json_each(?1)) ORDER BY q.round_id LIMIT ?2"
            }
            Dialect::Postgres => {
                "SELECT q.round_id, q.user_id, u.name FROM extract_queue q JOIN users u ON u.id = q.user_id \
                 WHERE q.user_id = ANY(?1) ORDER BY q.round_id LIMIT ?2"
            }
        };
        self.db()
            .rows(sql, &[Param::Ints(users), Param::from(limit)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    }

    /// The database's own KNN over the user's round vectors (sqlite-vec's partition; pgvector's
    /// `<->`, exact, or through the HNSW index for an approximate backend): `(round id, L2 distance)`, nearest first.
    /// Every round of the user (no agent view: the vector tables hold no agent column).
    pub(crate) fn knn(&self, user_id: i64, query: &[f32], k: usize) -> Result<Vec<(i64, f32)>> {
        let sql = match self.db().dialect() {
            Dialect::Sqlite => {
                "SELECT rowid, distance FROM round_vectors \
                 WHERE embedding MATCH ?1 AND k = ?2 AND user_id = ?3 ORDER BY distance"
            }
            // The HNSW index serves only this exact ordering; the exact form's `+ 0` keeps the
            // planner on a scan of the user's vectors even where the index exists.
            Dialect::Postgres if self.approximate() => {
                "SELECT rowid, embedding <-> ?1 FROM round_vectors \
                 WHERE user_id = ?3 ORDER BY embedding <-> ?1 LIMIT ?2"
            }
            Dialect::Postgres => {
                "SELECT rowid, embedding <-> ?1 FROM round_vectors \
                 WHERE user_id = ?3 ORDER BY (embedding <-> ?1) + 0, rowid LIMIT ?2"
            }
        };
        self.db().rows(sql, p![query, k, user_id], |r| Ok((r.get(0)?, r.get(1)?)))
    }

    /// The round texts the view sees, `(round id, text)` in id order.
    pub(crate) fn user_texts(&self, view: View<'_>) -> Result<Vec<(i64, String)>> {
        let sql =
            format!("SELECT id, text FROM rounds WHERE user_id = ?1 AND {} ORDER BY id", visible("agent", 2));
        self.db().rows(&sql, p![view.user, view.agent], |r| Ok((r.get(0)?, r.get(1)?)))
    }

    /// The decisions the view sees in logical order: by logical time, then record key (a round's
    /// facts, `<round key>/<n>`, sort right after their round), then insertion. That order does
    /// not depend on whether extraction ran inside `add` or later on the queue.
    pub(crate) fn decisions(&self, view: View<'_>) -> Result<Vec<DecisionRow>> {
        let sql = format!(
            "SELECT id, at, kind, record, other, detail, agent FROM decisions WHERE user_id = ?1 AND {} \
             ORDER BY at, record, id",
            visible("agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], |r| {
            Ok(DecisionRow {
                id: r.get(0)?,
                at: r.get(1)?,
                kind: r.get(2)?,
                record: r.get(3)?,
                other: r.get(4)?,
                detail: r.get(5)?,
                agent: r.get(6)?,
            })
        })
    }
}

/// Writes inside one transaction (`conn` is the open transaction).
pub(crate) mod write {
    use super::*;

    /// The user's row id, creating the user if needed.
    pub(crate) fn ensure_user(conn: &dyn Db, name: &str) -> Result<i64> {
        conn.execute("INSERT INTO users(name) VALUES (?1) ON CONFLICT(name) DO NOTHING", p![name])?;
        conn.one("SELECT id FROM users WHERE name = ?1", p![name])
    }

    /// Raises the user's logical now to `ts` if later, and counts a write.
    pub(crate) fn touch_user(conn: &dyn Db, user_id: i64, latest: Option<(&str, i64)>) -> Result<()> {
        conn.execute("UPDATE users SET version = version + 1 WHERE id = ?1", p![user_id])?;
        if let Some((ts, unix)) = latest {
            conn.execute(
                "UPDATE users SET now_ts = ?2, now_unix = ?3 WHERE id = ?1 AND (now_unix IS NULL OR now_unix < ?3)",
                p![user_id, ts, unix],
            )?;
        }
        Ok(())
    }

    /// The key of a round of the same session and agent with the same normalized text, if any.
    pub(crate) fn exact_duplicate(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        session: &str,
        norm_key: &str,
    ) -> Result<Option<String>> {
        conn.opt(
            "SELECT round_key FROM rounds WHERE user_id = ?1 AND session = ?2 AND norm_key = ?3 \
             AND agent IS NOT DISTINCT FROM ?4 LIMIT 1",
            p![user_id, session, norm_key, agent],
        )
    }

    /// Keys and vectors of the rounds stored in one session by one agent (or shared), in
    /// insertion order.
    pub(crate) fn session_vectors(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        session: &str,
    ) -> Result<Vec<(String, Vec<f32>)>> {
        conn.rows(
            "SELECT r.round_key, v.embedding FROM rounds r JOIN round_vectors v ON v.rowid = r.id \
             WHERE r.user_id = ?1 AND r.session = ?2 AND r.agent IS NOT DISTINCT FROM ?3 ORDER BY r.id",
            p![user_id, session, agent],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// The user's write counter.
    pub(crate) fn user_version(conn: &dyn Db, user_id: i64) -> Result<i64> {
        conn.one("SELECT version FROM users WHERE id = ?1", p![user_id])
    }

    /// Inserts a round with its vector and its FTS row; returns the round's id.
    pub(crate) fn insert_round(conn: &dyn Db, user_id: i64, round: &RoundRow, vector: &[f32]) -> Result<i64> {
        let turns = serde_json::to_string(&round.turns).map_err(|e| Error::input("turns", e.to_string()))?;
        let id: i64 = conn.one(
            "INSERT INTO rounds(user_id, round_key, session, ts, ts_unix, day, norm_key, turns, text, agent, \
             extractor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) RETURNING id",
            p![
                user_id,
                &round.key,
                &round.session,
                &round.ts,
                round.ts_unix,
                round.day,
                &round.norm_key,
                &turns,
                &round.text,
                &round.agent,
                &round.extractor
            ],
        )?;
        index_round(conn, user_id, id, &round.text, vector)?;
        Ok(id)
    }

    /// Indexes round `id` for ranking: its vector and (SQLite) its FTS row over `text` (its
    /// stored text).
    fn index_round(conn: &dyn Db, user_id: i64, id: i64, text: &str, vector: &[f32]) -> Result<()> {
        conn.execute(
            "INSERT INTO round_vectors(rowid, user_id, embedding) VALUES (?1, ?2, ?3)",
            p![id, user_id, vector],
        )?;
        if conn.dialect() == Dialect::Sqlite {
            conn.execute("INSERT INTO round_fts(rowid, text) VALUES (?1, ?2)", p![id, text])?;
        }
        Ok(())
    }

    /// Removes what [`index_round`] added; `text` must be the text it was indexed with.
    fn unindex_round(conn: &dyn Db, id: i64, text: &str) -> Result<()> {
        if conn.dialect() == Dialect::Sqlite {
            conn.execute(
                "INSERT INTO round_fts(round_fts, rowid, text) VALUES ('delete', ?1, ?2)",
                p![id, text],
            )?;
        }
        conn.execute("DELETE FROM round_vectors WHERE rowid = ?1", p![id])?;
        Ok(())
    }

    /// Replaces the part records of round `round_id` with `vectors` (in part order) and records
    /// that they were made under `rule`.
    pub(crate) fn set_parts(
        conn: &dyn Db,
        user_id: i64,
        round_id: i64,
        rule: &str,
        vectors: &[Vec<f32>],
    ) -> Result<()> {
        conn.execute("DELETE FROM round_parts WHERE round_id = ?1", p![round_id])?;
        for v in vectors {
            conn.execute(
                "INSERT INTO round_parts(round_id, user_id, embedding) VALUES (?1, ?2, ?3)",
                p![round_id, user_id, v],
            )?;
        }
        set_rule(conn, round_id, rule)
    }

    /// Records that round `round_id`'s derived records follow `rule`.
    pub(crate) fn set_rule(conn: &dyn Db, round_id: i64, rule: &str) -> Result<()> {
        conn.execute(
            "INSERT INTO rounds_parted(round_id, rule) VALUES (?1, ?2) \
             ON CONFLICT(round_id) DO UPDATE SET rule = excluded.rule",
            p![round_id, rule],
        )?;
        Ok(())
    }

    /// Replaces round `id`'s stored (embedded and word-indexed) text `old` by `new`, with its
    /// vector: the FTS row, the text column and the vector.
    pub(crate) fn set_round_text(
        conn: &dyn Db,
        user_id: i64,
        id: i64,
        old: &str,
        new: &str,
        vector: &[f32],
    ) -> Result<()> {
        unindex_round(conn, id, old)?;
        conn.execute("UPDATE rounds SET text = ?2 WHERE id = ?1", p![id, new])?;
        index_round(conn, user_id, id, new, vector)
    }

    /// Appends a decision to the user's log, visible to `agent`'s view (`None`: to every view).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn log(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        at: &str,
        kind: &str,
        record: &str,
        other: Option<&str>,
        detail: &str,
    ) -> Result<()> {
        conn.execute(
            "INSERT INTO decisions(user_id, at, kind, record, other, detail, agent) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            p![user_id, at, kind, record, other, detail, agent],
        )?;
        Ok(())
    }

    /// Queues round `round_id` for extraction.
    pub(crate) fn enqueue(conn: &dyn Db, user_id: i64, round_id: i64) -> Result<()> {
        conn.execute("INSERT INTO extract_queue(round_id, user_id) VALUES (?1, ?2)", p![round_id, user_id])?;
        Ok(())
    }

    /// Whether round `round_id` waits for extraction.
    pub(crate) fn is_queued(conn: &dyn Db, round_id: i64) -> Result<bool> {
        Ok(conn.opt::<i64>("SELECT 1 FROM extract_queue WHERE round_id = ?1", p![round_id])?.is_some())
    }

    /// Takes round `round_id` off the queue.
    pub(crate) fn dequeue(conn: &dyn Db, round_id: i64) -> Result<()> {
        conn.execute("DELETE FROM extract_queue WHERE round_id = ?1", p![round_id])?;
        Ok(())
    }

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

    /// Removes a round with its facts, vectors, words and queue entry; returns its facts.
    pub(crate) fn delete_round(conn: &dyn Db, round: &RoundRow) -> Result<Vec<FactRow>> {
        let facts = round_facts(conn, round.id)?;
        for f in &facts {
            delete_fact(conn, f.id)?;
        }
        conn.execute("DELETE FROM extract_queue WHERE round_id = ?1", p![round.id])?;
        unindex_round(conn, round.id, &round.text)?;
        conn.execute("DELETE FROM round_parts WHERE round_id = ?1", p![round.id])?;
        conn.execute("DELETE FROM rounds_parted WHERE round_id = ?1", p![round.id])?;
        conn.execute("DELETE FROM rounds WHERE id = ?1", p![round.id])?;
        Ok(facts)
    }

    /// Drops the values a decision's detail quotes (a supersession's old and new objects, a
    /// replaced fact's content) from every decision that names `key`, so that a deleted record
    /// leaves no content in the log.
    pub(crate) fn redact_decisions(conn: &dyn Db, user_id: i64, key: &str) -> Result<()> {
        redact_where(conn, user_id, key, "(record = ?2 OR other = ?2)")
    }

    /// [`redact_decisions`] for every fact a round ever had (every key `<round key>/…`, those
    /// a re-extraction replaced included).
    pub(crate) fn redact_round_decisions(conn: &dyn Db, user_id: i64, round_key: &str) -> Result<()> {
        let prefix = format!("{round_key}/");
        let chars = prefix.chars().count();
        redact_where(
            conn,
            user_id,
            &prefix,
            &format!("(substr(record, 1, {chars}) = ?2 OR substr(other, 1, {chars}) = ?2)"),
        )
    }

    /// The quoted values are removed in Rust, not by the database's JSON functions, so that the
    /// detail left is the same text on every backend.
    fn redact_where(conn: &dyn Db, user_id: i64, key: &str, names: &str) -> Result<()> {
        let quoting: Vec<(i64, String)> = conn.rows(
            &format!(
                "SELECT id, detail FROM decisions WHERE user_id = ?1 AND {names} \
                 AND (detail LIKE '%\"old\"%' OR detail LIKE '%\"new\"%' OR detail LIKE '%\"content\"%') ORDER BY id"
            ),
            p![user_id, key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, detail) in quoting {
            let Ok(serde_json::Value::Object(mut fields)) =
                serde_json::from_str::<serde_json::Value>(&detail)
            else {
                continue;
            };
            let quoted = ["old", "new", "content"].iter().filter(|k| fields.remove(**k).is_some()).count();
            if quoted > 0 {
                let redacted = serde_json::Value::Object(fields).to_string();
                conn.execute("UPDATE decisions SET detail = ?2 WHERE id = ?1", p![id, &redacted])?;
            }
        }
        Ok(())
    }

    /// Removes every round, fact, vector (parts included), FTS row, queue entry and decision of the
    /// user; returns the rounds removed.
    pub(crate) fn forget_user(conn: &dyn Db, user_id: i64) -> Result<usize> {
        conn.execute("DELETE FROM extract_queue WHERE user_id = ?1", p![user_id])?;
        conn.execute(
            "DELETE FROM fact_vectors WHERE rowid IN (SELECT id FROM facts WHERE user_id = ?1)",
            p![user_id],
        )?;
        conn.execute("DELETE FROM facts WHERE user_id = ?1", p![user_id])?;
        if conn.dialect() == Dialect::Sqlite {
            conn.execute(
                "INSERT INTO round_fts(round_fts, rowid, text) SELECT 'delete', id, text FROM rounds WHERE user_id = ?1",
                p![user_id],
            )?;
        }
        conn.execute(
            "DELETE FROM round_vectors WHERE rowid IN (SELECT id FROM rounds WHERE user_id = ?1)",
            p![user_id],
        )?;
        conn.execute("DELETE FROM round_parts WHERE user_id = ?1", p![user_id])?;
        conn.execute(
            "DELETE FROM rounds_parted WHERE round_id IN (SELECT id FROM rounds WHERE user_id = ?1)",
            p![user_id],
        )?;
        let n = conn.execute("DELETE FROM rounds WHERE user_id = ?1", p![user_id])?;
        conn.execute("DELETE FROM decisions WHERE user_id = ?1", p![user_id])?;
        // The row stays, so its id is never given to another user (views in other processes are
        // keyed by it), but its name goes: a tombstone that no valid user name can equal.
        conn.execute(
            "UPDATE users SET name = ?2, now_ts = NULL, now_unix = NULL WHERE id = ?1",
            p![user_id, &tombstone(user_id)],
        )?;
        Ok(n as usize)
    }
}

/// The first character of a forgotten user's name: a control character, which no user name may
/// hold.
const TOMBSTONE_MARK: &str = "\u{1}";

/// The name a forgotten user's row keeps: it starts with [`TOMBSTONE_MARK`].
pub(crate) fn tombstone(user_id: i64) -> String {
    format!("{TOMBSTONE_MARK}forgotten {user_id}")
}
