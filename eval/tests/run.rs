//! The harness end to end on a small hand-made LongMemEval file, with the hashing embedder.

use std::sync::Arc;

use mnemon::config::Config;
use mnemon_eval::{run, Benchmark, RunConfig};

use crate::common;
use common::{hashing, LME as DATA};

fn config(dir: &std::path::Path, out: &str, limit: Option<usize>) -> RunConfig {
    RunConfig {
        limit,
        engine: Config { context_budget: Some(200), ..Config::default() },
        ..common::run_config(dir.join("lme.json"), dir.join(out), Benchmark::LongMemEval)
    }
}

#[test]
fn an_interrupted_run_resumes_to_the_same_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lme.json"), DATA).unwrap();

    let full = run(&config(dir.path(), "full", None), &hashing, &|_, _| {}).unwrap();
    assert_eq!(full.metrics.overall.questions, 3);
    assert_eq!(full.metrics.overall.abstention, 1);
    let turn = &full.metrics.overall.levels["turn"];
    assert_eq!(turn.scored, 2);
    assert_eq!(turn.any[&1].hits, 2, "both questions find an evidence round first");
    assert_eq!(turn.all[&20].hits, 2);
    assert!(full.metrics.overall.context_tokens_p95 > 0);
    // The gold answers ("red"; 2, said "two pets") occur in every block; the abstention question
    // is not looked for.
    for budget in mnemon_eval::metrics::BUDGETS {
        let answered = &full.metrics.overall.answer_in[&budget];
        assert_eq!((answered.hits, answered.n), (2, 2), "{budget}");
        assert!(full.metrics.overall.evidence_share[&budget] > 0.0);
    }
    assert_eq!(full.metrics.overall.answer_left_out, 0);

    // Interrupted: one question done (a run limited to it), then a partial line as a crash
    // leaves; the selection is not pinned, so the full run resumes the same directory.
    let cfg = config(dir.path(), "resumed", None);
    run(&config(dir.path(), "resumed", Some(1)), &hashing, &|_, _| {}).unwrap();
    let predictions = cfg.out.join("predictions.jsonl");
    let mut text = std::fs::read_to_string(&predictions).unwrap();
    assert_eq!(text.lines().count(), 1);
    text.push_str("{\"id\":\"q2\",\"kin");
    std::fs::write(&predictions, text).unwrap();
    let mut ticks = Vec::new();
    let progress = std::sync::Mutex::new(&mut ticks);
    let resumed = run(&cfg, &hashing, &|done, total| progress.lock().unwrap().push((done, total))).unwrap();
    assert_eq!(ticks, vec![(2, 3), (3, 3)], "the finished question is not redone");
    assert_eq!(resumed.metrics, full.metrics);
    assert_eq!(std::fs::read_to_string(&predictions).unwrap().lines().count(), 3);
}

#[test]
fn resuming_under_other_pins_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lme.json"), DATA).unwrap();
    run(&config(dir.path(), "r", Some(1)), &hashing, &|_, _| {}).unwrap();
    let other =
        RunConfig { engine: Config { top_k: 5, ..Config::default() }, ..config(dir.path(), "r", Some(1)) };
    assert!(run(&other, &hashing, &|_, _| {}).is_err());
}

#[test]
fn artifacts_are_written_and_compare_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lme.json"), DATA).unwrap();
    run(&config(dir.path(), "a", None), &hashing, &|_, _| {}).unwrap();
    run(&config(dir.path(), "b", None), &hashing, &|_, _| {}).unwrap();
    for f in ["pins.json", "predictions.jsonl", "timings.jsonl", "summary.json", "report.md"] {
        assert!(dir.path().join("a").join(f).exists(), "{f}");
    }
    let pins: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("a/pins.json")).unwrap()).unwrap();
    assert_eq!(pins["pins"]["embedder"]["name"], "hashing-v1");
    assert_eq!(pins["pins"]["dataset"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/predictions.jsonl")).unwrap(),
        std::fs::read_to_string(dir.path().join("b/predictions.jsonl")).unwrap(),
        "identical runs give identical predictions"
    );
    let table = mnemon_eval::report::compare(&dir.path().join("a"), &dir.path().join("b")).unwrap();
    assert!(table.contains("| turn | ANY@10 | 2 | 100.0 | 100.0 | 0 | 0 | 1.0000 | +0.0000 |"), "{table}");
    assert!(table.contains("| answer | answer in 4000 | 2 | 100.0 | 100.0 | 0 | 0 | 1.0000 |"), "{table}");
    let report = std::fs::read_to_string(dir.path().join("a/report.md")).unwrap();
    assert!(report.contains("| overall | 2 | 0 | 100.0 | 100.0 | 100.0 | 100.0 |"), "{report}");
}

#[test]
fn a_run_with_an_extractor_counts_what_extraction_stored_and_decided() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lme.json"), DATA).unwrap();
    let script = r#"{
      "I bought a red kayak yesterday.": [
        {"content": "The user bought a red kayak.", "raw": "user: I bought a red kayak", "when": "yesterday",
         "subject": "user", "predicate": "bought", "object": "a red kayak", "salience": 1.0},
        {"content": "The user owns a blue canoe.", "raw": "user: I bought a red kayak", "when": null,
         "subject": "user", "predicate": "owns", "object": "a blue canoe", "salience": 1.0}],
      "My cat Miso sleeps all day.": [
        {"content": "The user has a cat, Miso, who sleeps all day.", "raw": "user: My cat Miso sleeps all day",
         "when": null, "subject": "user", "predicate": "has cat", "object": "Miso", "salience": 1.0}],
      "We adopted a dog called Pip, so two pets now.": [
        {"content": "The user adopted a dog called Pip.", "raw": "user: We adopted a dog called Pip",
         "when": null, "subject": "user", "predicate": "adopted", "object": "a dog called Pip", "salience": 1.0}]
    }"#;
    let extractor = mnemon::extract::ScriptedExtractor::from_json("lme", script).unwrap();
    let cfg = RunConfig { extractor: Some(Arc::new(extractor)), ..config(dir.path(), "facts", None) };
    let summary = run(&cfg, &hashing, &|_, _| {}).unwrap();
    let facts = summary.facts.expect("a run with an extractor counts facts");
    assert_eq!(facts.rounds_extracted + facts.rounds_prefiltered, 6, "{facts:?}");
    assert_eq!((facts.stored, facts.ungrounded, facts.superseded), (3, 1, 0), "{facts:?}");
    let report = std::fs::read_to_string(cfg.out.join("report.md")).unwrap();
    assert!(report.contains("## Facts") && report.contains("3 facts stored"), "{report}");

    let plain = run(&config(dir.path(), "plain", None), &hashing, &|_, _| {}).unwrap();
    assert_eq!(plain.facts, None);
    assert!(!std::fs::read_to_string(dir.path().join("plain/report.md")).unwrap().contains("## Facts"));
}
