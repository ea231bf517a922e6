//! Local reading: each question answered from no memory, mnemon's context and the oracle's by a
//! model on this machine. The contexts and the bookkeeping are checked through a recording
//! double; the path through llama.cpp with a real GGUF (SmolLM2-135M, fetched by
//! scripts/fetch-models.sh), whose answers are useless but must be byte-identical run to run.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use mnemon::internals::generate::LlamaReader;
use mnemon_eval::qa::{Judge, Local, LocalConfig, Reply, Templates};
use mnemon_eval::{run, Benchmark, RunConfig};

use crate::common::{self, hashing, LME};

/// Answers "red" to every prompt and keeps the prompts it was given.
struct Recorder(Mutex<Vec<String>>);

impl Local for Recorder {
    fn pins(&self) -> Value {
        json!("recorder v1")
    }

    fn reply(&self, prompt: &str, _max_tokens: u32) -> mnemon::Result<Reply> {
        self.0.lock().unwrap().push(prompt.to_owned());
        let text = if prompt.contains("Is the response correct?") { "yes" } else { "red\nand more" };
        Ok(Reply { text: text.into(), prompt_tokens: 1, completion_tokens: 1 })
    }
}

fn config(dir: &Path, out: &str, local: LocalConfig) -> RunConfig {
    RunConfig {
        local: Some(local),
        ..common::run_config(dir.join("data.json"), dir.join(out), Benchmark::LongMemEval)
    }
}

fn local(dir: &Path, reader: Arc<dyn Local>, judge: Option<Judge>) -> LocalConfig {
    LocalConfig {
        reader,
        judge,
        budgets: vec![400],
        cache: dir.join("qa-cache.db"),
        templates: Templates::default(),
    }
}

fn reads(dir: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(dir.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|p| (p["id"].as_str().unwrap().to_owned(), p.get("reads").cloned().unwrap_or(Value::Null)))
        .collect()
}

#[test]
fn each_question_is_read_from_no_memory_mnemons_context_and_the_oracles_and_scored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LME).unwrap();
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    let cfg =
        config(dir.path(), "r", local(dir.path(), recorder.clone(), Some(Judge::Local(recorder.clone()))));
    let summary = run(&cfg, &hashing, &|_, _| {}).unwrap();
    let prompts = recorder.0.lock().unwrap().clone();
    let q1: Vec<&String> = prompts.iter().filter(|p| p.contains("What colour is my kayak?")).collect();
    // Three contexts read, each graded once.
    assert_eq!(q1.iter().filter(|p| p.contains("Answer:")).count(), 3, "{q1:#?}");
    let none = q1.iter().find(|p| p.contains("(nothing was recalled)")).expect("the no-memory read");
    assert!(!none.contains("kayak yesterday"));
    // mnemon's context holds the whole haystack's best; the oracle's only the evidence session.
    let with_pasta = q1.iter().filter(|p| p.contains("Answer:") && p.contains("pasta")).count();
    let with_kayak = q1.iter().filter(|p| p.contains("Answer:") && p.contains("red kayak yesterday")).count();
    assert_eq!((with_pasta, with_kayak), (1, 2), "{q1:#?}");
    // The judge grades the reply's first line.
    assert!(prompts.iter().any(|p| p.contains("Is the response correct?") && p.contains("Response: red\n")));

    let r = reads(&dir.path().join("r"));
    let q1 = &r.iter().find(|(id, _)| id == "q1").unwrap().1;
    assert_eq!(q1.as_object().unwrap().keys().collect::<Vec<_>>(), ["mnemon@400", "none", "oracle@400"]);
    assert_eq!(
        q1["oracle@400"],
        json!({"response": "red", "prompt_tokens": 1, "contains": true, "judged": true})
    );
    // "2" is not in "red"; the abstention question is read (a judge is given) but not looked for.
    let q2 = &r.iter().find(|(id, _)| id == "q2").unwrap().1;
    assert_eq!(q2["none"]["contains"], json!(false));
    let q3 = &r.iter().find(|(id, _)| id == "q3_abs").unwrap().1;
    assert!(q3["none"].get("contains").is_none());
    let rates = &summary.metrics.overall.reads;
    assert_eq!(rates["none"].n, 3);
    assert_eq!((rates["none"].contains.unwrap().hits, rates["none"].contains.unwrap().n), (1, 2));
    let report = std::fs::read_to_string(dir.path().join("r/report.md")).unwrap();
    assert!(report.contains("## Local reader"), "{report}");
    assert!(report.contains("| group | n | none | none judged | mnemon@400 | mnemon@400 judged | oracle@400 | oracle@400 judged |"), "{report}");

    // A rerun reads nothing again: every reply comes from the cache, and the answers are the same.
    let before = recorder.0.lock().unwrap().len();
    run(&config(dir.path(), "again", cfg.local.clone().unwrap()), &hashing, &|_, _| {}).unwrap();
    assert_eq!(recorder.0.lock().unwrap().len(), before);
    assert_eq!(reads(&dir.path().join("again")), r);
}

#[test]
fn a_real_gguf_reads_locally_and_gives_the_same_bytes_in_a_fresh_cache() {
    let path = mnemon::extract::default_gguf("SmolLM2-135M-Instruct.Q4_1.gguf");
    let reader: Arc<dyn Local> = Arc::new(LlamaReader::load(&path, 2, 2048).unwrap());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.json"), LME).unwrap();
    let one = config(dir.path(), "one", local(&dir.path().join("c1"), reader.clone(), None));
    let summary = run(&one, &hashing, &|_, _| {}).unwrap();
    let first = reads(&dir.path().join("one"));
    // Without a judge the abstention question is not read.
    assert_eq!(first.iter().filter(|(_, r)| r.is_object()).count(), 2, "{first:?}");
    for (_, r) in first.iter().filter(|(_, r)| r.is_object()) {
        for (name, read) in r.as_object().unwrap() {
            assert!(read["prompt_tokens"].as_u64().unwrap() > 20, "{name}: {read}");
            assert!(read.get("contains").is_some(), "{name}: {read}");
        }
    }
    assert_eq!(summary.metrics.overall.reads["oracle@400"].n, 2);
    // Greedy and stateless: a fresh cache generates every reply again, byte for byte.
    let two = config(dir.path(), "two", local(&dir.path().join("c2"), reader.clone(), None));
    run(&two, &hashing, &|_, _| {}).unwrap();
    assert_eq!(reads(&dir.path().join("two")), first);
    // A prompt beyond the reader's context is refused, naming it.
    let e =
        mnemon::internals::generate::LlamaReader::load(&path, 2, 64).unwrap().answer(&"word ".repeat(100), 8);
    assert!(e.unwrap_err().to_string().contains("prompt"));
}
