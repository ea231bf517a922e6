//! The one scoring function and exact top-k.
//!
//! A round's dense score is `cosine + time_weight · time_match`, where `time_match` is 1 when the
//! round's date falls in the question's window. Optionally (`Config::rrf_k`) the dense ranking is
//! fused with the BM25 ranking, and with the BM25 ranking of the question expanded by the first
//! fusion's best rounds, by reciprocal rank ([`fuse`]). Every round of the user is considered, so the
//! top k is exact. Ties go to the older insertion (lower id), so equal inputs give equal rankings.
//!
//! The scan runs over byte-quantized copies of the vectors (a quarter of the memory traffic),
//! then rescores in full precision every candidate that the quantization error could have
//! misplaced. The result is the same top k, with the same scores, as a full-precision scan.
//! The first pass streams: it reads each entry once, keeps a running lower bound of the k-th
//! best owner's approximate score, and keeps only the entries near enough to it; a large index
//! is split into contiguous parts scanned on several threads, whose bounds and kept entries are
//! merged (any valid bound gives the same exact result).

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::embed::vector::{cosine, quantize, quantize_into};
use crate::model::time::DateWindow;
use crate::store::UserVectors;

mod scan;

#[cfg(test)]
use scan::PARALLEL_CHUNK;
use scan::{Leaders, Pass, prefetch};

/// How one candidate scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The round's row id.
    pub id: i64,
    /// Final score.
    pub score: f32,
    /// Cosine between the question and the round.
    pub cosine: f32,
    /// Whether the round's date is in the question's window.
    pub time_match: bool,
    /// Its places in the lists a fused ranking merged (all 0 until one sets them).
    pub why: Why,
}

/// A candidate's 1-based places in the lists a ranking merged; 0: not in that list (or a ranking
/// that did not set it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Why {
    /// In the dense (embedding) ranking.
    pub dense: u16,
    /// In the word (BM25) ranking of its kind.
    pub words: u16,
    /// In the dense ranking of the rounds inside the question's time window.
    pub window: u16,
    /// In the word ranking of the question expanded by feedback.
    pub feedback: u16,
}

/// What the dense scans on one thread have read, counted for benchmarks (`mnemon bench` prints
/// it per query beside the machine's memory bandwidth); the library never reads it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ScanStats {
    /// Scans run (one per ranked list of a question).
    pub scans: u64,
    /// Entries the first pass scored from their bytes.
    pub scanned: u64,
    /// Entries scored in full precision (the second pass, or every entry of a small scope).
    pub rescored: u64,
    /// Bytes those passes read: per scanned entry its quantized vector, scale, salience and
    /// day; per rescored entry its `f32` vector.
    pub bytes: u64,
}

thread_local! {
    static STATS: Cell<ScanStats> = const { Cell::new(ScanStats { scans: 0, scanned: 0, rescored: 0, bytes: 0 }) };
}

/// The scan statistics of this thread since the last call, reset.
pub fn take_scan_stats() -> ScanStats {
    STATS.with(Cell::take)
}

/// Counts a scan (`scan`: a top-k pass, not a lookup of one owner) of `scanned` entries from their
/// bytes and `rescored` in full precision, of `dim` dimensions.
fn counted(scan: bool, scanned: usize, rescored: usize, dim: usize) {
    STATS.with(|c| {
        let mut s = c.get();
        s.scans += u64::from(scan);
        s.scanned += scanned as u64;
        s.rescored += rescored as u64;
        s.bytes += (scanned * (dim + 12) + rescored * dim * 4) as u64;
        c.set(s);
    });
}

/// The final score of a candidate.
pub fn score(cosine: f32, time_match: bool, time_weight: f32) -> f32 {
    if time_match { cosine + time_weight } else { cosine }
}

/// Orders by score descending, then id ascending.
pub(crate) fn better(a: &Scored, b: &Scored) -> Ordering {
    best_first((a.score, a.id), (b.score, b.id))
}

/// The ranking order of `(score, id)`: score descending, then id ascending.
pub(crate) fn best_first(a: (f32, i64), b: (f32, i64)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Slack for float rounding in the approximate scores and in `cosine` itself.
const ROUNDING_SLACK: f32 = 1e-4;

/// How a query shapes the dense score beyond the cosine: the time bonus, and memex's recency and importance.
///
/// The base score is `(cosine + time_weight · time_match) · salience`. Two per-query options,
/// both off by default, reshape it: `importance` (a weight `w` in `0..=1`) multiplies it by
/// `(1 − w) + 2w · importance`, neutral at importance 0.5 (what rounds and facts count as); and
/// `recency` blends it with a decay: `α · score + (1 − α) · exp(−λ · age_days)`, the age counted in
/// logical days from the anchor (the question's date, else the scope's logical now).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Shape {
    /// The question's window as day numbers, inclusive.
    pub window: Option<(i32, i32)>,
    pub time_weight: f32,
    pub importance: Option<f32>,
    /// `(α, λ per day, anchor day)`.
    pub recency: Option<(f32, f64, i32)>,
}

impl Shape {
    /// The plain shape: the window and the time weight, no option.
    pub(crate) fn plain(window: Option<DateWindow>, time_weight: f32) -> Shape {
        Shape { window: window.map(|w| w.days()), time_weight, ..Shape::default() }
    }
}

/// One user's records in memory (each round's vector, then the vectors of its facts, and notes),
/// each ranking for its owner (a round, or a note): full precision for rescoring, bytes for the
/// scan.
pub(crate) struct Index {
    dim: usize,
    /// The owner each entry ranks for.
    owners: Vec<i64>,
    days: Vec<i32>,
    saliences: Vec<f32>,
    importances: Vec<f32>,
    data: Vec<f32>,
    bytes: Vec<i8>,
    scales: Vec<f32>,
    max_error_norm: f32,
    max_norm: f32,
    max_importance: f32,
    /// Entries per owner, once some owner has more than one (a fact); empty until then.
    entries: BTreeMap<i64, Vec<usize>>,
    /// Positions over all of `entries`, counted as they are added.
    entry_count: usize,
    /// Whether some owner has more than one entry, or owners arrived out of order.
    grouped: bool,
}

impl Index {
    pub(crate) fn new(vectors: UserVectors, dim: usize) -> Index {
        let n = vectors.ids.len();
        let mut index = Index {
            dim,
            owners: Vec::with_capacity(n),
            days: Vec::with_capacity(n),
            saliences: Vec::with_capacity(n),
            importances: Vec::with_capacity(n),
            data: Vec::new(),
            bytes: Vec::with_capacity(vectors.data.len()),
            scales: Vec::with_capacity(n),
            max_error_norm: 0.0,
            max_norm: 0.0,
            max_importance: 0.0,
            entries: BTreeMap::new(),
            entry_count: 0,
            grouped: false,
        };
        // The vectors stay where they were read: a copy would fault in as much fresh memory again.
        let UserVectors { ids, days, saliences, data } = vectors;
        debug_assert_eq!(data.len(), n * dim);
        for (i, v) in data.chunks_exact(dim).enumerate() {
            index.push_entry(ids[i], days[i], saliences[i], crate::model::note::NEUTRAL_IMPORTANCE, v);
        }
        index.data = data;
        index
    }

    /// About how many bytes the index holds.
    pub(crate) fn approx_bytes(&self) -> usize {
        self.owners.len() * (8 + 4 + 4 + 4 + 4)
            + self.data.len() * 4
            + self.bytes.len()
            + self.entry_count * 8
            + self.entries.len() * 48
    }

    /// Appends every record of `vectors`.
    pub(crate) fn extend(&mut self, vectors: UserVectors) {
        for (i, v) in vectors.data.chunks_exact(self.dim).enumerate() {
            self.push(vectors.ids[i], vectors.days[i], vectors.saliences[i], v);
        }
    }

    /// Appends one record ranking for round `round`, of neutral importance.
    pub(crate) fn push(&mut self, round: i64, day: i32, salience: f32, v: &[f32]) {
        self.push_weighted(round, day, salience, crate::model::note::NEUTRAL_IMPORTANCE, v);
    }

    /// Appends one record ranking for `owner`.
    pub(crate) fn push_weighted(&mut self, owner: i64, day: i32, salience: f32, importance: f32, v: &[f32]) {
        self.push_entry(owner, day, salience, importance, v);
        self.data.extend_from_slice(v);
    }

    /// Appends everything of one record but its full-precision vector.
    fn push_entry(&mut self, owner: i64, day: i32, salience: f32, importance: f32, v: &[f32]) {
        let (scale, error_norm, norm) = quantize_into(v, &mut self.bytes);
        let i = self.owners.len();
        if !self.grouped && self.owners.last().is_some_and(|last| *last >= owner) {
            // The first record that is not a new owner: index every owner's entries from here on.
            self.grouped = true;
            for (j, o) in self.owners.iter().enumerate() {
                self.entries.entry(*o).or_default().push(j);
            }
            self.entry_count = self.owners.len();
        }
        if self.grouped {
            self.entries.entry(owner).or_default().push(i);
            self.entry_count += 1;
        }
        self.owners.push(owner);
        self.days.push(day);
        self.saliences.push(salience);
        self.importances.push(importance);
        self.scales.push(scale);
        self.max_error_norm = self.max_error_norm.max(error_norm);
        self.max_norm = self.max_norm.max(norm);
        self.max_importance = self.max_importance.max(importance);
    }

    /// Whether entry `i` falls in the window's day range.
    fn in_window(&self, i: usize, days: Option<(i32, i32)>) -> bool {
        days.is_some_and(|(start, end)| start <= self.days[i] && self.days[i] <= end)
    }

    /// The shaped score of entry `i` from its base score (unchanged when no option is set).
    fn shaped(&self, i: usize, base: f32, shape: &Shape) -> f32 {
        let mut s = base;
        if let Some(w) = shape.importance {
            s *= (1.0 - w) + 2.0 * w * self.importances[i];
        }
        if let Some((alpha, lambda, anchor)) = shape.recency {
            let age = f64::from((anchor - self.days[i]).max(0));
            s = alpha * s + (1.0 - alpha) * (-lambda * age).exp() as f32;
        }
        s
    }

    /// The full-precision score of entry `i`.
    fn exact(&self, i: usize, query: &[f32], shape: &Shape) -> Scored {
        let cos = cosine(query, &self.data[i * self.dim..(i + 1) * self.dim]);
        let m = self.in_window(i, shape.window);
        Scored {
            id: self.owners[i],
            score: self.shaped(i, score(cos, m, shape.time_weight) * self.saliences[i], shape),
            cosine: cos,
            time_match: m,
            why: Why::default(),
        }
    }

    /// The entries of owner `owner`.
    fn entries_of(&self, owner: i64) -> impl Iterator<Item = usize> + '_ {
        let (grouped, single) = if self.grouped {
            (self.entries.get(&owner).map_or(&[][..], Vec::as_slice), None)
        } else {
            // Owners are appended in increasing order, one entry each.
            (&[][..], self.owners.binary_search(&owner).ok())
        };
        grouped.iter().copied().chain(single)
    }

    /// The exact score of round `round` (its best record's), if it is in the index.
    #[cfg(test)]
    pub(crate) fn score_of(
        &self,
        round: i64,
        query: &[f32],
        window: Option<DateWindow>,
        time_weight: f32,
    ) -> Option<Scored> {
        self.score_of_shaped(round, query, &Shape::plain(window, time_weight), None)
    }

    /// Whether `owner` has an entry `mask` keeps: whether [`score_of_shaped`](Index::score_of_shaped)
    /// finds it.
    pub(crate) fn holds(&self, owner: i64, mask: Option<&[bool]>) -> bool {
        self.entries_of(owner).any(|i| mask.is_none_or(|m| m[i]))
    }

    /// The exact score of `owner` (its best unmasked record's), if it is in the index.
    pub(crate) fn score_of_shaped(
        &self,
        owner: i64,
        query: &[f32],
        shape: &Shape,
        mask: Option<&[bool]>,
    ) -> Option<Scored> {
        let mut rescored = 0;
        let best = self
            .entries_of(owner)
            .filter(|&i| mask.is_none_or(|m| m[i]))
            .map(|i| {
                rescored += 1;
                self.exact(i, query, shape)
            })
            .min_by(better);
        counted(false, 0, rescored, self.dim);
        best
    }

    pub(crate) fn len(&self) -> usize {
        self.owners.len()
    }

    /// Keeps each owner's best entry (first among equals), best first.
    fn best_per_round(scored: impl Iterator<Item = Scored>) -> Vec<Scored> {
        let mut best: BTreeMap<i64, Scored> = BTreeMap::new();
        for s in scored {
            match best.get(&s.id) {
                Some(b) if better(b, &s) != Ordering::Greater => {}
                _ => {
                    best.insert(s.id, s);
                }
            }
        }
        let mut out: Vec<Scored> = best.into_values().collect();
        out.sort_by(better);
        out
    }

    /// The exact top `k` rounds for `query`, best first; a round scores as its best record.
    #[cfg(test)]
    pub(crate) fn top_k(
        &self,
        query: &[f32],
        window: Option<DateWindow>,
        time_weight: f32,
        k: usize,
    ) -> Vec<Scored> {
        self.top_k_shaped(query, &Shape::plain(window, time_weight), k, None)
    }

    /// The exact top `k` owners for `query` under `shape`, among the entries `mask` keeps (all
    /// without one), best first; an owner scores as its best kept entry.
    pub(crate) fn top_k_shaped(
        &self,
        query: &[f32],
        shape: &Shape,
        k: usize,
        mask: Option<&[bool]>,
    ) -> Vec<Scored> {
        self.top_k_beside(query, shape, k, mask, || ()).0
    }

    /// [`top_k_shaped`](Index::top_k_shaped), running `beside` on the caller's thread while
    /// other threads scan (before the scan, when it runs on the caller's thread alone).
    pub(crate) fn top_k_beside<R>(
        &self,
        query: &[f32],
        shape: &Shape,
        k: usize,
        mask: Option<&[bool]>,
        beside: impl FnOnce() -> R,
    ) -> (Vec<Scored>, R) {
        let n = self.len();
        if n == 0 || k == 0 {
            return (Vec::new(), beside());
        }
        let kept = |i: usize| mask.is_none_or(|m| m[i]);
        let exact = |i: usize| self.exact(i, query, shape);
        let owners = match mask {
            None if self.grouped => self.entries.len(),
            None => n,
            Some(m) if self.grouped => self.entries.values().filter(|es| es.iter().any(|&i| m[i])).count(),
            Some(m) => m.iter().filter(|&&b| b).count(),
        };
        if owners <= k {
            let mut rescored = 0;
            let mut all = Self::best_per_round((0..n).filter(|&i| kept(i)).map(|i| {
                rescored += 1;
                exact(i)
            }));
            counted(true, 0, rescored, self.dim);
            all.truncate(k);
            return (all, beside());
        }

        // Pass 1: approximate scores from bytes, keeping each entry that may matter; a large
        // index in ranges shared out among up to `scan_threads` threads.
        //
        // |exact − approx| ≤ |q|·max|e_v| + |e_q|·max|v̂| for every vector (a salience ≤ 1 only
        // shrinks it; the importance factor scales it by at most its largest value; the recency
        // blend scales it by α ≤ 1 and adds the same term to both).
        let q = quantize(query);
        let qnorm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        let factor = shape.importance.map_or(1.0, |w| ((1.0 - w) + 2.0 * w * self.max_importance).max(1.0));
        let bound = (qnorm * self.max_error_norm + q.error_norm * self.max_norm) * factor + ROUNDING_SLACK;
        let pass = Pass { q: &q, shape, k, bound };
        let (parts, done) = self.first_passes(&pass, mask, beside);
        // The k-th best owner's approximate score is at least `kth` (the leaders of all parts,
        // an owner by its best). A true top-k owner's exact score is then at least `kth − bound`,
        // and the entry giving it has an approximate score of at least `kth − 2·bound`.
        let mut leaders = Leaders::new(k, !self.grouped);
        for (part, _) in &parts {
            for &(s, owner) in &part.heap {
                leaders.offer(owner, s);
            }
        }
        let threshold = leaders.kth() - 2.0 * bound;

        // Pass 2: every entry that could set a top-k owner's score, rescored exactly, in
        // decreasing approximate score. The k-th best owner among those rescored bounds the final
        // k-th best exact score from below (it only rises), so once an entry's approximate score
        // plus the bound falls short of it, that entry and every one after it can neither reach
        // nor tie the top k, and are not rescored. Owners take their best entry in index order,
        // as a full scan does.
        let mut pool: Vec<(usize, f32)> =
            parts.iter().flat_map(|(_, kept)| kept).filter(|(_, a)| *a >= threshold).copied().collect();
        pool.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut exact_leaders = Leaders::new(k, !self.grouped);
        let mut scored: Vec<(usize, Scored)> = Vec::with_capacity(2 * k);
        for (j, &(i, approx)) in pool.iter().enumerate() {
            if approx + bound < exact_leaders.kth() {
                break;
            }
            // The next row is read from memory while this one is scored.
            if let Some(&(next, _)) = pool.get(j + 1) {
                prefetch(&self.data[next * self.dim..(next + 1) * self.dim]);
            }
            let s = exact(i);
            exact_leaders.offer(s.id, s.score);
            scored.push((i, s));
        }
        scored.sort_unstable_by_key(|(i, _)| *i);
        let rescored = scored.len();
        let mut candidates = Self::best_per_round(scored.into_iter().map(|(_, s)| s));
        counted(true, n, rescored, self.dim);
        candidates.truncate(k);
        (candidates, done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::fuse::{List, fuse, keep};

    fn vectors(rows: &[[f32; 2]], days: &[i32]) -> Index {
        let v = UserVectors {
            ids: (1..=rows.len() as i64).collect(),
            days: days.to_vec(),
            saliences: vec![1.0; rows.len()],
            data: rows.iter().flatten().copied().collect(),
        };
        Index::new(v, 2)
    }

    #[test]
    fn fusion_rewards_rounds_that_both_lists_rank_high() {
        let s = |id, c| Scored { id, score: c, cosine: c, time_match: false, why: Why::default() };
        let dense = [s(1, 0.9), s(2, 0.8), s(3, 0.7)];
        let dense_of = |id| (id == 9).then(|| s(9, 0.1));
        let fused = fuse(&dense, &[(List::Words, vec![3, 9])], 60, |id| id == 9);
        let got = keep(&fused, 3, &dense, dense_of);
        let ids: Vec<i64> = got.iter().map(|x| x.id).collect();
        // 3: 1/63 + 1/61; 1: 1/61; 2 (dense only) and 9 (lexical only) tie at 1/62: the lower id first.
        assert_eq!(ids, vec![3, 1, 2]);
        assert!((got[0].score - (1.0 / 63.0 + 1.0 / 61.0) as f32).abs() < 1e-7);
        assert_eq!(got[0].cosine, 0.7);
        let ids: Vec<i64> = keep(&fused, 4, &dense, dense_of).iter().map(|x| x.id).collect();
        assert_eq!(ids, vec![3, 1, 2, 9]);
        assert_eq!(keep(&fused, 4, &dense, dense_of)[3].cosine, 0.1);
        // An id the dense index does not hold is left out, whatever its places.
        let ids: Vec<i64> =
            fuse(&dense, &[(List::Words, vec![7, 3])], 60, |_| false).iter().map(|x| x.id).collect();
        assert_eq!(ids, vec![3, 1, 2]);
    }

    #[test]
    fn scans_count_what_they_read() {
        let v = vectors(&[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [1.0, 0.0], [0.8, 0.6]], &[0; 5]);
        take_scan_stats();
        v.top_k(&[1.0, 0.0], None, 0.05, 2);
        let s = take_scan_stats();
        assert_eq!((s.scans, s.scanned), (1, 5));
        assert!((2..=5).contains(&s.rescored), "{s:?}");
        assert_eq!(s.bytes, 5 * (2 + 12) + s.rescored * 2 * 4);
        assert_eq!(take_scan_stats(), ScanStats::default(), "taking resets");
        // A scope no larger than k is scored in full precision only; a lookup is no scan.
        v.top_k(&[1.0, 0.0], None, 0.05, 5);
        v.score_of(3, &[1.0, 0.0], None, 0.05);
        assert_eq!(take_scan_stats(), ScanStats { scans: 1, scanned: 0, rescored: 6, bytes: 6 * 8 });
    }

    #[test]
    fn top_k_is_exact_and_ties_go_to_the_lower_id() {
        let v = vectors(&[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [1.0, 0.0]], &[0, 0, 0, 0]);
        let got: Vec<i64> = v.top_k(&[1.0, 0.0], None, 0.05, 3).iter().map(|s| s.id).collect();
        assert_eq!(got, vec![1, 4, 3]);
    }

    #[test]
    fn time_match_adds_the_weight() {
        let d = crate::model::time::day_number(chrono::NaiveDate::from_ymd_opt(2023, 5, 1).unwrap());
        let v = vectors(&[[1.0, 0.0], [0.96, 0.28]], &[d - 10, d]);
        let w = DateWindow {
            start: chrono::NaiveDate::from_ymd_opt(2023, 4, 30).unwrap(),
            end: chrono::NaiveDate::from_ymd_opt(2023, 5, 2).unwrap(),
        };
        let got = v.top_k(&[1.0, 0.0], Some(w), 0.05, 2);
        assert_eq!(got[0].id, 2);
        assert!(got[0].time_match && !got[1].time_match);
        assert!((got[0].score - (0.96 + 0.05)).abs() < 1e-6);
        let plain = v.top_k(&[1.0, 0.0], None, 0.05, 2);
        assert_eq!(plain[0].id, 1);
    }

    /// The brute-force top `k` from every scored record, already sorted best first: each owner's
    /// first (best) record.
    fn best_first_per_owner(all: Vec<Scored>, k: usize) -> Vec<Scored> {
        let mut out: Vec<Scored> = Vec::new();
        for s in all {
            if !out.iter().any(|b| b.id == s.id) {
                out.push(s);
            }
        }
        out.truncate(k);
        out
    }

    #[test]
    fn a_scan_split_across_threads_equals_brute_force() {
        let dim = 32;
        let n = 2 * PARALLEL_CHUNK + 37;
        let index = Index::new(
            UserVectors {
                ids: (1..=n as i64).collect(),
                days: (0..n as i32).map(|i| 700_000 + i % 90).collect(),
                saliences: (0..n).map(|i| [1.0, 0.5][i % 2]).collect(),
                data: (0..n as u64).flat_map(|i| unit(i + 1, dim)).collect(),
            },
            dim,
        );
        let query = unit(424_242, dim);
        let every_third: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let windowed = Shape { window: Some((700_010, 700_020)), time_weight: 0.05, ..Shape::default() };
        for (mask, shape) in [(None, Shape::plain(None, 0.05)), (Some(&every_third[..]), windowed)] {
            take_scan_stats();
            let got = index.top_k_shaped(&query, &shape, 10, mask);
            assert_eq!(take_scan_stats().scanned, n as u64);
            let mut all: Vec<Scored> = (0..n)
                .filter(|&i| mask.is_none_or(|m| m[i]))
                .map(|i| index.exact(i, &query, &shape))
                .collect();
            all.sort_by(better);
            all.truncate(10);
            assert_eq!(got, all);
        }
    }

    /// A deterministic pseudo-random unit vector.
    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        crate::embed::vector::normalize(&mut v);
        v
    }

    proptest::proptest! {
        #[test]
        fn with_facts_a_round_ranks_as_its_best_record_exactly(
            seed in 0u64..1_000, n in 1usize..200, facts in 0usize..200, k in 1usize..30,
        ) {
            let dim = 32;
            let rounds: Vec<Vec<f32>> = (0..n as u64).map(|i| unit(seed * 1000 + i, dim)).collect();
            let mut index = Index::new(
                UserVectors {
                    ids: (1..=n as i64).collect(),
                    days: vec![0; n],
                    saliences: vec![1.0; n],
                    data: rounds.concat(),
                },
                dim,
            );
            // (owner, salience, vector) of each fact, owners spread over the rounds.
            let extra: Vec<(i64, f32, Vec<f32>)> = (0..facts as u64)
                .map(|j| {
                    let owner = (j * 7 + seed) % n as u64 + 1;
                    (owner as i64, [1.0, 0.5, 0.25][(j % 3) as usize], unit(seed * 5000 + 999 + j, dim))
                })
                .collect();
            for (owner, sal, v) in &extra {
                index.push(*owner, 0, *sal, v);
            }
            let query = unit(seed + 11, dim);
            let got = index.top_k(&query, None, 0.05, k);
            let mut all: Vec<Scored> = rounds
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let c = cosine(&query, v);
                    Scored { id: i as i64 + 1, score: c, cosine: c, time_match: false, why: Why::default() }
                })
                .chain(extra.iter().map(|(o, sal, v)| {
                    let c = cosine(&query, v);
                    Scored { id: *o, score: c * sal, cosine: c, time_match: false, why: Why::default() }
                }))
                .collect();
            all.sort_by(better);
            let brute = best_first_per_owner(all, k);
            proptest::prop_assert_eq!(&got, &brute);
            for s in &got {
                proptest::prop_assert_eq!(index.score_of(s.id, &query, None, 0.05), Some(*s));
            }
        }

        #[test]
        fn the_quantized_scan_returns_exactly_the_full_precision_top_k(
            seed in 0u64..1_000, n in 1usize..400, k in 1usize..30, near in 0usize..5,
        ) {
            let dim = 64;
            let mut rows: Vec<Vec<f32>> = (0..n as u64).map(|i| unit(seed * 1000 + i, dim)).collect();
            // Near-ties: copies of one row with tiny perturbations.
            for j in 0..near.min(n) {
                let mut v = rows[0].clone();
                v[j] += 1e-4;
                crate::embed::vector::normalize(&mut v);
                rows[n - 1 - j] = v;
            }
            let days: Vec<i32> = (0..n as i32).map(|i| i % 7).collect();
            let index = Index::new(
                UserVectors {
                    ids: (1..=n as i64).collect(),
                    days: days.clone(),
                    saliences: vec![1.0; n],
                    data: rows.concat(),
                },
                dim,
            );
            let query = unit(seed + 7, dim);
            let window = DateWindow {
                start: chrono::NaiveDate::from_num_days_from_ce_opt(2).unwrap(),
                end: chrono::NaiveDate::from_num_days_from_ce_opt(3).unwrap(),
            };
            for w in [None, Some(window)] {
                let got = index.top_k(&query, w, 0.05, k);
                let mut brute: Vec<Scored> = (0..n)
                    .map(|i| {
                        let cos = cosine(&query, &rows[i]);
                        let m = w.is_some() && (2..=3).contains(&days[i]);
                        Scored { id: i as i64 + 1, score: score(cos, m, 0.05), cosine: cos, time_match: m, why: Why::default() }
                    })
                    .collect();
                brute.sort_by(better);
                brute.truncate(k);
                proptest::prop_assert_eq!(got, brute);
            }
        }

        #[test]
        fn a_masked_shaped_scan_equals_brute_force_over_the_kept_entries(
            seed in 0u64..1_000, n in 1usize..300, k in 1usize..30, extra in 0usize..100,
            w in proptest::option::of(0.0f32..=1.0), alpha in proptest::option::of(0.0f32..=1.0),
            keep_every in 1usize..5,
        ) {
            let dim = 48;
            let rows: Vec<Vec<f32>> = (0..n as u64).map(|i| unit(seed * 1000 + i, dim)).collect();
            let mut index = Index::new(
                UserVectors {
                    ids: (1..=n as i64).collect(),
                    days: (0..n as i32).map(|i| 700_000 + i % 40).collect(),
                    saliences: vec![1.0; n],
                    data: rows.concat(),
                },
                dim,
            );
            // Extra records: some for existing rounds (facts), some owners of their own (notes).
            let mut entries: Vec<(i64, i32, f32, f32, Vec<f32>)> = rows
                .iter()
                .enumerate()
                .map(|(i, v)| (i as i64 + 1, 700_000 + i as i32 % 40, 1.0, 0.5, v.clone()))
                .collect();
            for j in 0..extra as u64 {
                let owner = if j % 2 == 0 { (j * 7 + seed) as i64 % n as i64 + 1 } else { (1 << 48) + j as i64 };
                let (day, sal, imp) = (700_000 + (j % 50) as i32, [1.0, 0.5][(j % 2) as usize], (j % 11) as f32 / 10.0);
                let v = unit(seed * 7000 + 17 + j, dim);
                index.push_weighted(owner, day, sal, imp, &v);
                entries.push((owner, day, sal, imp, v));
            }
            let mask: Vec<bool> = (0..entries.len()).map(|i| i % keep_every == 0).collect();
            let shape = Shape {
                window: Some((700_010, 700_020)),
                time_weight: 0.05,
                importance: w,
                recency: alpha.map(|a| (a, std::f64::consts::LN_2 / 30.0, 700_045)),
            };
            let query = unit(seed + 3, dim);
            let got = index.top_k_shaped(&query, &shape, k, Some(&mask));
            let mut all: Vec<Scored> = entries
                .iter()
                .enumerate()
                .filter(|(i, _)| mask[*i])
                .map(|(_, (owner, day, sal, imp, v))| {
                    let c = cosine(&query, v);
                    let m = (700_010..=700_020).contains(day);
                    let mut s = score(c, m, 0.05) * sal;
                    if let Some(w) = w {
                        s *= (1.0 - w) + 2.0 * w * imp;
                    }
                    if let Some(a) = alpha {
                        let age = f64::from((700_045 - day).max(0));
                        s = a * s + (1.0 - a) * (-(std::f64::consts::LN_2 / 30.0) * age).exp() as f32;
                    }
                    Scored { id: *owner, score: s, cosine: c, time_match: m, why: Why::default() }
                })
                .collect();
            all.sort_by(better);
            let brute = best_first_per_owner(all, k);
            proptest::prop_assert_eq!(&got, &brute);
            for s in &got {
                proptest::prop_assert_eq!(index.score_of_shaped(s.id, &query, &shape, Some(&mask)), Some(*s));
            }
        }
    }
}
