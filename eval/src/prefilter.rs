//! How much the extraction pre-filter skips on a benchmark, and whether it drops evidence.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use mnemon::embed::HashingEmbedder;
use mnemon::internals::prefilter::{skip, Rule};
use mnemon::{Memory, Result};

use crate::data::{self, Benchmark};

/// Rounds seen, skipped by rule, and evidence rounds among the skipped.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PrefilterReport {
    /// Rounds stored from every haystack.
    pub rounds: usize,
    /// Rounds skipped, by rule.
    pub skipped: BTreeMap<&'static str, usize>,
    /// Rounds holding an evidence turn of some question.
    pub evidence_rounds: usize,
    /// Evidence rounds the filter would skip: (haystack, round key, rule, text).
    pub evidence_skipped: Vec<(String, String, &'static str, String)>,
}

impl PrefilterReport {
    /// Rounds skipped under any rule.
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }
}

/// The rounds `haystack` forms once stored (at `path`, with the hashing embedder: only the rounds
/// matter to the callers, not their vectors).
pub(crate) fn stored_rounds(
    haystack: &data::Haystack,
    path: &Path,
) -> Result<Vec<mnemon::rounds::StoredRound>> {
    let memory = Memory::builder(path).embedder(HashingEmbedder::default()).open()?;
    for session in haystack.messages.chunk_by(|a, b| a.session == b.session) {
        memory.add(session, &haystack.user)?;
    }
    memory.rounds(&haystack.user)
}

/// Stores each haystack (hashing embedder: only the rounds matter here) and screens every round.
pub fn measure(dataset: &Path, benchmark: Benchmark, limit: Option<usize>) -> Result<PrefilterReport> {
    let data = data::load(dataset, benchmark)?;
    let mut evidence: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for q in &data.questions {
        evidence.entry(q.user.as_str()).or_default().extend(q.evidence_turns.iter().map(String::as_str));
    }
    let mut report = PrefilterReport::default();
    let dir = tempfile::tempdir()?;
    for (n, h) in data.haystacks.iter().enumerate() {
        if limit.is_some_and(|l| n >= l) {
            break;
        }
        let ids = evidence.get(h.user.as_str());
        for round in stored_rounds(h, &dir.path().join(format!("{n}.db")))? {
            report.rounds += 1;
            let is_evidence = round
                .turns
                .iter()
                .any(|t| t.id.as_deref().is_some_and(|id| ids.is_some_and(|ids| ids.contains(id))));
            report.evidence_rounds += usize::from(is_evidence);
            if let Some(rule) = skip(&round.turns) {
                *report.skipped.entry(Rule::name(rule)).or_default() += 1;
                if is_evidence {
                    let text = round
                        .turns
                        .iter()
                        .map(|t| format!("{}: {}", t.role.as_str(), t.content))
                        .collect::<Vec<_>>();
                    report.evidence_skipped.push((
                        h.user.clone(),
                        round.key.clone(),
                        rule.name(),
                        text.join("\n"),
                    ));
                }
            }
        }
    }
    Ok(report)
}
