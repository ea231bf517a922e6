//! The facade's writes: each calls one function of the write path (`write`) or of the facts
//! path (`facts`), and tells an error which store it happened in.

use super::Memory;
use crate::config::Condense;
use crate::error::Result;
use crate::facts::{self, ConsolidateReport, Reextract, ReextractReport};
use crate::model::note::{NewNote, Note, NoteUpdate};
use crate::model::round::Message;
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::write::{self, AddReport, CondenseReport, Deleted, ForgetReport, RememberReport, TransferReport};

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
        let (report, user) = write::add(&self.shared.engine, messages, scope.into())
            .map_err(|e| self.shared.engine.located_write(e))?;
        if !report.stored.is_empty() {
            self.queued(Some(user)).map_err(|e| self.shared.engine.located_write(e))?;
        }
        Ok(report)
    }

    /// Stores notes in `scope`, in one transaction. Each is validated first (a bad one fails the
    /// whole call, naming `memories[i].field`); a note whose normalized content equals a note on
    /// read paths that is at least as widely visible (the scope's own, or the user's shared
    /// ones), or one earlier in the call, is not stored again: its entry names the note that
    /// holds it. Keys are derived from the scope, `ts` and content. On any error the store is left
    /// exactly as it was.
    ///
    /// Concurrent calls share commits: a call that finds the store busy is written, in arrival
    /// order, by the call that takes the store next, each in its own savepoint, so one failing
    /// call never undoes another.
    ///
    /// ```
    /// use mnemon::{Memory, Scope};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{NewNote, NoteKind};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let report = memory.remember(&[
    ///     NewNote::new("The user is vegetarian.", "2026-03-01T10:00:00").tags(["food"]),
    ///     NewNote::new("Ran 10 km in Monsanto.", "2026-03-01T18:00:00").kind(NoteKind::Episodic),
    ///     NewNote::new("the user is VEGETARIAN", "2026-03-02T10:00:00"),
    /// ], Scope::user("ana").agent("coach"))?;
    /// assert!(report.notes[0].stored && report.notes[1].stored && !report.notes[2].stored);
    /// assert_eq!(report.notes[2].key, report.notes[0].key);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn remember<'s>(&self, notes: &[NewNote], scope: impl Into<Scope<'s>>) -> Result<RememberReport> {
        let engine = &self.shared.engine;
        self.shared.commits.remember(engine, notes, scope.into()).map_err(|e| engine.located_write(e))
    }

    /// Changes the given fields of the note `key` that `scope` sees, stamped `ts` (the caller's
    /// time of the change, not before the note's own). New content or a new title re-embeds the
    /// note; new content re-counts its tokens. The key stays. Returns the note as stored.
    ///
    /// ```
    /// use mnemon::{Memory, Timestamp};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{NewNote, NoteUpdate};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let key = memory.remember(&[NewNote::new("Lives in Porto.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// let change = NoteUpdate { content: Some("Lives in Lisbon.".into()), ..Default::default() };
    /// let note = memory.update(&key, &change, &Timestamp::parse("2026-02-01")?, "ana")?;
    /// assert_eq!((note.key, note.content.as_str(), note.updated.as_str()), (key, "Lives in Lisbon.", "2026-02-01"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn update<'s>(
        &self,
        key: &str,
        change: &NoteUpdate,
        ts: &Timestamp,
        scope: impl Into<Scope<'s>>,
    ) -> Result<Note> {
        write::update(&self.shared.engine, key, change, ts, scope.into())
            .map_err(|e| self.shared.engine.located_write(e))
    }

    /// Removes the record `key` that `scope` sees, with everything that holds its content: its
    /// row, vector and words, a round's facts and queue entry, the values that decisions about
    /// it quote, and its entries in the embedder's and the extractor's caches. The decision log
    /// keeps that it was deleted (its key, never its content). A condensed note's summary is
    /// rewritten without it (needs the embedder); deleting a summary brings its originals back.
    ///
    /// ```
    /// use mnemon::{Error, Memory};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let key = memory.remember(&[NewNote::new("Door code 4411.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// assert_eq!(memory.delete(&key, "ana")?.record, "note");
    /// assert!(matches!(memory.get(&key, "ana"), Err(Error::NotFound { .. })));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn delete<'s>(&self, key: &str, scope: impl Into<Scope<'s>>) -> Result<Deleted> {
        let engine = &self.shared.engine;
        let (deleted, turns) =
            write::delete(engine, key, scope.into()).map_err(|e| engine.located_write(e))?;
        if let (Some((x, _)), Some(turns)) = (&self.shared.worker.extractor, &turns) {
            x.forget(turns).map_err(|e| engine.located_write(e))?;
        }
        Ok(deleted)
    }

    /// Condenses old episodic notes (see [`Condense`]): per agent (or the shared notes), while
    /// more than `keep` episodic notes are on read paths, the oldest (at most `batch`, at least 2)
    /// become one semantic note of one line each (its date and first sentence), stamped with the
    /// newest original's `ts`; the originals are kept, linked to it and hidden. With an agent in
    /// `scope` only that agent's notes are condensed; without, the shared notes and every
    /// agent's. Deterministic and extractive: no model but the embedder.
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::config::{Condense, Config};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{ListNotes, NewNote, NoteKind};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let days: Vec<NewNote> = (1..=6)
    ///     .map(|d| NewNote::new(format!("Walked {d} km. It rained."), format!("2026-01-0{d}")).kind(NoteKind::Episodic))
    ///     .collect();
    /// memory.remember(&days, "ana")?;
    /// let report = memory.condense(Condense { keep: 2, batch: 10 }, "ana")?;
    /// assert_eq!(report.condensed, 4);
    /// let page = memory.list(&ListNotes::default(), "ana")?;
    /// assert_eq!(page.notes.len(), 3);
    /// assert!(page.notes.iter().any(|n| n.content.contains("- 2026-01-01: Walked 1 km.")));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn condense<'s>(&self, condense: Condense, scope: impl Into<Scope<'s>>) -> Result<CondenseReport> {
        write::condense(&self.shared.engine, scope.into(), condense)
    }

    /// Copies the notes `keys` that `scope` sees into `target` (another store), under the same
    /// user, agent and key, with their stored vectors: nothing is embedded again, so both stores
    /// must have been built with the same embedder (and note rules), else
    /// [`Error::PinMismatch`] names each differing pin and nothing is written. A note the target
    /// already holds is reported `present` and left alone. Links made by condensing are not
    /// copied: a copied summary is a plain semantic note, a copied original a visible one. One
    /// transaction in the target; a `note.copied` decision for each note written.
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// use mnemon::records::Record;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let project = Memory::builder(dir.path().join("project.db")).embedder(HashingEmbedder::default()).open()?;
    /// let global = Memory::builder(dir.path().join("global.db")).embedder(HashingEmbedder::default()).open()?;
    /// let key = project.remember(&[NewNote::new("Prefers tabs.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// let report = project.move_to(&[&key], &global, "ana")?;
    /// assert_eq!((report.copied.len(), report.removed.len()), (1, 1));
    /// assert!(matches!(global.get(&key, "ana")?, Record::Note(_)));
    /// assert!(project.get(&key, "ana").is_err());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn copy_to<'s>(
        &self,
        keys: &[&str],
        target: &Memory,
        scope: impl Into<Scope<'s>>,
    ) -> Result<TransferReport> {
        write::transfer(&self.shared.engine, &target.shared.engine, keys, scope.into(), false)
    }

    /// [`copy_to`](Memory::copy_to), then removes the notes from this store (as
    /// [`delete`](Memory::delete) would, logged `note.moved`), once the target has committed:
    /// a crash in between leaves the note in both stores, never in neither.
    pub fn move_to<'s>(
        &self,
        keys: &[&str],
        target: &Memory,
        scope: impl Into<Scope<'s>>,
    ) -> Result<TransferReport> {
        write::transfer(&self.shared.engine, &target.shared.engine, keys, scope.into(), true)
    }

    /// The conflict pass over every fact of the user, superseded ones included, in the order they
    /// were stored (facts only meet facts of the same agent): each fact's `subject|predicate` key
    /// is computed again under the current lexicons and every supersession decided again under
    /// the current conflict rules, so after a change of either (or a
    /// [`reextract`](Memory::reextract)) the facts are settled as the current rules would have
    /// settled them. Then salience decay if [`Config::decay`] is set,
    /// then condensing old episodic notes if [`Config::condense`] is set (see
    /// [`condense`](Memory::condense)). With an agent in `scope`, only that agent's records are
    /// consolidated; without, every agent's and the shared ones. On a store built by `add` the
    /// pass changes nothing; running `consolidate` twice equals running it once. Every change is
    /// logged at the user's logical now. Without condensing it needs no model: a store opened
    /// [`stored`](crate::Builder::stored) consolidates too.
    pub fn consolidate<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<ConsolidateReport> {
        let scope = scope.into();
        let engine = &self.shared.engine;
        let mut report =
            facts::consolidate::consolidate(engine, scope).map_err(|e| engine.located_write(e))?;
        if let Some(condense) = engine.config.condense {
            report.condensed = self.condense(condense, scope)?.condensed;
        }
        Ok(report)
    }

    /// Sends rounds through this handle's extractor again (through its cache, so unchanged
    /// rounds cost nothing): the rounds of the user of `scope` (of every user with `None`; a
    /// scope with an agent is refused) that `which` selects. In one transaction per user, each selected round's facts are removed (each
    /// logged as `fact.replaced`, with the extractor that made it), the facts they had
    /// superseded become active again (`fact.restored`), and the round is queued
    /// (`round.requeued`). The queue is then drained as after [`add`](Memory::add): by the
    /// worker (wait with [`flush`](Memory::flush)), or here without one. Queued rounds are
    /// left as they are. Run [`consolidate`](Memory::consolidate) afterwards to settle every
    /// fact of the user again, old and new, in the order they were stored.
    ///
    /// Errors: [`Error::NoExtractor`] without an extractor; [`Error::InvalidInput`] naming
    /// `rounds[i]` for a key the user has no round under (nothing is changed).
    pub fn reextract(&self, which: Reextract<'_>, scope: Option<Scope<'_>>) -> Result<ReextractReport> {
        let user_id = scope.map(|s| s.whole_user("reextract")).transpose()?;
        let current = self.shared.worker.extractor.as_ref().map(|(_, id)| *id);
        let report = facts::upgrade::reextract(&self.shared.engine, current, user_id, which)?;
        if report.rounds > 0 {
            self.queued(None)?;
        }
        Ok(report)
    }

    /// Forgets the user of `scope` (a scope with an agent is refused): removes every record of the user (rounds, facts, notes, their vectors,
    /// words and parts, the queue and the decision log) and the user's name, then every trace
    /// the caches hold (the extraction cache's model outputs for the user's rounds, the vector
    /// cache's entries for their texts), and checkpoints the store's and the caches' logs so
    /// that no deleted byte is left in a WAL (deleted bytes in the files themselves are zeroed:
    /// `secure_delete`). The user's row stays under a name no caller can give, so its id is
    /// never reused; nothing records what it was. Unknown users are a no-op.
    ///
    /// The caches forget before the store's rows go: when a cache step fails, the call fails
    /// with the store untouched, and calling it again completes the forget.
    ///
    /// [`ForgetReport::scrubbed`] is false when another connection's open read kept a log from
    /// being emptied; that log is emptied at the next checkpoint (the next forget, or the last
    /// close of the file). On PostgreSQL it is always false: deleted rows stay in the tables'
    /// free space and the server's write-ahead log until its operator runs `VACUUM FULL` and the
    /// log is recycled, which a library call cannot do without locking every user out.
    pub fn forget_user<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<ForgetReport> {
        let user_id = scope.into().whole_user("forget_user")?;
        let engine = &self.shared.engine;
        let located = |e| engine.located_write(e);
        let extractor = self.shared.worker.extractor.as_ref().map(|(x, _)| x);
        write::forget_user(engine, user_id, |turns| {
            let Some(x) = extractor else { return Ok(true) };
            for t in turns {
                x.forget(t)?;
            }
            x.checkpoint()
        })
        .map_err(located)
    }
}
