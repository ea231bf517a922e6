//! Reads for people browsing a store rather than for a prompt: every user with what they hold, a
//! user's timeline a page at a time (each round with all its facts, a superseded fact with the
//! decision that replaced it), the decision log by kind a page at a time, and activity per
//! month. None of them ranks or renders.

use std::collections::{BTreeMap, HashMap};

use chrono::{Datelike, NaiveDate};
use serde::Serialize;

use super::types::{Decision, Fact, StoredRound};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::scope::Scope;
use crate::store::{DecisionRow, Tally};

/// Most rounds or decisions one page holds.
pub const MAX_PAGE: usize = 500;

/// A user of a store and what they hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserSummary {
    /// The user.
    pub user: String,
    /// Their logical now: the latest timestamp stored for them (`None`: nothing dated yet).
    pub latest: Option<String>,
    /// What they hold in all, shared and agent-private records together.
    #[serde(flatten)]
    pub holds: RecordCounts,
    /// Each agent with private records, by name, and what is private to it.
    pub agents: Vec<AgentSummary>,
}

/// One agent's private records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentSummary {
    /// The agent.
    pub agent: String,
    /// What is private to it.
    #[serde(flatten)]
    pub holds: RecordCounts,
}

/// Records of one kind each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Holdings))]
pub struct RecordCounts {
    /// Conversation rounds.
    pub rounds: usize,
    /// Notes on read paths.
    pub notes: usize,
    /// Notes folded into a condensed summary.
    pub condensed: usize,
    /// Active facts.
    pub facts: usize,
    /// Facts superseded by a later one.
    pub superseded: usize,
}

impl RecordCounts {
    fn add(&mut self, t: &Tally) {
        self.rounds += t.rounds;
        self.notes += t.notes;
        self.condensed += t.condensed;
        self.facts += t.facts;
        self.superseded += t.superseded;
    }
}

/// Which page of a timeline or decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paging {
    /// Entries per page, 1 to [`MAX_PAGE`].
    pub limit: usize,
    /// The `next` of the previous page (`None`: the first page).
    pub cursor: Option<String>,
}

impl Default for Paging {
    fn default() -> Self {
        Paging { limit: 50, cursor: None }
    }
}

impl Paging {
    fn check(&self) -> Result<()> {
        if !(1..=MAX_PAGE).contains(&self.limit) {
            return Err(Error::input("limit", format!("must be in 1..={MAX_PAGE}")));
        }
        Ok(())
    }
}

/// A page of a user's timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TimelinePage {
    /// The page's rounds, oldest first, each with all its facts.
    pub rounds: Vec<TimelineRound>,
    /// Rounds the scope sees in all.
    pub total: usize,
    /// Rounds before this page.
    pub offset: usize,
    /// The cursor of the next page (`None`: this is the last).
    pub next: Option<String>,
}

/// A round in a timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TimelineRound {
    /// The round as stored.
    #[serde(flatten)]
    pub round: StoredRound,
    /// Every fact extracted from it, superseded ones too, in extraction order.
    pub facts: Vec<TimelineFact>,
}

/// A fact in a timeline: current, or superseded with what replaced it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TimelineFact {
    /// The fact (salience 0 when superseded).
    #[serde(flatten)]
    pub fact: Fact,
    /// The key of the fact that superseded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The decision that superseded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersession: Option<Supersession>,
}

/// Why a fact was superseded, from the decision log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Supersession {
    /// When (logical time).
    pub at: String,
    /// The rule that decided it.
    pub rule: String,
    /// The `subject|predicate` key both facts share.
    pub key: Option<String>,
    /// The superseded fact's value.
    pub old: Option<String>,
    /// The value that replaced it.
    pub new: Option<String>,
}

/// A page of the decision log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionPage {
    /// The page's decisions, in logical order.
    pub decisions: Vec<Decision>,
    /// How many decisions of each kind the scope has (whatever the filter).
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, usize>))]
    pub kinds: BTreeMap<DecisionKind, usize>,
    /// The cursor of the next page (`None`: this is the last).
    pub next: Option<String>,
}

/// What a scope stored per month.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Activity {
    /// Every month from the first with a record to the last, oldest first (months with nothing
    /// included, so a chart's axis is even).
    pub months: Vec<MonthActivity>,
}

/// One month of [`Activity`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MonthActivity {
    /// `YYYY-MM`.
    pub month: String,
    /// Rounds dated in it.
    pub rounds: usize,
    /// Notes dated in it (on read paths).
    pub notes: usize,
    /// Facts extracted from its rounds (superseded ones too).
    pub facts: usize,
    /// Supersessions decided in it (logical time).
    pub supersessions: usize,
}

/// Every user of the store, by name, with what they and each of their agents hold.
pub(crate) fn users(engine: &Engine) -> Result<Vec<UserSummary>> {
    let read = || -> Result<Vec<UserSummary>> {
        let store = engine.read()?;
        let users = store.user_rows()?;
        let tallies = store.tallies()?;
        let mut agents: HashMap<i64, BTreeMap<String, RecordCounts>> = HashMap::new();
        let mut totals: HashMap<i64, RecordCounts> = HashMap::new();
        for ((user, agent), t) in &tallies {
            totals.entry(*user).or_default().add(t);
            if let Some(a) = agent {
                agents.entry(*user).or_default().entry(a.clone()).or_default().add(t);
            }
        }
        Ok(users
            .into_iter()
            .map(|u| UserSummary {
                holds: totals.get(&u.id).copied().unwrap_or_default(),
                agents: agents
                    .remove(&u.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(agent, holds)| AgentSummary { agent, holds })
                    .collect(),
                user: u.name,
                latest: u.now_ts,
            })
            .collect())
    };
    read().map_err(|e| engine.located(e))
}

/// A timeline cursor: the `ts_unix` and id of the last round of a page.
fn parse_round_cursor(cursor: &str) -> Result<(i64, i64)> {
    cursor
        .split_once(':')
        .and_then(|(t, i)| Some((t.parse().ok()?, i.parse().ok()?)))
        .ok_or_else(|| Error::input("cursor", "is not a cursor from a previous timeline page"))
}

/// A page of the rounds `scope` sees, oldest first, each with all its facts.
pub(crate) fn timeline(engine: &Engine, paging: &Paging, scope: Scope<'_>) -> Result<TimelinePage> {
    paging.check()?;
    let after = paging.cursor.as_deref().map(parse_round_cursor).transpose()?;
    engine.reading(scope, |store, view| {
        let mut rows = store.rounds_page(view, after, paging.limit + 1)?;
        let next = if rows.len() > paging.limit {
            rows.truncate(paging.limit);
            rows.last().map(|r| format!("{}:{}", r.ts_unix, r.id))
        } else {
            None
        };
        let total = store.round_count(view)?;
        let offset = match after {
            Some((ts, id)) => store.rounds_before(view, ts, id)?,
            None => 0,
        };
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let facts = store.facts_of_rounds(view, &ids)?;
        let losers: Vec<&str> =
            facts.iter().filter(|f| f.superseded_by.is_some()).map(|f| f.key.as_str()).collect();
        // The latest supersession of each loser (a fact restored and superseded again has more).
        let mut why: HashMap<String, Supersession> = HashMap::new();
        for d in store.decisions_about(view, DecisionKind::FactSuperseded, &losers)? {
            why.insert(d.record.clone(), supersession(&d));
        }
        let mut by_round: HashMap<i64, Vec<TimelineFact>> = HashMap::new();
        for f in facts {
            let round = f.round_id;
            let supersession = f.superseded_by.as_ref().and_then(|_| why.remove(&f.key));
            let superseded_by = f.superseded_by.clone();
            by_round.entry(round).or_default().push(TimelineFact {
                fact: Fact::from(f),
                superseded_by,
                supersession,
            });
        }
        Ok(TimelinePage {
            rounds: rows
                .into_iter()
                .map(|r| TimelineRound { facts: by_round.remove(&r.id).unwrap_or_default(), round: r.into() })
                .collect(),
            total,
            offset,
            next,
        })
    })
}

fn supersession(d: &DecisionRow) -> Supersession {
    let detail: serde_json::Value = serde_json::from_str(&d.detail).unwrap_or_default();
    let text = |k: &str| detail.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    Supersession {
        at: d.at.clone(),
        rule: text("rule").unwrap_or_else(|| "unrecorded".into()),
        key: text("key"),
        old: text("old"),
        new: text("new"),
    }
}

/// A page of the decisions `scope` sees of one of `kinds` (every kind when empty), in logical
/// order.
pub(crate) fn decision_page(
    engine: &Engine,
    kinds: &[DecisionKind],
    paging: &Paging,
    scope: Scope<'_>,
) -> Result<DecisionPage> {
    paging.check()?;
    let after = match paging.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .ok()
                .filter(|id| *id > 0)
                .ok_or_else(|| Error::input("cursor", "is not a cursor from a previous decision page"))?,
        ),
    };
    engine.reading(scope, |store, view| {
        let mut rows = store.decisions_page(view, kinds, after, paging.limit + 1)?;
        let next = if rows.len() > paging.limit {
            rows.truncate(paging.limit);
            rows.last().map(|d| d.id.to_string())
        } else {
            None
        };
        Ok(DecisionPage {
            decisions: rows
                .into_iter()
                .map(|d| Decision {
                    at: d.at,
                    kind: d.kind,
                    record: d.record,
                    other: d.other,
                    detail: d.detail,
                })
                .collect(),
            kinds: store.decision_kinds(view)?.into_iter().collect(),
            next,
        })
    })
}

/// What `scope` stored per month, from its first month with a record to its last.
pub(crate) fn activity(engine: &Engine, scope: Scope<'_>) -> Result<Activity> {
    engine.reading(scope, |store, view| {
        let days = store.days(view)?;
        let mut months: BTreeMap<(i32, u32), MonthActivity> = BTreeMap::new();
        let month_of_day = |day: i32| {
            NaiveDate::from_num_days_from_ce_opt(day).map(|d| (d.year(), d.month())).unwrap_or((0, 1))
        };
        for (day, n) in &days.rounds {
            months.entry(month_of_day(*day)).or_default().rounds += n;
        }
        for (day, n) in &days.notes {
            months.entry(month_of_day(*day)).or_default().notes += n;
        }
        for (day, n) in &days.facts {
            months.entry(month_of_day(*day)).or_default().facts += n;
        }
        for (month, n) in &days.supersessions {
            let parsed = month
                .split_once('-')
                .and_then(|(y, m)| Some((y.parse::<i32>().ok()?, m.parse::<u32>().ok()?)));
            if let Some(ym) = parsed {
                months.entry(ym).or_default().supersessions += n;
            }
        }
        // Every month between the first and the last, so the months are evenly spaced (within
        // a century: a stray date far away keeps only the months with records).
        let filled = match (months.keys().next(), months.keys().next_back()) {
            (Some(&(y0, m0)), Some(&(y1, m1))) if (y1 - y0) * 12 + m1 as i32 - m0 as i32 <= 1200 => {
                let mut all = Vec::new();
                let (mut y, mut m) = (y0, m0);
                while (y, m) <= (y1, m1) {
                    all.push((y, m));
                    (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                }
                all
            }
            _ => months.keys().copied().collect(),
        };
        let out = filled
            .into_iter()
            .map(|(y, m)| MonthActivity {
                month: format!("{y:04}-{m:02}"),
                ..months.remove(&(y, m)).unwrap_or_default()
            })
            .collect();
        Ok(Activity { months: out })
    })
}
