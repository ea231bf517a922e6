//! The MiniLM embedder through the real ONNX Runtime. Needs `scripts/fetch-models.sh` (the
//! README's test command runs it); without the files these tests fail with the fix.
#![cfg(feature = "onnx")]

use crate::common;

use common::minilm;

use mnemon::config::Config;
use mnemon::embed::{Embedder, OnnxConfig, OnnxEmbedder};
use mnemon::export::ExportFormat;
use mnemon::internals::vector::cosine;
use mnemon::{Error, Memory, Message, Query};

const PAIRS: [(&str, &str); 8] = [
    ("I moved to Lisbon last spring.", "Last spring I relocated to Lisbon."),
    ("My daughter starts kindergarten in September.", "In September my girl begins kindergarten."),
    ("I'm allergic to peanuts.", "Peanuts give me an allergic reaction."),
    ("I work as a nurse on night shifts.", "My job is nursing, mostly overnight shifts."),
    ("We adopted a beagle puppy named Toby.", "Our new beagle pup is called Toby."),
    ("I've been learning to play the cello.", "I am taking cello lessons these days."),
    ("My car broke down on the highway yesterday.", "Yesterday my vehicle failed on the motorway."),
    (
        "I prefer green tea over coffee in the morning.",
        "In the mornings I'd rather drink green tea than coffee.",
    ),
];

#[test]
fn paraphrases_rank_above_unrelated_sentences_by_a_clear_margin() {
    let e = minilm();
    let mut para = Vec::new();
    let mut unrelated = Vec::new();
    let lefts: Vec<&str> = PAIRS.iter().map(|p| p.0).collect();
    let rights: Vec<&str> = PAIRS.iter().map(|p| p.1).collect();
    let l = e.embed_documents(&lefts).unwrap();
    let r = e.embed_documents(&rights).unwrap();
    for i in 0..PAIRS.len() {
        para.push(cosine(&l[i], &r[i]));
        for j in 0..PAIRS.len() {
            if i != j {
                unrelated.push(cosine(&l[i], &r[j]));
                // Each sentence's paraphrase beats every unrelated sentence.
                assert!(cosine(&l[i], &r[i]) > cosine(&l[i], &r[j]) + 0.2, "pair {i} vs {j}");
            }
        }
    }
    let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
    let (p, u) = (mean(&para), mean(&unrelated));
    eprintln!("paraphrase mean cosine {p:.3}, unrelated mean cosine {u:.3}");
    assert!(p > 0.6, "paraphrase mean {p}");
    assert!(u < 0.2, "unrelated mean {u}");
    assert!(p - u > 0.45, "margin {}", p - u);
}

#[test]
fn vectors_are_unit_length_deterministic_and_384_wide() {
    let e = minilm();
    let a = e.embed_query("Where do I live?").unwrap();
    let b = e.embed_query("Where do I live?").unwrap();
    assert_eq!(a.len(), 384);
    assert_eq!(a, b);
    let norm: f32 = a.iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-4);
    // A long input is truncated, not refused.
    let long = "word ".repeat(5_000);
    assert_eq!(e.embed_query(&long).unwrap().len(), 384);
    assert!(e.count_tokens(&long).unwrap() > 5_000);
}

#[test]
fn a_text_embeds_to_the_same_bits_alone_or_in_any_batch() {
    let dir = mnemon::model_files::default_dir();
    let batched16 = OnnxEmbedder::new(OnnxConfig { batch_size: 16, ..OnnxConfig::from_dir(&dir) }).unwrap();
    let texts: Vec<String> =
        (0..40).map(|i| format!("{}{}", "filler ".repeat(i * 7 % 60), PAIRS[i % PAIRS.len()].0)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = batched16.embed_documents(&refs).unwrap();
    assert_eq!(minilm().config().batch_size, 1);
    // Questions always batch (up to 64 per call): the same bits as one at a time.
    let questions = minilm().embed_queries(&refs).unwrap();
    for (i, t) in refs.iter().enumerate() {
        assert_eq!(minilm().embed_documents(&[t]).unwrap()[0], batched[i], "text {i}");
        assert_eq!(minilm().embed_query(t).unwrap(), questions[i], "question {i}");
    }
}

#[test]
fn recall_with_minilm_finds_the_round_by_meaning() {
    let t = common::temp_store();
    // Dense only: the point is the embedding's sense of meaning, with no word in common.
    let m = Memory::builder(&t.path)
        .embedder(minilm())
        .config(Config { rrf_k: None, ..Config::default() })
        .open()
        .unwrap();
    m.add(&common::conversation(), "u").unwrap();
    let r = m.recall(Query::new("What musical instrument am I studying?"), "u").unwrap();
    assert!(r.rounds[0].turns[0].content.contains("cello"), "{:?}", r.rounds[0]);
    let r = m.recall(Query::new("What is my occupation?"), "u").unwrap();
    assert!(r.rounds[0].turns[0].content.contains("nurse"));
    let r = m.recall(Query::new("Any book suggestions for me?"), "u").unwrap();
    assert!(r.rounds[0].turns[0].content.contains("novel"));
    // The store is pinned to this model.
    let pins = m.pins().unwrap();
    assert_eq!(pins["embedder.name"], "all-MiniLM-L6-v2-int8");
    assert_eq!(pins["embedder.dim"], "384");
    drop(m);
    let hashing = Memory::builder(&t.path).embedder(mnemon::embed::HashingEmbedder::default()).open();
    match hashing {
        Err(Error::PinMismatch { differences }) => {
            let keys: Vec<&str> = differences.iter().map(|d| d.key.as_str()).collect();
            assert_eq!(keys, vec!["embedder.name", "embedder.revision", "embedder.template"]);
        }
        other => panic!("{:?}", other.err()),
    }
    let stored = Memory::builder(&t.path).stored().open().unwrap();
    assert!(stored.export(ExportFormat::Markdown, "u").unwrap().contains("cello"));
}

#[test]
fn two_minilm_stores_from_the_same_input_are_identical() {
    let (a, b) = (common::temp_store(), common::temp_store());
    let build = |p: &std::path::Path| {
        let m = Memory::builder(p).embedder(minilm()).open().unwrap();
        m.add(&common::conversation(), "u").unwrap();
        m.add(&[Message::user("I switched to day shifts.", "2023-08-01T07:00:00")], "u").unwrap();
        m
    };
    let (ma, mb) = (build(&a.path), build(&b.path));
    assert_eq!(ma.export(ExportFormat::Jsonl, "u").unwrap(), mb.export(ExportFormat::Jsonl, "u").unwrap());
    let q = "How do I sleep with my work schedule?";
    assert_eq!(ma.get_context(q, "u").unwrap(), mb.get_context(q, "u").unwrap());
}

#[test]
fn a_missing_model_file_names_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    match OnnxEmbedder::new(OnnxConfig::from_dir(dir.path())) {
        Err(Error::ModelUnavailable { path, fix, .. }) => {
            assert!(path.ends_with("all-MiniLM-L6-v2/model.onnx"));
            assert!(fix.contains("scripts/fetch-models.sh"));
        }
        other => panic!("{other:?}"),
    }
    // A file that is not a model.
    let fake = tempfile::tempdir().unwrap();
    let real = mnemon::model_files::default_dir();
    std::fs::create_dir_all(fake.path().join("all-MiniLM-L6-v2")).unwrap();
    std::fs::write(fake.path().join(mnemon::model_files::MINILM_MODEL), b"not an onnx model").unwrap();
    std::fs::copy(
        real.join(mnemon::model_files::MINILM_TOKENIZER),
        fake.path().join(mnemon::model_files::MINILM_TOKENIZER),
    )
    .unwrap();
    let config = OnnxConfig {
        runtime: real.join(mnemon::model_files::ORT_LIBRARY),
        ..OnnxConfig::from_dir(fake.path())
    };
    assert!(matches!(OnnxEmbedder::new(config), Err(Error::ModelUnavailable { .. })));
}
