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
pub const LEXICAL_SCHEME: &str = "bm25 k1=1.2 b=0.75 idf=fts5 snowball-english nfkd-fold v1";

/// BM25 term-frequency saturation (FTS5's default).
const K1: f32 = 1.2;
/// BM25 length normalization (FTS5's default).
const B: f32 = 0.75;
/// The smallest idf: a term in most rounds still matches.
const MIN_IDF: f32 = 1e-6;

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
}

impl Bm25 {
    /// About how many bytes the postings and dictionaries hold.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.ids.len() * 12
            + self.pairs * 8
            + self.postings.len() * 24
            + (self.dictionary.len() + self.seen.len()) * 64
    }

    /// Adds round `id` (greater than every id added before) with its text.
    pub(crate) fn push(&mut self, id: i64, text: &str) {
        let doc = self.ids.len() as u32;
        let mut len = 0u32;
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
        let n = self.ids.len();
        if n == 0 || depth == 0 {
            return Vec::new();
        }
        let mut wanted = terms(query);
        wanted.sort_unstable();
        wanted.dedup();
        let avg = self.total_len.max(1) as f32 / n as f32;
        let mut scores = vec![0f32; n];
        let mut touched = Vec::new();
        for t in &wanted {
            let Some(&term) = self.dictionary.get(t) else { continue };
            let postings = &self.postings[term];
            let df = postings.len() as f32;
            let idf = ((n as f32 - df + 0.5) / (df + 0.5)).ln().max(MIN_IDF);
            for &(doc, tf) in postings {
                let d = doc as usize;
                if mask.is_some_and(|m| !m[d]) {
                    continue;
                }
                if scores[d] == 0.0 {
                    touched.push(d);
                }
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.lens[d] as f32 / avg);
                scores[d] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut hits: Vec<(i64, f32)> = touched.into_iter().map(|d| (self.ids[d], scores[d])).collect();
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
    fn ties_go_to_the_lower_id() {
        let mut index = Bm25::default();
        for id in [3, 5, 9] {
            index.push(id, "same words here");
        }
        assert_eq!(index.top("words", 10).iter().map(|h| h.0).collect::<Vec<_>>(), [3, 5, 9]);
        assert_eq!(index.top("words", 2).iter().map(|h| h.0).collect::<Vec<_>>(), [3, 5]);
    }
}
