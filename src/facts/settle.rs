//! Storing one round's extraction: its facts verified, embedded, deduplicated (exactly, then by
//! cosine unless a screen keeps two apart) and settled against the user's active facts of the
//! same agent by the conflict rules, the round dequeued, in one transaction; each decision logged.

use super::conflict::{Rule, Statement, conflict, frame_conflict, newer, screen};
use super::ending::{ending, ends};
use super::extract::Extraction;
use super::prefilter::Rule as Skip;
use super::verify::{Note, VerifiedFact, embed_text, verify};
use crate::embed::{self, vector::nearest};
use crate::engine::Engine;
use crate::error::Result;
use crate::model::decision::DecisionKind;
use crate::model::fact::fact_day;
use crate::model::round::normalized_key;
use crate::model::time::Timestamp;
use crate::store::{ActiveFact, FactRow, RoundRow, Tx, write};

/// Stores one round's extraction (none when the pre-filter skipped it, with the rule that did):
/// its facts by `extractor`, in one transaction with the round's dequeue.
pub(super) fn store_round(
    engine: &Engine,
    extractor: Option<i64>,
    round_id: i64,
    (user, name): (i64, &str),
    round: &RoundRow,
    skipped: Option<Skip>,
    extraction: Option<Extraction>,
) -> Result<()> {
    let embedder = engine.embedder("extraction")?;
    let agent = round.agent.as_deref();
    let ts = Timestamp::parse(&round.ts)?;
    let at = ts.sortable();
    let (facts, notes, truncated) = match extraction {
        None => (Vec::new(), Vec::new(), false),
        Some(extraction) => {
            let (kept, notes) = verify(&extraction.facts, &round.turns, ts.date());
            (kept, notes, extraction.truncated)
        }
    };
    let texts: Vec<String> = facts.iter().map(|f| embed_text(&f.fact)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embed::documents(embedder.as_ref(), &refs, engine.pins.dim()?)?;

    let mut store = engine.lock_store();
    let tx = store.begin_for(&[name])?;
    if !write::is_queued(&tx, round_id)? {
        // Forgotten while the model ran.
        return Ok(());
    }
    let version = write::user_version(&tx, user)?;
    if let Some(rule) = skipped {
        let detail = serde_json::json!({ "rule": rule.name() }).to_string();
        write::log(&tx, user, agent, &at, DecisionKind::RoundPrefiltered, &round.key, None, &detail)?;
    }
    let existing = write::active_facts(&tx, user, agent)?;
    let mut settling = Settling {
        user,
        round,
        round_id,
        round_date: date_of(round.day),
        extractor,
        at: &at,
        dedup_cosine: engine.config.fact_dedup_cosine,
        dates: existing.iter().map(|f| date_of(f.round_day)).collect(),
        existing,
        added: Vec::new(),
        duplicates: 0,
        superseded: 0,
    };
    for (verified, vector) in facts.iter().zip(vectors) {
        settling.fact(&tx, verified, vector)?;
    }
    let Settling { added, duplicates, superseded, .. } = settling;
    if skipped.is_none() {
        let dropped = notes.iter().filter(|n| **n == Some(Note::Ungrounded)).count();
        let cleared = notes.iter().filter(|n| **n == Some(Note::MentionNotInRound)).count();
        let detail = serde_json::json!({
            "stored": added.len(),
            "duplicates": duplicates,
            "superseded": superseded,
            "ungrounded": dropped,
            "mentions_cleared": cleared,
            "truncated": truncated,
        })
        .to_string();
        write::log(&tx, user, agent, &at, DecisionKind::RoundExtracted, &round.key, None, &detail)?;
    }
    write::dequeue(&tx, round_id)?;
    write::set_round_extractor(&tx, round_id, extractor)?;
    write::touch_user(&tx, user, None)?;
    tx.commit()?;

    // Before the next write can commit, as every write does.
    if superseded > 0 {
        // A superseded fact must leave the views: they are rebuilt on the next read.
        engine.views.drop_user(user);
    } else {
        engine.views.grow(user, version, agent, |view| {
            for (row, v) in &added {
                view.push_vector(round_id, row.day, row.salience, v);
            }
        });
    }
    drop(store);
    Ok(())
}

/// A round's facts being settled in its transaction, one at a time: the user's active facts of
/// the round's agent they meet (with their rounds' dates), and what was stored so far.
struct Settling<'a> {
    user: i64,
    round: &'a RoundRow,
    round_id: i64,
    round_date: String,
    extractor: Option<i64>,
    /// The logical time of every decision.
    at: &'a str,
    dedup_cosine: f32,
    existing: Vec<ActiveFact>,
    dates: Vec<String>,
    /// The facts stored and still active, with their vectors.
    added: Vec<(FactRow, Vec<f32>)>,
    duplicates: usize,
    superseded: usize,
}

impl Settling<'_> {
    /// Settles one verified fact: an exact duplicate of the session's is logged and dropped; a
    /// cosine duplicate of an active fact is merged into it unless a screen keeps the two apart;
    /// else it is stored, then the conflict rules run between it and the active facts.
    fn fact(&mut self, tx: &Tx<'_>, verified: &VerifiedFact, vector: Vec<f32>) -> Result<()> {
        let (user, round, at) = (self.user, self.round, self.at);
        let agent = round.agent.as_deref();
        let f = &verified.fact;
        let norm_key = normalized_key(&f.content);
        let candidate = format!("{}/{}", round.key, self.added.len() + 1);
        if let Some(of) = write::exact_fact_duplicate(tx, user, agent, &round.session, &norm_key)? {
            let detail = r#"{"match":"exact"}"#;
            write::log(tx, user, agent, at, DecisionKind::FactDuplicate, &candidate, Some(&of), detail)?;
            self.duplicates += 1;
            return Ok(());
        }
        let mut row = FactRow {
            id: 0,
            round_id: self.round_id,
            key: candidate,
            session: round.session.clone(),
            day: fact_day(verified.valid_time.as_deref(), round.day),
            norm_key,
            content: f.content.clone(),
            raw: f.raw.clone(),
            mention: f.when.clone(),
            valid_time: verified.valid_time.clone(),
            subject: f.subject.clone(),
            predicate: f.predicate.clone(),
            object: f.object.clone(),
            salience: f.salience,
            initial_salience: f.salience,
            pair_key: None,
            supersedes: None,
            superseded_by: None,
            agent: round.agent.clone(),
            extractor: self.extractor,
        };
        row.pair_key = statement(&row, &self.round_date, round.ts_unix).normal().map(|n| n.pair_key());
        // The nearest active fact (ties to the earlier one); a cosine duplicate is merged
        // unless a screen keeps the two apart (the screens keep facts apart that only look alike).
        let candidates = self.existing.iter().enumerate().map(|(i, a)| (i, a.vector.as_slice()));
        if let Some((cos, i)) = nearest(&vector, candidates).filter(|(c, _)| *c >= self.dedup_cosine) {
            let old = &self.existing[i];
            let apart = screen(
                &statement(&row, &self.round_date, round.ts_unix),
                &statement(&old.row, &self.dates[i], old.ts_unix),
            );
            let Some(why) = apart else {
                let detail = serde_json::json!({ "match": "cosine", "cosine": cos }).to_string();
                write::log(
                    tx,
                    user,
                    agent,
                    at,
                    DecisionKind::FactMerged,
                    &row.key,
                    Some(&old.row.key),
                    &detail,
                )?;
                self.duplicates += 1;
                return Ok(());
            };
            let detail = serde_json::json!({ "screen": why, "cosine": cos }).to_string();
            write::log(
                tx,
                user,
                agent,
                at,
                DecisionKind::FactKeptApart,
                &row.key,
                Some(&old.row.key),
                &detail,
            )?;
        }
        row.id = write::insert_fact(tx, user, &row, &vector)?;
        write::log(tx, user, agent, at, DecisionKind::FactStored, &row.key, Some(&round.key), "{}")?;

        // Supersession: the new fact against every active fact it conflicts with.
        let (active, n) =
            settle(tx, user, at, &row, &self.round_date, round.ts_unix, &mut self.existing, &mut self.dates)?;
        self.superseded += n;
        if active {
            self.existing.push(ActiveFact {
                row: row.clone(),
                round_day: round.day,
                ts_unix: round.ts_unix,
                vector: vector.clone(),
            });
            self.dates.push(self.round_date.clone());
            self.added.push((row, vector));
        }
        Ok(())
    }
}

/// Runs the conflict rules for `row` (stored and active) against `existing` (the user's other
/// active facts, in id order, with their rounds' dates in `dates`): supersedes each fact it beats,
/// or hides `row` at once when it reports an older state than one of them (it is kept, never
/// dropped). Every supersession is logged at `at`. Returns whether `row` is still active and how
/// many facts were superseded; superseded facts leave `existing`.
#[allow(clippy::too_many_arguments)]
pub(super) fn settle(
    tx: &Tx<'_>,
    user: i64,
    at: &str,
    row: &FactRow,
    date: &str,
    ts_unix: i64,
    existing: &mut Vec<ActiveFact>,
    dates: &mut Vec<String>,
) -> Result<(bool, usize)> {
    let others = existing.iter().zip(dates.iter()).map(|(f, d)| (&f.row, d.as_str(), f.ts_unix));
    let Contest { lost_to, losers } = contest(row, date, ts_unix, others);
    let supersede = |loser: &FactRow, winner: &FactRow, rule: Rule| -> Result<()> {
        write::supersede(tx, user, &loser.key, &winner.key)?;
        let detail = serde_json::json!({
            "rule": rule.name(),
            "key": winner.pair_key,
            "old": loser.object,
            "new": winner.object,
        })
        .to_string();
        write::log(
            tx,
            user,
            row.agent.as_deref(),
            at,
            DecisionKind::FactSuperseded,
            &loser.key,
            Some(&winner.key),
            &detail,
        )
    };
    if let Some((i, rule)) = lost_to {
        supersede(row, &existing[i].row, rule)?;
        return Ok((false, 1));
    }
    for (i, rule) in losers.iter().rev() {
        supersede(&existing[*i].row, row, *rule)?;
        existing.remove(*i);
        dates.remove(*i);
    }
    Ok((true, losers.len()))
}

/// How a fact fares against the active facts it meets: the one it loses to (it reports an older
/// state), or else the ones it beats, by their place among `others`.
pub(super) struct Contest {
    pub lost_to: Option<(usize, Rule)>,
    pub losers: Vec<(usize, Rule)>,
}

/// The conflict rules between `row` (of the given round date and timestamp) and `others` (active
/// facts in id order, each with its round's date and timestamp): a statement of an end beats the
/// older facts it ends; otherwise only facts with the same `subject|predicate` key can conflict,
/// and the first one that is newer wins over `row`.
pub(super) fn contest<'a>(
    row: &FactRow,
    date: &str,
    ts_unix: i64,
    others: impl Iterator<Item = (&'a FactRow, &'a str, i64)>,
) -> Contest {
    let mut out = Contest { lost_to: None, losers: Vec::new() };
    let new = statement(row, date, ts_unix);
    let key = |r: &FactRow, date: &str, ts: i64| {
        r.pair_key.clone().or_else(|| statement(r, date, ts).normal().map(|n| n.pair_key()))
    };
    // A statement of an end meets what it ends whatever their keys (and has none, mostly).
    let ending = new.by_user.then(|| ending(&row.raw)).flatten();
    let new_key = key(row, date, ts_unix);
    // Only a sentence with a number has frames to meet.
    let framed = new.by_user
        && new.valid_time.is_none()
        && super::normalize::normalize("text", "says", &row.raw)
            .object
            .split(' ')
            .any(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    if ending.is_none() && new_key.is_none() && !framed {
        return out;
    }
    for (i, (old, old_date, old_ts)) in others.enumerate() {
        let old_statement = statement(old, old_date, old_ts);
        if let Some(e) = &ending
            && old_statement.by_user
            && ends(e, old.content.as_str(), old.raw.as_str())
        {
            // Said later, it ends what was said before, whatever date it gives the end ("I
            // dropped out of the book club in March" ends a membership stated on March 1st).
            if (new.ts_unix, new.id) > (old_statement.ts_unix, old_statement.id) {
                out.losers.push((i, Rule::Ending));
            }
            continue;
        }
        // Another number in the same frame of words, whatever the keys.
        if framed && frame_conflict(&new, &old_statement) {
            if newer(&new, &old_statement) == std::cmp::Ordering::Greater {
                out.losers.push((i, Rule::Frame));
            } else {
                out.lost_to = Some((i, Rule::Frame));
                out.losers.clear();
                break;
            }
            continue;
        }
        // Only facts about the same relation can conflict; the stored key saves normalizing the rest.
        if new_key.is_none() || key(old, old_date, old_ts) != new_key {
            continue;
        }
        if let Some(rule) = conflict(&new, &old_statement) {
            if newer(&new, &old_statement) == std::cmp::Ordering::Greater {
                out.losers.push((i, rule));
            } else {
                out.lost_to = Some((i, rule));
                out.losers.clear();
                break;
            }
        }
    }
    out
}

/// A day number as `YYYY-MM-DD`.
pub(super) fn date_of(day: i32) -> String {
    chrono::NaiveDate::from_num_days_from_ce_opt(day).map(|d| d.to_string()).unwrap_or_default()
}

/// A stored fact as the conflict rules see it.
pub(super) fn statement<'a>(row: &'a FactRow, session_date: &'a str, ts_unix: i64) -> Statement<'a> {
    Statement {
        id: row.id,
        content: &row.content,
        subject: row.subject.as_deref(),
        predicate: row.predicate.as_deref(),
        object: row.object.as_deref(),
        valid_time: row.valid_time.as_deref(),
        session_date,
        ts_unix,
        by_user: row.raw.trim_start().starts_with("user:"),
        raw: &row.raw,
    }
}
