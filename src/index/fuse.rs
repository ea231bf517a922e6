//! Reciprocal-rank fusion: the dense ranking and the word and time-window rankings, each record
//! scored by its places in the lists it is in.

use super::rank::{Scored, better};

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

/// Reciprocal-rank fusion of the dense ranking (best first) and lexical rankings (owner ids,
/// best first; one per record kind, each with its own word statistics): `Σ 1 / (k + rank)` over
/// the lists an owner appears in. Returns the top `top` with the fused value as `score`, ties to
/// the lower id; `dense_of` gives the dense score of an owner found only lexically.
pub(crate) fn fuse(
    dense: &[Scored],
    lists: &[(List, Vec<i64>)],
    k: u32,
    top: usize,
    dense_of: impl Fn(i64) -> Option<Scored>,
) -> Vec<Scored> {
    let mut fused: std::collections::BTreeMap<i64, (f64, Scored)> = std::collections::BTreeMap::new();
    for (rank, s) in dense.iter().enumerate() {
        let e = fused.entry(s.id).or_insert((0.0, *s));
        e.0 += 1.0 / (f64::from(k) + rank as f64 + 1.0);
        e.1.why.dense = place(rank);
    }
    for (list, ids) in lists {
        for (rank, id) in ids.iter().enumerate() {
            let Some(base) = fused.get(id).map(|e| e.1).or_else(|| dense_of(*id)) else { continue };
            let e = fused.entry(*id).or_insert((0.0, base));
            e.0 += 1.0 / (f64::from(k) + rank as f64 + 1.0);
            match list {
                List::Words => e.1.why.words = place(rank),
                List::Window => e.1.why.window = place(rank),
                List::Feedback => e.1.why.feedback = place(rank),
            }
        }
    }
    let mut out: Vec<Scored> = fused.into_values().map(|(f, s)| Scored { score: f as f32, ..s }).collect();
    out.sort_by(better);
    out.truncate(top);
    out
}
