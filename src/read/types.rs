//! The read path's public value types: questions and their options, and what reads return.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::fact::{fact_from, fact_struct};
use crate::model::filter::{Filter, Relevance};
use crate::model::note::Note;
use crate::model::round::Turn;
use crate::model::time::Timestamp;
use crate::store::{FactRow, RoundRow};

/// A flag another thread sets to give up a read (a server whose client stopped waiting): the
/// read stops at its next check with [`Error::Cancelled`], having written nothing. Reads check
/// it before embedding each question and before each ranking; a check costs one atomic load.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// let flag = AtomicBool::new(false);
/// let q = mnemon::Query::new("where do I live?").cancel(&flag);
/// flag.store(true, Ordering::Relaxed); // the caller gave up
/// assert!(q.cancel.is_cancelled());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cancel<'a>(pub Option<&'a AtomicBool>);

impl Cancel<'_> {
    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `Err(Cancelled)` once the flag is set.
    pub(crate) fn check(&self) -> Result<()> {
        if self.is_cancelled() { Err(Error::Cancelled) } else { Ok(()) }
    }
}

/// Two options are equal when they watch the same flag.
impl PartialEq for Cancel<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self.0, other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        }
    }
}

/// A question and its per-call options.
///
/// ```
/// use mnemon::{Query, Timestamp};
/// let q = Query::new("What did I buy last week?").date(Timestamp::parse("2023/05/20 (Sat) 02:21")?).budget(1500);
/// assert_eq!(q.budget, Some(1500));
/// # Ok::<(), mnemon::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Query<'a> {
    /// The question; may start with `[Current date: <ts>]`.
    pub text: &'a str,
    /// The question's date (overrides a prefix); anchors its time window.
    pub date: Option<Timestamp>,
    /// Records to consider per angle (overrides [`Config::top_k`]).
    pub top_k: Option<usize>,
    /// Token budget for [`Memory::get_context`] (overrides [`Config::context_budget`]).
    pub budget: Option<usize>,
    /// More ways to ask the same thing, for [`Memory::get_context`]: each is ranked like the
    /// question, and their records are merged, deduplicated, into one budget.
    pub angles: &'a [&'a str],
    /// Per-query ranking options (all off by default).
    pub ranking: Ranking,
    /// A flag that gives the read up (none by default).
    pub cancel: Cancel<'a>,
    /// Read the memory as it stood at this timestamp (the conversation's time, inclusive): only
    /// rounds and notes dated at or before it, and facts as they stood then, a fact superseded
    /// later still current. Anchors the question when it has no date of its own.
    pub as_of: Option<Timestamp>,
    /// For [`Memory::get_context`]: say why each ranked record is in the block or was cut
    /// ([`Context::records`]). Changes nothing else.
    pub explain: bool,
    /// For [`Memory::get_context`]: open the block with the user's profile
    /// ([`Memory::profile`], as it stood at [`Query::as_of`](Query#structfield.as_of)), in at
    /// most this many tokens of the budget (whole lines; at most half the budget).
    pub profile: Option<usize>,
    /// For [`Memory::get_context`]: show every round whole. By default a long assistant reply is
    /// shown as the sentences that bear on the question, each run of left-out sentences marked
    /// `[…]` (the round itself is unchanged, and named in [`Context::rounds`]).
    pub whole_rounds: bool,
}

impl<'a> Query<'a> {
    /// A question with no options.
    pub fn new(text: &'a str) -> Query<'a> {
        Query {
            text,
            date: None,
            top_k: None,
            budget: None,
            angles: &[],
            ranking: Ranking::default(),
            cancel: Cancel::default(),
            as_of: None,
            explain: false,
            profile: None,
            whole_rounds: false,
        }
    }
    /// Opens the context with the user's profile in at most `tokens` tokens (see
    /// [`Query::profile`](Query#structfield.profile)).
    pub fn profile(self, tokens: usize) -> Query<'a> {
        Query { profile: Some(tokens), ..self }
    }
    /// Shows every round whole in the context (see
    /// [`Query::whole_rounds`](Query#structfield.whole_rounds)).
    pub fn whole_rounds(self) -> Query<'a> {
        Query { whole_rounds: true, ..self }
    }

    /// Asks [`Memory::get_context`] to say why each record is in the block or was cut.
    pub fn explain(self) -> Query<'a> {
        Query { explain: true, ..self }
    }
    /// Adds query angles (see [`Query::angles`](Query#structfield.angles)).
    pub fn angles(self, angles: &'a [&'a str]) -> Query<'a> {
        Query { angles, ..self }
    }
    /// Sets the ranking options.
    pub fn ranking(self, ranking: Ranking) -> Query<'a> {
        Query { ranking, ..self }
    }
    /// Sets the question's date.
    pub fn date(self, date: Timestamp) -> Query<'a> {
        Query { date: Some(date), ..self }
    }
    /// Sets the number of rounds.
    pub fn top_k(self, k: usize) -> Query<'a> {
        Query { top_k: Some(k), ..self }
    }
    /// Sets the token budget.
    pub fn budget(self, tokens: usize) -> Query<'a> {
        Query { budget: Some(tokens), ..self }
    }
    /// Reads the memory as it stood at `ts` (see [`Query::as_of`](Query#structfield.as_of)).
    pub fn as_of(self, ts: Timestamp) -> Query<'a> {
        Query { as_of: Some(ts), ..self }
    }
    /// Gives the read up when `flag` is set (see [`Cancel`]).
    pub fn cancel(self, flag: &'a AtomicBool) -> Query<'a> {
        Query { cancel: Cancel(Some(flag)), ..self }
    }
}

impl<'a> From<&'a str> for Query<'a> {
    fn from(text: &'a str) -> Query<'a> {
        Query::new(text)
    }
}

impl<'a> From<&'a String> for Query<'a> {
    fn from(text: &'a String) -> Query<'a> {
        Query::new(text)
    }
}

/// The ranked rounds for a question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recall {
    /// Best first.
    pub rounds: Vec<RecalledRound>,
    /// The date the question was anchored on, if any (`YYYY-MM-DD`).
    pub anchor: Option<String>,
    /// The question's time window, if it names one (`[start, end]`, inclusive).
    pub window: Option<[String; 2]>,
}

/// One recalled round. Equality compares the public fields.
#[derive(Debug, Clone, Serialize)]
pub struct RecalledRound {
    /// Stable key: sortable ts + `#` + content hash.
    pub key: String,
    /// The round's session.
    pub session: String,
    /// The round's timestamp, as the caller gave it.
    pub ts: String,
    /// The verbatim turns.
    pub turns: Vec<Turn>,
    /// Final score (cosine plus the time bonus).
    pub score: f32,
    /// Cosine between question and round.
    pub cosine: f32,
    /// The label of the cosine's relevance score (through the embedder's calibration).
    pub relevance: Relevance,
    /// Whether the round's date is in the question's window.
    pub time_match: bool,
    /// The round's active facts, in extraction order (empty without an extractor).
    pub facts: Vec<Fact>,
    #[serde(skip)]
    pub(crate) id: i64,
    #[serde(skip)]
    pub(crate) ts_unix: i64,
}

impl PartialEq for RecalledRound {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.key,
            &self.session,
            &self.ts,
            &self.turns,
            self.score,
            self.cosine,
            self.relevance,
            self.time_match,
            &self.facts,
        ) == (
            &other.key,
            &other.session,
            &other.ts,
            &other.turns,
            other.score,
            other.cosine,
            other.relevance,
            other.time_match,
            &other.facts,
        )
    }
}

fact_struct! {
    /// A fact extracted from a round, verified against it and stored.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub struct Fact {
        /// `<round key>/<n>`: its round and its place among the round's stored facts.
        pub key: String,
        @statement,
        /// Current salience (0: superseded; only [`Memory::get`] returns such a fact).
        pub salience: f32,
        /// Its round's agent (`None`: shared).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub agent: Option<String>,
        /// The keys of the facts it superseded (an update of what they said), oldest first.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub supersedes: Vec<String>,
    }
}

impl From<FactRow> for Fact {
    fn from(r: FactRow) -> Fact {
        fact_from!(r => Fact {
            key: r.key,
            salience: r.salience,
            agent: r.agent,
            supersedes: r.supersedes.iter().flat_map(|s| s.split(' ')).map(str::to_owned).collect(),
        })
    }
}

impl Fact {
    /// Whether a context shows the fact under its round: when it is dated (the date resolved
    /// from "last Friday" is what the round's text does not say) or updates an older fact. Any
    /// other fact repeats its round, shown in full beneath it, and only spends the budget
    /// (docs/DECISIONS.md, "facts that cannot hurt").
    pub fn in_context(&self) -> bool {
        self.valid_time.is_some() || !self.supersedes.is_empty()
    }

    /// The fact as rendered under `facts:`: its sentence, then its date when resolved.
    pub fn line(&self) -> String {
        match &self.valid_time {
            Some(v) => format!("{} ({v})", self.content),
            None => self.content.clone(),
        }
    }
}

/// A rendered context and what went into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Context {
    /// The prompt-ready block (empty when nothing was recalled).
    pub text: String,
    /// Keys of the rounds rendered, best first.
    pub rounds: Vec<String>,
    /// Keys of the notes rendered, best first.
    pub notes: Vec<String>,
    /// `o200k_base` tokens in `text`.
    pub tokens: usize,
    /// Whether recalled records were left out, or the top one cut, to respect the budget.
    pub truncated: bool,
    /// Whether the top record's text was cut to fit the budget (it is then the only record, and
    /// the block ends with a line saying so).
    pub cut: bool,
    /// Keys of the records (rounds and notes) left out, best first.
    pub omitted: Vec<String>,
    /// With [`Query::explain`]: every record ranked, best first, with why it ranked there and
    /// whether it is in the block (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<ContextRecord>,
}

/// Why a record is in a context, or was cut from it ([`Query::explain`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContextRecord {
    /// The round's or note's key.
    pub key: String,
    /// `round` or `note`.
    pub kind: String,
    /// Its score in the ranking that placed it best: the fused score (reciprocal ranks), or the
    /// dense score with fusion off. Records are ordered by it.
    pub score: f32,
    /// The cosine between that phrasing and the record (a round's best part or fact included).
    pub cosine: f32,
    /// The cosine's relevance label (through the embedder's calibration).
    pub relevance: Relevance,
    /// Whether its date is in the question's time window.
    pub time_match: bool,
    /// The phrasing that placed it best: 0 the question, `i` its `angles[i - 1]`.
    pub angle: usize,
    /// Its place (from 1) in the dense ranking of that phrasing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<usize>,
    /// Its place in the word (BM25) ranking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<usize>,
    /// Its place among the rounds inside the question's time window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// Its place in the word ranking of the question expanded by the words that the first
    /// ranking's best rounds share (feedback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<usize>,
    /// Whether it is in the rendered block.
    pub kept: bool,
}

/// A stored round, as listed by [`Memory::rounds`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoredRound {
    /// Stable key: sortable ts + `#` + content hash.
    pub key: String,
    /// The round's session.
    pub session: String,
    /// The round's timestamp, as the caller gave it.
    pub ts: String,
    /// The verbatim turns.
    pub turns: Vec<Turn>,
    /// The agent it is private to; `None`: shared by every agent of the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// One entry of the decision log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Decision {
    /// Logical time (sortable timestamp).
    pub at: String,
    /// What was decided (`round.stored`, `fact.superseded`, …).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: DecisionKind,
    /// The record it concerns (a round or fact key, or the user).
    pub record: String,
    /// The other record involved (what it duplicates, what superseded it, …).
    pub other: Option<String>,
    /// Details as JSON.
    pub detail: String,
}

/// Per-query ranking options, all off by default: on the development split neither has been
/// shown to help yet (docs/DECISIONS.md), and with both off the ranking is the engine's default.
///
/// ```
/// use mnemon::context::{Ranking, Recency};
/// let r = Ranking { recency: Some(Recency { alpha: 0.8, half_life_days: 30.0 }), importance: Some(0.5) };
/// assert!(r.validate().is_ok());
/// assert!(Ranking { importance: Some(2.0), ..Ranking::default() }.validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ranking {
    /// memex's recency term: `α · score + (1 − α) · 0.5^(age / half-life)`, the age in logical
    /// days before the query's anchor (its date, else the scope's logical now).
    pub recency: Option<Recency>,
    /// Importance weighting `w` in `0..=1`: the dense score is multiplied by
    /// `(1 − w) + 2w · importance`, neutral at importance 0.5 (rounds and facts count as 0.5).
    pub importance: Option<f32>,
}

/// The recency term's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recency {
    /// Weight of the similarity score, in `0..=1` (1: recency ignored).
    pub alpha: f32,
    /// Logical days for the recency term to halve; above 0.
    pub half_life_days: f32,
}

impl Ranking {
    /// Checks every option; the error names the first bad field.
    pub fn validate(&self) -> Result<()> {
        if let Some(r) = self.recency {
            if !r.alpha.is_finite() || !(0.0..=1.0).contains(&r.alpha) {
                return Err(Error::input("ranking.recency.alpha", "must be a number in 0..=1"));
            }
            if !r.half_life_days.is_finite() || r.half_life_days <= 0.0 {
                return Err(Error::input("ranking.recency.half_life_days", "must be a number above 0"));
            }
        }
        if let Some(w) = self.importance
            && (!w.is_finite() || !(0.0..=1.0).contains(&w))
        {
            return Err(Error::input("ranking.importance", "must be a number in 0..=1"));
        }
        Ok(())
    }
}

/// A search over notes and its options ([`Memory::search`]).
///
/// ```
/// use mnemon::notes::{Filter, Search};
/// let s = Search::new("what does the user eat?").limit(5).min_score(0.5)
///     .filter(Filter { tags_any: vec!["food".into()], ..Filter::default() });
/// assert_eq!(s.limit, 5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Search<'a> {
    /// The query; may start with `[Current date: <ts>]`.
    pub text: &'a str,
    /// The query's date (anchors "last week" and the recency term).
    pub date: Option<Timestamp>,
    /// Which notes may match.
    pub filter: Filter,
    /// Hits to return, 1 to 1000. Default 10.
    pub limit: usize,
    /// Drop hits scoring below this, in `0..=1`.
    pub min_score: Option<f32>,
    /// Ranking options.
    pub ranking: Ranking,
    /// A flag that gives the search up (none by default).
    pub cancel: Cancel<'a>,
    /// Also rank the scope's active facts ([`SearchResults::facts`]), by cosine against the query. A
    /// fact has no tags, kind, token count, time of its own or metadata: with any condition in
    /// the filter, no fact passes.
    pub facts: bool,
}

impl<'a> Search<'a> {
    /// A search with no filter, 10 hits.
    pub fn new(text: &'a str) -> Search<'a> {
        Search {
            text,
            date: None,
            filter: Filter::default(),
            limit: 10,
            min_score: None,
            ranking: Ranking::default(),
            cancel: Cancel::default(),
            facts: false,
        }
    }
    /// Ranks the scope's active facts too.
    pub fn with_facts(self) -> Search<'a> {
        Search { facts: true, ..self }
    }
    /// Sets the filter.
    pub fn filter(self, filter: Filter) -> Search<'a> {
        Search { filter, ..self }
    }
    /// Gives the search up when `flag` is set (see [`Cancel`]).
    pub fn cancel(self, flag: &'a AtomicBool) -> Search<'a> {
        Search { cancel: Cancel(Some(flag)), ..self }
    }
    /// Sets the number of hits.
    pub fn limit(self, limit: usize) -> Search<'a> {
        Search { limit, ..self }
    }
    /// Sets the lowest score kept.
    pub fn min_score(self, min_score: f32) -> Search<'a> {
        Search { min_score: Some(min_score), ..self }
    }
    /// Sets the query's date.
    pub fn date(self, date: Timestamp) -> Search<'a> {
        Search { date: Some(date), ..self }
    }
    /// Sets the ranking options.
    pub fn ranking(self, ranking: Ranking) -> Search<'a> {
        Search { ranking, ..self }
    }
}

/// One note found by [`Memory::search`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Hit))]
pub struct NoteHit {
    /// The note.
    pub note: Note,
    /// Relevance in `0..=1`: the cosine through the embedder's [`Calibration`](crate::embed::Calibration)
    /// (the ranking's own fused score orders the hits, so a later hit may score higher).
    pub score: f32,
    /// The label of `score`.
    pub relevance: Relevance,
    /// Cosine between the query and the note.
    pub cosine: f32,
}

/// One fact found by [`Memory::search`] (with [`Search::facts`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FactHit {
    /// The fact.
    pub fact: Fact,
    /// Relevance in `0..=1`: the cosine through the embedder's [`Calibration`](crate::embed::Calibration).
    pub score: f32,
    /// The label of `score`.
    pub relevance: Relevance,
    /// Cosine between the query and the fact.
    pub cosine: f32,
}

/// What [`Memory::search`] found, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Found))]
pub struct SearchResults {
    /// Hits, best first (ties to the older note).
    pub hits: Vec<NoteHit>,
    /// With [`Search::facts`]: active facts, best first (ties to the older fact), at most
    /// `limit`, those below `min_score` dropped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<FactHit>,
    /// The date the query was anchored on, if any (`YYYY-MM-DD`).
    pub anchor: Option<String>,
    /// The query's time window, if it names one.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>))]
    pub window: Option<[String; 2]>,
}

/// A listing request ([`Memory::list`]): newest first, a page at a time.
///
/// ```
/// let l = mnemon::notes::ListNotes { limit: 20, ..Default::default() };
/// assert!(l.cursor.is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ListNotes {
    /// Which notes to list.
    pub filter: Filter,
    /// Notes per page, 1 to 1000. Default 50.
    pub limit: usize,
    /// Where the previous page ended ([`NotePage::next`]); `None` starts at the newest note.
    pub cursor: Option<String>,
}

impl Default for ListNotes {
    fn default() -> Self {
        ListNotes { filter: Filter::default(), limit: 50, cursor: None }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Page))]
pub struct NotePage {
    /// Newest first (by `ts`, then key).
    pub notes: Vec<Note>,
    /// The cursor of the next page; `None` on the last page. Stable: notes stored after the
    /// listing began with an older `ts` than the cursor still appear on later pages, and no note
    /// appears twice.
    pub next: Option<String>,
}

/// How many records a scope sees ([`Memory::count`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Counts {
    /// Notes on read paths.
    pub notes: usize,
    /// Notes per kind (every kind listed).
    pub kinds: std::collections::BTreeMap<String, usize>,
    /// Notes hidden by condensing.
    pub condensed: usize,
    /// Conversation rounds.
    pub rounds: usize,
    /// Active facts.
    pub facts: usize,
}

/// A record by key ([`Memory::get`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "record", rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Record {
    /// A direct memory.
    Note(Note),
    /// A conversation round.
    Round(StoredRound),
    /// A fact extracted from a round (superseded ones too, with their salience 0).
    Fact(Fact),
}

impl From<RoundRow> for StoredRound {
    fn from(r: RoundRow) -> StoredRound {
        StoredRound { key: r.key, session: r.session, ts: r.ts, turns: r.turns, agent: r.agent }
    }
}
