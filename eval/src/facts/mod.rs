//! Facts measured against references outside mnemon: `mnemon eval facts`.
//!
//! Each unit (a LongMemEval question's haystack, or a LoCoMo conversation's first sessions) is
//! ingested into a fresh store with the extractor inline, so the ingest time is the extraction's
//! cost, pre-filter skips included. Then, from the store alone:
//!
//! - **Knowledge updates** (LongMemEval `knowledge-update`): the gold answer's value (its numbers
//!   with their units, else its key words) is (a) stated by an active fact, (b) stated by a fact
//!   that superseded an older one, with the decision in the log, and (c) shown as a fact line in
//!   the context for the question. A question asking for the earlier value ("previous",
//!   "initially") is scored on (b) alone, as "a superseded fact states the gold value"; a yes/no
//!   answer carries no value and is not scored.
//! - **Dates**: a LoCoMo temporal question (category 2) whose answer names a date ("7 May 2023",
//!   "June 2023", "2022", "the Friday before 15 July 2023", "the week before 9 June 2023") is
//!   dated correctly when its evidence round holds a fact whose resolved date falls on it, at the
//!   answer's precision. LongMemEval's temporal answers are durations and orders, not dates: for
//!   them only whether an evidence round holds a dated fact is counted.
//! - **Observations** (LoCoMo): each session lists, per speaker, the facts a reader needs, each with
//!   the turn that states it. An observation is recalled when a fact of the round holding that
//!   turn matches it; a fact is precise when it matches an observation of its session. The rule
//!   ([`matches`]): speakers' names read as "user" (the first speaker, stored as the user) and
//!   "assistant"; cosine of the two sentences (the run's embedder) at least [`MATCH_COSINE`], and
//!   at least [`MATCH_OVERLAP`] of the observation's content words in the fact.
//!
//! One JSON line per unit in `units.jsonl`; a run resumes from it. `summary.json` and the printed
//! table come from the lines alone.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::Embedder;
use mnemon::extract::Extractor;
use mnemon::facts::Fact;
use mnemon::internals::time::{month_number, weekday};
use mnemon::internals::vector::cosine;
use mnemon::records::Record;
use mnemon::rounds::StoredRound;
use mnemon::{Error, Memory, Query, Result, Timestamp};

use crate::data::{self, Benchmark, Question};
use crate::report::FactCounts;

pub(crate) mod gold;
mod report;

use gold::*;
pub use gold::{falls_on, gold_date, matches, overlap, GoldDate};
pub use report::{report, summarize};

/// Cosine between a fact and an observation that can make them match.
pub const MATCH_COSINE: f32 = 0.55;
/// Share of the observation's content words that the fact must hold.
pub const MATCH_OVERLAP: f32 = 0.35;

/// What to measure.
pub struct FactsConfig {
    /// The benchmark file.
    pub dataset: PathBuf,
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// The run directory.
    pub out: PathBuf,
    /// The extractor measured.
    pub extractor: Arc<dyn Extractor>,
    /// The embedder (stores and the observation match).
    pub embedder: Arc<dyn Embedder>,
    /// Engine configuration.
    pub engine: Config,
    /// LoCoMo: only the first this many sessions of each conversation.
    pub sessions: Option<usize>,
    /// At most this many units.
    pub limit: Option<usize>,
    /// LongMemEval: only the units of questions of these types (empty: every type measured).
    pub types: Vec<String>,
}

/// A knowledge-update question, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateCheck {
    /// Question id.
    pub question: String,
    /// The gold answer.
    pub answer: String,
    /// How it is scored: `current`, `previous` or `unscored`.
    pub scored: String,
    /// (a) the active fact stating the value.
    pub current: Option<String>,
    /// (b) the fact stating the value that superseded another (or, for `previous`, the
    /// superseded fact stating it), with its decision logged.
    pub superseded: Option<String>,
    /// (c) the context for the question shows the value as a fact line.
    pub in_context: bool,
}

/// A temporal question, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DateCheck {
    /// Question id.
    pub question: String,
    /// The gold answer.
    pub answer: String,
    /// The date the answer names (`YYYY-MM-DD`, `YYYY-MM`, `YYYY`, or `FROM..TO`), if any.
    pub gold: Option<String>,
    /// Resolved dates of the facts of the evidence rounds.
    pub dated: Vec<String>,
    /// One of them falls on the gold date.
    pub correct: bool,
}

/// An observation, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationCheck {
    /// `session_<n>`.
    pub session: String,
    /// `user` (the first speaker) or `other`.
    pub speaker: String,
    /// The observation.
    pub text: String,
    /// Its evidence turn.
    pub evidence: String,
    /// The matching fact of the evidence round, with the cosine and overlap of the match.
    pub matched: Option<(String, f32, f32)>,
    /// The fact of the evidence round nearest to it, and its cosine and overlap (for the hand
    /// check of the rule).
    pub nearest: Option<(String, f32, f32)>,
}

/// A stored fact, checked against its session's observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactCheck {
    /// Fact key.
    pub key: String,
    /// Its sentence.
    pub content: String,
    /// Its round's session.
    pub session: String,
    /// Whether it matches an observation of the session.
    pub matched: bool,
    /// Its triple, `subject|predicate|object` (what it is keyed by), for reading misses by hand.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub triple: String,
    /// Its resolved date, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_time: Option<String>,
    /// The observation of its session nearest to it, with their cosine and overlap (for reading
    /// misses by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest: Option<(String, f32, f32)>,
}

/// One unit's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// Question id or conversation id.
    pub user: String,
    /// Rounds stored.
    pub rounds: usize,
    /// Seconds of the ingest, extraction included.
    pub seconds: f64,
    /// What extraction stored and decided.
    pub counts: FactCounts,
    /// Knowledge-update questions.
    pub updates: Vec<UpdateCheck>,
    /// Temporal questions.
    pub dates: Vec<DateCheck>,
    /// LoCoMo observations of the ingested sessions.
    pub observations: Vec<ObservationCheck>,
    /// LoCoMo: every stored fact.
    pub facts: Vec<FactCheck>,
    /// Every supersession, for reading by hand (was it a real update?).
    #[serde(default)]
    pub supersessions: Vec<Supersession>,
}

/// One logged supersession: the old fact, the fact that replaced it, the rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Supersession {
    /// The superseded fact's sentence.
    pub old: String,
    /// The superseding fact's sentence.
    pub new: String,
    /// The decision's details (the rule and both values).
    pub detail: String,
}

/// A measured share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Counted.
    pub hits: usize,
    /// Out of.
    pub of: usize,
}

impl Share {
    fn count(&mut self, hit: bool) {
        self.hits += usize::from(hit);
        self.of += 1;
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = if self.of == 0 { 0.0 } else { 100.0 * self.hits as f64 / self.of as f64 };
        write!(f, "{}/{} ({pct:.0} %)", self.hits, self.of)
    }
}

/// `summary.json`: the four measures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FactsSummary {
    /// Units measured.
    pub units: usize,
    /// (a) current value an active fact.
    pub update_current: Share,
    /// (b) older value superseded, logged.
    pub update_superseded: Share,
    /// (c) current value a fact line in the context.
    pub update_in_context: Share,
    /// Temporal questions with a date answer, dated correctly by a fact of an evidence round.
    pub dated_correctly: Share,
    /// Temporal questions whose evidence rounds hold a dated fact.
    pub dated_at_all: Share,
    /// Observation recall, all speakers.
    pub observation_recall: Share,
    /// Observation recall, the first speaker's (stored as the user).
    pub observation_recall_user: Share,
    /// Fact precision against the session's observations.
    pub fact_precision: Share,
    /// Rounds stored.
    pub rounds: usize,
    /// Seconds of ingest, extraction included.
    pub seconds: f64,
    /// What extraction stored and decided, summed.
    pub counts: FactCounts,
}

/// Runs (or resumes) the measurement; `progress(done, total)` after each unit.
pub fn run(cfg: &FactsConfig, progress: &dyn Fn(usize, usize)) -> Result<FactsSummary> {
    std::fs::create_dir_all(&cfg.out)?;
    let path = cfg.out.join("units.jsonl");
    let mut done: Vec<Unit> = match std::fs::read_to_string(&path) {
        Ok(t) => t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(),
        Err(_) => Vec::new(),
    };
    let data = data::load(&cfg.dataset, cfg.benchmark)?;
    let observations = match cfg.benchmark {
        Benchmark::LoCoMo => load_observations(&cfg.dataset)?,
        Benchmark::LongMemEval => BTreeMap::new(),
    };
    let units: Vec<&data::Haystack> = data
        .haystacks
        .iter()
        .filter(|h| match cfg.benchmark {
            Benchmark::LoCoMo => true,
            Benchmark::LongMemEval => {
                data.questions.iter().any(|q| q.user == h.user && measured(q) && of_types(cfg, q))
            }
        })
        .take(cfg.limit.unwrap_or(usize::MAX))
        .collect();
    let total = units.len();
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    for h in units {
        if done.iter().any(|u| u.user == h.user) {
            continue;
        }
        let questions: Vec<&Question> =
            data.questions.iter().filter(|q| q.user == h.user && measured(q) && of_types(cfg, q)).collect();
        let unit = measure(cfg, h, &questions, observations.get(&h.user))?;
        writeln!(file, "{}", serde_json::to_string(&unit).map_err(|e| Error::Database(e.to_string()))?)?;
        file.flush()?;
        done.push(unit);
        progress(done.len(), total);
    }
    let summary = summarize(&done);
    std::fs::write(
        cfg.out.join("summary.json"),
        serde_json::to_string_pretty(&summary).map_err(|e| Error::Database(e.to_string()))?,
    )?;
    Ok(summary)
}

/// Whether a question is of the types asked for (every type when none are).
fn of_types(cfg: &FactsConfig, q: &Question) -> bool {
    cfg.types.is_empty() || cfg.types.contains(&q.kind)
}

/// The questions a unit is measured on.
fn measured(q: &Question) -> bool {
    !q.abstention && matches!(q.kind.as_str(), "knowledge-update" | "temporal-reasoning" | "category-2")
}

/// LoCoMo observations by conversation: `(session, speaker is the first speaker, text, evidence id)`.
type Observations = Vec<(String, bool, String, String)>;

fn load_observations(path: &Path) -> Result<BTreeMap<String, (Observations, [String; 2])>> {
    let value: Value = serde_json::from_slice(&std::fs::read(path)?)
        .map_err(|e| Error::InvalidInput { field: "dataset".into(), reason: e.to_string() })?;
    let mut out = BTreeMap::new();
    for c in value.as_array().into_iter().flatten() {
        let user = c["sample_id"].as_str().unwrap_or_default().to_owned();
        let a = c["conversation"]["speaker_a"].as_str().unwrap_or_default().to_owned();
        let b = c["conversation"]["speaker_b"].as_str().unwrap_or_default().to_owned();
        let mut list = Vec::new();
        for (key, per) in c["observation"].as_object().into_iter().flatten() {
            let session = key.trim_end_matches("_observation").to_owned();
            for (speaker, items) in per.as_object().into_iter().flatten() {
                for item in items.as_array().into_iter().flatten() {
                    let text = item[0].as_str().unwrap_or_default();
                    // Evidence ids as the QA's are: several packed in one string, some padded.
                    let ids = item[1].as_str().unwrap_or_default();
                    for id in ids.split([';', ',', ' ']).filter(|s| !s.is_empty()) {
                        if let Some(id) = data::normalize_dia_id(id) {
                            list.push((session.clone(), *speaker == a, text.to_owned(), id));
                            break;
                        }
                    }
                }
            }
        }
        out.insert(user, (list, [a, b]));
    }
    Ok(out)
}

fn measure(
    cfg: &FactsConfig,
    h: &data::Haystack,
    questions: &[&Question],
    observations: Option<&(Observations, [String; 2])>,
) -> Result<Unit> {
    let dir = tempfile::tempdir()?;
    let memory = Memory::builder(dir.path().join("store.db"))
        .embedder(cfg.embedder.clone())
        .optional_extractor(Some(cfg.extractor.clone()))
        .config(Config { background_extraction: false, ..cfg.engine.clone() })
        .open()?;
    let sessions: Vec<&[mnemon::Message]> = h.messages.chunk_by(|a, b| a.session == b.session).collect();
    let take = cfg.sessions.filter(|_| cfg.benchmark == Benchmark::LoCoMo).unwrap_or(sessions.len());
    let ingested: BTreeSet<&str> =
        sessions.iter().take(take).filter_map(|s| s[0].session.as_deref()).collect();
    // Timing is this harness's job.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    for session in sessions.iter().take(take) {
        memory.add(session, &h.user)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let rounds = memory.rounds(&h.user)?;
    let facts = memory.active_facts(&h.user)?;
    let decisions = memory.decisions(&h.user)?;
    // Each superseded fact, read once: for the checks, and with its successor for reading by hand.
    let fact = |key: &str| match memory.get(key, &h.user) {
        Ok(Record::Fact(f)) => Some(f),
        _ => None,
    };
    let mut superseded: Vec<Fact> = Vec::new();
    let mut supersessions: Vec<Supersession> = Vec::new();
    for d in decisions.iter().filter(|d| d.kind == DecisionKind::FactSuperseded) {
        let old = fact(&d.record);
        supersessions.push(Supersession {
            old: old.as_ref().map(|f| f.content.clone()).unwrap_or_default(),
            new: d.other.as_deref().and_then(fact).map(|f| f.content).unwrap_or_default(),
            detail: d.detail.clone(),
        });
        superseded.extend(old);
    }
    let logged = |old: &str, new: &str| {
        decisions.iter().any(|d| {
            d.kind == DecisionKind::FactSuperseded && d.record == old && d.other.as_deref() == Some(new)
        })
    };
    let round_of = |fact: &str| {
        let key = fact.rsplit_once('/').map_or(fact, |(r, _)| r);
        rounds.iter().find(|r| r.key == key)
    };

    let mut updates = Vec::new();
    let mut dates = Vec::new();
    for q in questions {
        let evidence: Vec<&StoredRound> = rounds
            .iter()
            .filter(|r| {
                r.turns
                    .iter()
                    .any(|t| t.id.as_deref().is_some_and(|id| q.evidence_turns.iter().any(|e| e == id)))
            })
            .collect();
        if evidence.is_empty() {
            continue; // no evidence, or it lies in sessions this run did not ingest
        }
        if q.kind == "knowledge-update" {
            updates.push(check_update(&memory, q, &h.user, &facts, &superseded, &logged)?);
        } else {
            let dated: Vec<String> = facts
                .iter()
                .chain(&superseded)
                .filter(|f| round_of(&f.key).is_some_and(|r| evidence.iter().any(|e| e.key == r.key)))
                .filter_map(|f| f.valid_time.clone())
                .collect();
            let session_date = evidence.first().map(|r| r.ts.clone());
            let gold = match cfg.benchmark {
                Benchmark::LoCoMo => gold_date(&q.answer, session_date.as_deref()),
                Benchmark::LongMemEval => None,
            };
            let correct = gold.as_ref().is_some_and(|g| dated.iter().any(|d| falls_on(d, g)));
            dates.push(DateCheck {
                question: q.id.clone(),
                answer: q.answer.clone(),
                gold: gold.map(|g| g.to_string()),
                dated,
                correct,
            });
        }
    }

    let (mut checked_obs, mut checked_facts) = (Vec::new(), Vec::new());
    if let Some((list, names)) = observations {
        let list: Vec<_> = list.iter().filter(|o| ingested.contains(o.0.as_str())).collect();
        let obs_texts: Vec<String> = list.iter().map(|o| canonical(&o.2, names)).collect();
        let fact_texts: Vec<String> = facts.iter().map(|f| canonical(&f.content, names)).collect();
        let all: Vec<&str> = obs_texts.iter().chain(&fact_texts).map(String::as_str).collect();
        let vectors = cfg.embedder.embed_documents(&all)?;
        let (obs_v, fact_v) = vectors.split_at(obs_texts.len());
        let fact_round: Vec<Option<&StoredRound>> = facts.iter().map(|f| round_of(&f.key)).collect();
        let mut fact_matched = vec![false; facts.len()];
        let mut fact_nearest: Vec<Option<(String, f32, f32)>> = vec![None; facts.len()];
        for (i, o) in list.iter().enumerate() {
            let mut nearest: Option<(String, f32, f32)> = None;
            let mut matched: Option<(String, f32, f32)> = None;
            for (j, f) in facts.iter().enumerate() {
                let Some(r) = fact_round[j] else { continue };
                if r.session != o.0 {
                    continue;
                }
                let (cos, overlap) = (cosine(&obs_v[i], &fact_v[j]), overlap(&obs_texts[i], &fact_texts[j]));
                let ok = cos >= MATCH_COSINE && overlap >= MATCH_OVERLAP;
                // A fact matching any observation of its session is precise.
                fact_matched[j] |= ok;
                if fact_nearest[j].as_ref().is_none_or(|n| cos > n.1) {
                    fact_nearest[j] = Some((o.2.clone(), cos, overlap));
                }
                let holds = r.turns.iter().any(|t| t.id.as_deref() == Some(o.3.as_str()));
                if !holds {
                    continue;
                }
                if nearest.as_ref().is_none_or(|n| cos > n.1) {
                    nearest = Some((f.content.clone(), cos, overlap));
                }
                if ok && matched.as_ref().is_none_or(|m| cos > m.1) {
                    matched = Some((f.content.clone(), cos, overlap));
                }
            }
            checked_obs.push(ObservationCheck {
                session: o.0.clone(),
                speaker: if o.1 { "user".into() } else { "other".into() },
                text: o.2.clone(),
                evidence: o.3.clone(),
                matched,
                nearest,
            });
        }
        for (j, f) in facts.iter().enumerate() {
            checked_facts.push(FactCheck {
                key: f.key.clone(),
                content: f.content.clone(),
                session: fact_round[j].map(|r| r.session.clone()).unwrap_or_default(),
                matched: fact_matched[j],
                triple: [&f.subject, &f.predicate, &f.object].map(|p| p.as_deref().unwrap_or("")).join("|"),
                valid_time: f.valid_time.clone(),
                nearest: fact_nearest[j].take(),
            });
        }
    }
    Ok(Unit {
        user: h.user.clone(),
        rounds: rounds.len(),
        seconds,
        counts: FactCounts::of(&decisions),
        updates,
        dates,
        observations: checked_obs,
        facts: checked_facts,
        supersessions,
    })
}

fn check_update(
    memory: &Memory,
    q: &Question,
    user: &str,
    facts: &[Fact],
    superseded: &[Fact],
    logged: &dyn Fn(&str, &str) -> bool,
) -> Result<UpdateCheck> {
    let asks_previous = previous_question(&q.question);
    let value = Gold::of(if asks_previous { &q.answer } else { current_part(&q.answer) });
    let mut check = UpdateCheck {
        question: q.id.clone(),
        answer: q.answer.clone(),
        scored: match (&value, asks_previous) {
            (None, _) => "unscored".into(),
            (Some(_), true) => "previous".into(),
            (Some(_), false) => "current".into(),
        },
        current: None,
        superseded: None,
        in_context: false,
    };
    let Some(value) = value else { return Ok(check) };
    let states = |f: &Fact| value.stated_by(&format!("{} {}", f.content, f.object.as_deref().unwrap_or("")));
    if asks_previous {
        check.superseded = superseded.iter().find(|f| states(f)).map(|f| f.key.clone());
        return Ok(check);
    }
    let current: Vec<&Fact> = facts.iter().filter(|f| states(f)).collect();
    check.current = current.first().map(|f| f.key.clone());
    check.superseded =
        current.iter().find(|f| f.supersedes.iter().any(|old| logged(old, &f.key))).map(|f| f.key.clone());
    let context = memory.get_context(
        Query {
            date: q.date.as_deref().map(|d| Timestamp::parse_field(d, "date")).transpose()?,
            ..Query::new(&q.question)
        },
        user,
    )?;
    check.in_context = current.iter().any(|f| f.in_context() && context.text.contains(&f.line()));
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn gold_dates_of_locomo_answers() {
        assert_eq!(gold_date("7 May 2023", None), Some(GoldDate::Day(day(2023, 5, 7))));
        assert_eq!(gold_date("19 January, 2023", None), Some(GoldDate::Day(day(2023, 1, 19))));
        assert_eq!(gold_date("June 2023", None), Some(GoldDate::Month(2023, 6)));
        assert_eq!(gold_date("February, 2023", None), Some(GoldDate::Month(2023, 2)));
        assert_eq!(gold_date("2022", None), Some(GoldDate::Year(2022)));
        // 25 May 2023 is a Thursday: the Sunday before is the 21st.
        assert_eq!(gold_date("The sunday before 25 May 2023", None), Some(GoldDate::Day(day(2023, 5, 21))));
        assert_eq!(gold_date("The Friday before 15 July 2023", None), Some(GoldDate::Day(day(2023, 7, 14))));
        assert_eq!(
            gold_date("The Friday before 23January, 2022", None),
            Some(GoldDate::Day(day(2022, 1, 21)))
        );
        assert_eq!(
            gold_date("The week before 9 June 2023", None),
            Some(GoldDate::Range(day(2023, 6, 2), day(2023, 6, 8)))
        );
        // 17 July 2023 is a Monday.
        assert_eq!(
            gold_date("The weekend before 17 July 2023", None),
            Some(GoldDate::Range(day(2023, 7, 15), day(2023, 7, 16)))
        );
        assert_eq!(
            gold_date("two weekends before 17 July 2023", None),
            Some(GoldDate::Range(day(2023, 7, 8), day(2023, 7, 9)))
        );
        assert_eq!(
            gold_date("13 August", Some("2:00 pm on 14 August, 2023")),
            Some(GoldDate::Day(day(2023, 8, 13)))
        );
        for none in ["4 years", "10 years ago", "Since 2016", "A few years ago"] {
            assert_eq!(gold_date(none, None), None, "{none}");
        }
    }

    #[test]
    fn resolved_dates_fall_on_gold_dates_at_their_precision() {
        assert!(falls_on("2023-05-07", &GoldDate::Day(day(2023, 5, 7))));
        assert!(!falls_on("2023-05", &GoldDate::Day(day(2023, 5, 7))));
        assert!(falls_on("2023-05-07", &GoldDate::Month(2023, 5)));
        assert!(falls_on("2023-05", &GoldDate::Month(2023, 5)));
        assert!(!falls_on("2023", &GoldDate::Month(2023, 5)));
        assert!(falls_on("2022-11-02", &GoldDate::Year(2022)));
        assert!(falls_on("2023-06-05", &GoldDate::Range(day(2023, 6, 2), day(2023, 6, 8))));
        assert!(!falls_on("2023-06-09", &GoldDate::Range(day(2023, 6, 2), day(2023, 6, 8))));
    }

    #[test]
    fn a_change_is_scored_on_its_new_value() {
        let answer = "You increased the limit (from one cup to two cups)";
        assert_eq!(current_part(answer), "two cups)");
        let gold = Gold::of(current_part(answer)).unwrap();
        assert!(gold.stated_by("the user has increased the limit to two cups"));
        assert!(!gold.stated_by("the user cut back to just one cup"));
        assert_eq!(current_part("Three times a week."), "Three times a week.");
        assert_eq!(current_part("from Porto"), "from Porto");
    }

    #[test]
    fn values_are_number_and_unit_aware() {
        let v = Gold::of("25").unwrap();
        assert!(v.stated_by("The user has added 25 new postcards."));
        assert!(!v.stated_by("The user has added 17 new postcards."));
        let five = Gold::of("five").unwrap();
        assert!(five.stated_by("The user has bought 5 tops from H&M."));
        let time = Gold::of("27 minutes and 45 seconds").unwrap();
        assert!(time.stated_by("The user's best 5K time was 27:45, 27 minutes 45 seconds."));
        assert!(!time.stated_by("The user ran 27 seconds and 45 minutes."));
        let months = Gold::of("9 months").unwrap();
        assert!(months.stated_by("The user has had Luna for nine months."));
        assert!(!months.stated_by("The user has had Luna for 9 years."));
        let money = Gold::of("$1,200").unwrap();
        assert!(money.stated_by("The user paid 1200 for it."));
        let place = Gold::of("Oahu").unwrap();
        assert!(place.stated_by("The user will stay on Oahu."));
        assert!(Gold::of("Yes").is_none());
        let three = Gold::of("Three times a week.").unwrap();
        assert!(three.stated_by("The user attends yoga three times a week."));
        assert!(!three.stated_by("The user attends yoga twice a week."));
        assert!(previous_question("What was my previous personal best time for the charity 5K run?"));
        assert!(!previous_question("How many tops have I bought from H&M so far?"));
    }

    #[test]
    fn observations_match_on_cosine_and_overlap() {
        let names = ["Caroline".to_owned(), "Melanie".to_owned()];
        let obs = canonical("Caroline attended an LGBTQ support group recently.", &names);
        assert_eq!(obs, "the user attended an LGBTQ support group recently.");
        assert!(overlap(&obs, "The user went to an LGBTQ support group.") >= MATCH_OVERLAP);
        assert!(overlap(&obs, "The user likes painting.") < MATCH_OVERLAP);
        assert!(matches(0.6, 0.5) && !matches(0.5, 0.9) && !matches(0.9, 0.2));
    }
}
