//! The conversation write path: `add` (validate, form rounds, dedup, store, queue for extraction).

use super::*;

impl Memory {
    /// Stores a batch of messages in `scope` (a user, or one agent of the user: see [`Scope`]),
    /// in one transaction.
    ///
    /// Messages are validated first (a bad one fails the whole call, naming
    /// `messages[i].field`); empty turns are dropped; the rest form rounds. A round whose
    /// normalized text, or whose embedding at cosine ≥ `dedup_cosine`, matches a round of the
    /// same session (and the same agent) is not stored. Every decision goes to the log. On any error the store is
    /// left exactly as it was.
    ///
    /// In a store that extracts, each stored round is queued for extraction in the same
    /// transaction (extracted here or by the worker if this handle has an extractor, else by the
    /// next handle that has one).
    /// In the background mode (the default) `add` returns once the rounds are committed; see
    /// [`flush`](Memory::flush) and [`pending`](Memory::pending). Inline
    /// ([`Config::background_extraction`] off), `add` extracts before returning; an extraction
    /// error is returned after the rounds were committed, and they stay queued.
    pub fn add<'s>(&self, messages: &[Message], scope: impl Into<Scope<'s>>) -> Result<AddReport> {
        let scope = scope.into();
        check_scope(scope)?;
        let agent = scope.agent;
        let embedder = self.shared.embedder("add")?;
        let (rounds, empty_turns_dropped) = form_rounds(messages)?;
        let mut report = AddReport { empty_turns_dropped, ..AddReport::default() };
        if rounds.is_empty() {
            return Ok(report);
        }
        let texts: Vec<String> = rounds.iter().map(|r| r.text()).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_documents(&refs)?;
        let dim = self.shared.pins.dim()?;
        if vectors.len() != rounds.len() || vectors.iter().any(|v| v.len() != dim) {
            return Err(Error::Embedder(format!("expected {} vectors of dimension {dim}", rounds.len())));
        }

        let mut store = self.shared.lock_store();
        let tx = store.begin()?;
        let user = write::ensure_user(&tx, scope.user)?;
        let version = write::user_version(&tx, user)?;
        let mut sessions: HashMap<String, Vec<(String, Vec<f32>)>> = HashMap::new();
        let mut added: Vec<(i64, i32, &[f32], &str)> = Vec::new();
        let mut latest: Option<&Timestamp> = None;
        for ((round, text), vector) in rounds.iter().zip(&texts).zip(&vectors) {
            let key = round_key(&round.ts, &round.session, text, agent);
            let at = round.ts.sortable();
            let norm_key = normalized_key(text);
            if let Some(of) = write::exact_duplicate(&tx, user, agent, &round.session, &norm_key)? {
                write::log(
                    &tx,
                    user,
                    agent,
                    &at,
                    "round.duplicate",
                    &key,
                    Some(&of),
                    r#"{"match":"exact"}"#,
                )?;
                report.duplicates.push(Duplicate { key, of, cosine: None });
                continue;
            }
            let members = match sessions.entry(round.session.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(write::session_vectors(&tx, user, agent, &round.session)?)
                }
            };
            // Every round of the session is probed, not only the nearest.
            let best = nearest(vector, members.iter().map(|(k, v)| (k, v.as_slice())));
            if let Some((cos, of)) = best.filter(|(c, _)| *c >= self.shared.config.dedup_cosine) {
                let detail = serde_json::json!({"match": "cosine", "cosine": cos}).to_string();
                write::log(&tx, user, agent, &at, "round.duplicate", &key, Some(of), &detail)?;
                report.duplicates.push(Duplicate { key, of: of.clone(), cosine: Some(cos) });
                continue;
            }
            let row = RoundRow {
                id: 0,
                key: key.clone(),
                session: round.session.clone(),
                ts: round.ts.raw().to_owned(),
                ts_unix: round.ts.unix_seconds(),
                day: day_number(round.ts.date()),
                norm_key,
                turns: round.turns.clone(),
                text: text.clone(),
                agent: agent.map(str::to_owned),
                extractor: None,
            };
            let id = write::insert_round(&tx, user, &row, vector)?;
            write::log(&tx, user, agent, &at, "round.stored", &key, None, "{}")?;
            if self.shared.pins.extracts() {
                write::enqueue(&tx, user, id)?;
            }
            members.push((key.clone(), vector.clone()));
            added.push((id, row.day, vector, text.as_str()));
            if latest.is_none_or(|l| round.ts > *l) {
                latest = Some(&round.ts);
            }
            report.stored.push(key);
        }
        write::touch_user(&tx, user, latest.map(|t| (t.raw(), t.unix_seconds())))?;
        tx.commit()?;
        // Grown before the next write can commit: the views follow the writes in order.
        self.shared.grow(user, version, agent, |view| {
            for (id, day, v, text) in &added {
                view.push_round(*id, *day, 1.0, v, text);
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
        if self.shared.extractor.is_some() && !report.stored.is_empty() {
            match self.worker {
                Some(_) => self.shared.signal(),
                // Inline extraction: the rounds are committed; a failure of this user's rounds
                // is returned and leaves them queued for `flush` (another user's is not ours).
                None => {
                    if let Some((_, e)) = self.shared.drain()?.into_iter().find(|(u, _)| *u == user) {
                        return Err(e);
                    }
                }
            }
        }
        Ok(report)
    }
}
