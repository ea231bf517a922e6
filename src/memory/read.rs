//! The read path: `recall` (rounds), `search` (notes) and `get_context` (everything, with query
//! angles, in one budget). All three rank through the scope's view with the one scoring
//! function; nothing here calls a model other than the embedder.

use super::view::Among;
use super::*;
use crate::notes::NoteFilter;
use crate::rank::Shape;
use crate::render::{Item, RenderNote};

/// Most query angles one context may merge.
const MAX_ANGLES: usize = 16;

/// A question made ready to rank: its text without a date prefix, its vector, its date.
struct Asked<'q> {
    bare: &'q str,
    vector: Vec<f32>,
    date: Option<Timestamp>,
}

impl Shared {
    /// Splits the date prefix, checks the text, embeds it. `field` names the text in errors.
    fn ask<'q>(&self, text: &'q str, date: Option<&str>, field: &str) -> Result<Asked<'q>> {
        let embedder = self.embedder("recall")?;
        let (prefix_date, bare) = split_date_prefix(text);
        if bare.is_empty() {
            return Err(Error::input(field, "is empty"));
        }
        let explicit = date
            .map(|d| {
                Timestamp::parse(d).map_err(|_| Error::input("date", format!("{d:?} is not a timestamp")))
            })
            .transpose()?;
        Ok(Asked { bare, vector: embedder.embed_query(bare)?, date: explicit.or(prefix_date) })
    }

    /// A ranked score as a relevance in `0..=1`: the fused score over the best a record can get
    /// (first in both lists), or the dense score itself without fusion.
    fn relevance(&self, score: f32) -> f32 {
        let r = match self.config.rrf_k {
            Some(k) => score * (k as f32 + 1.0) / 2.0,
            None => score,
        };
        r.clamp(0.0, 1.0)
    }
}

/// A question ranked in a view: its anchor, its window, and the records best first.
type AskedRanking = (Option<chrono::NaiveDate>, Option<DateWindow>, Vec<rank::Scored>);

impl Shared {
    /// Ranks `asked` in `view` at the snapshot's `version` (see [`Shared::rank`]; `None`: try
    /// again on a newer snapshot).
    #[allow(clippy::too_many_arguments)]
    fn rank_asked(
        &self,
        store: &Store,
        view: View<'_>,
        version: i64,
        asked: &Asked<'_>,
        ranking: &Ranking,
        among: Among<'_>,
        depth: usize,
        last_try: bool,
    ) -> Result<Option<AskedRanking>> {
        let (anchor, window, shape) = asked.shape(store, view.user, &self.config, ranking)?;
        let ranked =
            self.rank(store, view, version, asked.bare, &asked.vector, &shape, among, depth, last_try)?;
        Ok(ranked.map(|scored| (anchor, window, scored)))
    }
}

impl Asked<'_> {
    /// The question's anchor (its date, else the user's logical now), its window and how it
    /// shapes the ranking.
    fn shape(
        &self,
        store: &Store,
        user: i64,
        config: &Config,
        ranking: &Ranking,
    ) -> Result<(Option<chrono::NaiveDate>, Option<DateWindow>, Shape)> {
        let dim = store.pins.dim()?;
        if self.vector.len() != dim {
            return Err(Error::Embedder(format!(
                "query vector has dimension {}, store has {dim}",
                self.vector.len()
            )));
        }
        let anchor = match self.date.as_ref() {
            Some(ts) => Some(ts.date()),
            None => store
                .user_now(user)?
                .and_then(|(raw, unix)| Timestamp::from_parts(raw, unix))
                .map(|t| t.date()),
        };
        let window = anchor.and_then(|a| query_window(self.bare, a));
        let mut shape = Shape::plain(window, config.time_weight);
        shape.importance = ranking.importance;
        if let (Some(r), Some(a)) = (ranking.recency, anchor) {
            shape.recency =
                Some((r.alpha, std::f64::consts::LN_2 / f64::from(r.half_life_days), day_number(a)));
        }
        Ok((anchor, window, shape))
    }
}

fn window_strings(window: Option<DateWindow>) -> Option<[String; 2]> {
    window.map(|w| [w.start.to_string(), w.end.to_string()])
}

impl Memory {
    fn top_k(&self, asked: Option<usize>) -> Result<usize> {
        let k = asked.unwrap_or(self.shared.config.top_k);
        if !(1..=1000).contains(&k) {
            return Err(Error::input("top_k", "must be in 1..=1000"));
        }
        Ok(k)
    }

    /// The `top_k` rounds `scope` sees that best answer `query`, best first.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, Message, Query};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
    /// memory.add(&[Message::user("I bought running shoes.", "2023-05-18T10:00:00"),
    ///              Message::user("I visited my aunt.", "2023-01-02T10:00:00")], "bob")?;
    /// let recall = memory.recall(Query::new("What did I buy in the past week?").date("2023-05-20"), "bob")?;
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
        let (query, scope) = (query.into(), scope.into());
        check_scope(scope)?;
        query.ranking.validate()?;
        let k = self.top_k(query.top_k)?;
        let asked = self.shared.ask(query.text, query.date, "query")?;
        self.shared.read_view(scope, |store, found, last| {
            let Some((view, version)) = found else {
                return Ok(Some(Recall { rounds: Vec::new(), anchor: None, window: None }));
            };
            let ranked = self.shared.rank_asked(
                store,
                view,
                version,
                &asked,
                &query.ranking,
                Among::Rounds,
                k,
                last,
            )?;
            let Some((anchor, window, scored)) = ranked else { return Ok(None) };
            Ok(Some(Recall {
                rounds: recalled(store, view, &scored)?,
                anchor: anchor.map(|a| a.to_string()),
                window: window_strings(window),
            }))
        })
    }

    /// The notes `scope` sees that best match `search.text` among those its filter keeps, best
    /// first, each with a relevance score in `0..=1` and its label; hits below
    /// `search.min_score` are dropped. Notes hidden by condensing are on no read path (the
    /// filter's `include_condensed` applies to [`list`](Memory::list) only).
    ///
    /// ```
    /// use mnemon::{Config, Filter, HashingEmbedder, Memory, NewNote, Relevance, Search};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
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
    pub fn search<'s>(&self, search: &Search<'_>, scope: impl Into<Scope<'s>>) -> Result<Found> {
        let scope = scope.into();
        check_scope(scope)?;
        search.ranking.validate()?;
        if !(1..=1000).contains(&search.limit) {
            return Err(Error::input("limit", "must be in 1..=1000"));
        }
        if let Some(m) = search.min_score {
            if !m.is_finite() || !(0.0..=1.0).contains(&m) {
                return Err(Error::input("min_score", "must be a number in 0..=1"));
            }
        }
        let filter: NoteFilter = search.filter.resolve("filter")?;
        let asked = self.shared.ask(search.text, search.date, "query")?;
        self.shared.read_view(scope, |store, found, last| {
            let Some((view, version)) = found else {
                return Ok(Some(Found { hits: Vec::new(), anchor: None, window: None }));
            };
            let among = Among::Notes(&filter);
            let ranked = self.shared.rank_asked(
                store,
                view,
                version,
                &asked,
                &search.ranking,
                among,
                search.limit,
                last,
            )?;
            let Some((anchor, window, scored)) = ranked else { return Ok(None) };
            let kept: Vec<(&rank::Scored, f32)> = scored
                .iter()
                .map(|s| (s, self.shared.relevance(s.score)))
                .filter(|(_, r)| search.min_score.is_none_or(|m| *r >= m))
                .collect();
            let ids: Vec<i64> = kept.iter().filter_map(|(s, _)| note_id(s.id)).collect();
            let hits = store
                .notes_by_id(view, &ids)?
                .into_iter()
                .zip(kept)
                .map(|(row, (s, score))| Hit {
                    note: Note::from(row),
                    score,
                    relevance: Relevance::of(score),
                    cosine: s.cosine,
                })
                .collect();
            Ok(Some(Found { hits, anchor: anchor.map(|a| a.to_string()), window: window_strings(window) }))
        })
    }

    /// The `k` nearest rounds by sqlite-vec's own KNN over the stored vectors, as `(key, cosine)`,
    /// nearest first (no time bonus). A cross-check of the in-memory index and a baseline for
    /// `mnemon bench`; [`recall`](Memory::recall) is the read path.
    #[doc(hidden)]
    pub fn nearest_by_sqlite_vec(
        &self,
        question: &str,
        user_id: &str,
        k: usize,
    ) -> Result<Vec<(String, f32)>> {
        self.nearest_in_database(question, user_id, k)
    }

    /// The `k` nearest rounds by the database's own KNN over the stored vectors (sqlite-vec's;
    /// pgvector's, approximate through HNSW for an approximate backend), as `(key, cosine)`,
    /// nearest first (no time bonus). A cross-check of the in-memory index and a benchmark
    /// baseline; [`recall`](Memory::recall) is the read path.
    #[doc(hidden)]
    pub fn nearest_in_database(&self, question: &str, user_id: &str, k: usize) -> Result<Vec<(String, f32)>> {
        check_user(user_id)?;
        let query = self.shared.embedder("recall")?.embed_query(question)?;
        let store = self.shared.lock_store();
        let Some((user, _)) = store.user(user_id)? else {
            return Ok(Vec::new());
        };
        let hits = store.knn(user, &query, k)?;
        let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
        let rows = store.rounds_by_id(View { user, agent: None }, &ids)?;
        Ok(rows
            .into_iter()
            .zip(hits)
            .map(|(r, (_, d))| (r.key, crate::embed::vector::cosine_from_l2(d)))
            .collect())
    }

    /// Ranks everything `scope` sees (rounds with their facts, and notes) for the question and
    /// each of its [angles](Query::angles), merges the records (each once, at its best score),
    /// and renders them best first within the token budget (the query's, else
    /// [`Config::context_budget`]): notes first, then rounds, oldest first. The best record is
    /// always kept; `truncated` says whether others were left out. Notes carry their relevance
    /// label.
    ///
    /// ```
    /// use mnemon::{Config, HashingEmbedder, Memory, Message, NewNote, Query};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let memory = Memory::open(dir.path().join("m.db"), HashingEmbedder::default(), Config::default())?;
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
        let (query, scope) = (query.into(), scope.into());
        check_scope(scope)?;
        query.ranking.validate()?;
        let budget = query.budget.or(self.shared.config.context_budget);
        if budget.is_some_and(|b| b < render::MIN_BUDGET) {
            return Err(Error::input(
                "budget",
                "must be at least 200 tokens (the frame alone takes about 60)",
            ));
        }
        if query.angles.len() > MAX_ANGLES {
            return Err(Error::input("angles", format!("at most {MAX_ANGLES} angles")));
        }
        let k = self.top_k(query.top_k)?;
        let mut asked = vec![self.shared.ask(query.text, query.date, "query")?];
        for (i, angle) in query.angles.iter().enumerate() {
            asked.push(self.shared.ask(angle, query.date, &format!("angles[{i}]"))?);
        }
        let (scored, rounds, notes) = self.shared.read_view(scope, |store, found, last| {
            let Some((view, version)) = found else {
                return Ok(Some((Vec::new(), HashMap::new(), HashMap::new())));
            };
            // Each record once, at its best score (ties: the earlier angle, then its rank there).
            let mut best: HashMap<i64, (usize, usize, rank::Scored)> = HashMap::new();
            for (a, q) in asked.iter().enumerate() {
                let ranked =
                    self.shared.rank_asked(store, view, version, q, &query.ranking, Among::All, k, last)?;
                let Some((_, _, scored)) = ranked else { return Ok(None) };
                for (rank, s) in scored.into_iter().enumerate() {
                    match best.get(&s.id) {
                        Some((.., kept)) if kept.score >= s.score => {}
                        _ => {
                            best.insert(s.id, (a, rank, s));
                        }
                    }
                }
            }
            let mut order: Vec<(usize, usize, rank::Scored)> = best.into_values().collect();
            order.sort_by(|x, y| {
                y.2.score
                    .total_cmp(&x.2.score)
                    .then(x.0.cmp(&y.0))
                    .then(x.1.cmp(&y.1))
                    .then(x.2.id.cmp(&y.2.id))
            });
            let scored: Vec<rank::Scored> = order.into_iter().map(|o| o.2).collect();
            let of_rounds: Vec<rank::Scored> =
                scored.iter().filter(|s| note_id(s.id).is_none()).copied().collect();
            let note_ids: Vec<i64> = scored.iter().filter_map(|s| note_id(s.id)).collect();
            let rounds: HashMap<i64, RecalledRound> =
                recalled(store, view, &of_rounds)?.into_iter().map(|r| (r.id, r)).collect();
            let notes: HashMap<i64, Note> =
                store.notes_by_id(view, &note_ids)?.into_iter().map(|n| (n.id, Note::from(n))).collect();
            Ok(Some((scored, rounds, notes)))
        })?;
        let ranked: Vec<Ranked<'_>> = scored
            .iter()
            .filter_map(|s| match note_id(s.id) {
                Some(id) => {
                    notes.get(&id).map(|n| Ranked::Note(n, Relevance::of(self.shared.relevance(s.score))))
                }
                None => rounds.get(&s.id).map(Ranked::Round),
            })
            .collect();
        Ok(render_ranked(&ranked, budget))
    }
}

/// A record in a context's ranking.
enum Ranked<'a> {
    Round(&'a RecalledRound),
    Note(&'a Note, Relevance),
}

/// Fits ranked records into the budget and renders them.
fn render_ranked(ranked: &[Ranked<'_>], budget: Option<usize>) -> Context {
    let lines: Vec<Vec<String>> = ranked
        .iter()
        .map(|r| match r {
            Ranked::Round(r) => r.facts.iter().filter(|f| f.in_context()).map(Fact::line).collect(),
            Ranked::Note(..) => Vec::new(),
        })
        .collect();
    let items: Vec<Item<'_>> = ranked
        .iter()
        .zip(&lines)
        .map(|(r, l)| match r {
            Ranked::Round(r) => Item::Round(recalled_view(r, l)),
            Ranked::Note(n, label) => Item::Note(note_view(n, Some(*label))),
        })
        .collect();
    let render::Fitted { kept, text, cut } = match budget {
        Some(b) => render::fit_budget(&items, b),
        None => render::Fitted {
            kept: (0..items.len()).collect(),
            text: render::render_context(&items),
            cut: false,
        },
    };
    let key = |r: &Ranked<'_>| match r {
        Ranked::Round(r) => r.key.clone(),
        Ranked::Note(n, _) => n.key.clone(),
    };
    let omitted: Vec<String> =
        (0..ranked.len()).filter(|i| !kept.contains(i)).map(|i| key(&ranked[i])).collect();
    Context {
        tokens: render::count_tokens(&text),
        rounds: kept
            .iter()
            .filter(|i| matches!(ranked[**i], Ranked::Round(_)))
            .map(|i| key(&ranked[*i]))
            .collect(),
        notes: kept
            .iter()
            .filter(|i| matches!(ranked[**i], Ranked::Note(..)))
            .map(|i| key(&ranked[*i]))
            .collect(),
        truncated: !omitted.is_empty() || cut,
        cut,
        omitted,
        text,
    }
}

/// The rounds (with their active facts) of `scored`, in its order.
fn recalled(store: &Store, view: View<'_>, scored: &[rank::Scored]) -> Result<Vec<RecalledRound>> {
    let ids: Vec<i64> = scored.iter().map(|s| s.id).collect();
    let rows = store.rounds_by_id(view, &ids)?;
    let mut facts = store.active_facts_of(view, &ids)?;
    Ok(rows
        .into_iter()
        .zip(scored)
        .map(|(row, s)| RecalledRound {
            facts: facts.remove(&row.id).unwrap_or_default().into_iter().map(Fact::from).collect(),
            key: row.key,
            session: row.session,
            ts: row.ts,
            turns: row.turns,
            score: s.score,
            cosine: s.cosine,
            time_match: s.time_match,
            id: row.id,
            ts_unix: row.ts_unix,
        })
        .collect())
}

fn recalled_view<'a>(r: &'a RecalledRound, facts: &'a [String]) -> RenderRound<'a> {
    RenderRound {
        id: r.id,
        key: &r.key,
        session: &r.session,
        ts: &r.ts,
        ts_unix: r.ts_unix,
        turns: &r.turns,
        facts,
    }
}

/// A note as the renderer sees it.
pub(super) fn note_view(n: &Note, relevance: Option<Relevance>) -> RenderNote<'_> {
    RenderNote {
        key: &n.key,
        kind: n.kind.as_str(),
        ts: &n.ts,
        // Stored notes' timestamps parsed when they were stored.
        ts_unix: Timestamp::parse(&n.ts).map_or(0, |t| t.unix_seconds()),
        title: n.title.as_deref(),
        tags: &n.tags,
        content: &n.content,
        relevance,
    }
}
