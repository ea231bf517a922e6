//! The facade's reads: each calls one function of the read path (`read`), the facts path or the
//! exports.

use super::Memory;
use crate::error::Result;
use crate::export::ExportFormat;
use crate::facts::{self, ExtractorInfo};
use crate::model::decision::DecisionKind;
use crate::model::scope::Scope;
use crate::model::time::Timestamp;
use crate::read::{
    self, Activity, Context, Counts, Decision, DecisionPage, Fact, ListNotes, NotePage, Paging, Query,
    Recall, Record, Search, SearchResults, StoredRound, TimelinePage, UserSummary,
};

impl Memory {
    /// The `top_k` rounds `scope` sees that best answer `query`, best first.
    ///
    /// ```
    /// use mnemon::{Memory, Message, Query, Timestamp};
    /// use mnemon::embed::HashingEmbedder;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I bought running shoes.", "2023-05-18T10:00:00"),
    ///              Message::user("I visited my aunt.", "2023-01-02T10:00:00")], "bob")?;
    /// let recall = memory.recall(Query::new("What did I buy in the past week?").date(Timestamp::parse("2023-05-20")?), "bob")?;
    /// assert_eq!(recall.window, Some(["2023-05-13".to_string(), "2023-05-20".to_string()]));
    /// assert!(recall.rounds[0].time_match);
    /// assert!(recall.rounds[0].score > recall.rounds[1].score);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    ///
    /// The question is embedded without its `[Current date: …]` prefix; the date (the query's,
    /// else the prefix's, else the user's logical now) anchors its time window. An unknown user
    /// has no rounds. Notes are ranked by [`search`](Memory::search) and in
    /// [`get_context`](Memory::get_context), never here: with or without notes in the store,
    /// recall returns the same rounds.
    pub fn recall<'q, 's>(&self, query: impl Into<Query<'q>>, scope: impl Into<Scope<'s>>) -> Result<Recall> {
        read::recall(&self.shared.engine, &query.into(), scope.into())
    }

    /// The notes `scope` sees that best match `search.text` among those its filter keeps, best
    /// first, each with a relevance score in `0..=1` and its label; hits below
    /// `search.min_score` are dropped. Notes hidden by condensing are on no read path (the
    /// filter's `include_condensed` applies to [`list`](Memory::list) only).
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::context::Relevance;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{Filter, NewNote, Search};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.remember(&[
    ///     NewNote::new("The user is vegetarian.", "2026-03-01T10:00:00").tags(["food"]),
    ///     NewNote::new("The user's sister lives in Oslo.", "2026-03-02T10:00:00").tags(["family"]),
    /// ], "ana")?;
    /// let found = memory.search(&Search::new("is the user vegetarian?"), "ana")?;
    /// assert!(found.hits[0].note.content.contains("vegetarian"));
    /// assert_eq!(found.hits[0].relevance, Relevance::High);
    /// let family = Filter { tags_any: vec!["Family".into()], ..Filter::default() };
    /// let found = memory.search(&Search::new("is the user vegetarian?").filter(family), "ana")?;
    /// assert_eq!(found.hits.len(), 1);
    /// assert!(found.hits[0].note.content.contains("Oslo"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn search<'s>(&self, search: &Search<'_>, scope: impl Into<Scope<'s>>) -> Result<SearchResults> {
        read::search(&self.shared.engine, search, scope.into())
    }

    /// Ranks everything `scope` sees (rounds with their facts, and notes) for the question and
    /// each of its [angles](Query::angles), merges the records (each once, at its best score),
    /// and renders them best first within the token budget (the query's, else
    /// [`Config::context_budget`]): notes first, then rounds, oldest first. The best record is
    /// always kept; `truncated` says whether others were left out. Notes carry their relevance
    /// label.
    ///
    /// ```
    /// use mnemon::{Memory, Message, Query};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("My dog Toby loves the beach.", "2026-03-01T10:00:00")], "ana")?;
    /// memory.remember(&[NewNote::new("The user works as a nurse.", "2026-03-02T09:00:00")], "ana")?;
    /// let angles = ["what is the user's job?"];
    /// let context = memory.get_context(Query::new("what is my dog called?").angles(&angles), "ana")?;
    /// assert!(context.text.contains("Toby") && context.text.contains("nurse"));
    /// assert_eq!((context.rounds.len(), context.notes.len()), (1, 1));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn get_context<'q, 's>(
        &self,
        query: impl Into<Query<'q>>,
        scope: impl Into<Scope<'s>>,
    ) -> Result<Context> {
        read::get_context(&self.shared.engine, &query.into(), scope.into())
    }

    /// The record with this key that `scope` sees: a note (`n-…`), a round (`<ts>#<hash>`) or a
    /// fact (`<round key>/<n>`, superseded ones included). Anything else is
    /// [`Error::NotFound`].
    ///
    /// ```
    /// use mnemon::{Error, Memory};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// use mnemon::records::Record;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let key = memory.remember(&[NewNote::new("Likes jazz.", "2026-01-01")], "ana")?.notes[0].key.clone();
    /// assert!(matches!(memory.get(&key, "ana")?, Record::Note(n) if n.content == "Likes jazz."));
    /// assert!(matches!(memory.get(&key, "bob"), Err(Error::NotFound { .. })));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn get<'s>(&self, key: &str, scope: impl Into<Scope<'s>>) -> Result<Record> {
        read::get(&self.shared.engine, key, scope.into())
    }

    /// A page of the notes `scope` sees that pass `list.filter`, newest first (by `ts`, then
    /// key); pass [`NotePage::next`] as the next call's cursor.
    ///
    /// ```
    /// use mnemon::Memory;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::{ListNotes, NewNote};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// let notes: Vec<NewNote> = (1..=5).map(|d| NewNote::new(format!("Note {d}"), format!("2026-01-0{d}"))).collect();
    /// memory.remember(&notes, "ana")?;
    /// let first = memory.list(&ListNotes { limit: 2, ..ListNotes::default() }, "ana")?;
    /// assert_eq!(first.notes.iter().map(|n| n.content.as_str()).collect::<Vec<_>>(), ["Note 5", "Note 4"]);
    /// let second = memory.list(&ListNotes { limit: 2, cursor: first.next, ..ListNotes::default() }, "ana")?;
    /// assert_eq!(second.notes[0].content, "Note 3");
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn list<'s>(&self, list: &ListNotes, scope: impl Into<Scope<'s>>) -> Result<NotePage> {
        read::list(&self.shared.engine, list, scope.into())
    }

    /// How many records `scope` sees: notes per kind, condensed notes, rounds and active facts.
    ///
    /// ```
    /// use mnemon::{Memory, Scope};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.remember(&[NewNote::new("Shared.", "2026-01-01")], "ana")?;
    /// memory.remember(&[NewNote::new("Private.", "2026-01-01")], Scope::user("ana").agent("a"))?;
    /// assert_eq!(memory.count(Scope::user("ana").agent("a"))?.notes, 2);
    /// assert_eq!(memory.count(Scope::user("ana").agent("b"))?.notes, 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn count<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Counts> {
        read::count(&self.shared.engine, scope.into())
    }

    /// Every round `scope` sees, oldest first (an unknown user has none).
    pub fn rounds<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<StoredRound>> {
        read::rounds(&self.shared.engine, scope.into())
    }

    /// The active facts `scope` sees, in the order they were stored. Superseded facts are on no
    /// read path; [`all_facts`](Memory::all_facts), the exports and
    /// [`decisions`](Memory::decisions) show them and what replaced them.
    pub fn active_facts<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<Fact>> {
        read::facts(&self.shared.engine, scope.into())
    }

    /// Every fact `scope` sees, superseded ones too (salience 0, with what superseded them in
    /// [`decisions`](Memory::decisions)), in the order they were stored: the record of what was
    /// extracted, for audits and views of a round's whole history.
    pub fn all_facts<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<Fact>> {
        read::every_fact(&self.shared.engine, scope.into())
    }

    /// Every decision `scope` sees, in logical order (an unknown user has none); a page of them,
    /// by kind, is [`decision_page`](Memory::decision_page).
    pub fn decisions<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<Decision>> {
        read::decisions(&self.shared.engine, scope.into())
    }

    /// Every user of the store, by name, with what they hold (rounds, notes, active and
    /// superseded facts) in all and per agent, and their logical now: one grouped read per
    /// table, however many users there are.
    ///
    /// ```
    /// use mnemon::{Memory, Message, Scope};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::notes::NewNote;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// memory.remember(&[NewNote::new("Prefers tea.", "2026-01-03")], Scope::user("eve").agent("tutor"))?;
    /// let users = memory.users()?;
    /// assert_eq!((users[0].user.as_str(), users[0].holds.rounds, users[0].holds.notes), ("eve", 1, 1));
    /// assert_eq!((users[0].agents[0].agent.as_str(), users[0].agents[0].holds.notes), ("tutor", 1));
    /// assert_eq!(users[0].latest.as_deref(), Some("2026-01-03"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn users(&self) -> Result<Vec<UserSummary>> {
        read::users(&self.shared.engine)
    }

    /// A page of the rounds `scope` sees, oldest first, each with every fact extracted from it;
    /// a superseded fact carries the key of the fact that replaced it and the decision (rule,
    /// both values). Pass [`TimelinePage::next`] as the next call's cursor.
    ///
    /// ```
    /// use mnemon::{Memory, Message};
    /// use mnemon::browse::Paging;
    /// use mnemon::embed::HashingEmbedder;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// for d in 1..=3 {
    ///     memory.add(&[Message::user(format!("Day {d}."), format!("2026-01-0{d}T09:00:00"))], "eve")?;
    /// }
    /// let first = memory.timeline(&Paging { limit: 2, cursor: None }, "eve")?;
    /// assert_eq!((first.rounds.len(), first.total, first.offset), (2, 3, 0));
    /// let second = memory.timeline(&Paging { limit: 2, cursor: first.next }, "eve")?;
    /// assert_eq!((second.rounds[0].round.turns[0].content.as_str(), second.offset), ("Day 3.", 2));
    /// assert!(second.next.is_none());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn timeline<'s>(&self, paging: &Paging, scope: impl Into<Scope<'s>>) -> Result<TimelinePage> {
        read::timeline(&self.shared.engine, paging, scope.into())
    }

    /// A page of the decisions `scope` sees whose kind is one of `kinds` (every kind when empty),
    /// in logical order, with how many decisions of each kind there are.
    ///
    /// ```
    /// use mnemon::browse::Paging;
    /// use mnemon::decisions::DecisionKind;
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::{Memory, Message};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let page = memory.decision_page(&[DecisionKind::RoundStored], &Paging::default(), "eve")?;
    /// assert_eq!((page.decisions.len(), page.kinds[&DecisionKind::RoundStored]), (1, 1));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn decision_page<'s>(
        &self,
        kinds: &[DecisionKind],
        paging: &Paging,
        scope: impl Into<Scope<'s>>,
    ) -> Result<DecisionPage> {
        read::decision_page(&self.shared.engine, kinds, paging, scope.into())
    }

    /// What `scope`'s user holds true now: the active facts the user stated, grouped by
    /// relation, each with its value, the day it holds since, its round and how many earlier
    /// facts it replaced. Built from the stored facts and their supersessions; needs no model.
    ///
    /// ```
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::extract::ScriptedExtractor;
    /// use mnemon::{Memory, Message};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("profile.db");
    /// let fact = |city: &str, said: &str| format!(r#"[{{"content": "The user lives in {city}.", "raw": "user: {said}",
    ///     "when": null, "subject": "user", "predicate": "lives in", "object": "{city}", "salience": 1.0}}]"#);
    /// let script = format!(r#"{{"I live in Porto.": {}, "I moved to Lisbon.": {}}}"#,
    ///     fact("Porto", "I live in Porto"), fact("Lisbon", "I moved to Lisbon"));
    /// let memory = Memory::builder(&path)
    ///     .embedder(HashingEmbedder::default())
    ///     .extractor(ScriptedExtractor::from_json("profile", &script)?)
    ///     .open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-10T09:00:00")], "maya")?;
    /// memory.add(&[Message::user("I moved to Lisbon.", "2026-06-20T09:00:00")], "maya")?;
    /// memory.flush()?;
    /// let profile = memory.profile("maya")?;
    /// assert_eq!(profile.to_markdown(), "- lives_in: The user lives in Lisbon. (since 2026-06-20, changed once)\n");
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn profile<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<crate::facts::Profile> {
        read::profile(&self.shared.engine, scope.into())
    }

    /// What `scope` stored per month (rounds, notes, facts by their round's month, supersessions
    /// by when they were decided), every month from the first to the last.
    pub fn activity<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Activity> {
        read::activity(&self.shared.engine, scope.into())
    }

    /// Every extractor the store knows, oldest first, with the rounds and facts of the user of
    /// `scope` it produced (of every user with `None`; a scope with an agent is refused), and
    /// whether it is this handle's. Needs no model.
    pub fn extractors(&self, scope: Option<Scope<'_>>) -> Result<Vec<ExtractorInfo>> {
        let user = scope.map(|s| s.whole_user("extractors")).transpose()?;
        let current = self.shared.worker.extractor.as_ref().map(|(_, id)| *id);
        facts::upgrade::extractors(&self.shared.engine, current, user)
    }

    /// Everything `scope` sees, in the given format: notes, then rounds with their facts, then
    /// (text and dump) every fact record and the decision log. Deterministic bytes.
    ///
    /// ```
    /// use mnemon::{Memory, Message};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::export::ExportFormat;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-02T09:00:00")], "eve")?;
    /// let md = memory.export(ExportFormat::Markdown, "eve")?;
    /// assert!(md.contains("> **user:** I live in Porto."));
    /// let dump = memory.export(ExportFormat::Jsonl, "eve")?;
    /// let copy = dir.path().join("copy.db");
    /// Memory::builder(&copy).import(&dump)?;
    /// assert_eq!(Memory::builder(&copy).stored().open()?.export(ExportFormat::Markdown, "eve")?, md);
    /// assert_eq!(memory.forget_user("eve")?.rounds, 1);
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn export<'s>(&self, format: ExportFormat, scope: impl Into<Scope<'s>>) -> Result<String> {
        let engine = &self.shared.engine;
        crate::export::export(engine, scope.into(), format, None).map_err(|e| engine.located(e))
    }

    /// The export of what `scope` held at `as_of` (the conversation's time, inclusive): the
    /// rounds and notes dated at or before it, and the facts as they stood then (a fact
    /// superseded later shows as current), with the decisions logged by then. Markdown and text
    /// only: a dump ([`ExportFormat::Jsonl`]) is always the whole store.
    ///
    /// ```
    /// use mnemon::{Memory, Message, Timestamp};
    /// use mnemon::embed::HashingEmbedder;
    /// use mnemon::export::ExportFormat;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::builder(dir.path().join("m.db")).embedder(HashingEmbedder::default()).open()?;
    /// memory.add(&[Message::user("I live in Porto.", "2026-01-01T10:00:00")], "eve")?;
    /// memory.add(&[Message::user("I moved to Lisbon.", "2026-03-01T10:00:00")], "eve")?;
    /// let before = Timestamp::parse("2026-02-01T00:00:00")?;
    /// let then = memory.export_as_of(ExportFormat::Markdown, &before, "eve")?;
    /// assert!(then.contains("Porto") && !then.contains("Lisbon"));
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn export_as_of<'s>(
        &self,
        format: ExportFormat,
        as_of: &Timestamp,
        scope: impl Into<Scope<'s>>,
    ) -> Result<String> {
        let engine = &self.shared.engine;
        crate::export::export(engine, scope.into(), format, Some(as_of)).map_err(|e| engine.located(e))
    }

    /// The `k` nearest rounds by the database's own KNN over the stored vectors (sqlite-vec's;
    /// pgvector's, approximate through HNSW for an approximate backend), as `(key, cosine)`,
    /// nearest first (no time bonus). A cross-check of the in-memory index and a benchmark
    /// baseline; [`recall`](Memory::recall) is the read path.
    #[doc(hidden)]
    pub fn nearest_in_database<'s>(
        &self,
        question: &str,
        k: usize,
        scope: impl Into<Scope<'s>>,
    ) -> Result<Vec<(String, f32)>> {
        let user = scope.into().whole_user("nearest_in_database")?;
        read::nearest_in_database(&self.shared.engine, question, user, k)
    }

    /// Checks a JSONL dump as [`Builder::import`](super::Builder::import) does before it touches
    /// a store (every line parsed, every record and reference checked), and writes nothing.
    ///
    /// ```
    /// assert!(matches!(mnemon::Memory::check_dump("{}"), Err(mnemon::Error::Import { line: 1, .. })));
    /// ```
    pub fn check_dump(dump: &str) -> Result<()> {
        crate::export::check_dump(dump)
    }
}
