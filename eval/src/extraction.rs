//! Extraction quality and speed on LongMemEval rounds: `mnemon eval extract`.
//!
//! A fixed sample: evidence rounds (rounds holding a `has_answer` turn; at most two per question,
//! in file order) and other rounds (one per question, the round halfway through its haystack that
//! holds no evidence). Each round goes through the pre-filter, then the extractor. For evidence
//! rounds, a fact **carries the answer's key information** when every key word of the gold answer
//! (lowercase words of 3+ characters, minus a few function words; plural `s` ignored) appears in
//! one fact's `content` or `object`. Only questions whose answer one round states are scored:
//! single-session-user, single-session-assistant and knowledge-update. The others' answers are
//! computed across rounds (temporal-reasoning "30 days", multi-session "2"), rubrics (preference)
//! or explanations (abstention), which no single fact can carry. One JSON line per round in
//! `rounds.jsonl`; a run resumes from it, and the two derived fields (`scored`, `carries_answer`)
//! are recomputed from the dataset on every run, so a rule change applies to finished rounds.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use mnemon::extract::{ExtractedFact, LlamaExtractor, Speed};
use mnemon::internals::prefilter::skip;
use mnemon::internals::verify::{verify, Note};
use mnemon::rounds::Turn;
use mnemon::{Error, Result};

use crate::data::{self, Benchmark};

/// One sampled round and what came of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundResult {
    /// The question whose haystack it is.
    pub question: String,
    /// Its round key.
    pub key: String,
    /// Whether it holds an evidence turn.
    pub evidence: bool,
    /// Whether the key-information share counts it.
    pub scored: bool,
    /// The pre-filter rule that skipped it.
    pub skipped: Option<String>,
    /// Whether some fact carries every key word of the answer.
    pub carries_answer: bool,
    /// Facts kept by verification (`mnemon::internals::verify::verify`), with `when` cleared where the round
    /// does not hold it.
    pub facts: Vec<ExtractedFact>,
    /// Facts dropped because their excerpt is not from the round.
    #[serde(default)]
    pub ungrounded: Vec<ExtractedFact>,
    /// Time mentions cleared because the round does not hold them.
    #[serde(default)]
    pub mentions_cleared: usize,
    /// The output broke the contract or hit the token bound.
    pub truncated: bool,
    /// llama.cpp's timing (a round decoded with others: its share of the group's).
    pub speed: Speed,
    /// Wall-clock seconds of the call (a round decoded with others: its share of the group's).
    pub seconds: f64,
    /// The model's output, verbatim (compared across runs: alone versus with others).
    #[serde(default)]
    pub raw_output: String,
    /// Rounds decoded together in the call that decoded this one.
    #[serde(default)]
    pub group: usize,
}

const FUNCTION_WORDS: &[&str] = &[
    "the", "and", "for", "with", "was", "are", "has", "had", "her", "his", "their", "they", "you", "your",
    "about",
];

fn key_words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3 || w.chars().all(|c| c.is_ascii_digit()) && !w.is_empty())
        .filter(|w| !FUNCTION_WORDS.contains(w))
        .map(|w| w.strip_suffix('s').filter(|b| b.len() >= 3).unwrap_or(w).to_string())
        .collect()
}

/// Whether one fact holds every key word of `answer`.
pub fn carries(answer: &str, facts: &[ExtractedFact]) -> bool {
    let want = key_words(answer);
    !want.is_empty()
        && facts.iter().any(|f| {
            let have = key_words(&format!("{} {}", f.content, f.object.as_deref().unwrap_or("")));
            want.is_subset(&have)
        })
}

/// Question types whose answer one round states.
const STATED: &[&str] = &["single-session-user", "single-session-assistant", "knowledge-update"];

/// The sample: `(question id, answer, scored, round key, turns, is evidence)`.
type Sampled = (String, String, bool, String, Vec<Turn>, bool);

/// Which rounds [`run`] samples, in file order.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Evidence rounds: at most two per question.
    pub evidence: usize,
    /// Other rounds: the middle one of each question's haystack that holds no evidence.
    pub other: usize,
    /// Evidence only from the questions whose key information is scored: the same rounds as the
    /// scored part of a full sample, for a quick prompt iteration.
    pub scored_only: bool,
}

fn sample(dataset: &Path, want: Sample) -> Result<Vec<Sampled>> {
    let Sample { evidence: evidence_n, other: other_n, scored_only } = want;
    let data = data::load(dataset, Benchmark::LongMemEval)?;
    let dir = tempfile::tempdir()?;
    let (mut evidence, mut other) = (Vec::new(), Vec::new());
    for (n, q) in data.questions.iter().enumerate() {
        if evidence.len() >= evidence_n && other.len() >= other_n {
            break;
        }
        let scored = !q.abstention && STATED.contains(&q.kind.as_str());
        let takes_evidence = scored || !scored_only;
        if !takes_evidence && other.len() >= other_n {
            continue; // nothing to sample here: spare storing the haystack
        }
        let Some(h) = data.haystacks.iter().find(|h| h.user == q.user) else { continue };
        let rounds = crate::prefilter::stored_rounds(h, &dir.path().join(format!("{n}.db")))?;
        let ids: BTreeSet<&str> = q.evidence_turns.iter().map(String::as_str).collect();
        let holds = |turns: &[Turn]| turns.iter().any(|t| t.id.as_deref().is_some_and(|id| ids.contains(id)));
        for r in rounds.iter().filter(|r| holds(&r.turns)).take(2) {
            if evidence.len() < evidence_n && takes_evidence {
                evidence.push((q.id.clone(), q.answer.clone(), scored, r.key.clone(), r.turns.clone(), true));
            }
        }
        let plain: Vec<_> = rounds.iter().filter(|r| !holds(&r.turns)).collect();
        if let Some(r) = plain.get(plain.len() / 2) {
            if other.len() < other_n {
                other.push((q.id.clone(), q.answer.clone(), false, r.key.clone(), r.turns.clone(), false));
            }
        }
    }
    evidence.extend(other);
    Ok(evidence)
}

/// How the model's outputs of `results` compare with another run's (`other/rounds.jsonl`), round
/// by round (rounds the pre-filter skipped have no output and are left out): rounds in both,
/// rounds whose output is byte for byte the same, and the keys of those that differ.
pub fn identity(results: &[RoundResult], other: &Path) -> Result<(usize, usize, Vec<String>)> {
    let text = std::fs::read_to_string(other.join("rounds.jsonl"))?;
    let theirs: std::collections::BTreeMap<(String, String), String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<RoundResult>(l).ok())
        .filter(|r| r.skipped.is_none())
        .map(|r| ((r.question, r.key), r.raw_output))
        .collect();
    let (mut both, mut same, mut differ) = (0, 0, Vec::new());
    for r in results.iter().filter(|r| r.skipped.is_none()) {
        if let Some(out) = theirs.get(&(r.question.clone(), r.key.clone())) {
            both += 1;
            if *out == r.raw_output {
                same += 1;
            } else {
                differ.push(r.key.clone());
            }
        }
    }
    Ok((both, same, differ))
}

/// Runs (or resumes) the sample through `extractor`, `batch` rounds per call (each decoded as
/// its own sequence), appending to `out/rounds.jsonl`; `progress(done, total)` after each call.
pub fn run(
    dataset: &Path,
    extractor: &LlamaExtractor,
    want: Sample,
    batch: usize,
    out: &Path,
    progress: &dyn Fn(usize, usize),
) -> Result<Vec<RoundResult>> {
    std::fs::create_dir_all(out)?;
    let path: PathBuf = out.join("rounds.jsonl");
    let mut done: Vec<RoundResult> = match std::fs::read_to_string(&path) {
        Ok(t) => t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(),
        Err(_) => Vec::new(),
    };
    let seen: BTreeSet<(String, String)> = done.iter().map(|r| (r.question.clone(), r.key.clone())).collect();
    let todo = sample(dataset, want)?;
    let total = todo.len();
    // The derived fields follow the current rules.
    for r in &mut done {
        if let Some((_, answer, scored, ..)) = todo.iter().find(|t| t.0 == r.question && t.3 == r.key) {
            r.scored = r.evidence && *scored;
            r.carries_answer = r.evidence && carries(answer, &r.facts);
        }
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    let left: Vec<Sampled> =
        todo.into_iter().filter(|t| !seen.contains(&(t.0.clone(), t.3.clone()))).collect();
    let mut sent = Vec::new();
    let mut skipped = Vec::new();
    for t in left {
        match skip(&t.4) {
            Some(rule) => skipped.push((t, rule.name().to_string())),
            None => sent.push(t),
        }
    }
    let mut record = |result: RoundResult, done: &mut Vec<RoundResult>| -> Result<()> {
        let line = serde_json::to_string(&result).map_err(|e| Error::Extractor(e.to_string()))?;
        writeln!(file, "{line}")?;
        file.flush()?;
        done.push(result);
        Ok(())
    };
    for (t, rule) in skipped {
        record(judge(t, Some(rule), None, Speed::default(), 0.0, 0)?, &mut done)?;
    }
    let no = std::sync::atomic::AtomicBool::new(false);
    for group in sent.chunks(batch.max(1)) {
        let turns: Vec<&[Turn]> = group.iter().map(|t| t.4.as_slice()).collect();
        // Timing is this harness's job.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        let (outcomes, speed) = extractor.extract_batch_measured(&turns, &no)?;
        let n = group.len();
        let seconds = started.elapsed().as_secs_f64() / n as f64;
        let share = Speed {
            prompt_ms: speed.prompt_ms / n as f64,
            prompt_tokens: speed.prompt_tokens / n,
            generation_ms: speed.generation_ms / n as f64,
            generated_tokens: speed.generated_tokens / n,
            generation_steps: speed.generation_steps / n,
        };
        for (t, outcome) in group.iter().zip(outcomes) {
            record(judge(t.clone(), None, Some(outcome?), share, seconds, n)?, &mut done)?;
        }
        progress(done.len(), total);
    }
    Ok(done)
}

/// A round's result from its extraction (none when the pre-filter skipped it).
fn judge(
    sampled: Sampled,
    skipped: Option<String>,
    extraction: Option<mnemon::extract::Extraction>,
    speed: Speed,
    seconds: f64,
    group: usize,
) -> Result<RoundResult> {
    let (question, answer, scored, key, turns, evidence) = sampled;
    let extracted = extraction.as_ref().map(|e| e.facts.clone()).unwrap_or_default();
    let anchor =
        turns.first().and_then(|t| mnemon::Timestamp::parse(&t.ts).ok()).map(|t| t.date()).ok_or_else(
            || Error::InvalidInput {
                field: "ts".into(),
                reason: format!("round {key} has no readable timestamp"),
            },
        )?;
    let (kept, notes) = verify(&extracted, &turns, anchor);
    let facts: Vec<ExtractedFact> = kept.into_iter().map(|v| v.fact).collect();
    let ungrounded: Vec<ExtractedFact> = extracted
        .iter()
        .zip(&notes)
        .filter(|(_, n)| **n == Some(Note::Ungrounded))
        .map(|(f, _)| f.clone())
        .collect();
    let mentions_cleared = notes.iter().filter(|n| **n == Some(Note::MentionNotInRound)).count();
    Ok(RoundResult {
        carries_answer: evidence && carries(&answer, &facts),
        question,
        key,
        evidence,
        scored: evidence && scored,
        skipped,
        truncated: extraction.as_ref().is_some_and(|e| e.truncated),
        facts,
        ungrounded,
        mentions_cleared,
        speed,
        seconds,
        raw_output: extraction.map(|e| e.raw_output).unwrap_or_default(),
        group,
    })
}

/// The summary printed and recorded.
pub fn summary(results: &[RoundResult]) -> String {
    let n = results.len().max(1) as f64;
    let sent: Vec<&RoundResult> = results.iter().filter(|r| r.skipped.is_none()).collect();
    let scored: Vec<&RoundResult> = results.iter().filter(|r| r.scored).collect();
    let carried = scored.iter().filter(|r| r.carries_answer).count();
    let facts: usize = sent.iter().map(|r| r.facts.len()).sum();
    let ungrounded: usize = sent.iter().map(|r| r.ungrounded.len()).sum();
    let cleared: usize = sent.iter().map(|r| r.mentions_cleared).sum();
    let empty = sent.iter().filter(|r| r.facts.is_empty() && !r.truncated).count();
    let truncated = sent.iter().filter(|r| r.truncated).count();
    let (pms, ptok, gms, gtok) = sent.iter().fold((0.0, 0usize, 0.0, 0usize), |a, r| {
        (
            a.0 + r.speed.prompt_ms,
            a.1 + r.speed.prompt_tokens,
            a.2 + r.speed.generation_ms,
            a.3 + r.speed.generated_tokens,
        )
    });
    let steps: usize = sent.iter().map(|r| r.speed.generation_steps).sum();
    let secs: f64 = sent.iter().map(|r| r.seconds).sum();
    let s = sent.len().max(1) as f64;
    format!(
        "{} rounds ({} evidence, {} scored for key information), {} sent to the model, {} skipped by the pre-filter ({:.1} %)\n\
         evidence rounds carrying the answer's key information: {carried} / {} ({:.1} %)\n\
         facts per round sent: {:.2} kept, {:.2} dropped as not from the round; time mentions cleared: {cleared}\n\
         [] rate {:.1} % (no fact kept); truncated {:.1} %\n\
         seconds per round sent: {:.2}; prompt {:.0} tokens/s ({:.0} tokens per round); generation {:.1} tokens/s ({:.0} tokens per round, {:.2} per decode)\n\
         key information per hour of extraction: {:.1}\n",
        results.len(),
        results.iter().filter(|r| r.evidence).count(),
        scored.len(),
        sent.len(),
        results.len() - sent.len(),
        100.0 * (results.len() - sent.len()) as f64 / n,
        scored.len(),
        100.0 * carried as f64 / scored.len().max(1) as f64,
        facts as f64 / s,
        ungrounded as f64 / s,
        100.0 * empty as f64 / s,
        100.0 * truncated as f64 / s,
        secs / s,
        ptok as f64 / (pms / 1e3).max(1e-9),
        ptok as f64 / s,
        gtok as f64 / (gms / 1e3).max(1e-9),
        gtok as f64 / s,
        gtok as f64 / steps.max(1) as f64,
        carried as f64 * 3600.0 / secs.max(1e-9),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(key: &str, output: &str, skipped: Option<&str>) -> RoundResult {
        RoundResult {
            question: "q".into(),
            key: key.into(),
            evidence: true,
            scored: true,
            skipped: skipped.map(Into::into),
            carries_answer: false,
            facts: Vec::new(),
            ungrounded: Vec::new(),
            mentions_cleared: 0,
            truncated: false,
            speed: Speed::default(),
            seconds: 1.0,
            raw_output: output.into(),
            group: 1,
        }
    }

    #[test]
    fn identity_compares_outputs_round_by_round_and_names_those_that_differ() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = [result("a", "[]", None), result("b", "[1]", None), result("c", "", Some("ack"))];
        let lines: Vec<String> = theirs.iter().map(|r| serde_json::to_string(r).unwrap()).collect();
        std::fs::write(dir.path().join("rounds.jsonl"), lines.join("\n")).unwrap();
        let ours = [
            result("b", "[2]", None),
            result("a", "[]", None),
            result("c", "", Some("ack")),
            result("d", "[]", None),
        ];
        assert_eq!(identity(&ours, dir.path()).unwrap(), (2, 1, vec!["b".to_owned()]));
        assert!(identity(&ours, &dir.path().join("missing")).is_err());
    }

    fn fact(content: &str, object: Option<&str>) -> ExtractedFact {
        ExtractedFact {
            content: content.into(),
            raw: String::new(),
            when: None,
            subject: None,
            predicate: None,
            object: object.map(Into::into),
            salience: 1.0,
        }
    }

    #[test]
    fn key_information_needs_every_key_word_in_one_fact() {
        let facts = [
            fact("The user adopted a beagle named Toby.", None),
            fact("The user works as a nurse.", Some("nurses")),
        ];
        assert!(carries("Toby", &facts));
        assert!(carries("a beagle", &facts));
        assert!(carries("Nurse", &facts));
        assert!(!carries("Toby the nurse", &facts), "split across two facts");
        assert!(!carries("Max", &facts));
        assert!(!carries("", &facts), "an answer with no key word is never carried");
        assert!(carries("3 days", &[fact("The user stayed 3 days in Rome.", None)]));
    }
}
