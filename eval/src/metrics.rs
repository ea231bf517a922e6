//! Retrieval metrics over ranked rounds: ANY@k, ALL@k and MRR, overall and per question type.
//!
//! A question's evidence is a list of units per level, each unit a set of stored round keys that
//! counts as found at the best rank of its keys: at `turn` level each round holding an evidence
//! message is a unit; at `session` level each evidence session (all its rounds) is a unit.
//! ANY@k: some unit within the top k; ALL@k: every unit; R@k: the mean share of units within k;
//! MRR: the first unit's reciprocal rank. Questions without evidence at a level, and abstention
//! questions, are counted apart and left out of that level's rates.
//!
//! What the reader gets is the rendered context, not the ranking: ANY/ALL in `B` tokens count a
//! unit as found when one of its rounds is inside the context rendered at a budget of `B`
//! tokens (per [`BUDGETS`]), whatever its rank. At each budget a question also records whether
//! its gold answer occurs in the block ([`crate::answer`]) and the share of the block's tokens
//! its evidence rounds take.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::wilson;

/// The cut-offs reported.
pub const KS: [usize; 4] = [1, 5, 10, 20];

/// The context budgets (tokens) at which evidence inside the rendered context is counted.
pub const BUDGETS: [usize; 4] = [1000, 2000, 4000, 8000];

/// Rounds a budgeted context may choose from: enough to fill the largest budget.
pub const CONTEXT_DEPTH: usize = 100;

/// One retrieved round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieved {
    /// Round key.
    pub key: String,
    /// 1-based rank.
    pub rank: usize,
    /// Engine score.
    pub score: f32,
}

/// Everything recorded for one question (one line of `predictions.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Question id.
    pub id: String,
    /// The haystack (user) asked.
    #[serde(default)]
    pub user: String,
    /// Question type or category.
    pub kind: String,
    /// Scored apart.
    pub abstention: bool,
    /// The ranked rounds, best first.
    pub retrieved: Vec<Retrieved>,
    /// Evidence units per level (`turn`, `session`), each a set of round keys.
    pub evidence: BTreeMap<String, Vec<Vec<String>>>,
    /// Tokens of the rendered context at the run's budget.
    pub context_tokens: usize,
    /// Rounds in that context.
    pub context_rounds: usize,
    /// Keys of the rounds inside the context rendered at each of [`BUDGETS`] (tokens).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub contexts: BTreeMap<usize, Vec<String>>,
    /// What the context rendered at each of [`BUDGETS`] holds besides its rounds' keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub budgets: BTreeMap<usize, Budgeted>,
    /// Why the gold answer is not looked for in the contexts ([`crate::answer::LeftOut`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_left_out: Option<String>,
    /// QA mode: the reader's response and the judges' verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qa: Option<QaRecord>,
    /// Local reading: the answer from each context (`none`, `mnemon@B`, `oracle@B`), scored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reads: BTreeMap<String, crate::qa::Read>,
}

/// One question's context at one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgeted {
    /// `o200k_base` tokens of the block.
    pub tokens: usize,
    /// Tokens of the turn-level evidence rounds inside it, each counted as its turns' lines as the
    /// block shows them (`speaker: text`, long replies trimmed), without session headers or fact
    /// lines.
    pub evidence_tokens: usize,
    /// Whether the gold answer occurs in the block; `None` when it is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<bool>,
}

/// The reader's response to one question and how each judge graded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaRecord {
    /// The reader's reply, verbatim.
    pub response: String,
    /// By judge name (`official`; `strict`, `lenient`).
    pub verdicts: BTreeMap<String, Verdict>,
    /// Prompt tokens of the reader's request, as billed.
    pub prompt_tokens: u64,
    /// Completion tokens of the reader's reply.
    pub completion_tokens: u64,
}

/// One judge's grading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The template the judge was prompted with.
    pub template: String,
    /// Graded correct (an unparsed reply counts as not correct).
    pub correct: bool,
    /// Whether the judge's reply was a clear yes or no.
    pub parsed: bool,
    /// The judge's reply, verbatim.
    pub raw: String,
}

/// Hits of one question at one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hits {
    /// Some evidence unit within the top k, per k in [`KS`].
    pub any: [bool; 4],
    /// Every evidence unit within the top k, per k in [`KS`].
    pub all: [bool; 4],
    /// Share of evidence units within the top k, per k in [`KS`].
    pub recall: [f64; 4],
    /// 1 / rank of the first evidence unit (0 when none was retrieved).
    pub reciprocal_rank: f64,
}

/// Hits of `retrieved` against evidence `units`; `None` when there is no (non-empty) unit.
pub fn hits(retrieved: &[Retrieved], units: &[Vec<String>]) -> Option<Hits> {
    let units: Vec<&Vec<String>> = units.iter().filter(|u| !u.is_empty()).collect();
    if units.is_empty() {
        return None;
    }
    let rank_of = |key: &String| retrieved.iter().find(|r| &r.key == key).map(|r| r.rank);
    let ranks: Vec<Option<usize>> = units.iter().map(|u| u.iter().filter_map(rank_of).min()).collect();
    let best = ranks.iter().flatten().min().copied();
    let mut h = Hits {
        any: [false; 4],
        all: [false; 4],
        recall: [0.0; 4],
        reciprocal_rank: best.map_or(0.0, |r| 1.0 / r as f64),
    };
    for (i, k) in KS.iter().enumerate() {
        let within = ranks.iter().filter(|r| r.is_some_and(|r| r <= *k)).count();
        h.any[i] = within > 0;
        h.all[i] = within == ranks.len();
        h.recall[i] = within as f64 / ranks.len() as f64;
    }
    Some(h)
}

/// Whether some (`.0`) and every (`.1`) evidence unit has a round among `keys` (a rendered
/// context's rounds); `None` when there is no (non-empty) unit.
pub fn inside(keys: &[String], units: &[Vec<String>]) -> Option<(bool, bool)> {
    let units: Vec<&Vec<String>> = units.iter().filter(|u| !u.is_empty()).collect();
    if units.is_empty() {
        return None;
    }
    let found = units.iter().filter(|u| u.iter().any(|k| keys.contains(k))).count();
    Some((found > 0, found == units.len()))
}

/// A proportion with its Wilson 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Questions that hit.
    pub hits: usize,
    /// Questions scored.
    pub n: usize,
    /// `hits / n` (0 when `n` is 0).
    pub rate: f64,
    /// Wilson 95 % interval.
    pub ci95: [f64; 2],
}

impl Rate {
    pub(crate) fn new(hits: usize, n: usize) -> Rate {
        Rate { hits, n, rate: if n == 0 { 0.0 } else { hits as f64 / n as f64 }, ci95: wilson(hits, n) }
    }
}

/// Metrics of a group of questions at one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Questions scored (answerable, with evidence).
    pub scored: usize,
    /// Answerable questions without evidence at this level (left out).
    pub without_evidence: usize,
    /// ANY@k by `k`.
    pub any: BTreeMap<usize, Rate>,
    /// ALL@k by `k`.
    pub all: BTreeMap<usize, Rate>,
    /// R@k by `k`: the mean share of evidence units within the top k.
    pub recall: BTreeMap<usize, f64>,
    /// Mean reciprocal rank (over the top 20).
    pub mrr: f64,
    /// Some unit inside the context rendered at a budget, by budget (tokens); questions without
    /// recorded contexts are left out (`n` says how many were counted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context_any: BTreeMap<usize, Rate>,
    /// Every unit inside the context rendered at a budget, by budget (tokens).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context_all: BTreeMap<usize, Rate>,
}

/// Metrics of a group of questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Questions in the group.
    pub questions: usize,
    /// Abstention questions (not scored for recall).
    pub abstention: usize,
    /// Per level (`turn`, `session`).
    pub levels: BTreeMap<String, Level>,
    /// Mean context tokens.
    pub context_tokens_mean: f64,
    /// 95th percentile of context tokens (nearest rank).
    pub context_tokens_p95: usize,
    /// QA accuracy by judge (QA runs only); abstention questions are included.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub qa: BTreeMap<String, QaRate>,
    /// The gold answer inside the context rendered at a budget, by budget (tokens), over the
    /// answerable questions whose answer is looked for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answer_in: BTreeMap<usize, Rate>,
    /// Answerable questions with recorded contexts whose answer is not looked for
    /// ([`crate::answer::LeftOut`]: yes/no, long, a date that names no one day or month).
    #[serde(default)]
    pub answer_left_out: usize,
    /// The mean share of a context's tokens taken by turn-level evidence rounds, by budget, over
    /// the answerable questions with turn evidence.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence_share: BTreeMap<usize, f64>,
    /// Local reading, by context (`none`, `mnemon@B`, `oracle@B`), over the questions read from it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reads: BTreeMap<String, crate::qa::ReadRate>,
}

/// QA accuracy under one judge.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QaRate {
    /// Questions graded correct, of those graded.
    pub correct: Rate,
    /// Verdicts that were neither yes nor no (counted as not correct).
    pub unparsed: usize,
}

/// Metrics overall and per type; a pure function of the predictions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// All questions.
    pub overall: Group,
    /// By question type or category.
    pub by_type: BTreeMap<String, Group>,
    /// By haystack (LongMemEval question, LoCoMo conversation).
    pub by_user: BTreeMap<String, Group>,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn group(predictions: &[&Prediction]) -> Group {
    let levels: std::collections::BTreeSet<&String> =
        predictions.iter().flat_map(|p| p.evidence.keys()).collect();
    let answerable: Vec<&&Prediction> = predictions.iter().filter(|p| !p.abstention).collect();
    let mut out = BTreeMap::new();
    for level in levels {
        let scored: Vec<Hits> = answerable
            .iter()
            .filter_map(|p| hits(&p.retrieved, p.evidence.get(level).map_or(&[][..], Vec::as_slice)))
            .collect();
        let n = scored.len();
        let rate = |f: &dyn Fn(&Hits) -> bool| Rate::new(scored.iter().filter(|h| f(h)).count(), n);
        let mut context_any = BTreeMap::new();
        let mut context_all = BTreeMap::new();
        for budget in BUDGETS {
            let found: Vec<(bool, bool)> = answerable
                .iter()
                .filter_map(|p| {
                    inside(p.contexts.get(&budget)?, p.evidence.get(level).map_or(&[][..], Vec::as_slice))
                })
                .collect();
            if found.is_empty() {
                continue;
            }
            let m = found.len();
            context_any.insert(budget, Rate::new(found.iter().filter(|f| f.0).count(), m));
            context_all.insert(budget, Rate::new(found.iter().filter(|f| f.1).count(), m));
        }
        out.insert(
            level.clone(),
            Level {
                scored: n,
                without_evidence: answerable.len() - n,
                any: KS.iter().enumerate().map(|(i, k)| (*k, rate(&|h| h.any[i]))).collect(),
                all: KS.iter().enumerate().map(|(i, k)| (*k, rate(&|h| h.all[i]))).collect(),
                recall: KS
                    .iter()
                    .enumerate()
                    .map(|(i, k)| {
                        (
                            *k,
                            if n == 0 {
                                0.0
                            } else {
                                scored.iter().map(|h| h.recall[i]).sum::<f64>() / n as f64
                            },
                        )
                    })
                    .collect(),
                mrr: if n == 0 {
                    0.0
                } else {
                    scored.iter().map(|h| h.reciprocal_rank).sum::<f64>() / n as f64
                },
                context_any,
                context_all,
            },
        );
    }
    let mut tokens: Vec<usize> = predictions.iter().map(|p| p.context_tokens).collect();
    tokens.sort_unstable();
    let mut qa: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for v in predictions.iter().filter_map(|p| p.qa.as_ref()).flat_map(|q| &q.verdicts) {
        let e = qa.entry(v.0.clone()).or_default();
        e.0 += usize::from(v.1.correct);
        e.1 += 1;
        e.2 += usize::from(!v.1.parsed);
    }
    let recorded: Vec<&&Prediction> = answerable.iter().filter(|p| !p.budgets.is_empty()).copied().collect();
    let mut answer_in = BTreeMap::new();
    let mut evidence_share = BTreeMap::new();
    for budget in BUDGETS {
        let found: Vec<bool> = recorded.iter().filter_map(|p| p.budgets.get(&budget)?.answer).collect();
        if !found.is_empty() {
            answer_in.insert(budget, Rate::new(found.iter().filter(|f| **f).count(), found.len()));
        }
        let shares: Vec<f64> = recorded
            .iter()
            .filter(|p| p.evidence.get("turn").is_some_and(|u| u.iter().any(|u| !u.is_empty())))
            .filter_map(|p| p.budgets.get(&budget))
            .map(|b| if b.tokens == 0 { 0.0 } else { b.evidence_tokens as f64 / b.tokens as f64 })
            .collect();
        if !shares.is_empty() {
            evidence_share.insert(budget, shares.iter().sum::<f64>() / shares.len() as f64);
        }
    }
    Group {
        questions: predictions.len(),
        abstention: predictions.len() - answerable.len(),
        levels: out,
        context_tokens_mean: if tokens.is_empty() {
            0.0
        } else {
            tokens.iter().sum::<usize>() as f64 / tokens.len() as f64
        },
        context_tokens_p95: percentile(&tokens, 0.95),
        qa: qa
            .into_iter()
            .map(|(judge, (hits, n, unparsed))| (judge, QaRate { correct: Rate::new(hits, n), unparsed }))
            .collect(),
        answer_in,
        answer_left_out: recorded.iter().filter(|p| p.answer_left_out.is_some()).count(),
        evidence_share,
        reads: crate::qa::read_rates(predictions),
    }
}

/// Metrics of a run, independent of the order of `predictions`.
pub fn metrics(predictions: &[Prediction]) -> Metrics {
    let mut sorted: Vec<&Prediction> = predictions.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let mut by_type: BTreeMap<String, Vec<&Prediction>> = BTreeMap::new();
    let mut by_user: BTreeMap<String, Vec<&Prediction>> = BTreeMap::new();
    for p in &sorted {
        by_type.entry(p.kind.clone()).or_default().push(p);
        by_user.entry(p.user.clone()).or_default().push(p);
    }
    let groups = |m: BTreeMap<String, Vec<&Prediction>>| m.into_iter().map(|(k, v)| (k, group(&v))).collect();
    Metrics { overall: group(&sorted), by_type: groups(by_type), by_user: groups(by_user) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(keys: &[&str]) -> Vec<Retrieved> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| Retrieved { key: (*k).into(), rank: i + 1, score: 0.0 })
            .collect()
    }

    /// One unit per key.
    fn e(keys: &[&str]) -> Vec<Vec<String>> {
        keys.iter().map(|k| vec![(*k).to_string()]).collect()
    }

    fn p(id: &str, kind: &str, retrieved: &[&str], turn: &[&str], tokens: usize) -> Prediction {
        Prediction {
            id: id.into(),
            user: format!("user-{}", &kind),
            kind: kind.into(),
            abstention: false,
            retrieved: r(retrieved),
            evidence: [("turn".to_string(), e(turn))].into_iter().collect(),
            context_tokens: tokens,
            context_rounds: retrieved.len(),
            contexts: BTreeMap::new(),
            budgets: BTreeMap::new(),
            answer_left_out: None,
            qa: None,
            reads: BTreeMap::new(),
        }
    }

    #[test]
    fn hits_follow_the_definitions() {
        let ranked: Vec<String> = (1..=20).map(|i| format!("k{i}")).collect();
        let ranked: Vec<&str> = ranked.iter().map(String::as_str).collect();
        let h = hits(&r(&ranked), &e(&["k3", "k7"])).unwrap();
        assert_eq!(h.any, [false, true, true, true]);
        assert_eq!(h.all, [false, false, true, true]);
        assert_eq!(h.recall, [0.0, 0.5, 1.0, 1.0]);
        assert_eq!(h.reciprocal_rank, 1.0 / 3.0);
        // A unit of several rounds (a session) is found at its best rank.
        let session = vec![vec!["k30".to_string(), "k4".to_string()], vec!["k12".to_string()]];
        let h = hits(&r(&ranked), &session).unwrap();
        assert_eq!(h.any, [false, true, true, true]);
        assert_eq!(h.all, [false, false, false, true]);
        assert_eq!(h.recall, [0.0, 0.5, 0.5, 1.0]);
        assert!(hits(&r(&ranked), &[vec![]]).is_none(), "empty units do not count");
        let h = hits(&r(&ranked), &e(&["k1", "k30"])).unwrap();
        assert_eq!(h.any, [true; 4]);
        assert_eq!(h.all, [false; 4]);
        assert_eq!(h.reciprocal_rank, 1.0);
        let h = hits(&r(&ranked), &e(&["missing"])).unwrap();
        assert_eq!((h.any, h.reciprocal_rank), ([false; 4], 0.0));
        assert!(hits(&r(&ranked), &[]).is_none());
    }

    #[test]
    fn group_metrics_on_a_hand_made_fixture() {
        let preds = vec![
            p("q1", "a", &["x", "e1", "e2"], &["e1", "e2"], 100), // any@5, all@5, rr 1/2
            p("q2", "a", &["e1", "x", "y"], &["e1", "e9"], 300),  // any@1, never all, rr 1
            p("q3", "b", &["x", "y", "z"], &["e1"], 200),         // nothing, rr 0
            p("q4", "b", &["x"], &[], 400),                       // no evidence
            Prediction { abstention: true, ..p("q5", "b", &["x"], &["x"], 500) },
        ];
        let m = metrics(&preds);
        let t = &m.overall.levels["turn"];
        assert_eq!((m.overall.questions, m.overall.abstention, t.scored, t.without_evidence), (5, 1, 3, 1));
        assert_eq!(t.any[&1].hits, 1);
        assert_eq!(t.any[&5].hits, 2);
        assert_eq!(t.all[&5].hits, 1);
        assert_eq!(t.all[&20].hits, 1);
        assert!((t.mrr - (0.5 + 1.0) / 3.0).abs() < 1e-12);
        assert!((t.recall[&5] - (1.0 + 0.5 + 0.0) / 3.0).abs() < 1e-12);
        assert!((t.any[&5].rate - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.overall.context_tokens_mean, 300.0);
        assert_eq!(m.overall.context_tokens_p95, 500);
        assert_eq!(m.by_type["a"].levels["turn"].any[&1].hits, 1);
        assert_eq!(m.by_type["b"].levels["turn"].scored, 1);
        assert_eq!(m.by_user["user-a"], m.by_type["a"]);
        // Order does not matter.
        let mut reversed = preds.clone();
        reversed.reverse();
        assert_eq!(metrics(&reversed), m);
    }

    #[test]
    fn evidence_inside_a_context_counts_rounds_not_ranks() {
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(inside(&keys(&["e2", "x"]), &e(&["e1", "e2"])), Some((true, false)));
        assert_eq!(inside(&keys(&["e2", "e1"]), &e(&["e1", "e2"])), Some((true, true)));
        assert_eq!(inside(&keys(&["x"]), &e(&["e1"])), Some((false, false)));
        let session = vec![vec!["s1".to_string(), "s2".to_string()]];
        assert_eq!(inside(&keys(&["s2"]), &session), Some((true, true)));
        assert_eq!(inside(&keys(&["x"]), &[vec![]]), None);
        // Per budget, over the questions that recorded a context at it.
        let with = |p: Prediction, ctx: &[(usize, &[&str])]| Prediction {
            contexts: ctx.iter().map(|(b, k)| (*b, keys(k))).collect(),
            ..p
        };
        let preds = vec![
            with(p("q1", "a", &["e1", "e2"], &["e1", "e2"], 1), &[(2000, &["e1"]), (4000, &["e2", "e1"])]),
            with(p("q2", "a", &["x"], &["e9"], 1), &[(2000, &["x"]), (4000, &["e9"])]),
            p("q3", "a", &["e1"], &["e1"], 1),
        ];
        let t = &metrics(&preds).overall.levels["turn"];
        assert_eq!((t.context_any[&2000].hits, t.context_all[&2000].hits, t.context_all[&2000].n), (1, 0, 2));
        assert_eq!((t.context_any[&4000].hits, t.context_all[&4000].hits), (2, 2));
        assert!(!t.context_all.contains_key(&8000), "no question recorded that budget");
    }

    #[test]
    fn answers_in_the_context_and_the_evidence_share_count_what_was_recorded() {
        let at = |tokens, evidence_tokens, answer| Budgeted { tokens, evidence_tokens, answer };
        let with = |p: Prediction, b: &[(usize, Budgeted)], left_out: Option<&str>| Prediction {
            budgets: b.iter().copied().collect(),
            answer_left_out: left_out.map(str::to_owned),
            ..p
        };
        let preds = vec![
            with(
                p("q1", "a", &["e1"], &["e1"], 1),
                &[(1000, at(900, 450, Some(true))), (2000, at(1800, 450, Some(true)))],
                None,
            ),
            with(
                p("q2", "a", &["x"], &["e2"], 1),
                &[(1000, at(1000, 0, Some(false))), (2000, at(2000, 500, Some(true)))],
                None,
            ),
            with(p("q3", "a", &["x"], &["e3"], 1), &[(1000, at(500, 0, None))], Some("yes/no")),
            with(p("q4", "a", &["x"], &[], 1), &[(1000, at(0, 0, Some(false)))], None), // no evidence
            Prediction {
                abstention: true,
                ..with(p("q5", "a", &["x"], &["x"], 1), &[(1000, at(10, 10, Some(true)))], None)
            },
            p("q6", "a", &["x"], &["e6"], 1), // no contexts recorded
        ];
        let g = metrics(&preds).overall;
        assert_eq!(
            (g.answer_in[&1000].hits, g.answer_in[&1000].n),
            (1, 3),
            "abstention and left-out answers apart"
        );
        assert_eq!((g.answer_in[&2000].hits, g.answer_in[&2000].n), (2, 2));
        assert_eq!(g.answer_left_out, 1);
        // Shares over q1..q3 (q4 has no evidence): 0.5, 0, 0.
        assert!((g.evidence_share[&1000] - 0.5 / 3.0).abs() < 1e-12);
        assert!((g.evidence_share[&2000] - (0.25 + 0.25) / 2.0).abs() < 1e-12);
        assert!(!g.answer_in.contains_key(&4000));
    }

    #[test]
    fn qa_accuracy_counts_each_judge_apart() {
        let verdict = |correct: bool, parsed: bool| Verdict {
            template: "standard".into(),
            correct,
            parsed,
            raw: String::new(),
        };
        let with = |p: Prediction, v: &[(&str, bool, bool)]| Prediction {
            qa: Some(QaRecord {
                response: "r".into(),
                verdicts: v.iter().map(|(j, c, ok)| (j.to_string(), verdict(*c, *ok))).collect(),
                prompt_tokens: 0,
                completion_tokens: 0,
            }),
            ..p
        };
        let preds = vec![
            with(p("q1", "a", &["x"], &["x"], 1), &[("strict", true, true), ("lenient", true, true)]),
            with(p("q2", "a", &["x"], &["x"], 1), &[("strict", false, true), ("lenient", true, true)]),
            with(p("q3", "b", &["x"], &["x"], 1), &[("strict", false, false), ("lenient", false, true)]),
            p("q4", "b", &["x"], &["x"], 1), // not read (e.g. LoCoMo category 5)
        ];
        let m = metrics(&preds);
        let (s, l) = (&m.overall.qa["strict"], &m.overall.qa["lenient"]);
        assert_eq!((s.correct.hits, s.correct.n, s.unparsed), (1, 3, 1));
        assert_eq!((l.correct.hits, l.correct.n, l.unparsed), (2, 3, 0));
        assert_eq!(l.correct.ci95, wilson(2, 3));
        assert_eq!(m.by_type["b"].qa["strict"].correct.n, 1);
        assert!(metrics(&preds[3..]).overall.qa.is_empty(), "retrieval runs carry no QA");
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<usize> = (1..=20).collect();
        assert_eq!(percentile(&v, 0.95), 19);
        assert_eq!(percentile(&v, 0.5), 10);
        assert_eq!(percentile::<usize>(&[], 0.5), 0);
    }
}
