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

/// One document holding a term.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Posting {
    /// The document's index (its place in [`Bm25::ids`]).
    doc: u32,
    /// The kind of its (term frequency, document length) pair: an index into [`Bm25::kinds`].
    kind: u32,
}

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
    /// Per term: its postings, in document order.
    postings: Vec<Vec<Posting>>,
    /// Entries over all postings, counted as they are added (so the size is known at once).
    pairs: usize,
    /// Per document, the terms it holds (each once, in first-seen order): document `d`'s are
    /// `forward[starts[d]..starts[d + 1]]`, its last ending the vector. For feedback.
    forward: Vec<u32>,
    starts: Vec<u32>,
    /// The distinct (term frequency, document length) pairs of the postings, in the order first
    /// met, and each one's kind number. A posting's share of a term's score depends on nothing
    /// else besides the term's idf, so a query computes each kind's share once per term (few:
    /// lengths and frequencies repeat) and a posting only looks its share up.
    kinds: Vec<(u32, u32)>,
    kind_of: HashMap<(u32, u32), u32, Fixed>,
    /// Per kind, its frequency and BM25 denominator `tf + K1 · (1 − B + B · len / avg)`,
    /// computed by the first query after the last push (every push moves the average).
    denominators: std::sync::OnceLock<Vec<(f32, f32)>>,
}

thread_local! {
    /// A zeroed score buffer kept between queries on this thread: a user of 10^5 rounds would
    /// otherwise allocate and fault in 400 KB for every query.
    static SPARE: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Bm25 {
    /// About how many bytes the postings and dictionaries hold.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.ids.len() * 16
            + self.pairs * 12
            + self.postings.len() * 24
            + self.kinds.len() * 40
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
            // (Until the document's length is known, `kind` counts the term's frequency.)
            match postings.last_mut() {
                Some(p) if p.doc == doc => p.kind += 1,
                _ => {
                    postings.push(Posting { doc, kind: 1 });
                    self.pairs += 1;
                    self.forward.push(term as u32);
                }
            }
        });
        let start = self.starts[doc as usize] as usize;
        for &term in &self.forward[start..] {
            let Some(p) = self.postings[term as usize].last_mut() else { continue };
            let (tf, next) = (p.kind, self.kinds.len() as u32);
            p.kind = *self.kind_of.entry((tf, len)).or_insert(next);
            if p.kind == next {
                self.kinds.push((tf, len));
            }
        }
        self.ids.push(id);
        self.lens.push(len);
        self.total_len += u64::from(len);
        self.denominators = std::sync::OnceLock::new();
    }

    /// Every kind's frequency and denominator (see [`Bm25::denominators`]), each the same
    /// expression as a posting's own, so every share is bit for bit the one computed per posting.
    fn denominators(&self) -> &[(f32, f32)] {
        self.denominators.get_or_init(|| {
            let avg = self.total_len.max(1) as f32 / self.ids.len().max(1) as f32;
            self.kinds
                .iter()
                .map(|&(tf, len)| {
                    let tf = tf as f32;
                    (tf, tf + K1 * (1.0 - B + B * len as f32 / avg))
                })
                .collect()
        })
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
        let mut values = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
        values.resize(self.ids.len(), 0.0);
        let mut scores = Scores { values, asked: Vec::new() };
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
        let kinds = self.denominators();
        let values = &mut scores.values;
        let mut table = Vec::new();
        for &(term, weight) in wanted {
            let idf = self.idf(term) * weight;
            let postings = &self.postings[term];
            let kept = |p: &&Posting| mask.is_none_or(|m| m[p.doc as usize]);
            // Each share is `idf · tf · (K1 + 1) / denominator`, evaluated in that order: a
            // term with more postings than kinds computes every kind's share first.
            if postings.len() >= kinds.len() {
                table.clear();
                table.extend(kinds.iter().map(|&(tf, den)| idf * tf * (K1 + 1.0) / den));
                for p in postings.iter().filter(kept) {
                    values[p.doc as usize] += table[p.kind as usize];
                }
            } else {
                for p in postings.iter().filter(kept) {
                    let (tf, den) = kinds[p.kind as usize];
                    values[p.doc as usize] += idf * tf * (K1 + 1.0) / den;
                }
            }
        }
    }
}

/// Documents' BM25 scores for one query (by document index; a document no term touched scores
/// 0, every share being positive), and the query's own terms.
pub(crate) struct Scores {
    values: Vec<f32>,
    asked: Vec<usize>,
}

/// A scored document in ranking order: a higher score first, then the lower id.
#[derive(Clone, Copy, PartialEq)]
struct Hit(f32, i64);

impl Eq for Hit {}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Hit {
    /// Greater is better.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

impl Drop for Scores {
    /// The buffer goes back to the thread's spare, zeroed.
    fn drop(&mut self) {
        let mut values = std::mem::take(&mut self.values);
        values.fill(0.0);
        SPARE.with(|s| {
            let mut spare = s.borrow_mut();
            if values.capacity() > spare.capacity() {
                *spare = values;
            }
        });
    }
}

/// Scores per group of [`Scores::top`].
const GROUP: usize = 16;

/// The largest score of each group of [`GROUP`] (the last may be shorter). Scores are never
/// NaN, so the order of comparisons cannot change the result.
fn largest_of_groups(values: &[f32]) -> Vec<f32> {
    let whole = values.chunks_exact(GROUP);
    let rest = whole.remainder();
    let mut out = Vec::with_capacity(values.len().div_ceil(GROUP));
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        for g in whole {
            // SAFETY: SSE is part of x86_64; the sixteen loads are inside `g`.
            out.push(unsafe {
                let p = g.as_ptr();
                let m = _mm_max_ps(
                    _mm_max_ps(_mm_loadu_ps(p), _mm_loadu_ps(p.add(4))),
                    _mm_max_ps(_mm_loadu_ps(p.add(8)), _mm_loadu_ps(p.add(12))),
                );
                let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
                _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps::<1>(m, m)))
            });
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    out.extend(whole.map(|g| g.iter().fold(0.0, |m: f32, &v| m.max(v))));
    if !rest.is_empty() {
        out.push(rest.iter().fold(0.0, |m: f32, &v| m.max(v)));
    }
    out
}

impl Scores {
    /// The best `depth` documents of `index` with a score, best first (ties to the lower id):
    /// `(round id, score)`.
    pub(crate) fn top(&self, index: &Bm25, depth: usize) -> Vec<(i64, f32)> {
        if depth == 0 {
            return Vec::new();
        }
        // One pass keeping the best `depth` in a heap whose top is the worst kept: the same
        // documents, in the same order, as sorting every scored one.
        let mut kept: std::collections::BinaryHeap<std::cmp::Reverse<Hit>> =
            std::collections::BinaryHeap::with_capacity(depth + 1);
        // The worst kept score once `depth` are kept: a lower one cannot enter (scores are
        // positive and finite, so `<` is exact).
        let mut floor = f32::NEG_INFINITY;
        let values = &self.values[..index.ids.len().min(self.values.len())];
        // Each group's largest score (a vectorized pass). The `depth`-th largest of those, `t`,
        // is reached by at least `depth` documents, so each of the best `depth` scores at least
        // `t` and lies in a group whose largest does: only those groups are read one by one.
        let largest = largest_of_groups(values);
        let t = if largest.len() > depth {
            let mut sorted = largest.clone();
            *sorted.select_nth_unstable_by(depth - 1, |a, b| b.total_cmp(a)).1
        } else {
            0.0
        };
        for (g, &best) in largest.iter().enumerate() {
            if best == 0.0 || best < t {
                continue;
            }
            let start = g * GROUP;
            for (&score, &id) in
                values[start..(start + GROUP).min(values.len())].iter().zip(&index.ids[start..])
            {
                if score == 0.0 || score < floor {
                    continue;
                }
                let hit = Hit(score, id);
                if kept.len() < depth {
                    kept.push(std::cmp::Reverse(hit));
                } else if let Some(mut worst) = kept.peek_mut()
                    && hit > worst.0
                {
                    *worst = std::cmp::Reverse(hit);
                }
                if kept.len() == depth {
                    floor = kept.peek().map_or(floor, |w| w.0.0);
                }
            }
        }
        let mut hits: Vec<Hit> = kept.into_iter().map(|r| r.0).collect();
        hits.sort_unstable_by(|a, b| b.cmp(a));
        hits.into_iter().map(|h| (h.1, h.0)).collect()
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
    fn the_kept_best_are_the_best_of_a_full_sort_ties_included() {
        // Rounds whose texts repeat a few words: many equal scores, at every depth's edge.
        let mut index = Bm25::default();
        for id in 0..400i64 {
            let text = format!("w{} w{} w{} filler", id % 7, id % 11, (id * 13) % 5);
            index.push(1_000 + id * 3, &text);
        }
        for query in ["w1 w2", "w3 filler", "w0 w4 w6", "filler"] {
            let scores = index.scores(query, None);
            let mut all: Vec<(i64, f32)> = scores
                .values
                .iter()
                .zip(&index.ids)
                .filter(|(s, _)| **s > 0.0)
                .map(|(s, id)| (*id, *s))
                .collect();
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for depth in [1, 2, 7, 10, 57, 100, 399, 400, 1_000] {
                let expected: Vec<(i64, f32)> = all.iter().copied().take(depth).collect();
                assert_eq!(scores.top(&index, depth), expected, "{query} at {depth}");
            }
        }
    }

    #[test]
    fn every_score_is_bit_for_bit_the_per_posting_formula() {
        // Lengths and frequencies vary, so there are many kinds; rare words have fewer postings
        // than kinds (scored per posting), common ones more (scored from the kinds' table).
        let mut index = Bm25::default();
        let mut texts = Vec::new();
        for id in 0..300i64 {
            let words: Vec<String> =
                (0..(3 + id % 17)).map(|j| format!("w{}", (id * 7 + j * j) % (5 + j % 23))).collect();
            let text = words.join(" ");
            index.push(id, &text);
            texts.push(text);
        }
        let avg = index.total_len as f32 / 300.0;
        for query in ["w0 w1", "w3 w17 w21", "w4 w4 w9", "w20 w2"] {
            let got = index.scores(query, None);
            let mut expected = vec![0.0f32; 300];
            for &term in &index.query_terms(query) {
                let idf = index.idf(term) * 1.0;
                for (d, text) in texts.iter().enumerate() {
                    let mut tf = 0u32;
                    words(text, |w| tf += u32::from(index.seen.get(w) == Some(&term)));
                    if tf > 0 {
                        let tf = tf as f32;
                        let norm = K1 * (1.0 - B + B * index.lens[d] as f32 / avg);
                        expected[d] += idf * tf * (K1 + 1.0) / (tf + norm);
                    }
                }
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.values[..300]), bits(&expected), "{query}");
        }
        let counts: Vec<usize> = index.postings.iter().map(Vec::len).collect();
        assert!(
            counts.iter().any(|&c| c < index.kinds.len()) && counts.iter().any(|&c| c >= index.kinds.len())
        );
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
