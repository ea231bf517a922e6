//! Reads for people browsing a store: every user's counts, a page of a user's rounds with all
//! their facts, the decisions about given records, the decision log by kind a page at a time,
//! and counts per day. Each is one or a few statements, bounded by the page asked for.

use std::collections::HashMap;

use super::db::Dialect;
use super::facts::{FACT_COLUMNS, fact_from_row};
use super::users::{DECISION_COLUMNS, DecisionRow, TOMBSTONE_MARK, decision_from_row, decision_kind};
use super::{FactRow, RoundRow, Store, View, among, visible};
use crate::error::Result;
use crate::model::decision::DecisionKind;
use mnemon_backend::Param;
use mnemon_backend::p;

/// One user's row and logical now.
pub(crate) struct UserRow {
    pub id: i64,
    pub name: String,
    pub now_ts: Option<String>,
}

/// Records of one user and agent (`None`: shared): rounds, notes on read paths, condensed notes,
/// active and superseded facts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub rounds: usize,
    pub notes: usize,
    pub condensed: usize,
    pub facts: usize,
    pub superseded: usize,
}

/// Counts per day number of what a view holds.
#[derive(Debug, Default)]
pub(crate) struct Days {
    pub rounds: Vec<(i32, usize)>,
    pub notes: Vec<(i32, usize)>,
    /// Facts by their round's day.
    pub facts: Vec<(i32, usize)>,
    /// `fact.superseded` decisions by the logical time they were made at (`at`, sortable).
    pub supersessions: Vec<(String, usize)>,
}

fn count(n: i64) -> usize {
    n.unsigned_abs() as usize
}

impl Store {
    /// Every user (a forgotten user's tombstone left out), by name.
    pub(crate) fn user_rows(&self) -> Result<Vec<UserRow>> {
        self.db().rows(
            "SELECT id, name, now_ts FROM users WHERE substr(name, 1, 1) <> ?1 ORDER BY name",
            p![TOMBSTONE_MARK],
            |r| Ok(UserRow { id: r.get(0)?, name: r.get(1)?, now_ts: r.get(2)? }),
        )
    }

    /// What every user holds, per agent (`None`: shared records): one grouped scan per table.
    pub(crate) fn tallies(&self) -> Result<HashMap<(i64, Option<String>), Tally>> {
        let mut out: HashMap<(i64, Option<String>), Tally> = HashMap::new();
        // (user, agent, a count, another count) per group.
        type Grouped = (i64, Option<String>, i64, i64);
        let grouped = |sql: &str| -> Result<Vec<Grouped>> {
            self.db().rows(sql, &[], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        };
        for (user, agent, n, _) in
            grouped("SELECT user_id, agent, count(*), 0 FROM rounds GROUP BY user_id, agent")?
        {
            out.entry((user, agent)).or_default().rounds = count(n);
        }
        for (user, agent, live, condensed) in grouped(
            "SELECT user_id, agent, count(CASE WHEN condensed_into IS NULL THEN 1 END), \
             count(condensed_into) FROM notes GROUP BY user_id, agent",
        )? {
            let t = out.entry((user, agent)).or_default();
            (t.notes, t.condensed) = (count(live), count(condensed));
        }
        for (user, agent, active, superseded) in grouped(
            "SELECT user_id, agent, count(CASE WHEN salience > 0 THEN 1 END), \
             count(superseded_by) FROM facts GROUP BY user_id, agent",
        )? {
            let t = out.entry((user, agent)).or_default();
            (t.facts, t.superseded) = (count(active), count(superseded));
        }
        Ok(out)
    }

    /// Up to `limit` rounds the view sees after `after` (`(ts_unix, id)` of a round) in time
    /// order (`ts_unix`, then id), oldest first; from the first with `after` `None`.
    pub(crate) fn rounds_page(
        &self,
        view: View<'_>,
        after: Option<(i64, i64)>,
        limit: usize,
    ) -> Result<Vec<RoundRow>> {
        let (ts, id) = after.unwrap_or((i64::MIN, i64::MIN));
        let sql = format!(
            "SELECT {} FROM rounds WHERE user_id = ?1 AND {} \
             AND (ts_unix > ?3 OR (ts_unix = ?3 AND id > ?4)) ORDER BY ts_unix, id LIMIT ?5",
            super::rounds::ROUND_COLUMNS,
            visible("agent", 2)
        );
        self.rounds_where(&sql, p![view.user, view.agent, ts, id, limit as i64])
    }

    /// How many rounds the view sees.
    pub(crate) fn round_count(&self, view: View<'_>) -> Result<usize> {
        let sql = format!("SELECT count(*) FROM rounds WHERE user_id = ?1 AND {}", visible("agent", 2));
        Ok(count(self.db().one(&sql, p![view.user, view.agent])?))
    }

    /// How many rounds the view sees before time `ts_unix` (its rounds at that time after `id`
    /// excluded): the position of a page.
    pub(crate) fn rounds_before(&self, view: View<'_>, ts_unix: i64, id: i64) -> Result<usize> {
        let sql = format!(
            "SELECT count(*) FROM rounds WHERE user_id = ?1 AND {} \
             AND (ts_unix < ?3 OR (ts_unix = ?3 AND id <= ?4))",
            visible("agent", 2)
        );
        Ok(count(self.db().one(&sql, p![view.user, view.agent, ts_unix, id])?))
    }

    /// Every fact of the given rounds that the view sees, superseded ones included, by round
    /// then storage order.
    pub(crate) fn facts_of_rounds(&self, view: View<'_>, rounds: &[i64]) -> Result<Vec<FactRow>> {
        if rounds.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ?1 AND {} AND {} ORDER BY round_id, id",
            visible("agent", 2),
            among(self.db().dialect(), "round_id", 3)
        );
        self.db().rows(
            &sql,
            &[Param::Int(view.user), Param::from(view.agent), Param::Ints(rounds)][..],
            fact_from_row,
        )
    }

    /// The decisions of `kind` the view sees about any of `records`, in insertion order.
    pub(crate) fn decisions_about(
        &self,
        view: View<'_>,
        kind: DecisionKind,
        records: &[&str],
    ) -> Result<Vec<DecisionRow>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {DECISION_COLUMNS} FROM decisions WHERE user_id = ?1 AND {} AND kind = ?3 AND {} \
             ORDER BY id",
            visible("agent", 2),
            among(self.db().dialect(), "record", 4)
        );
        let records: Vec<Option<&str>> = records.iter().copied().map(Some).collect();
        self.db().rows(
            &sql,
            &[
                Param::Int(view.user),
                Param::from(view.agent),
                Param::Text(kind.as_str()),
                Param::Texts(&records),
            ],
            decision_from_row,
        )
    }

    /// Up to `limit` decisions the view sees after the one with id `after` in logical order
    /// (`at`, `record`, id), of one of `kinds` (every kind when empty).
    pub(crate) fn decisions_page(
        &self,
        view: View<'_>,
        kinds: &[DecisionKind],
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<DecisionRow>> {
        let kinds_in = match self.db().dialect() {
            Dialect::Sqlite => "SELECT value FROM json_each(?4)",
            Dialect::Postgres => "SELECT jsonb_array_elements_text(CAST(CAST(?4 AS text) AS jsonb))",
        };
        // Every parameter is used whichever filters apply (0: no cursor, `[]`: every kind); the
        // cursor row's place is read from the row itself (its id alone is the cursor).
        let sql = format!(
            "SELECT {DECISION_COLUMNS} FROM decisions WHERE user_id = ?1 AND {} \
             AND (?3 = 0 OR (at, record, id) > (SELECT at, record, id FROM decisions WHERE id = ?3 AND user_id = ?1)) \
             AND (?4 = '[]' OR kind IN ({kinds_in})) ORDER BY at, record, id LIMIT ?5",
            visible("agent", 2)
        );
        let list = serde_json::to_string(kinds).map_err(|e| self.corrupt(e.to_string()))?;
        self.db().rows(
            &sql,
            p![view.user, view.agent, after.unwrap_or(0), list.as_str(), limit as i64],
            decision_from_row,
        )
    }

    /// How many decisions of each kind the view sees, by kind.
    pub(crate) fn decision_kinds(&self, view: View<'_>) -> Result<Vec<(DecisionKind, usize)>> {
        let sql = format!(
            "SELECT kind, count(*) FROM decisions WHERE user_id = ?1 AND {} GROUP BY kind ORDER BY kind",
            visible("agent", 2)
        );
        self.db().rows(&sql, p![view.user, view.agent], |r| Ok((decision_kind(r.get(0)?)?, count(r.get(1)?))))
    }

    /// What the view holds per day: rounds, notes on read paths and facts (superseded ones too)
    /// per day number, and supersessions per logical time.
    pub(crate) fn days(&self, view: View<'_>) -> Result<Days> {
        let per_day = |table: &str, extra: &str| -> Result<Vec<(i32, usize)>> {
            let sql = format!(
                "SELECT day, count(*) FROM {table} WHERE user_id = ?1 AND {} {extra}GROUP BY day ORDER BY day",
                visible("agent", 2)
            );
            self.db().rows(&sql, p![view.user, view.agent], |r| Ok((r.get(0)?, count(r.get(1)?))))
        };
        let facts_sql = format!(
            "SELECT r.day, count(*) FROM facts f JOIN rounds r ON r.id = f.round_id \
             WHERE f.user_id = ?1 AND {} GROUP BY r.day ORDER BY r.day",
            visible("f.agent", 2)
        );
        let supersessions_sql = format!(
            "SELECT substr(at, 1, 7), count(*) FROM decisions WHERE user_id = ?1 AND {} \
             AND kind = 'fact.superseded' GROUP BY substr(at, 1, 7) ORDER BY substr(at, 1, 7)",
            visible("agent", 2)
        );
        Ok(Days {
            rounds: per_day("rounds", "")?,
            notes: per_day("notes", "AND condensed_into IS NULL ")?,
            facts: self
                .db()
                .rows(&facts_sql, p![view.user, view.agent], |r| Ok((r.get(0)?, count(r.get(1)?))))?,
            supersessions: self
                .db()
                .rows(&supersessions_sql, p![view.user, view.agent], |r| Ok((r.get(0)?, count(r.get(1)?))))?,
        })
    }
}
