//! A scope's records held in memory for ranking: every round (with its part records), active
//! fact and note the scope sees, as vectors ([`Index`]) and, for rounds and notes, words
//! ([`Bm25`]); one ranking over all three kinds.
//!
//! A view is valid while its user's write counter is `version`. A round's entries (its own
//! vector, its part records' and its facts') are owned by the round's id; a note's by its id with [`NOTE_BIT`] set,
//! so that the two kinds never share an owner and ties still go to the older record of a kind.
//! Words are indexed per kind ([`Bm25`] over rounds' texts, another over notes), so each
//! kind keeps its own word statistics: notes never move a round's word ranking, and fusion takes
//! one word ranking per kind. A ranking can be restricted to one kind, or to the notes a filter
//! keeps, by masking entries and note documents (the statistics stay those of the whole kind).

use std::collections::HashMap;

use super::bm25::{Bm25, FEEDBACK_DOCS};
use super::fuse;
use super::rank::{self, Index, Shape};
use crate::error::Result;
use crate::model::filter::NoteFilter;
use crate::model::note::NoteKind;
use crate::store::{AsOf, NoteMeta, Store, View};

/// Set in the owner of a note's entries; rounds are owned by their row id.
pub(crate) const NOTE_BIT: i64 = 1 << 48;
/// A note's row id from its owner.
pub(crate) fn note_id(owner: i64) -> Option<i64> {
    (owner & NOTE_BIT != 0).then_some(owner & !NOTE_BIT)
}

/// Round texts from which a view's word index is built on a thread of its own: fewer take less
/// time than starting a thread (docs/DECISIONS.md, 2026-12-04).
const WORDS_ON_A_THREAD: usize = 256;

/// What a view entry stands for when it is not a note.
const NOT_A_NOTE: u32 = u32::MAX;

/// A question to rank in a view: its text without a date prefix, its vector, how the ranking
/// is shaped, among which records, how deep, and the fusion constant (none: dense only).
pub(crate) struct Question<'q> {
    pub bare: &'q str,
    pub vector: &'q [f32],
    pub shape: &'q Shape,
    pub among: Among<'q>,
    pub depth: usize,
    pub rrf: Option<u32>,
}

/// The records a ranking considers.
#[derive(Clone, Copy)]
pub(crate) enum Among<'f> {
    /// Rounds (with their facts): [`Memory::recall`](crate::Memory::recall).
    Rounds,
    /// The notes a filter keeps: [`Memory::search`](crate::Memory::search).
    Notes(&'f NoteFilter),
    /// Everything: [`Memory::get_context`](crate::Memory::get_context).
    All,
}

/// What a filter needs of a note, with tags as numbers.
struct NoteEntry {
    id: i64,
    kind: NoteKind,
    tags: Vec<u32>,
    ts_unix: i64,
    tokens: i64,
}

/// A scope's records in memory.
pub(crate) struct CachedView {
    pub(super) version: i64,
    index: Index,
    /// Rounds' words; built only when fusion is on.
    words: Option<Bm25>,
    /// Notes' words, document `i` being note slot `i`; built only when fusion is on.
    note_words: Option<Bm25>,
    /// The note (a slot in `notes`) of each index entry, or [`NOT_A_NOTE`].
    entry_note: Vec<u32>,
    notes: Vec<NoteEntry>,
    tags: HashMap<String, u32>,
}

impl CachedView {
    /// Reads every record `view` sees from the store; with `as_of`, only what was known then,
    /// facts as they stood (a private view for one read, never cached).
    pub(crate) fn load(
        store: &Store,
        view: View<'_>,
        version: i64,
        dim: usize,
        fusion: bool,
        as_of: Option<&AsOf>,
    ) -> Result<CachedView> {
        let known = |round: i64| as_of.is_none_or(|a| a.round(round));
        // Facts rank through their vectors only: their words (an excerpt of the round and a
        // paraphrase of it) measured as a loss (docs/DECISIONS.md, "facts that cannot hurt").
        let texts: Vec<(i64, String)> = match fusion {
            true => store.user_texts(view)?.into_iter().filter(|(id, _)| known(*id)).collect(),
            false => Vec::new(),
        };
        let words_of = |texts: &[(i64, String)]| {
            let mut words = Bm25::default();
            for (id, text) in texts {
                words.push(*id, text);
            }
            words
        };
        // A large scope's word index is built on a second thread while this one reads and
        // quantizes the vectors: the two share nothing, and each is built as it is alone.
        let (index, words) = std::thread::scope(|s| -> Result<(Index, Option<Bm25>)> {
            let spawned = (fusion && texts.len() >= WORDS_ON_A_THREAD).then(|| s.spawn(|| words_of(&texts)));
            let (rounds, facts, parts) = match as_of {
                None => (
                    store.user_vectors(view)?,
                    store.user_fact_vectors(view)?,
                    store.user_part_vectors(view)?,
                ),
                Some(a) => (
                    store.user_vectors(view)?.retain(dim, |_, round| known(round)),
                    a.fact_vectors(store, view)?,
                    store.user_part_vectors(view)?.retain(dim, |_, round| known(round)),
                ),
            };
            let mut index = Index::new(rounds, dim);
            index.extend(facts);
            index.extend(parts);
            let words = match spawned {
                // It only computes; were it to panic, so does the caller.
                Some(h) => Some(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
                None => fusion.then(|| words_of(&texts)),
            };
            Ok((index, words))
        })?;
        let mut cached = CachedView {
            version,
            entry_note: vec![NOT_A_NOTE; index.len()],
            index,
            words,
            note_words: fusion.then(Bm25::default),
            notes: Vec::new(),
            tags: HashMap::new(),
        };
        let (metas, data) = store.note_vectors(view)?;
        for (meta, vector) in metas.iter().zip(data.chunks_exact(dim)) {
            if as_of.is_none_or(|a| a.note(meta.ts_unix)) {
                cached.push_note(meta, vector);
            }
        }
        Ok(cached)
    }

    /// About how many bytes the view holds.
    pub(super) fn approx_bytes(&self) -> usize {
        self.index.approx_bytes()
            + self.words.as_ref().map_or(0, Bm25::approx_bytes)
            + self.note_words.as_ref().map_or(0, Bm25::approx_bytes)
            + self.entry_note.len() * 4
            + self.notes.len() * 64
            + self.tags.len() * 64
    }

    /// Adds round `round`: its own vector and text.
    pub(crate) fn push_round(&mut self, round: i64, day: i32, vector: &[f32], text: &str) {
        self.push_vector(round, day, 1.0, vector);
        if let Some(words) = &mut self.words {
            words.push(round, text);
        }
    }

    /// Adds a record ranking for round `round` by its vector alone, no words: a part record
    /// (`crate::model::parts`, salience 1) or an active fact (its salience).
    pub(crate) fn push_vector(&mut self, round: i64, day: i32, salience: f32, vector: &[f32]) {
        self.index.push(round, day, salience, vector);
        self.entry_note.push(NOT_A_NOTE);
    }

    /// Adds a note.
    pub(crate) fn push_note(&mut self, meta: &NoteMeta, vector: &[f32]) {
        let slot = self.notes.len() as u32;
        let mut tags: Vec<u32> = Vec::with_capacity(meta.tags.len());
        for t in &meta.tags {
            let next = self.tags.len() as u32;
            tags.push(*self.tags.entry(t.clone()).or_insert(next));
        }
        self.notes.push(NoteEntry {
            id: meta.id,
            kind: meta.kind,
            tags,
            ts_unix: meta.ts_unix,
            tokens: meta.tokens,
        });
        let owner = NOTE_BIT | meta.id;
        self.index.push_weighted(owner, meta.day, 1.0, meta.importance, vector);
        self.entry_note.push(slot);
        if let Some(words) = &mut self.note_words {
            words.push(owner, &meta.words);
        }
    }

    /// Which note slots `filter` keeps.
    fn kept_notes(&self, filter: &NoteFilter) -> Vec<bool> {
        let ids = |tags: &[String]| -> Vec<Option<u32>> {
            tags.iter().map(|t| self.tags.get(t).copied()).collect()
        };
        let (any, all) = (ids(&filter.tags_any), ids(&filter.tags_all));
        self.notes
            .iter()
            .map(|n| {
                (filter.kinds.is_empty() || filter.kinds.contains(&n.kind))
                    && filter.after.is_none_or(|a| n.ts_unix > a)
                    && filter.before.is_none_or(|b| n.ts_unix < b)
                    && filter.min_tokens.is_none_or(|m| n.tokens >= m)
                    && filter.max_tokens.is_none_or(|m| n.tokens <= m)
                    && (any.is_empty() || any.iter().any(|t| t.is_some_and(|t| n.tags.contains(&t))))
                    && all.iter().all(|t| t.is_some_and(|t| n.tags.contains(&t)))
                    && filter.passing.as_ref().is_none_or(|p| p.contains(&n.id))
            })
            .collect()
    }

    /// The entry mask for `among` (`None`: every entry) and, for notes, which note slots a
    /// filter keeps.
    fn masks(&self, among: Among<'_>) -> (Option<Vec<bool>>, Option<Vec<bool>>) {
        match among {
            // Without notes, every entry is a round's: no mask, exactly the plain ranking.
            Among::All => (None, None),
            Among::Rounds if self.notes.is_empty() => (None, None),
            Among::Rounds => (Some(self.entry_note.iter().map(|&s| s == NOT_A_NOTE).collect()), None),
            Among::Notes(filter) => {
                let kept = self.kept_notes(filter);
                let entries = self.entry_note.iter().map(|&s| s != NOT_A_NOTE && kept[s as usize]).collect();
                (Some(entries), Some(kept))
            }
        }
    }

    /// The top `depth` owners among `among` for a question (`bare`, embedded as `vector`):
    /// the dense ranking alone, or (with `rrf`) fused with the word ranking of each kind, when
    /// the question names a time window with the dense ranking of the rounds inside it, and, for
    /// rounds, with the word ranking of the question expanded by that first fusion's best rounds
    /// ([`Bm25::expanded`]).
    pub(crate) fn rank(&self, question: &Question<'_>) -> Vec<rank::Scored> {
        let Question { bare, vector, shape, among, depth, rrf } = *question;
        let (entries, kept_notes) = self.masks(among);
        let entries = entries.as_deref();
        let Some(rrf) = rrf else {
            let mut top = self.index.top_k_shaped(vector, shape, depth, entries);
            for (rank, s) in top.iter_mut().enumerate() {
                s.why.dense = fuse::place(rank);
            }
            return top;
        };
        // Each list contributes its top 100, or as many as asked for when that is more.
        let each = fuse::FUSION_DEPTH.max(depth);
        // The rounds' word scores are kept: feedback adds to them. They are computed on this
        // thread while others scan the vectors.
        let round_index = match among {
            Among::Notes(_) => None,
            _ => self.words.as_ref(),
        };
        let (dense, round_scores) = self
            .index
            .top_k_beside(vector, shape, each, entries, || round_index.map(|w| (w, w.scores(bare, None))));
        // Each owner is one document of its kind's words (a round's text, a note's).
        let lexical = |words: &Option<Bm25>, mask: Option<&[bool]>| -> Vec<i64> {
            words
                .as_ref()
                .map(|w| w.top_masked(bare, each, mask).into_iter().map(|(id, _)| id).collect())
                .unwrap_or_default()
        };
        let words = |ids| (fuse::List::Words, ids);
        let round_words = || -> Vec<i64> {
            round_scores
                .as_ref()
                .map(|(w, s)| s.top(w, each).into_iter().map(|(id, _)| id).collect())
                .unwrap_or_default()
        };
        let mut lists = match among {
            Among::Rounds => vec![words(round_words())],
            Among::Notes(_) => vec![words(lexical(&self.note_words, kept_notes.as_deref()))],
            Among::All => vec![words(round_words()), words(lexical(&self.note_words, None))],
        };
        // A question that names a time window ranks the rounds dated inside it once more, in
        // dense order, as a list of its own (notes never: their relevance stays on the usual scale).
        if shape.window.is_some() && !matches!(among, Among::Notes(_)) {
            lists.push((
                fuse::List::Window,
                dense.iter().filter(|s| s.time_match && note_id(s.id).is_none()).map(|s| s.id).collect(),
            ));
        }
        let fused = |lists: &[_]| fuse::fuse(&dense, lists, rrf, |id| self.index.holds(id, entries));
        // Only the owners kept are scored in full (their dense scores, for the explanation).
        let keep = |fused: &[fuse::Fused]| {
            fuse::keep(fused, depth, &dense, |id| self.index.score_of_shaped(id, vector, shape, entries))
        };
        // Feedback, a second step for rounds (notes keep their one word ranking): the question's
        // words expanded by the words the first fusion's best rounds share, ranked as one more
        // list of the same fusion.
        let Some((words, mut scores)) = round_scores else {
            return keep(&fused(&lists));
        };
        let first = fused(&lists);
        let feedback: Vec<i64> = first
            .iter()
            .take(each)
            .filter(|s| note_id(s.id).is_none())
            .take(FEEDBACK_DOCS)
            .map(|s| s.id)
            .collect();
        let Some(expanded) = words.expanded(&scores, &feedback) else {
            return keep(&first);
        };
        words.add(&mut scores, &expanded, None);
        let found = scores.top(words, each).into_iter().map(|(id, _)| id).collect();
        lists.push((fuse::List::Feedback, found));
        keep(&fused(&lists))
    }
}

/// Whether a view of `view_agent` sees a record written by `agent`.
pub(super) fn sees(view_agent: Option<&str>, agent: Option<&str>) -> bool {
    view_agent.is_none() || agent.is_none() || view_agent == agent
}
