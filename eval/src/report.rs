//! `report.md` and `mnemon eval compare`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use mnemon::decisions::DecisionKind;
use mnemon::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::data::{Benchmark, Defects};
use crate::metrics::Metrics;
use crate::metrics::{hits, inside, Group, Prediction, BUDGETS};
use crate::qa::Calls;
use crate::stats::mcnemar_exact;

/// Measured speed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Haystacks ingested in this directory (all sessions of the run).
    pub haystacks: usize,
    /// Rounds stored by those ingests.
    pub rounds: usize,
    /// Seconds per stored round, ingest included embedding.
    pub ingest_seconds_per_round: f64,
    /// Seconds per haystack.
    pub ingest_seconds_per_haystack: f64,
    /// Recall latency, median (ms).
    pub recall_ms_p50: f64,
    /// Recall latency, 95th percentile (ms).
    pub recall_ms_p95: f64,
    /// QA mode: requests sent and answers taken from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qa_calls: Option<Calls>,
}

/// What extraction did to the run's haystacks, counted from their decision logs (runs with an
/// extractor only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactCounts {
    /// Rounds the model read.
    pub rounds_extracted: usize,
    /// Rounds the pre-filter kept from the model.
    pub rounds_prefiltered: usize,
    /// Rounds whose output broke the contract (stored as an empty extraction).
    pub rounds_truncated: usize,
    /// Facts stored.
    pub stored: usize,
    /// Facts dropped by verification (not grounded in their round).
    pub ungrounded: usize,
    /// Facts not stored: the same text as a stored fact of the session.
    pub exact_duplicates: usize,
    /// Facts merged into a cosine-near stored fact.
    pub merged: usize,
    /// Cosine-near facts stored apart, a screen having found them different.
    pub kept_apart: usize,
    /// Stored facts superseded by a newer one.
    pub superseded: usize,
}

impl FactCounts {
    pub(crate) fn add(&mut self, o: &FactCounts) {
        self.rounds_extracted += o.rounds_extracted;
        self.rounds_prefiltered += o.rounds_prefiltered;
        self.rounds_truncated += o.rounds_truncated;
        self.stored += o.stored;
        self.ungrounded += o.ungrounded;
        self.exact_duplicates += o.exact_duplicates;
        self.merged += o.merged;
        self.kept_apart += o.kept_apart;
        self.superseded += o.superseded;
    }

    pub(crate) fn of(decisions: &[mnemon::decisions::Decision]) -> FactCounts {
        let mut c = FactCounts::default();
        for d in decisions {
            match d.kind {
                DecisionKind::RoundExtracted => {
                    c.rounds_extracted += 1;
                    let detail: serde_json::Value = serde_json::from_str(&d.detail).unwrap_or_default();
                    c.ungrounded += detail["ungrounded"].as_u64().unwrap_or(0) as usize;
                    c.rounds_truncated += usize::from(detail["truncated"].as_bool().unwrap_or(false));
                }
                DecisionKind::RoundPrefiltered => c.rounds_prefiltered += 1,
                DecisionKind::FactStored => c.stored += 1,
                DecisionKind::FactDuplicate => c.exact_duplicates += 1,
                DecisionKind::FactMerged => c.merged += 1,
                DecisionKind::FactKeptApart => c.kept_apart += 1,
                DecisionKind::FactSuperseded => c.superseded += 1,
                _ => {}
            }
        }
        c
    }
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// Deterministic: a function of `predictions.jsonl` alone.
    pub metrics: Metrics,
    /// Measured; varies between runs.
    pub speed: Speed,
    /// Runs with an extractor: what extraction stored and decided, summed over the haystacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<FactCounts>,
    /// Annotation defects tolerated while loading.
    pub defects: Defects,
}

fn pct(r: f64) -> String {
    format!("{:.1}", 100.0 * r)
}

fn rows(out: &mut String, level: &str, groups: &[(&str, &Group)]) {
    let _ = writeln!(
        out,
        "| group | n | ANY@1 | ANY@5 | ANY@10 | ALL@5 | ALL@10 | ALL@20 | R@10 | MRR | no evidence | abstention | tokens mean / p95 |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, g) in groups {
        let Some(l) = g.levels.get(level) else { continue };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {:.0} / {} |",
            l.scored,
            pct(l.any[&1].rate),
            pct(l.any[&5].rate),
            pct(l.any[&10].rate),
            pct(l.all[&5].rate),
            pct(l.all[&10].rate),
            pct(l.all[&20].rate),
            pct(l.recall[&10]),
            l.mrr,
            l.without_evidence,
            g.abstention,
            g.context_tokens_mean,
            g.context_tokens_p95
        );
    }
}

/// Evidence inside the context rendered at each budget, beside ALL@10 (the ranking's view).
fn context_rows(out: &mut String, level: &str, groups: &[(&str, &Group)]) {
    let budgets: Vec<usize> = groups
        .first()
        .and_then(|(_, g)| g.levels.get(level))
        .map(|l| l.context_all.keys().copied().collect())
        .unwrap_or_default();
    if budgets.is_empty() {
        return;
    }
    let head: Vec<String> = budgets.iter().map(|b| format!("ANY in {b} | ALL in {b}")).collect();
    let _ = writeln!(out, "Evidence inside the context rendered at a token budget:\n");
    let _ = writeln!(out, "| group | n | ALL@10 | {} |", head.join(" | "));
    let _ = writeln!(out, "|---|---|---|{}", "---|---|".repeat(budgets.len()));
    for (name, g) in groups {
        let Some(l) = g.levels.get(level) else { continue };
        let cells: Vec<String> = budgets
            .iter()
            .map(|b| match (l.context_any.get(b), l.context_all.get(b)) {
                (Some(any), Some(all)) => format!("{} | {}", pct(any.rate), pct(all.rate)),
                _ => "– | –".to_string(),
            })
            .collect();
        let _ = writeln!(out, "| {name} | {} | {} | {} |", l.scored, pct(l.all[&10].rate), cells.join(" | "));
    }
    let _ = writeln!(out);
}

/// The gold answer inside the context rendered at each budget, and the share of the block's
/// tokens its evidence rounds take.
/// Local reading: per group, each context's score (LoCoMo: token F1 × 100; LongMemEval: the
/// answer inside the reply, %), and the judge's where one graded.
fn read_rows(out: &mut String, groups: &[(&str, &Group)]) {
    let contexts: Vec<&String> = {
        let mut c: Vec<&String> = groups.first().map(|(_, g)| g.reads.keys().collect()).unwrap_or_default();
        // No memory first, then by budget, mnemon's before the oracle's.
        let budget =
            |name: &str| name.split_once('@').and_then(|(_, b)| b.parse::<usize>().ok()).unwrap_or(0);
        c.sort_by_key(|n| (budget(n), n.starts_with("oracle")));
        c
    };
    if contexts.is_empty() {
        return;
    }
    let judged = groups.iter().any(|(_, g)| g.reads.values().any(|r| r.judged.is_some()));
    let _ = writeln!(
        out,
        "## Local reader: answers from no memory, mnemon's context and the oracle's
"
    );
    let _ = writeln!(
        out,
        "The same local model answers each question from each context (`oracle@B`: the block mnemon renders at B tokens from the question's evidence sessions alone). Score: LoCoMo token F1 × 100, LongMemEval % of replies holding the normalised gold answer (answers left out as above){}.\n",
        if judged { "; then the judge's % correct" } else { "" }
    );
    let head: Vec<String> =
        contexts.iter().map(|c| if judged { format!("{c} | {c} judged") } else { c.to_string() }).collect();
    let _ = writeln!(out, "| group | n | {} |", head.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(contexts.len() * if judged { 2 } else { 1 }));
    for (name, g) in groups {
        let n = g.reads.values().map(|r| r.n).max().unwrap_or(0);
        if n == 0 {
            continue;
        }
        let cells: Vec<String> = contexts
            .iter()
            .map(|c| {
                let r = g.reads.get(*c);
                let score = match r {
                    Some(r) => match (r.f1, r.contains) {
                        (Some(f1), _) => format!("{:.1}", 100.0 * f1),
                        (None, Some(c)) => format!("{} ({})", pct(c.rate), c.n),
                        (None, None) => "–".into(),
                    },
                    None => "–".into(),
                };
                if judged {
                    let j = r.and_then(|r| r.judged).map_or("–".into(), |j| pct(j.rate));
                    format!("{score} | {j}")
                } else {
                    score
                }
            })
            .collect();
        let _ = writeln!(out, "| {name} | {n} | {} |", cells.join(" | "));
    }
    let _ = writeln!(out);
}

fn answer_rows(out: &mut String, groups: &[(&str, &Group)]) {
    let budgets: Vec<usize> = groups
        .first()
        .map(|(_, g)| g.answer_in.keys().chain(g.evidence_share.keys()).copied().collect::<BTreeSet<_>>())
        .unwrap_or_default()
        .into_iter()
        .collect();
    if budgets.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Answer and evidence inside the context\n");
    let _ = writeln!(
        out,
        "Answer in B: the gold answer, normalised, occurs in the block rendered at B tokens (yes/no answers, \
         answers of more than {} words and dates that name no one day or month are left out and counted). \
         Evidence share: the mean share of the block's tokens taken by the turn-level evidence rounds.\n",
        crate::answer::MAX_WORDS
    );
    let answer: Vec<String> = budgets.iter().map(|b| format!("answer in {b}")).collect();
    let share: Vec<String> = budgets.iter().map(|b| format!("evidence share {b}")).collect();
    let _ = writeln!(out, "| group | n | left out | {} | {} |", answer.join(" | "), share.join(" | "));
    let _ = writeln!(out, "|---|---|---|{}", "---|".repeat(2 * budgets.len()));
    for (name, g) in groups {
        let n = g.answer_in.values().next().map_or(0, |r| r.n);
        let answer: Vec<String> =
            budgets.iter().map(|b| g.answer_in.get(b).map_or("–".into(), |r| pct(r.rate))).collect();
        let share: Vec<String> =
            budgets.iter().map(|b| g.evidence_share.get(b).map_or("–".into(), |r| pct(*r))).collect();
        let _ = writeln!(
            out,
            "| {name} | {n} | {} | {} | {} |",
            g.answer_left_out,
            answer.join(" | "),
            share.join(" | ")
        );
    }
    let _ = writeln!(out);
}

/// The Markdown report of a run.
pub fn report(s: &Summary) -> String {
    let mut out = String::new();
    let m = &s.metrics;
    let _ = writeln!(out, "# Retrieval report ({:?})\n", s.benchmark);
    let _ = writeln!(
        out,
        "{} questions ({} abstention, not scored). Rates in %, Wilson 95 % intervals in `summary.json`.\n",
        m.overall.questions, m.overall.abstention
    );
    let mut groups: Vec<(&str, &Group)> = vec![("overall", &m.overall)];
    groups.extend(m.by_type.iter().map(|(k, g)| (k.as_str(), g)));
    // Per haystack only where there are few (LoCoMo's conversations), to keep the report short.
    if m.by_user.len() <= 20 {
        groups.extend(m.by_user.iter().map(|(k, g)| (k.as_str(), g)));
    }
    for level in m.overall.levels.keys() {
        let _ = writeln!(out, "## Evidence at {level} level\n");
        rows(&mut out, level, &groups);
        let _ = writeln!(out);
        context_rows(&mut out, level, &groups);
    }
    answer_rows(&mut out, &groups);
    read_rows(&mut out, &groups);
    let judges: std::collections::BTreeSet<&String> = groups.iter().flat_map(|(_, g)| g.qa.keys()).collect();
    if !judges.is_empty() {
        let _ = writeln!(out, "## QA accuracy (reader and judge)\n");
        let _ = writeln!(
            out,
            "Abstention questions are included; unparsed verdicts count as wrong. Rate % [Wilson 95 %].\n"
        );
        let head: Vec<String> = judges.iter().map(|j| format!("{j} n | {j} | unparsed")).collect();
        let _ = writeln!(out, "| group | {} |", head.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|---|---|".repeat(judges.len()));
        for (name, g) in &groups {
            let cells: Vec<String> = judges
                .iter()
                .map(|j| match g.qa.get(*j) {
                    Some(q) => format!(
                        "{} | {} [{}, {}] | {}",
                        q.correct.n,
                        pct(q.correct.rate),
                        pct(q.correct.ci95[0]),
                        pct(q.correct.ci95[1]),
                        q.unparsed
                    ),
                    None => "0 | – | –".to_string(),
                })
                .collect();
            let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
        if let Some(c) = &s.speed.qa_calls {
            let _ = writeln!(
                out,
                "Calls: reader {} sent, {} cached; judge {} sent, {} cached.\n",
                c.reader, c.reader_cached, c.judge, c.judge_cached
            );
        }
    }
    let sp = &s.speed;
    let _ = writeln!(
        out,
        "## Speed\n\n{} haystacks, {} rounds: {:.3} s per round, {:.1} s per haystack; recall p50 {:.2} ms, p95 {:.2} ms.\n",
        sp.haystacks,
        sp.rounds,
        sp.ingest_seconds_per_round,
        sp.ingest_seconds_per_haystack,
        sp.recall_ms_p50,
        sp.recall_ms_p95
    );
    if let Some(f) = &s.facts {
        let per = |n: usize| n as f64 / f.rounds_extracted.max(1) as f64;
        let _ = writeln!(
            out,
            "## Facts\n\n{} rounds extracted ({} skipped by the pre-filter, {} truncated): {} facts stored ({:.2} per round), \
             {} dropped as ungrounded ({:.2} per round), {} exact duplicates, {} merged, {} kept apart, {} superseded.\n",
            f.rounds_extracted,
            f.rounds_prefiltered,
            f.rounds_truncated,
            f.stored,
            per(f.stored),
            f.ungrounded,
            per(f.ungrounded),
            f.exact_duplicates,
            f.merged,
            f.kept_apart,
            f.superseded
        );
    }
    let d = &s.defects;
    let _ = writeln!(
        out,
        "## Dataset defects tolerated\n\nevidence strings split: {}; zero-padded ids normalized: {}; ids skipped: {}; questions without evidence ids: {}.",
        d.evidence_strings_split, d.evidence_ids_unpadded, d.evidence_ids_skipped, d.questions_without_evidence
    );
    out
}

fn load(dir: &Path) -> Result<BTreeMap<String, Prediction>> {
    let path = dir.join("predictions.jsonl");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::from(std::io::Error::other(format!("{}: {e}", path.display()))))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Prediction>(l).ok())
        .map(|p| (p.id.clone(), p))
        .collect())
}

/// `n | A % | B % | b | c | McNemar p |` of paired hits (A's, B's).
fn paired_cells(pairs: &[(bool, bool)]) -> String {
    let n = pairs.len();
    let ha = pairs.iter().filter(|p| p.0).count();
    let hb = pairs.iter().filter(|p| p.1).count();
    let only_a = pairs.iter().filter(|p| p.0 && !p.1).count();
    let only_b = pairs.iter().filter(|p| !p.0 && p.1).count();
    format!(
        "{n} | {} | {} | {only_a} | {only_b} | {:.4} |",
        pct(ha as f64 / n.max(1) as f64),
        pct(hb as f64 / n.max(1) as f64),
        mcnemar_exact(only_a, only_b)
    )
}

/// Paired comparison of two runs on the questions both answered: for ANY@k and ALL@k
/// (k = 5, 10) at each level, `b` = questions only A hits, `c` = only B hits, and the exact
/// McNemar p; the mean per-question difference in reciprocal rank (B − A); the same for evidence
/// inside the context at each budget both runs recorded; and, for QA runs,
/// the same paired table of each judge's verdicts.
pub fn compare(a_dir: &Path, b_dir: &Path) -> Result<String> {
    let (a, b) = (load(a_dir)?, load(b_dir)?);
    let common: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
    let mut out = String::new();
    let _ = writeln!(out, "# {} vs {}\n", a_dir.display(), b_dir.display());
    let _ = writeln!(
        out,
        "{} questions in both runs ({} only in A, {} only in B).\n",
        common.len(),
        a.len() - common.len(),
        b.len() - common.len()
    );
    let levels: std::collections::BTreeSet<&String> =
        common.iter().flat_map(|id| a[*id].evidence.keys()).collect();
    let _ = writeln!(
        out,
        "| level | metric | n | A | B | b (A only) | c (B only) | McNemar p | mean ΔRR (B − A) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for level in levels {
        let pairs: Vec<_> = common
            .iter()
            .filter(|id| !a[**id].abstention)
            .filter_map(|id| {
                let ea = a[*id].evidence.get(level)?;
                let eb = b[*id].evidence.get(level)?;
                Some((hits(&a[*id].retrieved, ea)?, hits(&b[*id].retrieved, eb)?))
            })
            .collect();
        let n = pairs.len();
        let drr = if n == 0 {
            0.0
        } else {
            pairs.iter().map(|(x, y)| y.reciprocal_rank - x.reciprocal_rank).sum::<f64>() / n as f64
        };
        for (name, idx, all) in
            [("ANY@5", 1, false), ("ANY@10", 2, false), ("ALL@5", 1, true), ("ALL@10", 2, true)]
        {
            let pick = |h: &crate::metrics::Hits| if all { h.all[idx] } else { h.any[idx] };
            let hit: Vec<(bool, bool)> = pairs.iter().map(|(x, y)| (pick(x), pick(y))).collect();
            let _ = writeln!(out, "| {level} | {name} | {} {drr:+.4} |", paired_cells(&hit));
        }
        // Evidence inside the rendered context, where both runs recorded it.
        for budget in BUDGETS {
            let found: Vec<((bool, bool), (bool, bool))> = common
                .iter()
                .filter(|id| !a[**id].abstention)
                .filter_map(|id| {
                    let (pa, pb) = (&a[*id], &b[*id]);
                    Some((
                        inside(pa.contexts.get(&budget)?, pa.evidence.get(level)?)?,
                        inside(pb.contexts.get(&budget)?, pb.evidence.get(level)?)?,
                    ))
                })
                .collect();
            if found.is_empty() {
                continue;
            }
            for (name, all) in [(format!("ANY in {budget}"), false), (format!("ALL in {budget}"), true)] {
                let pick = |f: (bool, bool)| if all { f.1 } else { f.0 };
                let hit: Vec<(bool, bool)> = found.iter().map(|(x, y)| (pick(*x), pick(*y))).collect();
                let _ = writeln!(out, "| {level} | {name} | {} |", paired_cells(&hit));
            }
        }
    }
    // The gold answer inside the rendered context, where both runs looked for it.
    for budget in BUDGETS {
        let found: Vec<(bool, bool)> = common
            .iter()
            .filter(|id| !a[**id].abstention)
            .filter_map(|id| {
                Some((a[*id].budgets.get(&budget)?.answer?, b[*id].budgets.get(&budget)?.answer?))
            })
            .collect();
        if !found.is_empty() {
            let _ = writeln!(out, "| answer | answer in {budget} | {} |", paired_cells(&found));
        }
    }
    let judges: std::collections::BTreeSet<&String> =
        common.iter().filter_map(|id| a[*id].qa.as_ref()).flat_map(|q| q.verdicts.keys()).collect();
    if !judges.is_empty() {
        let _ = writeln!(out, "\n| QA judge | n | A | B | b (A only) | c (B only) | McNemar p |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        for judge in judges {
            let pairs: Vec<(bool, bool)> = common
                .iter()
                .filter_map(|id| {
                    let va = a[*id].qa.as_ref()?.verdicts.get(judge)?;
                    let vb = b[*id].qa.as_ref()?.verdicts.get(judge)?;
                    Some((va.correct, vb.correct))
                })
                .collect();
            let _ = writeln!(out, "| {judge} | {}", paired_cells(&pairs));
        }
    }
    Ok(out)
}
