//! Adding conversation: validate messages, form rounds, skip a session's duplicates (the same
//! normalized text, or cosine at or above `dedup_cosine`), and store each round with its vector,
//! its part records and its words in one transaction, queued for extraction in a store that
//! extracts. Also the fill of derived records a store opened with an embedder gets.

use std::collections::HashMap;

use super::types::{AddReport, Duplicate};
use crate::embed::vector::nearest;
use crate::embed::{self, Embedder};
use crate::engine::Engine;
use crate::error::Result;
use crate::model::decision::DecisionKind;
use crate::model::parts::{PARTS_ONLY_RULE, RULE, parts};
use crate::model::round::{
    Message, NewRound, form_rounds, index_text, normalized_key, round_key, round_text,
};
use crate::model::scope::Scope;
use crate::model::time::{Timestamp, day_number};
use crate::store::{RoundRow, Store, Tx, write};

/// Stores `messages` in `scope` in one transaction: what it did, and the user's row id (0 when
/// nothing was stored and no user made).
pub(crate) fn add(engine: &Engine, messages: &[Message], scope: Scope<'_>) -> Result<(AddReport, i64)> {
    scope.check()?;
    let agent = scope.agent;
    let embedder = engine.embedder("add")?;
    let (rounds, empty_turns_dropped) = form_rounds(messages, &engine.config.years)?;
    let mut report = AddReport { empty_turns_dropped, ..AddReport::default() };
    if rounds.is_empty() {
        return Ok((report, 0));
    }
    // Keys are taken over the role text; the named text is embedded and indexed for words.
    let texts: Vec<String> = rounds.iter().map(|r| r.text()).collect();
    let index_texts: Vec<String> = rounds.iter().map(|r| r.index_text()).collect();
    let keys: Vec<String> =
        rounds.iter().zip(&texts).map(|(r, t)| round_key(&r.ts, &r.session, t, agent)).collect();
    // A round stored already (a replay: an import or a retry run again) is found by its text
    // below, without its vector: only the others are embedded.
    let replays = stored_keys(engine, scope, &keys)?;
    let dim = engine.pins.dim()?;
    let fresh: Vec<bool> = keys.iter().map(|k| !replays.contains(k)).collect();
    let (mut vectors, mut part_vectors) = embed_some(embedder.as_ref(), dim, &rounds, &index_texts, &fresh)?;

    let mut store = engine.lock_store();
    let tx = store.begin_for(&[scope.user])?;
    let (user, version) = write::user_for_write(&tx, scope.user)?;
    let mut seen = Seen::load(&tx, user, agent, &rounds)?;
    // A replay deleted since it was looked up is a new round after all: embedded now.
    let lost: Vec<bool> = rounds
        .iter()
        .zip(&texts)
        .zip(&fresh)
        .map(|((r, t), f)| !f && !seen.exact.contains_key(&(r.session.clone(), normalized_key(t))))
        .collect();
    if lost.contains(&true) {
        let (v, p) = embed_some(embedder.as_ref(), dim, &rounds, &index_texts, &lost)?;
        for (i, (v, p)) in v.into_iter().zip(p).enumerate() {
            if lost[i] {
                vectors[i] = v;
                part_vectors[i] = p;
            }
        }
    }
    // What the call writes, decided first and written after in one go (PostgreSQL writes them
    // all in one statement).
    let mut writes: Vec<write::AddWrite<'_>> = Vec::new();
    let mut added: Vec<Added<'_>> = Vec::new();
    let mut latest: Option<&Timestamp> = None;
    for (((((round, text), index_text), vector), parts), key) in
        rounds.iter().zip(&texts).zip(&index_texts).zip(&vectors).zip(&part_vectors).zip(&keys)
    {
        let key = key.clone();
        let at = round.ts.sortable();
        let probe = (round.session.clone(), normalized_key(text));
        if let Some((of, cosine)) = seen.duplicate_of(&probe, vector, engine.config.dedup_cosine) {
            // A replay (this very round again: its key is the stored one's) decides nothing new.
            if key != of {
                let detail = match cosine {
                    None => r#"{"match":"exact"}"#.to_owned(),
                    Some(cos) => serde_json::json!({"match": "cosine", "cosine": cos}).to_string(),
                };
                let (record, other) = (key.clone(), Some(of.clone()));
                writes.push(write::AddWrite::Log {
                    at,
                    kind: DecisionKind::RoundDuplicate,
                    record,
                    other,
                    detail,
                });
            }
            report.duplicates.push(Duplicate { key, of, cosine });
            continue;
        }
        let row = RoundRow {
            id: 0,
            key: key.clone(),
            session: round.session.clone(),
            ts: round.ts.raw().to_owned(),
            ts_unix: round.ts.unix_seconds(),
            day: day_number(round.ts.date()),
            norm_key: probe.1.clone(),
            turns: round.turns.clone(),
            text: index_text.clone(),
            agent: agent.map(str::to_owned),
            extractor: None,
        };
        seen.insert(probe, &key, vector);
        added.push(Added { id: 0, day: row.day, vector, text: index_text, parts });
        writes.push(write::AddWrite::Round { row, vector, parts, at });
        if latest.is_none_or(|l| round.ts > *l) {
            latest = Some(&round.ts);
        }
        report.stored.push(key);
    }
    if writes.is_empty() {
        // A call of replays alone changes nothing (the transaction rolls back on drop): the
        // user was there already, since a replay found its round.
        drop(tx);
        return Ok((report, user));
    }
    let latest = latest.map(|t| (t.raw(), t.unix_seconds()));
    let ids = write::add_rounds(&tx, user, agent, RULE, engine.pins.extracts(), &writes, latest)?;
    for (a, id) in added.iter_mut().zip(ids) {
        a.id = id;
    }
    tx.commit()?;
    // Grown before the next write can commit: the views and ledgers follow the writes in order.
    engine.ledgers.advance(user, version);
    engine.views.grow(user, version, agent, |view| {
        for a in &added {
            view.push_round(a.id, a.day, a.vector, a.text);
        }
        // Parts after every round, as a view loaded from the store holds them.
        for a in &added {
            for p in a.parts {
                view.push_vector(a.id, a.day, 1.0, p);
            }
        }
    });
    drop(store);
    tracing::debug!(
        user = scope.user,
        agent = scope.agent,
        stored = report.stored.len(),
        duplicates = report.duplicates.len(),
        empty_turns_dropped = report.empty_turns_dropped,
        "add committed"
    );
    Ok((report, user))
}

/// Which of `keys` the scope's user has stored already (none for a user not yet in the store).
fn stored_keys(
    engine: &Engine,
    scope: Scope<'_>,
    keys: &[String],
) -> Result<std::collections::HashSet<String>> {
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let found = engine.reading(scope, |store, view| store.stored_round_keys(view.user, &refs))?;
    Ok(found.into_iter().collect())
}

/// [`embed_rounds`] of the rounds `which` marks; the others get no vectors (empty ones).
fn embed_some(
    embedder: &dyn Embedder,
    dim: usize,
    rounds: &[NewRound],
    index_texts: &[String],
    which: &[bool],
) -> Result<RoundVectors> {
    let picked: Vec<usize> = (0..rounds.len()).filter(|&i| which[i]).collect();
    let some: Vec<NewRound> = picked.iter().map(|&i| rounds[i].clone()).collect();
    let texts: Vec<String> = picked.iter().map(|&i| index_texts[i].clone()).collect();
    let (v, p) =
        if some.is_empty() { (Vec::new(), Vec::new()) } else { embed_rounds(embedder, dim, &some, &texts)? };
    let mut vectors = vec![Vec::new(); rounds.len()];
    let mut parts = vec![Vec::new(); rounds.len()];
    for ((i, v), p) in picked.into_iter().zip(v).zip(p) {
        vectors[i] = v;
        parts[i] = p;
    }
    Ok((vectors, parts))
}

/// The vectors of a call's rounds, and per round those of its part records.
type RoundVectors = (Vec<Vec<f32>>, Vec<Vec<Vec<f32>>>);

/// The vectors of `rounds` (of their indexed texts) and of each round's part records
/// (`crate::model::parts`), embedded in one call, the parts after the rounds.
fn embed_rounds(
    embedder: &dyn Embedder,
    dim: usize,
    rounds: &[NewRound],
    index_texts: &[String],
) -> Result<RoundVectors> {
    let part_texts: Vec<Vec<String>> = rounds.iter().map(|r| parts(&r.turns)).collect();
    let refs: Vec<&str> = index_texts.iter().chain(part_texts.iter().flatten()).map(String::as_str).collect();
    let mut vectors = embed::documents(embedder, &refs, dim)?;
    let mut part_vectors: Vec<Vec<Vec<f32>>> = Vec::with_capacity(rounds.len());
    let mut rest = vectors.split_off(rounds.len());
    for p in &part_texts {
        let tail = rest.split_off(p.len());
        part_vectors.push(std::mem::replace(&mut rest, tail));
    }
    Ok((vectors, part_vectors))
}

/// The stored rounds of a call's sessions, read once: each round's exact duplicate (the first
/// stored round of its session with its normalized text) and the session's vectors for the
/// cosine probe. The rounds the call stores join both as they are decided.
struct Seen {
    /// (session, normalized text) → the first round's key.
    exact: HashMap<(String, String), String>,
    /// Session → its rounds' keys and vectors.
    sessions: HashMap<String, Vec<(String, Vec<f32>)>>,
}

impl Seen {
    fn load(tx: &Tx<'_>, user: i64, agent: Option<&str>, rounds: &[NewRound]) -> Result<Seen> {
        let mut names: Vec<Option<&str>> = rounds.iter().map(|r| Some(r.session.as_str())).collect();
        names.sort_unstable();
        names.dedup();
        let mut seen = Seen { exact: HashMap::new(), sessions: HashMap::new() };
        for r in write::session_rounds(tx, user, agent, &names)? {
            seen.exact.entry((r.session.clone(), r.norm_key)).or_insert_with(|| r.key.clone());
            seen.sessions.entry(r.session).or_default().push((r.key, r.vector));
        }
        Ok(seen)
    }

    /// The round a new one repeats, with the cosine when it is not the same normalized text:
    /// the same text in its session, else the nearest round of its session at `threshold` or
    /// above (every round of the session is probed, not only the nearest).
    fn duplicate_of(
        &self,
        probe: &(String, String),
        vector: &[f32],
        threshold: f32,
    ) -> Option<(String, Option<f32>)> {
        if let Some(of) = self.exact.get(probe) {
            return Some((of.clone(), None));
        }
        let members = self.sessions.get(&probe.0)?;
        let best = nearest(vector, members.iter().map(|(k, v)| (k, v.as_slice())));
        best.filter(|(c, _)| *c >= threshold).map(|(cos, of)| (of.clone(), Some(cos)))
    }

    /// A round the call stores.
    fn insert(&mut self, probe: (String, String), key: &str, vector: &[f32]) {
        self.sessions.entry(probe.0.clone()).or_default().push((key.to_owned(), vector.to_vec()));
        self.exact.insert(probe, key.to_owned());
    }
}

/// Brings every round whose derived records were made under another rule (`parts::RULE`)
/// up to date: its stored, embedded and word-indexed text (with the speakers' names) and its part
/// records. These are rounds of a store made before, or imported from a dump (dumps carry no parts,
/// and an older dump's vectors were taken over the role text). Runs when a store is opened with an
/// embedder; in chunks of rounds, each one transaction, so an interrupted fill resumes at the
/// next open. Returns how many rounds it went through.
pub(crate) fn fill_derived(store: &mut Store, embedder: &dyn Embedder) -> Result<usize> {
    let todo = store.stale_rounds(RULE)?;
    if todo.is_empty() {
        return Ok(0);
    }
    tracing::info!(rounds = todo.len(), "bringing rounds' derived records up to date");
    let dim = store.pins.dim()?;
    for chunk in todo.chunks(256) {
        // Per round: a new text to store and embed, if any; new parts, unless made under this
        // parts rule already.
        let plans: Vec<(Option<String>, Option<Vec<String>>)> = chunk
            .iter()
            .map(|u| {
                let named = index_text(&u.turns);
                let stale = named != u.text || (u.rule.is_none() && named != round_text(&u.turns));
                let parts = (u.rule.as_deref() != Some(PARTS_ONLY_RULE)).then(|| parts(&u.turns));
                (stale.then_some(named), parts)
            })
            .collect();
        let refs: Vec<&str> = plans
            .iter()
            .flat_map(|(text, parts)| text.iter().chain(parts.iter().flatten()))
            .map(String::as_str)
            .collect();
        let mut vectors = embed::documents(embedder, &refs, dim)?.into_iter();
        let tx = store.begin()?;
        for (u, (text, parts)) in chunk.iter().zip(&plans) {
            if let Some(text) = text {
                let v = vectors.next().unwrap_or_default();
                write::set_round_text(&tx, u.user, u.id, &u.text, text, &v)?;
            }
            match parts {
                Some(p) => {
                    let v: Vec<Vec<f32>> = vectors.by_ref().take(p.len()).collect();
                    write::set_parts(&tx, u.user, u.id, RULE, &v)?;
                }
                None => write::set_rule(&tx, u.id, RULE)?,
            }
        }
        tx.commit()?;
    }
    Ok(todo.len())
}

/// A round `add` stored, for growing the views after the commit.
struct Added<'a> {
    id: i64,
    day: i32,
    vector: &'a [f32],
    text: &'a str,
    parts: &'a [Vec<f32>],
}
