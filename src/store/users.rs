//! Users (logical now, write counter, the tombstone a forgotten user leaves), the extraction
//! queue and the decision log.

use super::db::{Db, Dialect, Param, Row};
use super::{Store, View, among, visible};
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use mnemon_backend::p;

/// A logged write-path decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecisionRow {
    pub id: i64,
    pub agent: Option<String>,
    pub at: String,
    pub kind: DecisionKind,
    pub record: String,
    pub other: Option<String>,
    pub detail: String,
}

pub(super) const DECISION_COLUMNS: &str = "id, at, kind, record, other, detail, agent";

/// A decision row, read from [`DECISION_COLUMNS`] in order.
pub(super) fn decision_from_row(r: &dyn Row) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: r.get(0)?,
        at: r.get(1)?,
        kind: decision_kind(r.get(2)?)?,
        record: r.get(3)?,
        other: r.get(4)?,
        detail: r.get(5)?,
        agent: r.get(6)?,
    })
}

/// A decision's kind, as the log stores it.
pub(super) fn decision_kind(text: String) -> Result<DecisionKind> {
    DecisionKind::parse(&text)
        .ok_or_else(|| Error::Database(format!("the decision log holds an unknown kind {text:?}")))
}

/// The first character of a forgotten user's name: a control character, which no user name may
/// hold.
pub(super) const TOMBSTONE_MARK: &str = "\u{1}";

/// The name a forgotten user's row keeps: it starts with [`TOMBSTONE_MARK`].
pub(crate) fn tombstone(user_id: i64) -> String {
    format!("{TOMBSTONE_MARK}forgotten {user_id}")
}

impl Store {
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
        let sql = format!(
            "SELECT q.round_id, q.user_id, u.name FROM extract_queue q JOIN users u ON u.id = q.user_id \
             WHERE {} ORDER BY q.round_id LIMIT ?2",
            among(self.db().dialect(), "q.user_id", 1)
        );
        self.db()
            .rows(&sql, &[Param::Ints(users), Param::from(limit)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    }

    /// The decisions the view sees in logical order: by logical time, then record key (a round's
    /// facts, `<round key>/<n>`, sort right after their round), then insertion. That order does
    /// not depend on whether extraction ran inside `add` or later on the queue.
    pub(crate) fn decisions(&self, view: View<'_>) -> Result<Vec<DecisionRow>> {
        let sql = format!(
            "SELECT {DECISION_COLUMNS} FROM decisions WHERE user_id = ?1 AND {} \
             ORDER BY at, record, id",
            visible("agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], decision_from_row)
    }
}

/// The `SET` list of [`write::touch_user`]: the write counter up by one, and the logical now
/// raised to the time in `?ts` (its Unix seconds in `?unix`) when that is later; neither when
/// `?unix` is NULL.
pub(super) fn touch_set(ts: usize, unix: usize) -> String {
    let later = format!("CAST(?{unix} AS BIGINT) IS NOT NULL AND (now_unix IS NULL OR now_unix < ?{unix})");
    format!(
        "version = version + 1, now_ts = CASE WHEN {later} THEN CAST(?{ts} AS TEXT) ELSE now_ts END, \
         now_unix = CASE WHEN {later} THEN ?{unix} ELSE now_unix END"
    )
}

/// Writes inside one transaction (`conn` is the open transaction).
pub(crate) mod write {
    use super::*;

    /// The user's row id, creating the user if needed (one statement for a known user).
    pub(crate) fn ensure_user(conn: &dyn Db, name: &str) -> Result<i64> {
        if let Some(id) = conn.opt("SELECT id FROM users WHERE name = ?1", p![name])? {
            return Ok(id);
        }
        conn.execute("INSERT INTO users(name) VALUES (?1) ON CONFLICT(name) DO NOTHING", p![name])?;
        conn.one("SELECT id FROM users WHERE name = ?1", p![name])
    }

    /// Raises the user's logical now to `ts` if later, and counts a write: one statement (the
    /// `SET` expressions all read the row as it was).
    pub(crate) fn touch_user(conn: &dyn Db, user_id: i64, latest: Option<(&str, i64)>) -> Result<()> {
        let (ts, unix) = latest.unzip();
        conn.execute(&format!("UPDATE users SET {} WHERE id = ?1", touch_set(2, 3)), p![user_id, ts, unix])?;
        Ok(())
    }

    /// The user's row id and write counter, creating the user if needed: one statement in
    /// PostgreSQL (a round trip there), and in a file one for a known user, three for a new one.
    pub(crate) fn user_for_write(conn: &dyn Db, name: &str) -> Result<(i64, i64)> {
        if conn.dialect() == Dialect::Sqlite {
            let known = || {
                conn.row("SELECT id, version FROM users WHERE name = ?1", p![name], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
            };
            if let Some(known) = known()? {
                return Ok(known);
            }
            conn.execute("INSERT INTO users(name) VALUES (?1) ON CONFLICT(name) DO NOTHING", p![name])?;
            return known()?.ok_or_else(|| Error::Database(format!("user {name:?} neither made nor found")));
        }
        // The insert's row for a new user; the snapshot's row (taken before the insert) for
        // one that was there.
        conn.row(
            "WITH made AS (INSERT INTO users(name) VALUES (?1) ON CONFLICT(name) DO NOTHING RETURNING id, version) \
             SELECT id, version FROM made UNION ALL SELECT id, version FROM users WHERE name = ?1",
            p![name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .ok_or_else(|| Error::Database(format!("user {name:?} neither made nor found")))
    }

    /// The user's write counter.
    pub(crate) fn user_version(conn: &dyn Db, user_id: i64) -> Result<i64> {
        conn.one("SELECT version FROM users WHERE id = ?1", p![user_id])
    }

    /// Appends a decision to the user's log, visible to `agent`'s view (`None`: to every view).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn log(
        conn: &dyn Db,
        user_id: i64,
        agent: Option<&str>,
        at: &str,
        kind: DecisionKind,
        record: &str,
        other: Option<&str>,
        detail: &str,
    ) -> Result<()> {
        conn.execute(
            "INSERT INTO decisions(user_id, at, kind, record, other, detail, agent) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            p![user_id, at, kind.as_str(), record, other, detail, agent],
        )?;
        Ok(())
    }

    /// One decision of a [`log_many`] call.
    pub(crate) struct Entry<'a> {
        pub user_id: i64,
        pub agent: Option<&'a str>,
        pub at: &'a str,
        pub kind: DecisionKind,
        pub record: &'a str,
        pub other: Option<&'a str>,
        pub detail: &'a str,
    }

    /// Appends `entries` to their users' logs in order (as [`log`] does each); PostgreSQL takes
    /// them five thousand a statement.
    pub(crate) fn log_many(conn: &dyn Db, entries: &[Entry<'_>]) -> Result<()> {
        if conn.dialect() == Dialect::Sqlite {
            for e in entries {
                log(conn, e.user_id, e.agent, e.at, e.kind, e.record, e.other, e.detail)?;
            }
            return Ok(());
        }
        for chunk in entries.chunks(5000) {
            let users: Vec<i64> = chunk.iter().map(|e| e.user_id).collect();
            let agents: Vec<Option<&str>> = chunk.iter().map(|e| e.agent).collect();
            let at: Vec<Option<&str>> = chunk.iter().map(|e| Some(e.at)).collect();
            let kinds: Vec<Option<&str>> = chunk.iter().map(|e| Some(e.kind.as_str())).collect();
            let records: Vec<Option<&str>> = chunk.iter().map(|e| Some(e.record)).collect();
            let others: Vec<Option<&str>> = chunk.iter().map(|e| e.other).collect();
            let details: Vec<Option<&str>> = chunk.iter().map(|e| Some(e.detail)).collect();
            conn.execute(
                "INSERT INTO decisions(user_id, at, kind, record, other, detail, agent) \
                 SELECT l.user_id, l.at, l.kind, l.record, l.other, l.detail, l.agent \
                 FROM unnest(?1::int8[], ?2::text[], ?3::text[], ?4::text[], ?5::text[], ?6::text[], ?7::text[]) \
                 WITH ORDINALITY AS l(user_id, at, kind, record, other, detail, agent, ord) ORDER BY l.ord",
                &[
                    Param::Ints(&users),
                    Param::Texts(&at),
                    Param::Texts(&kinds),
                    Param::Texts(&records),
                    Param::Texts(&others),
                    Param::Texts(&details),
                    Param::Texts(&agents),
                ],
            )?;
        }
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
