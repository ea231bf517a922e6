//! The first pass of the exact scan: approximate scores from the byte copies, a running bound of
//! the k-th best owner, and the entries near enough to it, over contiguous ranges shared out among
//! threads. The second pass (in the parent module) rescores what it keeps.

use super::{Index, Shape, score};
use crate::embed::vector::{Quantized, dot_i8_rows};

/// Entries each thread of a scan takes at least: a scope of fewer than twice this many is scanned
/// on the caller's thread alone (a thread costs tens of microseconds; this many entries, about a
/// millisecond).
pub(super) const PARALLEL_CHUNK: usize = 1 << 15;

/// Threads a large scan may use: the machine's available parallelism, read once, at most four
/// (two already reach this machine's memory bandwidth on a scan).
fn scan_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
}
impl Index {
    /// The first pass over entries `range`: every entry's approximate score from its bytes, in
    /// blocks small enough to stay in cache, keeping a running lower bound of the k-th best
    /// owner's approximate score, and every entry whose approximate score is within `2·bound` of
    /// that bound when it is read. The bound only rises, so every entry within `2·bound` of the
    /// final one is among those kept.
    ///
    /// One thread's leaders and kept entries carry over from range to range, as if its ranges
    /// were one.
    fn first_pass(&self, range: std::ops::Range<usize>, pass: &Pass, mask: Option<&[bool]>, part: &mut Part) {
        const BLOCK: usize = 1024;
        let (q, shape) = (pass.q, pass.shape);
        let plain = mask.is_none() && shape.importance.is_none() && shape.recency.is_none();
        // The window as an inclusive day range; without one, a range no day is in.
        let (lo, hi) = shape.window.unwrap_or((i32::MAX, i32::MIN));
        let (leaders, kept) = (&mut part.0, &mut part.1);
        let mut dots = Vec::with_capacity(BLOCK);
        let mut start = range.start;
        while start < range.end {
            let end = (start + BLOCK).min(range.end);
            dot_i8_rows(&q.q, &self.bytes[start * self.dim..end * self.dim], &mut dots);
            let mut floor = leaders.kth() - 2.0 * pass.bound;
            let rows = dots
                .iter()
                .zip(&self.scales[start..end])
                .zip(&self.saliences[start..end])
                .zip(&self.days[start..end])
                .enumerate();
            for (j, (((&dot, &scale), &salience), &day)) in rows {
                let i = start + j;
                if !plain && mask.is_some_and(|m| !m[i]) {
                    continue;
                }
                let base =
                    score(q.scale * scale * dot as f32, lo <= day && day <= hi, shape.time_weight) * salience;
                let approx = if plain { base } else { self.shaped(i, base, shape) };
                if approx >= floor {
                    kept.push((i, approx));
                    if leaders.offer(self.owners[i], approx) {
                        floor = leaders.kth() - 2.0 * pass.bound;
                    }
                }
            }
            start = end;
        }
    }

    /// The first pass over every entry, its ranges shared out among up to `scan_threads`
    /// threads, while the caller's thread runs `beside` before taking ranges of its own: one
    /// part per thread.
    pub(super) fn first_passes<R>(
        &self,
        pass: &Pass,
        mask: Option<&[bool]>,
        beside: impl FnOnce() -> R,
    ) -> (Vec<Part>, R) {
        let n = self.len();
        let new_part = || (Leaders::new(pass.k, !self.grouped), Vec::new());
        let threads = (n / PARALLEL_CHUNK).clamp(1, scan_threads());
        if threads == 1 {
            let done = beside();
            let mut part = new_part();
            self.first_pass(0..n, pass, mask, &mut part);
            return (vec![part], done);
        }
        // Ranges are taken in order by whichever thread is free, so a caller busy with `beside`
        // takes fewer. Which thread scans which range does not change the result: the second
        // pass keeps exactly the entries within `2·bound` of the leaders of every part together.
        let ranges = n.div_ceil(SCAN_RANGE);
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let scan = |part: &mut Part| loop {
            let r = taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if r >= ranges {
                break;
            }
            self.first_pass(r * SCAN_RANGE..((r + 1) * SCAN_RANGE).min(n), pass, mask, part);
        };
        std::thread::scope(|s| {
            let others: Vec<_> = (1..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut part = new_part();
                        scan(&mut part);
                        part
                    })
                })
                .collect();
            let done = beside();
            let mut parts = vec![new_part()];
            scan(&mut parts[0]);
            // A scan thread only computes; were one to panic, so does the caller.
            parts.extend(
                others.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
            );
            (parts, done)
        })
    }
}

/// Asks the CPU to bring `row` into its caches (a hint: nothing else changes).
#[inline]
pub(super) fn prefetch(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in row.chunks(16) {
        // SAFETY: a prefetch reads nothing into the program and cannot fault; the address is
        // inside `row`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast())
        };
    }
}

/// One scanning thread's leaders and kept entries `(entry, approximate score)`.
pub(super) type Part = (Leaders, Vec<(usize, f32)>);

/// Entries a scanning thread takes at a time.
const SCAN_RANGE: usize = 1 << 13;

/// What one first pass needs besides its range.
pub(super) struct Pass<'a> {
    pub(super) q: &'a Quantized,
    pub(super) shape: &'a Shape,
    pub(super) k: usize,
    /// The bound on `|exact − approx|` of every entry.
    pub(super) bound: f32,
}

/// The best `k` distinct owners seen so far by approximate score (an owner by its best entry),
/// in a min-heap: its root is a lower bound of the k-th best owner's score over everything
/// offered, and over everything that contains it.
pub(super) struct Leaders {
    k: usize,
    /// Whether every owner is offered at most once (an index of one entry per owner): then no
    /// offer needs to look for its owner among the leaders.
    distinct: bool,
    /// `(score, owner)`, each no greater than its children.
    pub(super) heap: Vec<(f32, i64)>,
}

impl Leaders {
    pub(super) fn new(k: usize, distinct: bool) -> Leaders {
        Leaders { k, distinct, heap: Vec::with_capacity(k) }
    }

    /// The least leader's score once there are `k`; negative infinity before.
    #[inline]
    pub(super) fn kth(&self) -> f32 {
        match self.heap.first() {
            Some(&(s, _)) if self.heap.len() == self.k => s,
            _ => f32::NEG_INFINITY,
        }
    }

    /// Offers `owner` at `score`; whether the bound rose.
    #[inline]
    pub(super) fn offer(&mut self, owner: i64, score: f32) -> bool {
        let before = self.kth();
        if score <= before {
            return false;
        }
        let known = if self.distinct { None } else { self.heap.iter().position(|&(_, o)| o == owner) };
        match known {
            Some(j) if score <= self.heap[j].0 => return false,
            // A higher score moves a leader down the heap, never up.
            Some(j) => {
                self.heap[j].0 = score;
                self.sift_down(j);
            }
            None if self.heap.len() < self.k => {
                self.heap.push((score, owner));
                self.sift_up(self.heap.len() - 1);
            }
            None => {
                self.heap[0] = (score, owner);
                self.sift_down(0);
            }
        }
        self.kth() > before
    }

    fn sift_up(&mut self, mut j: usize) {
        while j > 0 {
            let parent = (j - 1) / 2;
            if self.heap[j].0 >= self.heap[parent].0 {
                break;
            }
            self.heap.swap(j, parent);
            j = parent;
        }
    }

    fn sift_down(&mut self, mut j: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * j + 1, 2 * j + 2);
            let mut least = j;
            if l < n && self.heap[l].0 < self.heap[least].0 {
                least = l;
            }
            if r < n && self.heap[r].0 < self.heap[least].0 {
                least = r;
            }
            if least == j {
                break;
            }
            self.heap.swap(j, least);
            j = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn leaders_hold_the_kth_best_owner_score() {
        let mut x = 7u64;
        for n in [1usize, 2, 10, 257] {
            // Owners repeat and scores tie: a few values over a few owners.
            let offers: Vec<(i64, f32)> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (((x >> 20) % 40) as i64, ((x >> 40) % 50) as f32 / 7.0 - 3.0)
                })
                .collect();
            let mut best: BTreeMap<i64, f32> = BTreeMap::new();
            for &(o, s) in &offers {
                let b = best.entry(o).or_insert(s);
                *b = b.max(s);
            }
            let mut owners: Vec<f32> = best.into_values().collect();
            owners.sort_by(|a, b| b.total_cmp(a));
            for k in [1, 2, 5, 40, 41] {
                let mut leaders = Leaders::new(k, false);
                for &(o, s) in &offers {
                    leaders.offer(o, s);
                }
                let want = owners.get(k - 1).copied().unwrap_or(f32::NEG_INFINITY);
                assert_eq!(leaders.kth().to_bits(), want.to_bits(), "n {n} k {k}");
                // Distinct owners need no search: the same bound over each owner's best alone.
                let mut distinct = Leaders::new(k, true);
                for (o, s) in owners.iter().enumerate() {
                    distinct.offer(o as i64, *s);
                }
                assert_eq!(distinct.kth().to_bits(), want.to_bits(), "n {n} k {k}, distinct");
            }
        }
    }
}
