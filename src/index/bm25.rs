//! The per-user BM25 index that the fused read path ranks with.
//!
//! [`Bm25`] keeps one user's postings in memory beside the user's vectors. Its statistics (round
//! count, document frequencies, mean length) are the user's own, so no other user's rounds can
//! move a user's ranking, and a query costs one walk over the postings of its terms instead of one
//! `bm25()` call per matching row (docs/DECISIONS.md, 2026-11-30). Scoring is FTS5's: k1 = 1.2,
//! b = 0.75 and idf = ln((N − df + 0.5) / (df + 0.5)) floored at 1e-6, so that a word found in
//! most rounds still matches but barely weighs. Everything iterates in a fixed order, and hashing
//! uses fixed keys.

use std::collections::HashMap;

use crate::model::words::{stem, terms, words};

/// What the lexical ranking is, for the pins of a measured run.
pub const LEXICAL_SCHEME: &str =
    "bm25 k1=1.2 b=0.75 idf=fts5 snowball-english nfkd-fold v1 + feedback docs=5 terms=10 in>=2 v1";

/// BM25 term-frequency saturation (FTS5's default).
const K1: f32 = 1.2;
/// BM25 length normalization (FTS5's default).
const B: f32 = 0.75;
/// The smallest idf: a term in most rounds still matches.
const MIN_IDF: f32 = 1e-6;

/// Feedback: the first ranking's best rounds whose words expand the question.
pub(crate) const FEEDBACK_DOCS: usize = 5;
/// Feedback: the most words added to the question.
const FEEDBACK_TERMS: usize = 10;
/// Feedback: a word is added only when at least this many of the feedback rounds hold it, so that
/// one round's topic cannot pull the second ranking its way.
const FEEDBACK_MIN_DOCS: usize = 2;
/// Feedback: a word is added only when its idf is at least this (it is in fewer than about a
/// quarter of the user's rounds).
const FEEDBACK_MIN_IDF: f32 = 1.0;

/// Fixed keys (no per-process randomness), hashing eight bytes at a time. The maps are private
/// to one user's index, keyed by that user's own words, and only looked up, never iterated.
type Fixed = foldhash::fast::FixedState;

/// One user's BM25 index over round texts, appended in round-id order.
#[derive(Default)]
pub(crate) struct Bm25 {
    ids: Vec<i64>,
    lens: Vec<u32>,
    total_len: u64,
    /// Stemmed term → term number.
    dictionary: HashMap<String, usize, Fixed>,
    /// Folded word → term number, so that each distinct word is stemmed once.
    seen: HashMap<String, usize, Fixed>,
    /// Per term: (document index, term frequency), in document order.
    postings: Vec<Vec<(u32, u32)>>,
    /// Entries over all postings, counted as they are added (so the size is known at once).
    pairs: usize,
    /// Per document, the terms it holds (each once, in first-seen order): document `d`'s are
    /// `forward[starts[d]..starts[d + 1]]`, its last ending the vector. For feedback.
    forward: Vec<u32>,
    starts: Vec<u32>,
}

impl Bm25 {
    /// About how many bytes the postings and dictionaries hold.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.ids.len() * 16
            + self.pairs * 12
            + self.postings.len() * 24
            + (self.dictionary.len() + self.seen.len()) * 64
    }

    /// Adds round `id` (greater than every id added before) with its text.
    pub(crate) fn push(&mut self, id: i64, text: &str) {
        let doc = self.ids.len() as u32;
        let mut len = 0u32;
        self.starts.push(self.forward.len() as u32);
        words(text, |w| {
            len += 1;
            let term = match self.seen.get(w) {
                Some(&term) => term,
                None => {
                    let next = self.postings.len();
                    let term = *self.dictionary.entry(stem(w)).or_insert(next);
                    if term == next {
                        self.postings.push(Vec::new());
                    }
                    self.seen.insert(w.to_owned(), term);
                    term
                }
            };
            // Postings are in document order: this document's entry, if any, is the last.
            let postings = &mut self.postings[term];
            match postings.last_mut() {
                Some((d, tf)) if *d == doc => *tf += 1,
                _ => {
                    postings.push((doc, 1));
                    self.pairs += 1;
                    self.forward.push(term as u32);
                }
            }
        });
        self.ids.push(id);
        self.lens.push(len);
        self.total_len += u64::from(len);
    }

    /// Rounds matching any term of `query`, best first by BM25 (ties to the lower id), at most
    /// `depth`: `(round id, score)`.
    #[cfg(test)]
    pub(crate) fn top(&self, query: &str, depth: usize) -> Vec<(i64, f32)> {
        self.top_masked(query, depth, None)
    }

    /// [`top`](Bm25::top) among the documents `mask` keeps (indexed like [`ids`](Bm25::ids)).
    /// The statistics stay those of every document.
    pub(crate) fn top_masked(&self, query: &str, depth: usize, mask: Option<&[bool]>) -> Vec<(i64, f32)> {
        self.scores(query, mask).top(self, depth)
    }

    /// Every document's BM25 score for `query`, among those `mask` keeps, to rank from and to
    /// [`add`](Bm25::add) to.
    pub(crate) fn scores(&self, query: &str, mask: Option<&[bool]>) -> Scores {
        let asked = self.query_terms(query);
        let mut scores =
            Scores { values: vec![0f32; self.ids.len()], touched: Vec::new(), asked: Vec::new() };
        let wanted: Vec<(usize, f32)> = asked.iter().map(|&t| (t, 1.0)).collect();
        self.add(&mut scores, &wanted, mask);
        scores.asked = asked;
        scores
    }

    /// The question's words that some round holds, as term numbers, each once, in the order of
    /// their stems (the order their scores are summed in).
    fn query_terms(&self, query: &str) -> Vec<usize> {
        let mut stems = terms(query);
        stems.sort_unstable();
        stems.dedup();
        stems.iter().filter_map(|t| self.dictionary.get(t).copied()).collect()
    }

    /// The words pseudo-relevance feedback adds to the question `asked` was scored for: up to [`FEEDBACK_TERMS`] words that the rounds `feedback` (the first ranking's
    /// best, at most [`FEEDBACK_DOCS`]) share, each held by at least [`FEEDBACK_MIN_DOCS`] of
    /// them and rare in the user's rounds. A word's weight is the sum over the feedback rounds
    /// holding it of its idf, relative to the best added word's; ties go to the earlier term.
    /// The ranking of these weighted words finds rounds that share no word with the question but
    /// several with the rounds that answer it (the other sessions of a multi-hop question).
    /// Their scores [`add`](Bm25::add) to the question's own. `None` when no word is added.
    pub(crate) fn expanded(&self, asked: &Scores, feedback: &[i64]) -> Option<Vec<(usize, f32)>> {
        let asked = &asked.asked;
        // (term, rounds holding it, summed idf), in the order first met.
        let mut met: Vec<(usize, usize, f32)> = Vec::new();
        for id in feedback.iter().take(FEEDBACK_DOCS) {
            let Ok(d) = self.ids.binary_search(id) else { continue };
            let end = self.starts.get(d + 1).map_or(self.forward.len(), |&e| e as usize);
            for &term in &self.forward[self.starts[d] as usize..end] {
                let term = term as usize;
                if asked.contains(&term) {
                    continue;
                }
                let idf = self.idf(term);
                if idf < FEEDBACK_MIN_IDF {
                    continue;
                }
                match met.iter_mut().find(|m| m.0 == term) {
                    Some(m) => {
                        m.1 += 1;
                        m.2 += idf;
                    }
                    None => met.push((term, 1, idf)),
                }
            }
        }
        met.retain(|m| m.1 >= FEEDBACK_MIN_DOCS);
        // Stable: equal weights keep the order first met.
        met.sort_by(|a, b| b.2.total_cmp(&a.2));
        met.truncate(FEEDBACK_TERMS);
        let best = met.first()?.2;
        Some(met.iter().map(|m| (m.0, m.2 / best)).collect())
    }

    /// A term's idf: `ln((N − df + 0.5) / (df + 0.5))`, floored at [`MIN_IDF`].
    fn idf(&self, term: usize) -> f32 {
        let n = self.ids.len() as f32;
        let df = self.postings[term].len() as f32;
        ((n - df + 0.5) / (df + 0.5)).ln().max(MIN_IDF)
    }

    /// Adds to `scores` each document's BM25 share of the weighted terms `wanted` (a term's
    /// share times its weight), among the documents `mask` keeps, term after term in order: the
    /// question's words then feedback's sum as one query's would.
    pub(crate) fn add(&self, scores: &mut Scores, wanted: &[(usize, f32)], mask: Option<&[bool]>) {
        let n = self.ids.len();
        if n == 0 {
            return;
        }
        let avg = self.total_len.max(1) as f32 / n as f32;
        let Scores { values, touched, .. } = scores;
        for &(term, weight) in wanted {
            let postings = &self.postings[term];
            let idf = self.idf(term) * weight;
            for &(doc, tf) in postings {
                let d = doc as usize;
                if mask.is_some_and(|m| !m[d]) {
                    continue;
                }
                if values[d] == 0.0 {
                    touched.push(d);
                }
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.lens[d] as f32 / avg);
                values[d] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
    }
}

/// Documents' BM25 scores for one query (by document index), the documents some term touched,
/// in the order first touched, and the query's own terms.
pub(crate) struct Scores {
    values: Vec<f32>,
    touched: Vec<usize>,
    asked: Vec<usize>,
}

impl Scores {
    /// The best `depth` documents of `index` with a score, best first (ties to the lower id):
    /// `(round id, score)`.
    pub(crate) fn top(&self, index: &Bm25, depth: usize) -> Vec<(i64, f32)> {
        if depth == 0 {
            return Vec::new();
        }
        let mut hits: Vec<(i64, f32)> =
            self.touched.iter().map(|&d| (index.ids[d], self.values[d])).collect();
        let order = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > depth {
            hits.select_nth_unstable_by(depth - 1, order);
            hits.truncate(depth);
        }
        hits.sort_by(order);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_matches_the_formula_on_a_hand_made_fixture() {
        let mut index = Bm25::default();
        index.push(10, "red kayak on the lake"); // 5 words
        index.push(11, "kayak kayak paddle"); // 3 words
        index.push(12, "pasta recipe"); // 2 words
        index.push(13, "the kayak"); // 2 words
        let avg = 12.0f32 / 4.0;
        let idf = |df: f32| ((4.0f32 - df + 0.5) / (df + 0.5)).ln().max(1e-6);
        let w = |tf: f32, len: f32, df: f32| idf(df) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg));
        let top = index.top("Where is my red kayak?", 10);
        assert_eq!(top.iter().map(|h| h.0).collect::<Vec<_>>(), [10, 11, 13]);
        assert!((top[0].1 - (w(1.0, 5.0, 1.0) + w(1.0, 5.0, 3.0))).abs() < 1e-6);
        // "kayak" is in 3 of 4 rounds: its idf is floored, so it matches but barely weighs.
        assert!(top[1].1 > 0.0 && top[1].1 < 1e-5);
        assert!((top[1].1 - w(2.0, 3.0, 3.0)).abs() < 1e-9);
        assert!((top[2].1 - w(1.0, 2.0, 3.0)).abs() < 1e-9);
        assert_eq!(index.top("kayak", 1), vec![(11, w(2.0, 3.0, 3.0))]);
        assert!(index.top("violin", 10).is_empty());
        assert!(index.top("kayak", 0).is_empty());
        assert!(Bm25::default().top("kayak", 10).is_empty());
    }

    #[test]
    fn feedback_adds_the_rare_words_two_feedback_rounds_share_and_nothing_else() {
        let mut index = Bm25::default();
        for i in 0..20 {
            index.push(i, &format!("the weekly entry {i}"));
        }
        index.push(20, "my sister lucia moved to porto");
        index.push(21, "my sister lucia loves ceramics and porto");
        index.push(22, "lucia called about the flat");
        index.push(23, "ceramics class");
        let term = |w: &str| index.query_terms(w)[0];
        let mut scores = index.scores("where does my sister live", None);
        let expanded = index.expanded(&scores, &[20, 21, 3, 4, 5]).unwrap();
        // The shared rare words, best first: both feedback rounds hold "porto" and "lucia", and
        // "porto" (in 2 of 24 rounds) is rarer than "lucia" (in 3).
        let added: Vec<usize> = expanded.iter().map(|t| t.0).collect();
        assert_eq!(added, [term("porto"), term("lucia")]);
        assert_eq!(expanded[0].1, 1.0);
        assert!(expanded[1].1 < 1.0 && expanded[1].1 > 0.0);
        // "ceramics" is held by one feedback round only; "the" and "weekly" by most rounds.
        assert!(!added.contains(&term("ceramics")) && !added.contains(&term("the")));
        index.add(&mut scores, &expanded, None);
        let found: Vec<i64> = scores.top(&index, 4).into_iter().map(|h| h.0).collect();
        assert_eq!(found, [20, 21, 22]);
        // Nothing shared, nothing added; an unknown feedback id is skipped.
        let asked = index.scores("where does my sister live", None);
        assert!(index.expanded(&asked, &[20, 3, 999]).is_none());
        // Nothing added is the plain ranking.
        let mut scores = index.scores("my sister", None);
        index.add(&mut scores, &[], None);
        assert_eq!(scores.top(&index, 5), index.top("my sister", 5));
    }

    #[test]
    fn ties_go_to_the_lower_id() {
        let mut index = Bm25::default();
        for id in [3, 5, 9] {
            index.push(id, "same words here");
        }
        assert_eq!(index.top("words", 10).iter().map(|h| h.0).collect::<Vec<_>>(), [3, 5, 9]);
        assert_eq!(index.top("words", 2).iter().map(|h| h.0).collect::<Vec<_>>(), [3, 5]);
    }
}
