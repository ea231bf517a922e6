//! Storing one round's extraction: its facts verified, embedded, deduplicated (exactly, then by
//! cosine unless a screen keeps two apart) and settled against the user's active facts of the
//! same agent by the conflict rules, the round dequeued, in one transaction; each decision logged.

use super::conflict::{Rule, screen};
use super::extract::Extraction;
use super::meet::{Contest, Probe, contest, statement, values};
use super::prefilter::Rule as Skip;
use super::verify::{Note, VerifiedFact, embed_text, verify};
use crate::embed;
use crate::engine::Engine;
use crate::error::Result;
use crate::index::ledger::Ledger;
use crate::model::decision::DecisionKind;
use crate::model::fact::fact_day;
use crate::model::round::normalized_key;
use crate::model::time::{Timestamp, day_date};
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
    // The scope's active facts: the ledger kept since the last write, or loaded once.
    let ledger = match engine.ledgers.take(user, agent, version) {
        Some(ledger) => ledger,
        None => {
            let mut ledger = Ledger::new(version);
            let active = write::active_facts(&tx, user, agent)?;
            engine.ledgers.count_load(active.len());
            for fact in active {
                let date = day_date(fact.round_day);
                let terms = Probe::of(&fact.row, &date, fact.ts_unix).held_under();
                ledger.insert(fact, terms);
            }
            ledger
        }
    };
    let mut settling = Settling {
        user,
        round,
        round_id,
        round_date: day_date(round.day),
        extractor,
        at: &at,
        dedup_cosine: engine.config.fact_dedup_cosine,
        ledger,
        added: Vec::new(),
        duplicates: 0,
        superseded: 0,
        compared: 0,
    };
    for (verified, vector) in facts.iter().zip(vectors) {
        settling.fact(&tx, verified, vector)?;
    }
    let Settling { added, duplicates, superseded, mut ledger, compared, .. } = settling;
    engine.ledgers.count_compared(compared);
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

    // Before the next write can commit, as every write does: the commit made the next version.
    engine.ledgers.advance(user, version);
    ledger.version = version + 1;
    engine.ledgers.keep(user, agent, ledger);
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

/// A round's facts being settled in its transaction, one at a time: the ledger of the user's
/// active facts of the round's agent, and what was stored so far.
struct Settling<'a> {
    user: i64,
    round: &'a RoundRow,
    round_id: i64,
    round_date: String,
    extractor: Option<i64>,
    /// The logical time of every decision.
    at: &'a str,
    dedup_cosine: f32,
    /// The active facts, this round's stored ones included.
    ledger: Ledger,
    /// The facts stored and still active, with their vectors.
    added: Vec<(FactRow, Vec<f32>)>,
    duplicates: usize,
    superseded: usize,
    /// Facts the conflict rules compared the round's facts with.
    compared: usize,
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
        let near = self.ledger.nearest_at_least(&vector, self.dedup_cosine);
        if let Some((cos, old)) = near.and_then(|(c, id)| Some((c, self.ledger.get(id)?))) {
            let apart = screen(
                &statement(&row, &self.round_date, round.ts_unix),
                &statement(&old.row, &day_date(old.round_day), old.ts_unix),
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
        let probe = Probe::of(&row, &self.round_date, round.ts_unix);
        let (active, n) = settle(tx, user, at, &row, &probe, &mut self.ledger, &mut self.compared)?;
        self.superseded += n;
        if active {
            let terms = probe.held_under();
            let fact = ActiveFact {
                row: row.clone(),
                round_day: round.day,
                ts_unix: round.ts_unix,
                vector: vector.clone(),
            };
            self.ledger.insert(fact, terms);
            self.added.push((row, vector));
        }
        Ok(())
    }
}

/// Runs the conflict rules for `row` (stored and active; `probe` is how they meet it) against the
/// active facts of `ledger` it meets ([`Probe::sought`]): supersedes each fact it beats, or hides `row` at once when it
/// reports an older state than one of them (it is kept, never dropped). Every supersession is
/// logged at `at`. Returns whether `row` is still active and how many facts were superseded;
/// superseded facts leave the ledger. Adds the facts compared to `compared`.
fn settle(
    tx: &Tx<'_>,
    user: i64,
    at: &str,
    row: &FactRow,
    probe: &Probe<'_>,
    ledger: &mut Ledger,
    compared: &mut usize,
) -> Result<(bool, usize)> {
    let met = ledger.with_any(probe.sought().iter().map(String::as_str));
    *compared += met.len();
    let facts: Vec<(&ActiveFact, String)> =
        met.iter().filter_map(|id| ledger.get(*id)).map(|f| (f, day_date(f.round_day))).collect();
    let others = facts.iter().map(|(f, d)| (&f.row, d.as_str(), f.ts_unix));
    let Contest { lost_to, losers } = contest(probe, others);
    let supersede = |loser: &FactRow, winner: &FactRow, rule: Rule| -> Result<()> {
        write::supersede(tx, user, &loser.key, &winner.key)?;
        let (old, new) = values(Some(rule), loser, winner);
        let detail = serde_json::json!({
            "rule": rule.name(),
            "key": winner.pair_key,
            "old": old,
            "new": new,
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
        supersede(row, &facts[i].0.row, rule)?;
        return Ok((false, 1));
    }
    for (i, rule) in losers.iter().rev() {
        supersede(&facts[*i].0.row, row, *rule)?;
    }
    let gone: Vec<i64> = losers.iter().map(|(i, _)| facts[*i].0.row.id).collect();
    drop(facts);
    for id in gone {
        ledger.remove(id);
    }
    Ok((true, losers.len()))
}
