//! Notes (direct memories) and single records: get, update, delete, list, count and condense
//! (remembering is in `remember`). Each write is one transaction and a decision in the log.

use super::*;
use crate::config::Condense;
use crate::notes::{
    check_content, check_importance, check_metadata, check_tags, check_title, embed_text, note_key, rename,
    word_text, Checked, NoteKind, NoteUpdate,
};
use crate::store::{NoteMeta, NoteRow};

/// Most notes one [`Memory::remember`] call takes.
pub const MAX_NOTES_PER_CALL: usize = 1000;

impl From<NoteRow> for Note {
    fn from(n: NoteRow) -> Note {
        Note {
            key: n.key,
            agent: n.agent,
            kind: n.kind,
            title: n.title,
            content: n.content,
            tags: n.tags,
            // The store only ever writes a canonical object here.
            metadata: serde_json::from_str(&n.metadata).unwrap_or_else(|_| serde_json::json!({})),
            importance: n.importance,
            ts: n.ts,
            updated: n.updated,
            tokens: usize::try_from(n.tokens).unwrap_or(0),
            condensed_into: n.condensed_into,
            condenses: n.condenses.map(|c| c.split(' ').map(str::to_owned).collect()).unwrap_or_default(),
        }
    }
}

pub(super) fn meta_of(n: &NoteRow) -> NoteMeta {
    NoteMeta {
        id: n.id,
        day: n.day,
        importance: n.importance,
        kind: n.kind,
        tags: n.tags.iter().map(|t| t.to_lowercase()).collect(),
        ts_unix: n.ts_unix,
        tokens: n.tokens,
        words: word_text(n.title.as_deref(), &n.content, &n.tags),
    }
}

/// A listing cursor: the `ts_unix` and key of the last note of a page.
fn parse_cursor(cursor: &str) -> Result<(i64, &str)> {
    cursor
        .split_once(':')
        .and_then(|(t, k)| Some((t.parse().ok()?, k)).filter(|(_, k): &(i64, &str)| k.starts_with("n-")))
        .ok_or_else(|| Error::input("cursor", "is not a cursor from a previous page"))
}

/// What [`Memory::condense`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CondenseReport {
    /// Episodic notes hidden behind a condensed note.
    pub condensed: usize,
    /// The semantic notes made, in the order they were made.
    pub notes: Vec<String>,
}

/// What [`Memory::copy_to`] and [`Memory::move_to`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransferReport {
    /// Notes written into the target store, in the order given.
    pub copied: Vec<String>,
    /// Notes the target store already held (same key), left as they were there.
    pub present: Vec<String>,
    /// Notes removed from this store (a move).
    pub removed: Vec<String>,
}

impl Memory {
    /// The record with this key that `scope` sees: a note (`n-…`), a round (`<ts>#<hash>`) or a
    /// fact (`<round key>/<n>`, superseded ones included). Anything else is
    /// [`Error::NotFound`].
    ///
    /// ```
    /// use mnemon::{Config, Error, HashingEmbedder, Memory, NewNote, Record};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// let key = memory.remember(&[NewNote::new("Likes jazz.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// assert!(matches!(memory.get(&key, "ana")?, Record::Note(n) if n.content == "Likes jazz."));
    /// assert!(matches!(memory.get(&key, "bob"), Err(Error::NotFound { .. })));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn get<'s>(&self, key: &str, scope: impl Into<Scope<'s>>) -> Result<Record> {
        let scope = scope.into();
        check_scope(scope)?;
        let store = self.shared.read()?;
        let not_found = || Error::NotFound { key: key.to_owned() };
        let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
        let record = if key.starts_with("n-") {
            store.note_by_key(view, key)?.map(|n| Record::Note(n.into()))
        } else if key.contains('/') {
            store.fact_by_key(view, key)?.map(|f| Record::Fact(f.into()))
        } else {
            store.round_by_key(view, key)?.map(|r| Record::Round(r.into()))
        };
        record.ok_or_else(not_found)
    }

    /// Changes the given fields of the note `key` that `scope` sees, stamped `ts` (the caller's
    /// time of the change, not before the note's own). New content or a new title re-embeds the
    /// note; new content re-counts its tokens. The key stays. Returns the note as stored.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, NewNote, NoteUpdate};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// let key = memory.remember(&[NewNote::new("Lives in Porto.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// let change = NoteUpdate { content: Some("Lives in Lisbon.".into()), ..Default::default() };
    /// let note = memory.update(&key, &change, "2026-02-01", "ana")?;
    /// assert_eq!((note.key, note.content.as_str(), note.updated.as_str()), (key, "Lives in Lisbon.", "2026-02-01"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn update<'s>(
        &self,
        key: &str,
        change: &NoteUpdate,
        ts: &str,
        scope: impl Into<Scope<'s>>,
    ) -> Result<Note> {
        self.update_scoped(key, change, ts, scope.into()).map_err(|e| self.shared.located_write(e))
    }

    fn update_scoped(&self, key: &str, change: &NoteUpdate, ts: &str, scope: Scope<'_>) -> Result<Note> {
        check_scope(scope)?;
        if change.is_empty() {
            return Err(Error::input("update", "changes no field"));
        }
        if let Some(c) = &change.content {
            check_content(c, "content")?;
        }
        if let Some(Some(t)) = &change.title {
            check_title(t, "title")?;
        }
        let tags = change.tags.as_deref().map(|t| check_tags(t, "tags")).transpose()?;
        let metadata = change.metadata.as_ref().map(|m| check_metadata(Some(m), "metadata")).transpose()?;
        let importance = change.importance.map(|i| check_importance(Some(i), "importance")).transpose()?;
        let ts = Timestamp::parse(ts).map_err(|e| rename(e, "ts"))?;
        let reembed = change.content.is_some() || change.title.is_some();
        let embedder = if reembed { Some(self.shared.embedder("update")?) } else { None };

        let mut store = self.shared.lock_store();
        let not_found = || Error::NotFound { key: key.to_owned() };
        let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
        let dim = store.pins.dim()?;
        // Read, embed and write under the write lock: the row cannot change in between.
        let tx = store.begin_for(&[scope.user])?;
        let old = write::note_by_key(&tx, view.user, view.agent, key)?.ok_or_else(not_found)?;
        if ts.unix_seconds() < old.ts_unix {
            return Err(Error::input("ts", format!("is before the note's own ts {}", old.ts)));
        }
        let mut new = old.clone();
        if let Some(c) = &change.content {
            new.content = c.clone();
            new.tokens = render::count_tokens(c) as i64;
            new.norm_key = normalized_key(c);
        }
        if let Some(t) = &change.title {
            new.title = t.clone().filter(|t| !t.trim().is_empty());
        }
        new.tags = tags.unwrap_or(new.tags);
        new.metadata = metadata.unwrap_or(new.metadata);
        new.kind = change.kind.unwrap_or(new.kind);
        new.importance = importance.unwrap_or(new.importance);
        new.updated = ts.raw().to_owned();
        new.updated_unix = ts.unix_seconds();
        let vector = match embedder {
            Some(e) => Some(embed_one(e, dim, &embed_text(new.title.as_deref(), &new.content))?),
            None => None,
        };
        write::update_note(&tx, view.user, &old, &new, vector.as_deref())?;
        let detail = serde_json::json!({ "fields": change.fields() }).to_string();
        write::log(&tx, view.user, old.agent.as_deref(), &ts.sortable(), "note.updated", key, None, &detail)?;
        write::touch_user(&tx, view.user, Some((ts.raw(), ts.unix_seconds())))?;
        tx.commit()?;
        drop(store);
        self.shared.drop_views(view.user);
        Ok(new.into())
    }

    /// Removes the record `key` that `scope` sees, with everything that holds its content: its
    /// row, vector and words, a round's facts and queue entry, the values that decisions about
    /// it quote, and its entries in the embedder's and the extractor's caches. The decision log
    /// keeps that it was deleted (its key, never its content). A condensed note's summary is
    /// rewritten without it (needs the embedder); deleting a summary brings its originals back.
    ///
    /// ```
    /// use mnemon::{Config, Error, HashingEmbedder, Memory, NewNote};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// let key = memory.remember(&[NewNote::new("Door code 4411.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// assert_eq!(memory.delete(&key, "ana")?.record, "note");
    /// assert!(matches!(memory.get(&key, "ana"), Err(Error::NotFound { .. })));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn delete<'s>(&self, key: &str, scope: impl Into<Scope<'s>>) -> Result<Deleted> {
        self.delete_scoped(key, scope.into()).map_err(|e| self.shared.located_write(e))
    }

    fn delete_scoped(&self, key: &str, scope: Scope<'_>) -> Result<Deleted> {
        check_scope(scope)?;
        let not_found = || Error::NotFound { key: key.to_owned() };
        let mut store = self.shared.lock_store();
        let (view, _) = resolve(&store, scope)?.ok_or_else(not_found)?;
        let at = logical_now(&store, view.user)?;
        let mut evict: Vec<String> = Vec::new();
        let mut evict_turns: Option<Vec<Turn>> = None;
        let deleted;
        if key.starts_with("n-") {
            let dim = store.pins.dim()?;
            let tx = store.begin_for(&[scope.user])?;
            let note = write::note_by_key(&tx, view.user, view.agent, key)?.ok_or_else(not_found)?;
            // A summary losing one of its originals is rebuilt from the rest.
            if let Some(summary) = &note.condensed_into {
                let rebuilt = self.rebuild_summary(&tx, dim, view.user, summary, key)?;
                // The summary's old text quoted the note: its cached vector goes too.
                evict.push(embed_text(rebuilt.old.title.as_deref(), &rebuilt.old.content));
                apply_rebuilt(&tx, view.user, &at, rebuilt)?;
            }
            remove_note(&tx, view.user, &at, &note, "note.deleted")?;
            write::touch_user(&tx, view.user, None)?;
            tx.commit()?;
            evict.push(embed_text(note.title.as_deref(), &note.content));
            deleted = Deleted { key: key.to_owned(), record: "note", facts: Vec::new() };
        } else if key.contains('/') {
            let fact = store.fact_by_key(view, key)?.ok_or_else(not_found)?;
            let tx = store.begin_for(&[scope.user])?;
            write::delete_fact(&tx, fact.id)?;
            write::redact_decisions(&tx, view.user, key)?;
            write::log(&tx, view.user, fact.agent.as_deref(), &at, "fact.deleted", key, None, "{}")?;
            write::touch_user(&tx, view.user, None)?;
            tx.commit()?;
            evict.push(crate::facts::embed_text_of(&fact.raw, &fact.content));
            deleted = Deleted { key: key.to_owned(), record: "fact", facts: Vec::new() };
        } else {
            let round = store.round_by_key(view, key)?.ok_or_else(not_found)?;
            let tx = store.begin_for(&[scope.user])?;
            let removed = write::delete_round(&tx, &round)?;
            write::redact_round_decisions(&tx, view.user, &round.key)?;
            let detail = serde_json::json!({ "facts": removed.len() }).to_string();
            write::log(&tx, view.user, round.agent.as_deref(), &at, "round.deleted", key, None, &detail)?;
            write::touch_user(&tx, view.user, None)?;
            tx.commit()?;
            evict.push(round.text.clone());
            evict.extend(crate::parts::parts(&round.turns));
            evict.extend(removed.iter().map(|f| crate::facts::embed_text_of(&f.raw, &f.content)));
            let removed: Vec<String> = removed.into_iter().map(|f| f.key).collect();
            evict_turns = Some(round.turns.clone());
            deleted = Deleted { key: key.to_owned(), record: "round", facts: removed };
        }
        drop(store);
        self.shared.drop_views(view.user);
        if let Some(e) = &self.shared.embedder {
            let refs: Vec<&str> = evict.iter().map(String::as_str).collect();
            e.forget(&refs)?;
        }
        if let (Some((x, _)), Some(turns)) = (&self.shared.extractor, &evict_turns) {
            x.forget(turns)?;
        }
        Ok(deleted)
    }

    /// A page of the notes `scope` sees that pass `list.filter`, newest first (by `ts`, then
    /// key); pass [`Page::next`] as the next call's cursor.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, List, Memory, NewNote};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// let notes: Vec<NewNote> = (1..=5).map(|d| NewNote::new(format!("Note {d}"), format!("2026-01-0{d}"))).collect();
    /// memory.remember(&notes, "ana")?;
    /// let first = memory.list(&List { limit: 2, ..List::default() }, "ana")?;
    /// assert_eq!(first.notes.iter().map(|n| n.content.as_str()).collect::<Vec<_>>(), ["Note 5", "Note 4"]);
    /// let second = memory.list(&List { limit: 2, cursor: first.next, ..List::default() }, "ana")?;
    /// assert_eq!(second.notes[0].content, "Note 3");
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn list<'s>(&self, list: &List, scope: impl Into<Scope<'s>>) -> Result<Page> {
        let scope = scope.into();
        check_scope(scope)?;
        if !(1..=1000).contains(&list.limit) {
            return Err(Error::input("limit", "must be in 1..=1000"));
        }
        let filter = list.filter.resolve("filter")?;
        let cursor = list.cursor.as_deref().map(parse_cursor).transpose()?;
        self.reading(scope, |store, view| {
            let mut rows = store.notes_page(view, &filter, cursor, list.limit + 1)?;
            let next = if rows.len() > list.limit {
                rows.truncate(list.limit);
                rows.last().map(|n| format!("{}:{}", n.ts_unix, n.key))
            } else {
                None
            };
            Ok(Page { notes: rows.into_iter().map(Note::from).collect(), next })
        })
    }

    /// How many records `scope` sees: notes per kind, condensed notes, rounds and active facts.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, NewNote, Scope};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.remember(&[NewNote::new("Shared.", "2026-01-01")], "ana")?;
    /// memory.remember(&[NewNote::new("Private.", "2026-01-01")], Scope::user("ana").agent("a"))?;
    /// assert_eq!(memory.count(Scope::user("ana").agent("a"))?.notes, 2);
    /// assert_eq!(memory.count(Scope::user("ana").agent("b"))?.notes, 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn count<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Counts> {
        let scope = scope.into();
        check_scope(scope)?;
        let store = self.shared.read()?;
        let mut counts = Counts {
            kinds: NoteKind::ALL.iter().map(|k| (k.as_str().to_owned(), 0)).collect(),
            ..Counts::default()
        };
        let Some((view, _)) = resolve(&store, scope)? else {
            return Ok(counts);
        };
        let (kinds, condensed) = store.note_counts(view)?;
        for (kind, n) in kinds {
            counts.kinds.insert(kind.as_str().to_owned(), n);
            counts.notes += n;
        }
        counts.condensed = condensed;
        (counts.rounds, counts.facts) = store.record_counts(view)?;
        Ok(counts)
    }

    /// Condenses old episodic notes (see [`Condense`]): per agent (or the shared notes), while
    /// more than `keep` episodic notes are on read paths, the oldest (at most `batch`, at least 2)
    /// become one semantic note of one line each (its date and first sentence), stamped with the
    /// newest original's `ts`; the originals are kept, linked to it and hidden. With an agent in
    /// `scope` only that agent's notes are condensed; without, the shared notes and every
    /// agent's. Deterministic and extractive: no model but the embedder.
    ///
    /// ```
    /// use mnemon::{Condense, Config, HashingEmbedder, List, Memory, NewNote, NoteKind};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// let days: Vec<NewNote> = (1..=6)
    ///     .map(|d| NewNote::new(format!("Walked {d} km. It rained."), format!("2026-01-0{d}")).kind(NoteKind::Episodic))
    ///     .collect();
    /// memory.remember(&days, "ana")?;
    /// let report = memory.condense("ana", Condense { keep: 2, batch: 10 })?;
    /// assert_eq!(report.condensed, 4);
    /// let page = memory.list(&List::default(), "ana")?;
    /// assert_eq!(page.notes.len(), 3);
    /// assert!(page.notes.iter().any(|n| n.content.contains("- 2026-01-01: Walked 1 km.")));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn condense<'s>(&self, scope: impl Into<Scope<'s>>, condense: Condense) -> Result<CondenseReport> {
        let scope = scope.into();
        check_scope(scope)?;
        Config { condense: Some(condense), ..Config::default() }.validate()?;
        let embedder = self.shared.embedder("condense")?;
        let mut report = CondenseReport::default();
        let mut store = self.shared.lock_store();
        let Some((view, _)) = resolve(&store, scope)? else {
            return Ok(report);
        };
        let agents = match scope.agent {
            Some(a) => vec![Some(a.to_owned())],
            None => store.note_agents(view.user)?,
        };
        for agent in &agents {
            loop {
                let episodic = store.episodic_notes(view.user, agent.as_deref())?;
                if episodic.len() <= condense.keep {
                    break;
                }
                let n = (episodic.len() - condense.keep).min(condense.batch).max(2);
                let originals = &episodic[..n];
                let summary = summarize(originals);
                let ts = Timestamp::parse(&originals[n - 1].ts)?;
                let vector = embed_one(
                    embedder,
                    store.pins.dim()?,
                    &embed_text(Some(&summary.title), &summary.content),
                )?;
                let tx = store.begin_for(&[scope.user])?;
                let checked = Checked {
                    content: summary.content,
                    title: Some(summary.title),
                    tags: summary.tags,
                    metadata: "{}".to_owned(),
                    kind: NoteKind::Semantic,
                    importance: summary.importance,
                };
                let key =
                    free_key(&tx, view.user, scope.with_agent(agent.as_deref()), &ts, &checked.content)?;
                let row = NoteRow {
                    condenses: Some(originals.iter().map(|o| o.key.as_str()).collect::<Vec<_>>().join(" ")),
                    ..new_row(&key, agent.as_deref(), &checked, &ts)
                };
                write::insert_note(&tx, view.user, &row, &vector)?;
                let at = ts.sortable();
                let detail = serde_json::json!({ "kind": "semantic", "condenses": n }).to_string();
                write::log(&tx, view.user, agent.as_deref(), &at, "note.stored", &key, None, &detail)?;
                for o in originals {
                    write::condense_note(&tx, o.id, &key)?;
                    write::log(
                        &tx,
                        view.user,
                        agent.as_deref(),
                        &at,
                        "note.condensed",
                        &o.key,
                        Some(&key),
                        "{}",
                    )?;
                }
                write::touch_user(&tx, view.user, None)?;
                tx.commit()?;
                report.condensed += n;
                report.notes.push(key);
            }
        }
        drop(store);
        if !report.notes.is_empty() {
            self.shared.drop_views(view.user);
        }
        Ok(report)
    }

    /// The summary `summary` rebuilt from its originals but `without`, with its new vector
    /// (`new: None`: no original is left and the summary goes).
    fn rebuild_summary(
        &self,
        tx: &crate::store::Tx<'_>,
        dim: usize,
        user: i64,
        summary: &str,
        without: &str,
    ) -> Result<Rebuilt> {
        let row = write::note_by_key(tx, user, None, summary)?
            .ok_or_else(|| Error::NotFound { key: summary.to_owned() })?;
        let keys: Vec<&str> =
            row.condenses.as_deref().unwrap_or_default().split(' ').filter(|k| *k != without).collect();
        let mut originals = Vec::new();
        for k in &keys {
            if let Some(o) = write::note_by_key(tx, user, None, k)? {
                originals.push(o);
            }
        }
        if originals.is_empty() {
            return Ok(Rebuilt { old: row, new: None });
        }
        let s = summarize(&originals);
        let vector =
            embed_one(self.shared.embedder("delete")?, dim, &embed_text(Some(&s.title), &s.content))?;
        let mut new = row.clone();
        new.tokens = render::count_tokens(&s.content) as i64;
        new.norm_key = normalized_key(&s.content);
        new.title = Some(s.title);
        new.content = s.content;
        new.tags = s.tags;
        new.importance = s.importance;
        new.condenses = Some(keys.join(" "));
        Ok(Rebuilt { old: row, new: Some((new, vector)) })
    }
}

/// The key of a new note: derived from its scope, time and content, with `-2`, `-3`… when a note
/// whose content changed since holds the plain one.
pub(super) fn free_key(
    tx: &crate::store::Tx<'_>,
    user: i64,
    scope: Scope<'_>,
    ts: &Timestamp,
    content: &str,
) -> Result<String> {
    let mut attempt = 0;
    loop {
        let key = note_key(scope.user, scope.agent, ts, content, attempt);
        if !write::note_key_taken(tx, user, &key)? {
            return Ok(key);
        }
        attempt += 1;
    }
}

/// A new note's row from its checked fields, stated at `ts`.
pub(super) fn new_row(key: &str, agent: Option<&str>, c: &Checked, ts: &Timestamp) -> NoteRow {
    NoteRow {
        id: 0,
        key: key.to_owned(),
        agent: agent.map(str::to_owned),
        kind: c.kind,
        title: c.title.clone(),
        content: c.content.clone(),
        tags: c.tags.clone(),
        metadata: c.metadata.clone(),
        importance: c.importance,
        ts: ts.raw().to_owned(),
        ts_unix: ts.unix_seconds(),
        day: day_number(ts.date()),
        updated: ts.raw().to_owned(),
        updated_unix: ts.unix_seconds(),
        tokens: render::count_tokens(&c.content) as i64,
        norm_key: normalized_key(&c.content),
        condensed_into: None,
        condenses: None,
    }
}

/// Removes a note and logs it as `kind` at `at`; the notes it condensed come back, each logged
/// `note.restored`.
pub(super) fn remove_note(
    tx: &crate::store::Tx<'_>,
    user: i64,
    at: &str,
    note: &NoteRow,
    kind: &str,
) -> Result<()> {
    let agent = note.agent.as_deref();
    write::delete_note(tx, note)?;
    write::log(tx, user, agent, at, kind, &note.key, None, "{}")?;
    for original in write::uncondense(tx, user, &note.key)? {
        write::log(tx, user, agent, at, "note.restored", &original, Some(&note.key), "{}")?;
    }
    Ok(())
}

/// Embeds one text as a document, checking its dimension.
fn embed_one(embedder: &Arc<dyn Embedder>, dim: usize, text: &str) -> Result<Vec<f32>> {
    let v = embedder.embed_documents(&[text])?.pop().unwrap_or_default();
    if v.len() != dim {
        return Err(Error::Embedder(format!("expected a vector of dimension {dim}")));
    }
    Ok(v)
}

/// A summary note rebuilt after one of its originals was deleted.
struct Rebuilt {
    old: NoteRow,
    new: Option<(NoteRow, Vec<f32>)>,
}

fn apply_rebuilt(tx: &crate::store::Tx<'_>, user: i64, at: &str, r: Rebuilt) -> Result<()> {
    let agent = r.old.agent.as_deref();
    match r.new {
        Some((new, vector)) => {
            write::update_note(tx, user, &r.old, &new, Some(&vector))?;
            write::log(tx, user, agent, at, "note.updated", &r.old.key, None, r#"{"fields":["condenses"]}"#)
        }
        None => {
            write::delete_note(tx, &r.old)?;
            write::log(tx, user, agent, at, "note.deleted", &r.old.key, None, r#"{"why":"no original left"}"#)
        }
    }
}

/// An extractive summary of episodic notes.
struct Summary {
    title: String,
    content: String,
    tags: Vec<String>,
    importance: f32,
}

/// One line per original, oldest first (`- <date>: <first sentence>`, repeats dropped), the
/// originals' tags (first spelling, at most 64) and their highest importance.
fn summarize(originals: &[NoteRow]) -> Summary {
    let date =
        |n: &NoteRow| Timestamp::parse(&n.ts).map(|t| t.date().to_string()).unwrap_or_else(|_| n.ts.clone());
    let mut lines: Vec<String> = Vec::new();
    for o in originals {
        let line = format!("- {}: {}", date(o), first_sentence(&o.content, 30));
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let mut tags: Vec<String> = Vec::new();
    for t in originals.iter().flat_map(|o| &o.tags) {
        if tags.len() < crate::notes::MAX_TAGS && !tags.iter().any(|x| x.to_lowercase() == t.to_lowercase()) {
            tags.push(t.clone());
        }
    }
    let (first, last) = (&originals[0], &originals[originals.len() - 1]);
    Summary {
        title: format!("{} episodic memories, {} to {}", originals.len(), date(first), date(last)),
        content: lines.join("\n"),
        tags,
        importance: originals.iter().map(|o| o.importance).fold(0.0, f32::max),
    }
}

/// The first sentence of `text` (up to the first `.`, `!` or `?` followed by a space or the end,
/// or the first line break), at most `words` words (then an ellipsis).
fn first_sentence(text: &str, words: usize) -> String {
    let text = text.trim();
    let mut end = text.len();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) {
            end = i + 1;
            break;
        }
    }
    let sentence = &text[..end];
    let all: Vec<&str> = sentence.split_whitespace().collect();
    if all.len() <= words {
        all.join(" ")
    } else {
        format!("{} …", all[..words].join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences_stop_at_the_first_end_mark_or_line() {
        assert_eq!(first_sentence("Walked 5 km. It rained.", 30), "Walked 5 km.");
        assert_eq!(first_sentence("Version 2.1 shipped today", 30), "Version 2.1 shipped today");
        assert_eq!(first_sentence("line one\nline two", 30), "line one");
        assert_eq!(first_sentence("a b c d e", 3), "a b c …");
    }
}
