//! Upgrades without re-ingesting: which extractors a store's facts came from, re-extraction of
//! rounds whose extractor changed, and the re-settle of every fact under the current lexicons
//! and conflict rules (the conflict pass of `consolidate`).

use super::conflict::Rule;
use super::meet::{Contest, Probe, contest, statement, values};
use super::types::{ExtractorInfo, Reextract, ReextractReport};
use crate::engine::{Engine, logical_now};
use crate::error::{Error, Result};
use crate::model::decision::DecisionKind;
use crate::model::scope::check_user;
use crate::model::time::day_date;
use crate::store::{FactRow, Tx, View, write};

/// Every extractor the store knows, oldest first, with what it produced for `user_id` (every
/// user's with `None`), and whether it is `current` (this handle's, by id).
pub(crate) fn extractors(
    engine: &Engine,
    current: Option<i64>,
    user_id: Option<&str>,
) -> Result<Vec<ExtractorInfo>> {
    let store = engine.read()?;
    let view = match user_id {
        Some(name) => {
            check_user(name)?;
            // An unknown user has produced nothing: no row matches user id 0.
            Some(
                store
                    .user(name)?
                    .map_or(View { user: 0, agent: None }, |(user, _)| View { user, agent: None }),
            )
        }
        None => None,
    };
    Ok(store
        .extractors(view)?
        .into_iter()
        .map(|e| ExtractorInfo {
            current: Some(e.id) == current,
            hash: e.hash,
            pins: e.pins,
            rounds: e.rounds,
            facts: e.facts,
        })
        .collect())
}

/// Queues again the rounds of `user_id` (every user's with `None`) that `which` selects, for the
/// `current` extractor (by id; none is [`Error::NoExtractor`]): their facts removed, the facts
/// those had superseded restored, each change logged. The caller drains the queue.
pub(crate) fn reextract(
    engine: &Engine,
    current: Option<i64>,
    user_id: Option<&str>,
    which: Reextract<'_>,
) -> Result<ReextractReport> {
    let Some(current) = current else {
        let pending = engine.lock_store().pending(None)?;
        return Err(Error::NoExtractor { operation: "reextract", pending });
    };
    if let Some(u) = user_id {
        check_user(u)?;
    }
    if let (Reextract::Rounds(_), None) = (which, user_id) {
        return Err(Error::input("user_id", "is required to re-extract rounds by key"));
    }
    let (names, hashes) = {
        let store = engine.lock_store();
        let names = match user_id {
            Some(u) => vec![u.to_owned()],
            None => store.user_names()?,
        };
        (names, store.extractor_hashes()?)
    };
    let mut report = ReextractReport {
        extractor: hashes.get(&current).cloned().unwrap_or_default(),
        ..Default::default()
    };
    for name in &names {
        let mut store = engine.lock_store();
        let Some((user, _)) = store.user(name)? else {
            if let Reextract::Rounds(keys) = which
                && !keys.is_empty()
            {
                return Err(Error::input("rounds[0]", "no such round for this user"));
            }
            continue;
        };
        let at = logical_now(&store, user)?;
        let tx = store.begin_for(&[name])?;
        let ids = match which {
            Reextract::Stale => write::rounds_to_reextract(&tx, user, current, false)?,
            Reextract::All => write::rounds_to_reextract(&tx, user, current, true)?,
            Reextract::Rounds(keys) => {
                let mut ids = Vec::with_capacity(keys.len());
                for (i, key) in keys.iter().enumerate() {
                    let round = write::round_id(&tx, user, key)?
                        .ok_or_else(|| Error::input(format!("rounds[{i}]"), "no such round for this user"))?;
                    if !write::is_queued(&tx, round)? && !ids.contains(&round) {
                        ids.push(round);
                    }
                }
                ids
            }
        };
        if ids.is_empty() {
            continue;
        }
        for &round_id in &ids {
            let (key, agent, before) = write::round_head(&tx, round_id)?;
            for fact in write::round_facts(&tx, round_id)? {
                for restored in write::restore_superseded_by(&tx, user, &fact.key)? {
                    write::log(
                        &tx,
                        user,
                        agent.as_deref(),
                        &at,
                        DecisionKind::FactRestored,
                        &restored,
                        Some(&fact.key),
                        r#"{"reason":"reextract"}"#,
                    )?;
                    report.restored += 1;
                }
                if let Some(winner) = &fact.superseded_by {
                    write::drop_supersedes(&tx, user, winner, &fact.key)?;
                }
                write::delete_fact(&tx, fact.id)?;
                let detail = serde_json::json!({
                    "extractor": fact.extractor.and_then(|e| hashes.get(&e)),
                    "content": fact.content,
                });
                write::log(
                    &tx,
                    user,
                    agent.as_deref(),
                    &at,
                    DecisionKind::FactReplaced,
                    &fact.key,
                    None,
                    &detail.to_string(),
                )?;
                report.replaced += 1;
            }
            write::set_round_extractor(&tx, round_id, None)?;
            write::enqueue(&tx, user, round_id)?;
            let detail = serde_json::json!({
                "from": before.and_then(|e| hashes.get(&e)),
                "to": report.extractor,
            });
            write::log(
                &tx,
                user,
                agent.as_deref(),
                &at,
                DecisionKind::RoundRequeued,
                &key,
                None,
                &detail.to_string(),
            )?;
        }
        write::touch_user(&tx, user, None)?;
        tx.commit()?;
        drop(store);
        engine.views.drop_user(user);
        report.users += 1;
        report.rounds += ids.len();
    }
    Ok(report)
}

/// The conflict pass from scratch over one agent's facts (the shared ones with `None`), in the
/// order they were stored: every fact's `subject|predicate` key is computed again under the
/// current lexicons, every supersession decided again by the current rules, and only the
/// differences written, each logged at `at` (`fact.superseded`, `fact.restored`,
/// `fact.rekeyed`). A fact superseded again keeps salience 0; one made active again gets its
/// initial salience back; the others keep theirs (decay included). On facts stored under the
/// same rules it changes nothing. Returns (superseded, restored, rekeyed).
pub(super) fn resettle(
    tx: &Tx<'_>,
    user: i64,
    agent: Option<&str>,
    at: &str,
) -> Result<(usize, usize, usize)> {
    let stored = write::agent_facts(tx, user, agent)?;
    let dates: Vec<String> = stored.iter().map(|(_, day, _)| day_date(*day)).collect();
    let mut next: Vec<FactRow> = stored
        .iter()
        .zip(&dates)
        .map(|((f, _, ts), date)| FactRow {
            pair_key: statement(f, date, *ts).normal().map(|n| n.pair_key()),
            supersedes: None,
            superseded_by: None,
            ..f.clone()
        })
        .collect();
    let mut rules: Vec<Option<Rule>> = vec![None; next.len()];
    // Places in `next` of the facts active so far, in id order.
    let mut active: Vec<usize> = Vec::new();
    let append = |list: &mut Option<String>, key: &str| match list {
        Some(l) => {
            l.push(' ');
            l.push_str(key);
        }
        None => *list = Some(key.to_owned()),
    };
    for i in 0..next.len() {
        let others = active.iter().map(|&j| (&next[j], dates[j].as_str(), stored[j].2));
        let Contest { lost_to, losers } = contest(&Probe::of(&next[i], &dates[i], stored[i].2), others);
        if let Some((p, rule)) = lost_to {
            let j = active[p];
            next[i].superseded_by = Some(next[j].key.clone());
            rules[i] = Some(rule);
            let key = next[i].key.clone();
            append(&mut next[j].supersedes, &key);
            continue;
        }
        for &(p, rule) in losers.iter().rev() {
            let j = active[p];
            next[j].superseded_by = Some(next[i].key.clone());
            rules[j] = Some(rule);
            let key = next[j].key.clone();
            append(&mut next[i].supersedes, &key);
        }
        for &(p, _) in losers.iter().rev() {
            active.remove(p);
        }
        active.push(i);
    }
    let rows: std::collections::HashMap<String, FactRow> =
        next.iter().map(|f| (f.key.clone(), f.clone())).collect();
    let (mut superseded, mut restored, mut rekeyed) = (0, 0, 0);
    for (i, ((old, _, _), mut new)) in stored.iter().zip(next).enumerate() {
        new.salience = match (&old.superseded_by, &new.superseded_by) {
            (_, Some(_)) => 0.0,
            (Some(_), None) => new.initial_salience,
            (None, None) => old.salience,
        };
        if (&new.pair_key, &new.superseded_by, &new.supersedes, new.salience)
            == (&old.pair_key, &old.superseded_by, &old.supersedes, old.salience)
        {
            continue;
        }
        write::resettle_fact(tx, &new)?;
        let agent = new.agent.as_deref();
        if new.pair_key != old.pair_key {
            let detail = serde_json::json!({ "from": old.pair_key, "to": new.pair_key });
            write::log(tx, user, agent, at, DecisionKind::FactRekeyed, &new.key, None, &detail.to_string())?;
            rekeyed += 1;
        }
        match (&old.superseded_by, &new.superseded_by) {
            (was, Some(winner)) if was.as_ref() != Some(winner) => {
                let rule = rules[i].map_or("", |r| r.name());
                let (old_value, new_value) = match rows.get(winner) {
                    Some(w) => values(rules[i], &new, w),
                    None => (new.object.clone(), None),
                };
                let detail = serde_json::json!({
                    "rule": rule,
                    "key": new.pair_key,
                    "old": old_value,
                    "new": new_value,
                });
                write::log(
                    tx,
                    user,
                    agent,
                    at,
                    DecisionKind::FactSuperseded,
                    &new.key,
                    Some(winner),
                    &detail.to_string(),
                )?;
                superseded += 1;
            }
            (Some(was), None) => {
                let detail = serde_json::json!({ "reason": "resettle" });
                write::log(
                    tx,
                    user,
                    agent,
                    at,
                    DecisionKind::FactRestored,
                    &new.key,
                    Some(was),
                    &detail.to_string(),
                )?;
                restored += 1;
            }
            _ => {}
        }
    }
    Ok((superseded, restored, rekeyed))
}
