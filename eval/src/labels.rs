//! What a search score says about relevance: for every question, the cosine between the question
//! and each round of its own haystack (its evidence rounds, and the others) and each round of
//! another user's haystack (the next one: unrelated by construction), as the read path computes
//! it (a round's cosine is its best record's). The report gives each class's percentiles, and
//! how the pairs of each class fall into the relevance labels under a map from cosine to score,
//! so that the map's anchors are chosen on one half of the haystacks and checked on the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use mnemon::context::Relevance;
use mnemon::embed::Embedder;
use mnemon::{Memory, Query, Result, Timestamp};

use crate::data::{self, Benchmark};

/// The classes of (question, round) pairs.
pub const CLASSES: [&str; 3] = ["evidence", "same user, not evidence", "other user"];

/// Cosines of one class of pairs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Class {
    /// Every pair's cosine, ascending.
    pub cosines: Vec<f32>,
}

impl Class {
    /// The `p`-th percentile (0..=100), nearest rank.
    pub fn percentile(&self, p: f32) -> f32 {
        if self.cosines.is_empty() {
            return f32::NAN;
        }
        let rank = ((p / 100.0) * (self.cosines.len() - 1) as f32).round() as usize;
        self.cosines[rank.min(self.cosines.len() - 1)]
    }

    /// How many pairs get each label when `score` maps a cosine to a score.
    pub fn labels(&self, score: impl Fn(f32) -> f32) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for &c in &self.cosines {
            *out.entry(Relevance::of(score(c)).as_str()).or_default() += 1;
        }
        out
    }
}

/// The pairs of one half of the haystacks (`A`: even positions, `B`: odd ones).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Half {
    /// Questions measured.
    pub questions: usize,
    /// Pairs by class (in [`CLASSES`] order).
    pub classes: [Class; 3],
}

/// Both halves.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LabelsReport {
    /// Haystacks at even positions.
    pub a: Half,
    /// Haystacks at odd positions.
    pub b: Half,
}

fn store(embedder: &Arc<dyn Embedder>, path: &Path, haystack: &data::Haystack) -> Result<Memory> {
    let memory = Memory::builder(path).embedder(embedder.clone()).open()?;
    for session in haystack.messages.chunk_by(|a, b| a.session == b.session) {
        memory.add(session, &haystack.user)?;
    }
    Ok(memory)
}

/// Every round's cosine to the question, by round key (at most 1000 rounds).
fn cosines(memory: &Memory, user: &str, q: &data::Question) -> Result<Vec<(String, Vec<String>, f32)>> {
    let query = Query {
        date: q.date.as_deref().map(|d| Timestamp::parse_field(d, "date")).transpose()?,
        top_k: Some(1000),
        ..Query::new(&q.question)
    };
    Ok(memory
        .recall(query, user)?
        .rounds
        .into_iter()
        .map(|r| (r.key, r.turns.into_iter().filter_map(|t| t.id).collect(), r.cosine))
        .collect())
}

/// Measures every question that has evidence (abstentions left out) against its haystack and
/// the next one, up to `limit` haystacks.
pub fn measure(
    dataset: &Path,
    benchmark: Benchmark,
    embedder: Arc<dyn Embedder>,
    limit: Option<usize>,
) -> Result<LabelsReport> {
    let data = data::load(dataset, benchmark)?;
    let haystacks: Vec<&data::Haystack> = data.haystacks.iter().take(limit.unwrap_or(usize::MAX)).collect();
    let dir = tempfile::tempdir()?;
    let memories: Vec<Memory> = haystacks
        .iter()
        .enumerate()
        .map(|(i, h)| store(&embedder, &dir.path().join(format!("{i}.db")), h))
        .collect::<Result<_>>()?;
    let mut report = LabelsReport::default();
    for (i, h) in haystacks.iter().enumerate() {
        let other = (i + 1) % haystacks.len();
        let half = if i % 2 == 0 { &mut report.a } else { &mut report.b };
        for q in data
            .questions
            .iter()
            .filter(|q| q.user == h.user && !q.abstention && !q.evidence_turns.is_empty())
        {
            let evidence: BTreeSet<&str> = q.evidence_turns.iter().map(String::as_str).collect();
            let own = cosines(&memories[i], &h.user, q)?;
            if !own.iter().any(|(_, ids, _)| ids.iter().any(|id| evidence.contains(id.as_str()))) {
                continue; // evidence that formed no stored round
            }
            half.questions += 1;
            for (_, ids, c) in own {
                let class = usize::from(!ids.iter().any(|id| evidence.contains(id.as_str())));
                half.classes[class].cosines.push(c);
            }
            if other != i {
                for (_, _, c) in cosines(&memories[other], &haystacks[other].user, q)? {
                    half.classes[2].cosines.push(c);
                }
            }
        }
    }
    for half in [&mut report.a, &mut report.b] {
        for class in &mut half.classes {
            class.cosines.sort_by(f32::total_cmp);
        }
    }
    Ok(report)
}

/// The report as Markdown: each half's percentiles per class, and each label's pairs per class
/// with its precision against other users' records, under `score`.
pub fn render(report: &LabelsReport, score: impl Fn(f32) -> f32 + Copy) -> String {
    let mut out = String::new();
    for (name, half) in [("A (even haystacks)", &report.a), ("B (odd haystacks)", &report.b)] {
        out.push_str(&format!("### Half {name}: {} questions\n\n", half.questions));
        out.push_str(
            "| class | pairs | p1 | p10 | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|---|---|\n",
        );
        for (class, c) in CLASSES.iter().zip(&half.classes) {
            out.push_str(&format!(
                "| {class} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
                c.cosines.len(),
                c.percentile(1.0),
                c.percentile(10.0),
                c.percentile(50.0),
                c.percentile(90.0),
                c.percentile(99.0),
                c.percentile(100.0),
            ));
        }
        out.push_str("\n| label | evidence | same user, not evidence | other user | precision against other users |\n|---|---|---|---|---|\n");
        let labels: Vec<BTreeMap<&str, usize>> = half.classes.iter().map(|c| c.labels(score)).collect();
        for label in ["high", "medium", "low", "none"] {
            let n = |i: usize| labels[i].get(label).copied().unwrap_or(0);
            let (e, s, o) = (n(0), n(1), n(2));
            let precision =
                if e + o == 0 { "-".to_owned() } else { format!("{:.3}", e as f64 / (e + o) as f64) };
            out.push_str(&format!("| {label} | {e} | {s} | {o} | {precision} |\n"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_ranks_of_the_sorted_cosines() {
        let c = Class { cosines: (0..=100).map(|i| i as f32 / 100.0).collect() };
        assert_eq!(
            (c.percentile(0.0), c.percentile(50.0), c.percentile(99.0), c.percentile(100.0)),
            (0.0, 0.5, 0.99, 1.0)
        );
        assert_eq!(c.labels(|x| x).get("high"), Some(&11));
        assert!(Class::default().percentile(50.0).is_nan());
    }
}
