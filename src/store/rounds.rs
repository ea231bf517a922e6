//! Round rows: reads under the visibility rule, and the writes used inside a caller's
//! transaction (a round with its vector, words and part records; its deletion).

use super::db::{Db, Dialect, Param, Row, insert_id};
use super::rows::UserVectors;
use super::{Store, View, among, visible};
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::round::Turn;
use mnemon_backend::p;

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

pub(super) const ROUND_COLUMNS: &str =
    "id, round_key, session, ts, ts_unix, day, norm_key, turns, text, agent, extractor";

impl Store {
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

    pub(super) fn rounds_where(&self, sql: &str, args: &[Param<'_>]) -> Result<Vec<RoundRow>> {
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

    /// Which of `keys` name rounds of the user already stored (a key is made of the round's
    /// time, session, text and agent, so a stored key is this very round).
    pub(crate) fn stored_round_keys(&self, user: i64, keys: &[&str]) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT round_key FROM rounds WHERE user_id = ?1 AND {}",
            among(self.db().dialect(), "round_key", 2)
        );
        let keys: Vec<Option<&str>> = keys.iter().copied().map(Some).collect();
        self.db().rows(&sql, &[Param::Int(user), Param::Texts(&keys)], |r| r.get(0))
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

    /// The vector of every round the view sees, in round id order, with each round's day number.
    pub(crate) fn user_vectors(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors_of(
            "r.id, r.day, CAST(1 AS REAL)",
            "rounds r",
            "round_vectors",
            "r.id",
            &format!("WHERE r.user_id = ?1 AND {} ORDER BY r.id", visible("r.agent", 2)),
            view,
        )
    }

    /// The vectors of the part records of every round the view sees (see `crate::model::parts`), in
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
}

/// Writes inside one transaction (`conn` is the open transaction).
pub(crate) mod write {
    use super::*;
    use crate::store::FactRow;
    use crate::store::facts::write::{delete_fact, round_facts};
    use crate::store::users::write::{enqueue, log, touch_user};
    use std::collections::HashMap;

    /// The rounds stored in `sessions` by `agent` (or shared), in insertion order: each one's
    /// session, normalized text, key and vector. What an `add` call needs to find its rounds'
    /// duplicates, exact and by cosine, in one read.
    pub(crate) fn session_rounds(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        sessions: &[Option<&str>],
    ) -> Result<Vec<SessionRound>> {
        let sql = format!(
            "SELECT r.session, r.norm_key, r.round_key, v.embedding FROM rounds r \
             JOIN round_vectors v ON v.rowid = r.id WHERE r.user_id = ?1 AND {} \
             AND r.agent IS NOT DISTINCT FROM ?3 ORDER BY r.id",
            among(conn.dialect(), "r.session", 2)
        );
        conn.rows(&sql, &[Param::Int(user_id), Param::Texts(sessions), Param::from(agent)], |r| {
            Ok(SessionRound { session: r.get(0)?, norm_key: r.get(1)?, key: r.get(2)?, vector: r.get(3)? })
        })
    }

    /// A stored round as [`session_rounds`] reads it.
    pub(crate) struct SessionRound {
        pub session: String,
        pub norm_key: String,
        pub key: String,
        pub vector: Vec<f32>,
    }

    /// Inserts a round with its vector and its FTS row; returns the round's id.
    pub(crate) fn insert_round(conn: &dyn Db, user_id: i64, round: &RoundRow, vector: &[f32]) -> Result<i64> {
        let turns = serde_json::to_string(&round.turns).map_err(|e| Error::input("turns", e.to_string()))?;
        let id = insert_id(
            conn,
            "INSERT INTO rounds(user_id, round_key, session, ts, ts_unix, day, norm_key, turns, text, agent, \
             extractor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
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

    /// One of an `add` call's writes, in the call's order.
    pub(crate) enum AddWrite<'a> {
        /// A new round with its vector and its part records' vectors, logged `round.stored` at
        /// `at` (its sortable time).
        Round { row: RoundRow, vector: &'a [f32], parts: &'a [Vec<f32>], at: String },
        /// A decision about a round not stored (a duplicate).
        Log { at: String, kind: DecisionKind, record: String, other: Option<String>, detail: String },
    }

    /// Writes an `add` call's `writes` for user `user_id` and `agent`, in order: each round with
    /// its vector, words, part records (under `rule`), decision `round.stored` and, when
    /// `queue`, its place in the extraction queue; each other decision; then counts the write
    /// on the user and raises its logical now to `latest` ([`touch_user`]). Returns the new
    /// rounds' ids in order.
    ///
    /// A SQLite file runs a statement a row (in process, microseconds each). PostgreSQL runs one
    /// statement whatever the count of rounds ([`add_rounds_batched`]): a statement there costs
    /// a round trip to the server. Both give every table's rows in the same order, so the same
    /// ids in a fresh store.
    pub(crate) fn add_rounds(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        rule: &str,
        queue: bool,
        writes: &[AddWrite<'_>],
        latest: Option<(&str, i64)>,
    ) -> Result<Vec<i64>> {
        if conn.dialect() == Dialect::Postgres {
            return add_rounds_batched(conn, user_id, agent, rule, queue, writes, latest);
        }
        let mut ids = Vec::new();
        for w in writes {
            match w {
                AddWrite::Round { row, vector, parts, at } => {
                    let id = insert_round(conn, user_id, row, vector)?;
                    set_parts(conn, user_id, id, rule, parts)?;
                    log(conn, user_id, agent, at, DecisionKind::RoundStored, &row.key, None, "{}")?;
                    if queue {
                        enqueue(conn, user_id, id)?;
                    }
                    ids.push(id);
                }
                AddWrite::Log { at, kind, record, other, detail } => {
                    log(conn, user_id, agent, at, *kind, record, other.as_deref(), detail)?;
                }
            }
        }
        touch_user(conn, user_id, latest)?;
        Ok(ids)
    }

    /// The rounds of `?2`…`?12` (columns of [`RoundColumns`], vectors in `?12`) for user `?1`,
    /// inserted in order with their vectors: the `WITH` clauses `input`, `made` (each new
    /// round's id and key) and `vectors`, which the PostgreSQL statements below go on from.
    const ROUNDS_WITH: &str = "WITH input AS (SELECT * FROM unnest(?2::text[], ?3::text[], ?4::text[], \
         ?5::int8[], ?6::int8[], ?7::text[], ?8::text[], ?9::text[], ?10::text[], ?11::text[], ?12::vector[]) \
         WITH ORDINALITY AS i(key, session, ts, unix, day, norm, turns, body, agent, extractor, vec, ord)), \
         made AS (INSERT INTO rounds(user_id, round_key, session, ts, ts_unix, day, norm_key, turns, text, agent, \
         extractor) SELECT CAST(?1 AS BIGINT), key, session, ts, unix, day, norm, turns, body, agent, \
         extractor::bigint FROM input ORDER BY ord RETURNING id, round_key), \
         vectors AS (INSERT INTO round_vectors(rowid, user_id, embedding) \
         SELECT made.id, CAST(?1 AS BIGINT), input.vec FROM made JOIN input ON input.key = made.round_key)";

    /// The statement of [`add_rounds_batched`]: the rounds ([`ROUNDS_WITH`]), their parts
    /// (`?13`, `?14`), rule (`?15`) and queue entries (when `?16`), the decisions (agent `?17`,
    /// columns `?18`…`?22`), then the user's counter and logical now (`?23`, `?24`).
    static ADD_ROUNDS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{ROUNDS_WITH}, \
             parts AS (INSERT INTO round_parts(round_id, user_id, embedding) \
             SELECT made.id, CAST(?1 AS BIGINT), p.vec FROM unnest(?13::text[], ?14::vector[]) \
             WITH ORDINALITY AS p(key, vec, ord) JOIN made ON made.round_key = p.key ORDER BY p.ord), \
             parted AS (INSERT INTO rounds_parted(round_id, rule) SELECT id, CAST(?15 AS TEXT) FROM made), \
             queued AS (INSERT INTO extract_queue(round_id, user_id) SELECT made.id, CAST(?1 AS BIGINT) \
             FROM made JOIN input ON input.key = made.round_key WHERE CAST(?16 AS BOOLEAN) ORDER BY input.ord), \
             logged AS (INSERT INTO decisions(user_id, at, kind, record, other, detail, agent) \
             SELECT CAST(?1 AS BIGINT), l.at, l.kind, l.record, l.other, l.detail, CAST(?17 AS TEXT) \
             FROM unnest(?18::text[], ?19::text[], ?20::text[], ?21::text[], ?22::text[]) \
             WITH ORDINALITY AS l(at, kind, record, other, detail, ord) ORDER BY l.ord), \
             touched AS (UPDATE users SET {} WHERE id = CAST(?1 AS BIGINT)) \
             SELECT id, round_key FROM made",
            crate::store::users::touch_set(23, 24)
        )
    });

    /// Rounds' columns as the lists [`ROUNDS_WITH`] binds.
    struct RoundColumns<'r> {
        rows: Vec<&'r RoundRow>,
        turns: Vec<String>,
        extractors: Vec<Option<String>>,
        unix: Vec<i64>,
        days: Vec<i64>,
    }

    impl<'r> RoundColumns<'r> {
        fn new(rows: Vec<&'r RoundRow>) -> Result<RoundColumns<'r>> {
            let turns = rows
                .iter()
                .map(|r| serde_json::to_string(&r.turns).map_err(|e| Error::input("turns", e.to_string())))
                .collect::<Result<Vec<String>>>()?;
            Ok(RoundColumns {
                extractors: rows.iter().map(|r| r.extractor.map(|e| e.to_string())).collect(),
                unix: rows.iter().map(|r| r.ts_unix).collect(),
                days: rows.iter().map(|r| i64::from(r.day)).collect(),
                turns,
                rows,
            })
        }

        /// The text lists, in the order of `?2`, `?3`, `?4`, `?7`, `?8`, `?9`, `?10`, `?11`.
        fn texts(&self) -> [Vec<Option<&str>>; 8] {
            let rows = &self.rows;
            [
                rows.iter().map(|r| Some(r.key.as_str())).collect(),
                rows.iter().map(|r| Some(r.session.as_str())).collect(),
                rows.iter().map(|r| Some(r.ts.as_str())).collect(),
                rows.iter().map(|r| Some(r.norm_key.as_str())).collect(),
                self.turns.iter().map(|t| Some(t.as_str())).collect(),
                rows.iter().map(|r| Some(r.text.as_str())).collect(),
                rows.iter().map(|r| r.agent.as_deref()).collect(),
                self.extractors.iter().map(Option::as_deref).collect(),
            ]
        }

        /// `?1`…`?12` of [`ROUNDS_WITH`].
        fn params<'a>(
            &'a self,
            user_id: i64,
            texts: &'a [Vec<Option<&'a str>>; 8],
            vectors: &'a [&'a [f32]],
        ) -> Vec<Param<'a>> {
            let [keys, sessions, ts, norm_keys, turns, stored, agents, extractors] = texts;
            vec![
                Param::Int(user_id),
                Param::Texts(keys),
                Param::Texts(sessions),
                Param::Texts(ts),
                Param::Ints(&self.unix),
                Param::Ints(&self.days),
                Param::Texts(norm_keys),
                Param::Texts(turns),
                Param::Texts(stored),
                Param::Texts(agents),
                Param::Texts(extractors),
                Param::Vectors(vectors),
            ]
        }

        /// Runs `sql`, which inserts these rounds and returns each one's `(id, round_key)`; the
        /// new rounds' ids in order.
        fn insert(&self, conn: &dyn Db, sql: &str, params: &[Param<'_>]) -> Result<Vec<i64>> {
            let mut returned = HashMap::with_capacity(self.rows.len());
            conn.query(sql, params, &mut |r| {
                returned.insert(r.get::<String>(1)?, r.get::<i64>(0)?);
                Ok(())
            })?;
            self.rows
                .iter()
                .map(|row| {
                    returned.get(&row.key).copied().ok_or_else(|| {
                        Error::Database(format!("round {} was not returned by its insert", row.key))
                    })
                })
                .collect()
        }
    }

    /// Inserts rounds of user `user_id` with their vectors (as [`insert_round`] does each);
    /// returns their ids in order. PostgreSQL takes them a thousand a statement.
    pub(crate) fn insert_rounds(
        conn: &dyn Db,
        user_id: i64,
        rounds: &[(&RoundRow, &[f32])],
    ) -> Result<Vec<i64>> {
        if conn.dialect() == Dialect::Sqlite {
            return rounds.iter().map(|(row, v)| insert_round(conn, user_id, row, v)).collect();
        }
        static INSERT_ROUNDS: std::sync::LazyLock<String> =
            std::sync::LazyLock::new(|| format!("{ROUNDS_WITH} SELECT id, round_key FROM made"));
        let mut ids = Vec::with_capacity(rounds.len());
        for chunk in rounds.chunks(1000) {
            let columns = RoundColumns::new(chunk.iter().map(|(r, _)| *r).collect())?;
            let texts = columns.texts();
            let vectors: Vec<&[f32]> = chunk.iter().map(|(_, v)| *v).collect();
            ids.extend(columns.insert(conn, &INSERT_ROUNDS, &columns.params(user_id, &texts, &vectors))?);
        }
        Ok(ids)
    }

    /// [`add_rounds`] in PostgreSQL: one statement, each table's rows in one insert of its own
    /// and the user's update (data-modifying `WITH` clauses over `unnest`ed arrays), so one
    /// round trip.
    fn add_rounds_batched(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        rule: &str,
        queue: bool,
        writes: &[AddWrite<'_>],
        latest: Option<(&str, i64)>,
    ) -> Result<Vec<i64>> {
        let rounds = RoundColumns::new(
            writes
                .iter()
                .filter_map(|w| match w {
                    AddWrite::Round { row, .. } => Some(row),
                    AddWrite::Log { .. } => None,
                })
                .collect(),
        )?;
        let texts = rounds.texts();
        let mut vectors: Vec<&[f32]> = Vec::with_capacity(rounds.rows.len());
        let (mut part_keys, mut part_vectors): (Vec<Option<&str>>, Vec<&[f32]>) = (Vec::new(), Vec::new());
        // The decisions, stored rounds' among the rest, in the call's order.
        let mut log: [Vec<Option<&str>>; 5] = Default::default();
        for w in writes {
            let (at, kind, record, other, detail) = match w {
                AddWrite::Round { row, vector, parts, at } => {
                    vectors.push(vector);
                    for p in *parts {
                        part_keys.push(Some(&row.key));
                        part_vectors.push(p);
                    }
                    (at.as_str(), DecisionKind::RoundStored.as_str(), row.key.as_str(), None, "{}")
                }
                AddWrite::Log { at, kind, record, other, detail } => {
                    (at.as_str(), kind.as_str(), record.as_str(), other.as_deref(), detail.as_str())
                }
            };
            for (column, value) in
                log.iter_mut().zip([Some(at), Some(kind), Some(record), other, Some(detail)])
            {
                column.push(value);
            }
        }
        let (latest_ts, latest_unix) = latest.unzip();
        let mut params = rounds.params(user_id, &texts, &vectors);
        params.extend([
            Param::Texts(&part_keys),
            Param::Vectors(&part_vectors),
            Param::Text(rule),
            Param::Int(i64::from(queue)),
            Param::from(agent),
            Param::Texts(&log[0]),
            Param::Texts(&log[1]),
            Param::Texts(&log[2]),
            Param::Texts(&log[3]),
            Param::Texts(&log[4]),
            Param::from(latest_ts),
            Param::from(latest_unix),
        ]);
        rounds.insert(conn, &ADD_ROUNDS, &params)
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
}
