//! The extraction queue's drain: queued rounds taken a few at a time (as many as the extractor
//! decodes together), then stored one per transaction in queue order, facts verified,
//! deduplicated and settled against the user's active facts.

use super::*;
use crate::backend::Claims;

/// A file store's claims: its process holds the store's extraction lock, so every user is its.
struct WholeStore {
    _lock: std::fs::File,
}

impl Claims for WholeStore {
    fn try_claim(&mut self, _user: i64) -> Result<bool> {
        Ok(true)
    }

    fn release(&mut self, _user: i64) -> Result<()> {
        Ok(())
    }
}

impl Shared {
    /// The worker: waits for a signal, drains the queue, until told to stop. A failure leaves its
    /// round queued and waits for the next signal (the next `add`); `flush` reports it.
    pub(super) fn work(&self) {
        // What the queue held after the last drain (rounds that failed stay): an idle look that
        // finds the same count leaves them to the next signal rather than retry them every poll.
        let mut left: Option<usize> = None;
        loop {
            {
                let mut signal = self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                while !signal.stop && !signal.wake {
                    match self.config.queue_poll_ms {
                        None => {
                            signal = self.wake.wait(signal).unwrap_or_else(std::sync::PoisonError::into_inner)
                        }
                        Some(ms) => {
                            let (s, timeout) = self
                                .wake
                                .wait_timeout(signal, std::time::Duration::from_millis(u64::from(ms)))
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            signal = s;
                            if timeout.timed_out() && !signal.stop {
                                drop(signal);
                                // Rounds another process queued.
                                let pending = self.lock_store().pending(None).unwrap_or(0);
                                signal =
                                    self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                                if pending > 0 && Some(pending) != left {
                                    break;
                                }
                            }
                        }
                    }
                }
                if signal.stop {
                    return;
                }
                signal.wake = false;
            }
            match self.drain() {
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "background extraction stopped; the rounds stay queued"),
            }
            left = self.lock_store().pending(None).ok();
        }
    }

    /// Extracts queued rounds in round order until the queue is empty (or the store is closing).
    /// A round that fails stays queued, and so do its user's later rounds (a user's rounds are
    /// settled in order), but every other user's rounds go on; each failure is returned with its
    /// user (logged here), an error only for what stops every user (the store, no extractor).
    ///
    /// No round goes through the model twice. On a file, one process at a time drains the store:
    /// the others wait for its extraction lock file. On a database server, each process claims
    /// the users whose rounds it extracts ([`Claims`]), so several processes extract different
    /// users' rounds in parallel, and each user's in order; rounds of users another process
    /// holds are waited for.
    ///
    /// [`Claims`]: crate::backend::Claims
    pub(super) fn drain(&self) -> Result<Vec<(i64, Error)>> {
        let mut turn = self.drain.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut failed: Vec<(i64, Error)> = Vec::new();
        let Some((extractor, _)) = self.extractor.as_ref() else {
            return match self.lock_store().pending(None)? {
                0 => Ok(failed),
                pending => Err(Error::NoExtractor { operation: "extraction", pending }),
            };
        };
        let mut whole: Box<dyn Claims>;
        let claims: &mut Box<dyn Claims> = match &self.place {
            Place::File(path) => match self.file_lock(path)? {
                Some(lock) => {
                    whole = Box::new(WholeStore { _lock: lock });
                    &mut whole
                }
                None => return Ok(failed),
            },
            Place::Remote(backend) => match &mut *turn {
                Some(claims) => claims,
                empty => empty.insert(backend.extraction_claims()?),
            },
        };
        let drained = self.drain_claimed(extractor.as_ref(), claims.as_mut(), &mut failed);
        if drained.is_err() {
            // Claims in an unknown state: the connection goes, and with it every claim.
            *turn = None;
        }
        drained.map(|()| failed)
    }

    /// [`drain`](Shared::drain)'s loop, with the claims it takes users with.
    fn drain_claimed(
        &self,
        extractor: &dyn Extractor,
        claims: &mut dyn Claims,
        failed: &mut Vec<(i64, Error)>,
    ) -> Result<()> {
        let batch = extractor.batch_size();
        // Users whose rounds another process is extracting, left alone until the next look.
        let mut busy: Vec<i64> = Vec::new();
        loop {
            if self.stopping() {
                return Ok(());
            }
            let skip: Vec<i64> = failed.iter().map(|(u, _)| *u).chain(busy.iter().copied()).collect();
            let next = self.lock_store().next_queued(&skip, batch)?;
            if next.is_empty() {
                if busy.is_empty() || !self.pause(std::time::Duration::from_millis(100)) {
                    return Ok(());
                }
                busy.clear();
                continue;
            }
            let mut mine: Vec<i64> = Vec::new();
            for &(_, user) in &next {
                if mine.contains(&user) || busy.contains(&user) {
                    continue;
                }
                if claims.try_claim(user)? {
                    mine.push(user);
                } else {
                    busy.push(user);
                }
            }
            if mine.is_empty() {
                continue;
            }
            // Read again under the claims: rounds another process stored before letting go of a
            // user have left the queue since.
            let queued = self.lock_store().queued_of(&mine, batch);
            let cancelled = queued.map(|queued| {
                let before = failed.len();
                let cancelled = self.extract_rounds(extractor, &queued, failed);
                for (user, e) in &failed[before..] {
                    tracing::warn!(user, error = %e, "extraction failed; the user's rounds stay queued");
                }
                cancelled
            });
            for user in mine {
                claims.release(user)?;
            }
            if cancelled? {
                return Ok(());
            }
        }
    }

    /// Waits `pause` or until the store begins closing: whether it is still open.
    fn pause(&self, pause: std::time::Duration) -> bool {
        let signal = self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if signal.stop {
            return false;
        }
        let (signal, _) =
            self.wake.wait_timeout(signal, pause).unwrap_or_else(std::sync::PoisonError::into_inner);
        !signal.stop
    }

    /// The store's extraction lock (a file beside it, locked with the OS's advisory lock, which
    /// a crashed process releases), waited for; `None` if the store began closing meanwhile.
    fn file_lock(&self, path: &std::path::Path) -> Result<Option<std::fs::File>> {
        let mut name = path.to_owned().into_os_string();
        name.push("-extract.lock");
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&name)?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::Io(e)),
            }
            // Another process extracts; look again shortly, or stop when the store closes.
            if !self.pause(std::time::Duration::from_millis(100)) {
                return Ok(None);
            }
        }
    }

    /// Extracts `queued` rounds (`(round id, user id, user name)`, in queue order) in one call
    /// of the extractor, then stores each in order. A round that fails stays queued, with its user's
    /// later rounds; its user and error join `failed`. Returns whether the store began closing
    /// (the rounds not stored stay queued).
    fn extract_rounds(
        &self,
        extractor: &dyn Extractor,
        queued: &[(i64, i64, String)],
        failed: &mut Vec<(i64, Error)>,
    ) -> bool {
        let mut rounds = Vec::with_capacity(queued.len());
        for (round_id, user, name) in queued {
            let (round_id, user) = (*round_id, *user);
            match self.lock_store().rounds_by_id(View { user, agent: None }, &[round_id]) {
                Ok(mut found) if !found.is_empty() => {
                    let round = found.remove(0);
                    let skipped = crate::prefilter::skip(&round.turns);
                    rounds.push((round_id, (user, name.as_str()), round, skipped));
                }
                Ok(_) => {} // forgotten since it was read from the queue
                Err(e) => failed.push((user, e)),
            }
        }
        // The model runs outside every lock, on the rounds the pre-filter lets through.
        let sent: Vec<&[Turn]> =
            rounds.iter().filter(|r| r.3.is_none()).map(|(_, _, round, _)| round.turns.as_slice()).collect();
        let mut outcomes = match extractor.extract_batch(&sent, &self.cancel) {
            Ok(outcomes) => outcomes.into_iter(),
            Err(Error::Cancelled) => return true,
            Err(e) => {
                for (_, (user, _), _, _) in &rounds {
                    if !failed.iter().any(|(u, _)| u == user) {
                        failed.push((*user, e.replicate()));
                    }
                }
                return false;
            }
        };
        for (round_id, (user, name), round, skipped) in rounds {
            let extraction = match skipped {
                Some(_) => None,
                None => Some(outcomes.next().unwrap_or_else(|| Err(Error::Extractor("no outcome".into())))),
            };
            if failed.iter().any(|(u, _)| *u == user) {
                continue; // an earlier round of this user failed: it and its later rounds wait
            }
            let stored = match extraction.transpose() {
                Ok(extraction) => self.store_round(round_id, (user, name), &round, skipped, extraction),
                Err(e) => Err(e),
            };
            match stored {
                Ok(()) => {}
                Err(Error::Cancelled) => return true,
                Err(e) => failed.push((user, e)),
            }
        }
        false
    }

    /// Stores one round's extraction (none when the pre-filter skipped it): its facts verified,
    /// embedded, deduplicated and settled, and the round dequeued, in one transaction.
    fn store_round(
        &self,
        round_id: i64,
        (user, name): (i64, &str),
        round: &RoundRow,
        skipped: Option<crate::prefilter::Rule>,
        extraction: Option<crate::extract::Extraction>,
    ) -> Result<()> {
        let embedder = self.embedder("extraction")?;
        let extractor = self.extractor.as_ref().map(|(_, id)| *id);
        let agent = round.agent.as_deref();
        let ts = Timestamp::parse(&round.ts)?;
        let at = ts.sortable();
        let (facts, notes, truncated) = match extraction {
            None => (Vec::new(), Vec::new(), false),
            Some(extraction) => {
                let (kept, notes) = crate::facts::verify(&extraction.facts, &round.turns, ts.date());
                (kept, notes, extraction.truncated)
            }
        };
        let texts: Vec<String> = facts.iter().map(|f| crate::facts::embed_text(&f.fact)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = if refs.is_empty() { Vec::new() } else { embedder.embed_documents(&refs)? };
        if vectors.len() != facts.len() {
            return Err(Error::Embedder(format!("expected {} fact vectors", facts.len())));
        }

        let mut store = self.lock_store();
        let tx = store.begin_for(&[name])?;
        if !write::is_queued(&tx, round_id)? {
            // Forgotten while the model ran.
            return Ok(());
        }
        let version = write::user_version(&tx, user)?;
        if let Some(rule) = skipped {
            let detail = serde_json::json!({ "rule": rule.name() }).to_string();
            write::log(&tx, user, agent, &at, "round.prefiltered", &round.key, None, &detail)?;
        }
        let mut existing = write::active_facts(&tx, user, agent)?;
        let mut dates: Vec<String> = existing.iter().map(|f| date_of(f.round_day)).collect();
        let round_date = date_of(round.day);
        let mut added: Vec<FactRow> = Vec::new();
        let mut added_vectors: Vec<&[f32]> = Vec::new();
        let (mut duplicates, mut superseded) = (0, 0);
        for (verified, vector) in facts.iter().zip(&vectors) {
            let f = &verified.fact;
            let norm_key = normalized_key(&f.content);
            let candidate = format!("{}/{}", round.key, added.len() + 1);
            if let Some(of) = write::exact_fact_duplicate(&tx, user, agent, &round.session, &norm_key)? {
                write::log(
                    &tx,
                    user,
                    agent,
                    &at,
                    "fact.duplicate",
                    &candidate,
                    Some(&of),
                    r#"{"match":"exact"}"#,
                )?;
                duplicates += 1;
                continue;
            }
            let mut row = FactRow {
                id: 0,
                round_id,
                key: candidate,
                session: round.session.clone(),
                day: crate::facts::fact_day(verified.valid_time.as_deref(), round.day),
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
                extractor,
            };
            row.pair_key = statement(&row, &round_date, round.ts_unix).normal().map(|n| n.pair_key());
            // The nearest active fact (ties to the earlier one); a cosine duplicate is merged
            // unless a screen keeps the two apart (ENGINE §5).
            let best = nearest(vector, existing.iter().enumerate().map(|(i, a)| (i, a.vector.as_slice())));
            if let Some((cos, i)) = best.filter(|(c, _)| *c >= self.config.fact_dedup_cosine) {
                let old = &existing[i];
                let apart = screen(
                    &statement(&row, &round_date, round.ts_unix),
                    &statement(&old.row, &dates[i], old.ts_unix),
                );
                match apart {
                    None => {
                        let detail = serde_json::json!({ "match": "cosine", "cosine": cos }).to_string();
                        write::log(
                            &tx,
                            user,
                            agent,
                            &at,
                            "fact.merged",
                            &row.key,
                            Some(&old.row.key),
                            &detail,
                        )?;
                        duplicates += 1;
                        continue;
                    }
                    Some(why) => {
                        let detail = serde_json::json!({ "screen": why, "cosine": cos }).to_string();
                        write::log(
                            &tx,
                            user,
                            agent,
                            &at,
                            "fact.kept-apart",
                            &row.key,
                            Some(&old.row.key),
                            &detail,
                        )?;
                    }
                }
            }
            row.id = write::insert_fact(&tx, user, &row, vector)?;
            write::log(&tx, user, agent, &at, "fact.stored", &row.key, Some(&round.key), "{}")?;

            // Supersession: the new fact against every active fact it conflicts with.
            let (active, n) =
                settle(&tx, user, &at, &row, &round_date, round.ts_unix, &mut existing, &mut dates)?;
            superseded += n;
            if !active {
                continue;
            }
            existing.push(crate::store::ActiveFact {
                row: row.clone(),
                round_day: round.day,
                ts_unix: round.ts_unix,
                vector: vector.clone(),
            });
            dates.push(round_date.clone());
            added.push(row);
            added_vectors.push(vector);
        }
        if skipped.is_none() {
            let dropped = notes.iter().filter(|n| **n == Some(crate::facts::Note::Ungrounded)).count();
            let cleared = notes.iter().filter(|n| **n == Some(crate::facts::Note::MentionNotInRound)).count();
            let detail = serde_json::json!({
                "stored": added.len(),
                "duplicates": duplicates,
                "superseded": superseded,
                "ungrounded": dropped,
                "mentions_cleared": cleared,
                "truncated": truncated,
            })
            .to_string();
            write::log(&tx, user, agent, &at, "round.extracted", &round.key, None, &detail)?;
        }
        write::dequeue(&tx, round_id)?;
        write::set_round_extractor(&tx, round_id, extractor)?;
        write::touch_user(&tx, user, None)?;
        tx.commit()?;

        // Before the next write can commit, as every write does.
        if superseded > 0 {
            // A superseded fact must leave the views: they are rebuilt on the next read.
            self.drop_views(user);
        } else {
            self.grow(user, version, agent, |view| {
                for (row, v) in added.iter().zip(&added_vectors) {
                    view.push_vector(round_id, row.day, row.salience, v);
                }
            });
        }
        drop(store);
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
    tx: &crate::store::Tx<'_>,
    user: i64,
    at: &str,
    row: &FactRow,
    date: &str,
    ts_unix: i64,
    existing: &mut Vec<crate::store::ActiveFact>,
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
            "fact.superseded",
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
/// facts in id order, each with its round's date and timestamp): only facts with the same
/// `subject|predicate` key can conflict; the first one that is newer wins over `row`.
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
    let Some(new_key) = key(row, date, ts_unix) else { return out };
    for (i, (old, old_date, old_ts)) in others.enumerate() {
        // Only facts about the same relation can conflict; the stored key saves normalizing the rest.
        if key(old, old_date, old_ts).as_deref() != Some(new_key.as_str()) {
            continue;
        }
        let old_statement = statement(old, old_date, old_ts);
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
    }
}
