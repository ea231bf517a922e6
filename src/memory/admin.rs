//! Listing, export, consolidation, forgetting and import.

use super::*;

impl Memory {
    /// Every round `scope` sees, oldest first (an unknown user has none).
    pub fn rounds<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<StoredRound>> {
        self.reading(scope.into(), |store, view| {
            Ok(store.all_rounds(view)?.into_iter().map(StoredRound::from).collect())
        })
    }

    /// Everything `scope` sees, in the given format: notes, then rounds with their facts, then
    /// (text and dump) every fact record and the decision log. Deterministic bytes.
    ///
    /// ```
    /// use mnemon::{Config, ExportFormat, HashingEmbedder, Memory, Message};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let md = memory.export("eve", ExportFormat::Markdown)?;
    /// assert!(md.contains("> **user:** I live in Porto."));
    /// let dump = memory.export("eve", ExportFormat::Jsonl)?;
    /// let copy = dir.path().join("copy.db");
    /// Memory::import(&copy, &dump, Config::default())?;
    /// assert_eq!(Memory::open_stored(&copy, Config::default())?.export("eve", ExportFormat::Markdown)?, md);
    /// assert_eq!(memory.forget_user("eve")?.rounds, 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn export<'s>(&self, scope: impl Into<Scope<'s>>, format: ExportFormat) -> Result<String> {
        self.export_scoped(scope.into(), format).map_err(|e| self.shared.located(e))
    }

    fn export_scoped(&self, scope: Scope<'_>, format: ExportFormat) -> Result<String> {
        check_scope(scope)?;
        let store = self.shared.lock_store();
        let (view, _) =
            resolve(&store, scope)?.ok_or_else(|| Error::input("user_id", "no such user in this store"))?;
        let records = crate::export::Records::read(&store, view, format == ExportFormat::Jsonl)?;
        match format {
            ExportFormat::Jsonl => crate::export::export_dump(&store.pins, scope, &records),
            _ => {
                let now = store.user_now(view.user)?.map(|(raw, _)| raw);
                crate::export::export(&store.pins, scope, now.as_deref(), &records, format)
            }
        }
    }

    /// The active facts `scope` sees, in the order they were stored. Superseded facts are on no
    /// read path; the exports and [`decisions`](Memory::decisions) show them and what replaced
    /// them.
    pub fn facts<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<Fact>> {
        self.reading(scope.into(), |store, view| {
            Ok(store.all_facts(view)?.into_iter().filter(|f| f.salience > 0.0).map(Fact::from).collect())
        })
    }

    /// The conflict pass over every fact of the user, superseded ones included, in the order they
    /// were stored (facts only meet facts of the same agent): each fact's `subject|predicate` key
    /// is computed again under the current lexicons and every supersession decided again under
    /// the current conflict rules, so after a change of either (or a
    /// [`reextract`](Memory::reextract)) the facts are settled as the current rules would have
    /// settled them. Then salience decay if [`Config::decay`] is set (ENGINE
    /// §7), then condensing old episodic notes if [`Config::condense`] is set (see
    /// [`condense`](Memory::condense)). With an agent in `scope`, only that agent's records are
    /// consolidated; without, every agent's and the shared ones. On a store built by `add` the
    /// pass changes nothing; running `consolidate` twice equals running it once. Every change is
    /// logged at the user's logical now. Without condensing it needs no model: a store opened
    /// with [`open_stored`](Memory::open_stored) consolidates too.
    pub fn consolidate<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<ConsolidateReport> {
        self.consolidate_scoped(scope.into()).map_err(|e| self.shared.located_write(e))
    }

    fn consolidate_scoped(&self, scope: Scope<'_>) -> Result<ConsolidateReport> {
        check_scope(scope)?;
        let mut report = ConsolidateReport::default();
        {
            let mut store = self.shared.lock_store();
            let Some((view, _)) = resolve(&store, scope)? else {
                return Ok(report);
            };
            let user = view.user;
            let now = store.user_now(user)?;
            let at = logical_now(&store, user)?;
            let tx = store.begin_for(&[scope.user])?;
            let agents = match scope.agent {
                Some(a) => vec![Some(a.to_owned())],
                None => write::all_fact_agents(&tx, user)?,
            };
            for agent in &agents {
                let (superseded, restored, rekeyed) =
                    super::upgrade::resettle(&tx, user, agent.as_deref(), &at)?;
                report.superseded += superseded;
                report.restored += restored;
                report.rekeyed += rekeyed;
                let kept = write::active_facts(&tx, user, agent.as_deref())?;
                if let (Some(decay), Some((_, now_unix))) = (self.shared.config.decay, &now) {
                    for fact in &kept {
                        let days = (now_unix - fact.ts_unix) as f64 / 86_400.0;
                        let target = decay.apply(fact.row.initial_salience, days);
                        if target < fact.row.salience {
                            write::set_salience(&tx, fact.row.id, target)?;
                            let detail = serde_json::json!({ "from": fact.row.salience, "to": target, "days": days.floor() });
                            write::log(
                                &tx,
                                user,
                                agent.as_deref(),
                                &at,
                                "fact.decayed",
                                &fact.row.key,
                                None,
                                &detail.to_string(),
                            )?;
                            report.decayed += 1;
                        }
                    }
                }
            }
            if report.superseded + report.restored + report.rekeyed + report.decayed > 0 {
                write::touch_user(&tx, user, None)?;
            }
            tx.commit()?;
            drop(store);
            self.shared.drop_views(user);
        }
        if let Some(condense) = self.shared.config.condense {
            report.condensed = self.condense(scope, condense)?.condensed;
        }
        Ok(report)
    }

    /// The decisions `scope` sees, in logical order (an unknown user has none).
    pub fn decisions<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<Decision>> {
        self.reading(scope.into(), |store, view| {
            Ok(store
                .decisions(view)?
                .into_iter()
                .map(|d| Decision {
                    at: d.at,
                    kind: d.kind,
                    record: d.record,
                    other: d.other,
                    detail: d.detail,
                })
                .collect())
        })
    }

    /// Forgets `user_id`: removes every record of the user (rounds, facts, notes, their vectors,
    /// words and parts, the queue and the decision log) and the user's name, then every trace
    /// the caches hold (the extraction cache's model outputs for the user's rounds, the vector
    /// cache's entries for their texts), and checkpoints the store's and the caches' logs so
    /// that no deleted byte is left in a WAL (deleted bytes in the files themselves are zeroed:
    /// `secure_delete`). The user's row stays under a name no caller can give, so its id is
    /// never reused; nothing records what it was. Unknown users are a no-op.
    ///
    /// [`ForgetReport::scrubbed`] is false when another connection's open read kept a log from
    /// being emptied; that log is emptied at the next checkpoint (the next forget, or the last
    /// close of the file).
    pub fn forget_user(&self, user_id: &str) -> Result<ForgetReport> {
        self.forget_scoped(user_id).map_err(|e| self.shared.located_write(e))
    }

    fn forget_scoped(&self, user_id: &str) -> Result<ForgetReport> {
        check_user(user_id)?;
        let mut store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(ForgetReport { rounds: 0, notes: 0, scrubbed: true });
        };
        let (turns, texts) = cached_inputs(&store, View { user, agent: None })?;
        let tx = store.begin_for(&[user_id])?;
        let notes = write::forget_notes(&tx, user)?;
        let rounds = write::forget_user(&tx, user)?;
        write::touch_user(&tx, user, None)?;
        tx.commit()?;
        let mut scrubbed = store.checkpoint()?;
        drop(store);
        self.shared.drop_views(user);
        if let Some(e) = &self.shared.embedder {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            e.forget(&refs)?;
            scrubbed &= e.checkpoint()?;
        }
        if let Some((x, _)) = &self.shared.extractor {
            for t in &turns {
                x.forget(t)?;
            }
            scrubbed &= x.checkpoint()?;
        }
        Ok(ForgetReport { rounds, notes, scrubbed })
    }

    /// Loads a JSONL dump made by [`export`](Memory::export) with [`ExportFormat::Jsonl`] into
    /// the store at `path`, creating it with the dump's pins if it does not exist. An existing
    /// store must have the same pins, and the dump's users must have no records there yet.
    /// Everything is checked before anything is written.
    pub fn import(path: impl AsRef<Path>, dump: &str, config: Config) -> Result<crate::export::ImportReport> {
        config.validate()?;
        crate::export::import(&Place::File(path.as_ref().to_owned()), dump, &config)
    }

    /// [`import`](Memory::import) into a store in a database server's database (created there
    /// with the dump's pins if it has none).
    pub fn import_on(
        backend: std::sync::Arc<dyn crate::backend::Backend>,
        dump: &str,
        config: Config,
    ) -> Result<crate::export::ImportReport> {
        config.validate()?;
        crate::export::import(&Place::Remote(backend), dump, &config)
    }

    /// Checks a JSONL dump as [`import`](Memory::import) does before it touches a file (every
    /// line parsed, every record and reference checked), and writes nothing.
    ///
    /// ```
    /// assert!(matches!(mnemon::Memory::check_dump("{}"), Err(mnemon::Error::Import { line: 1, .. })));
    /// ```
    pub fn check_dump(dump: &str) -> Result<()> {
        crate::export::check_dump(dump)
    }
}

impl From<RoundRow> for StoredRound {
    fn from(r: RoundRow) -> StoredRound {
        StoredRound { key: r.key, session: r.session, ts: r.ts, turns: r.turns, agent: r.agent }
    }
}

/// Everything a cache may hold of `view`'s records: each round's turns (the extraction cache's
/// key) and every text embedded for a round, a part, a fact or a note.
fn cached_inputs(store: &Store, view: View<'_>) -> Result<(Vec<Vec<Turn>>, Vec<String>)> {
    let rounds = store.all_rounds(view)?;
    let mut texts = Vec::new();
    for r in &rounds {
        texts.push(r.text.clone());
        texts.extend(crate::parts::parts(&r.turns));
    }
    texts.extend(store.all_facts(view)?.iter().map(|f| crate::facts::embed_text_of(&f.raw, &f.content)));
    texts.extend(
        store.all_notes(view)?.iter().map(|n| crate::notes::embed_text(n.title.as_deref(), &n.content)),
    );
    Ok((rounds.into_iter().map(|r| r.turns).collect(), texts))
}
