//! The one scoring function and exact top-k.
//!
//! A round's score is `cosine + time_weight · time_match`, where `time_match` is 1 when the
//! round's date falls in the question's window. Every candidate is scored (an exact scan over the
//! user's vectors, kept in memory), so the top k is exact. Ties go to the older insertion (lower
//! id), so equal inputs give equal rankings.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::embed::vector::cosine;
use crate::store::UserVectors;
use crate::time::DateWindow;

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
}

/// Days since 0001-01-01 (CE day 1), as stored per round.
pub(crate) fn day_number(date: chrono::NaiveDate) -> i32 {
    use chrono::Datelike;
    date.num_days_from_ce()
}

/// The final score of a candidate.
pub fn score(cosine: f32, time_match: bool, time_weight: f32) -> f32 {
    if time_match {
        cosine + time_weight
    } else {
        cosine
    }
}

/// Orders by score descending, then id ascending.
fn better(a: &Scored, b: &Scored) -> Ordering {
    b.score.total_cmp(&a.score).then(a.id.cmp(&b.id))
}

struct HeapItem(Scored);

impl PartialEq for HeapItem {
    fn eq(&self, other: &Self) -> bool {
        better(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapItem {
    // The heap's top is the worst kept candidate.
    fn cmp(&self, other: &Self) -> Ordering {
        better(&self.0, &other.0)
    }
}

/// The exact top `k` of a user's rounds for `query`, best first.
pub(crate) fn top_k(
    vectors: &UserVectors,
    dim: usize,
    query: &[f32],
    window: Option<DateWindow>,
    time_weight: f32,
    k: usize,
) -> Vec<Scored> {
    let (start, end) = window.map_or((i32::MAX, i32::MIN), |w| (day_number(w.start), day_number(w.end)));
    let mut heap: BinaryHeap<HeapItem> = BinaryHeap::with_capacity(k + 1);
    for (i, row) in vectors.data.chunks_exact(dim).enumerate() {
        let cos = cosine(query, row);
        let day = vectors.days[i];
        let time_match = start <= day && day <= end;
        let item = Scored {
            id: vectors.ids[i],
            score: score(cos, time_match, time_weight),
            cosine: cos,
            time_match,
        };
        if heap.len() < k {
            heap.push(HeapItem(item));
        } else if let Some(worst) = heap.peek() {
            if better(&item, &worst.0) == Ordering::Less {
                heap.pop();
                heap.push(HeapItem(item));
            }
        }
    }
    let mut out: Vec<Scored> = heap.into_iter().map(|h| h.0).collect();
    out.sort_by(better);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(rows: &[[f32; 2]], days: &[i32]) -> UserVectors {
        UserVectors {
            ids: (1..=rows.len() as i64).collect(),
            days: days.to_vec(),
            data: rows.iter().flatten().copied().collect(),
        }
    }

    #[test]
    fn top_k_is_exact_and_ties_go_to_the_lower_id() {
        let v = vectors(&[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [1.0, 0.0]], &[0, 0, 0, 0]);
        let got: Vec<i64> = top_k(&v, 2, &[1.0, 0.0], None, 0.05, 3).iter().map(|s| s.id).collect();
        assert_eq!(got, vec![1, 4, 3]);
    }

    #[test]
    fn time_match_adds_the_weight() {
        let d = day_number(chrono::NaiveDate::from_ymd_opt(2023, 5, 1).unwrap());
        let v = vectors(&[[1.0, 0.0], [0.96, 0.28]], &[d - 10, d]);
        let w = DateWindow {
            start: chrono::NaiveDate::from_ymd_opt(2023, 4, 30).unwrap(),
            end: chrono::NaiveDate::from_ymd_opt(2023, 5, 2).unwrap(),
        };
        let got = top_k(&v, 2, &[1.0, 0.0], Some(w), 0.05, 2);
        assert_eq!(got[0].id, 2);
        assert!(got[0].time_match && !got[1].time_match);
        assert!((got[0].score - (0.96 + 0.05)).abs() < 1e-6);
        let plain = top_k(&v, 2, &[1.0, 0.0], None, 0.05, 2);
        assert_eq!(plain[0].id, 1);
    }
}
