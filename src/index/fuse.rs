//! Reciprocal-rank fusion: the dense ranking and the word and time-window rankings, each record
//! scored by its places in the lists it is in.

use super::rank::{Scored, Why, best_first};

/// Which list a fused ranking's extra list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    /// A word (BM25) ranking.
    Words,
    /// The rounds inside the question's window, in dense order.
    Window,
    /// The word ranking of the question expanded by the first ranking's best rounds.
    Feedback,
}

/// A 1-based place, saturating.
pub(crate) fn place(rank: usize) -> u16 {
    u16::try_from(rank + 1).unwrap_or(u16::MAX)
}

/// Candidates each list contributes to a fusion (more when more are asked for).
pub(crate) const FUSION_DEPTH: usize = 100;

/// One owner of a fused ranking: its fused value, its places, and where the dense ranking has
/// it (its full score is computed only for the owners a caller keeps, see [`Fused::scored`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fused {
    pub(crate) id: i64,
    /// `Σ 1 / (k + place)` over the lists the owner is in, rounded once to `f32`.
    value: f32,
    why: Why,
    /// Its place in the dense ranking, if it is there.
    dense: Option<usize>,
}

/// Reciprocal-rank fusion of the dense ranking (best first) and lexical rankings (owner ids,
/// best first; one per record kind, each with its own word statistics): `Σ 1 / (k + rank)` over
/// the lists an owner appears in, every owner ranked, best first (ties to the lower id). An id
/// found only lexically is kept when `holds` says the dense index has it.
pub(crate) fn fuse(
    dense: &[Scored],
    lists: &[(List, Vec<i64>)],
    k: u32,
    holds: impl Fn(i64) -> bool,
) -> Vec<Fused> {
    // (id, summed value, places, dense place), each owner once in the order first met; the
    // sums run in the same order (dense, then each list) for every owner.
    let mut acc: Vec<(i64, f64, Why, Option<usize>)> = Vec::with_capacity(dense.len() * (lists.len() + 1));
    let mut at: std::collections::HashMap<i64, usize, foldhash::fast::FixedState> =
        std::collections::HashMap::with_capacity_and_hasher(
            acc.capacity(),
            foldhash::fast::FixedState::default(),
        );
    let share = |rank: usize| 1.0 / (f64::from(k) + rank as f64 + 1.0);
    for (rank, s) in dense.iter().enumerate() {
        let p = *at.entry(s.id).or_insert_with(|| {
            acc.push((s.id, 0.0, Why::default(), Some(rank)));
            acc.len() - 1
        });
        let e = &mut acc[p];
        e.1 += share(rank);
        e.2.dense = place(rank);
    }
    for (list, ids) in lists {
        for (rank, &id) in ids.iter().enumerate() {
            let p = match at.get(&id) {
                Some(&p) => p,
                None if holds(id) => {
                    acc.push((id, 0.0, Why::default(), None));
                    at.insert(id, acc.len() - 1);
                    acc.len() - 1
                }
                None => continue,
            };
            let e = &mut acc[p];
            e.1 += share(rank);
            match list {
                List::Words => e.2.words = place(rank),
                List::Window => e.2.window = place(rank),
                List::Feedback => e.2.feedback = place(rank),
            }
        }
    }
    let mut out: Vec<Fused> =
        acc.into_iter().map(|(id, f, why, dense)| Fused { id, value: f as f32, why, dense }).collect();
    out.sort_unstable_by(|a, b| best_first((a.value, a.id), (b.value, b.id)));
    out
}

impl Fused {
    /// The owner as a scored result: its dense score (from `dense`, the ranking it was fused
    /// from, or else from `dense_of`) with the fused value as `score` and its places.
    pub(crate) fn scored(
        &self,
        dense: &[Scored],
        dense_of: impl Fn(i64) -> Option<Scored>,
    ) -> Option<Scored> {
        let base = match self.dense {
            Some(rank) => dense[rank],
            None => dense_of(self.id)?,
        };
        Some(Scored { score: self.value, why: self.why, ..base })
    }
}

/// The best `top` of a fused ranking as scored results (see [`Fused::scored`]).
pub(crate) fn keep(
    fused: &[Fused],
    top: usize,
    dense: &[Scored],
    dense_of: impl Fn(i64) -> Option<Scored>,
) -> Vec<Scored> {
    fused.iter().take(top).filter_map(|f| f.scored(dense, &dense_of)).collect()
}
