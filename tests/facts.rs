//! Facts on the write and read paths: verification, storage, dedup, the extraction queue,
//! ranking with their round, rendering, export and import. The extractor here is a scripted test
//! double (its outputs are written below); `tests/extract.rs` runs the same paths with a real GGUF.

use crate::common::{self, ts};

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{conversation, temp_store};
use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::embed::HashingEmbedder;
use mnemon::export::ExportFormat;
use mnemon::extract::{Extraction, Extractor, ExtractorPins};
use mnemon::notes::{Filter, Search};
use mnemon::rounds::Turn;
use mnemon::{Error, Memory, Message, Query};

/// Facts as JSON per user turn; `[]` for any other round. Fails while `fail` is above zero.
struct Scripted {
    outputs: HashMap<String, String>,
    calls: AtomicUsize,
    fail: AtomicUsize,
    /// Rounds whose first turn starts with this fail, every time.
    poison: Option<&'static str>,
    /// Milliseconds each extraction takes (to widen races).
    delay_ms: u64,
    /// Wait (up to 30 s) for the store to close, then report whether it was cancelled.
    block: bool,
    cancelled: std::sync::atomic::AtomicBool,
    /// Rounds it asks for per `extract_batch` call, and the sizes of the calls it got.
    batch: usize,
    groups: std::sync::Mutex<Vec<usize>>,
}

fn fact(content: &str, raw: &str, when: Option<&str>) -> String {
    serde_json::json!({
        "content": content, "raw": raw, "when": when,
        "subject": null, "predicate": null, "object": null, "salience": 1.0
    })
    .to_string()
}

fn scripted() -> Arc<Scripted> {
    let mut outputs = HashMap::new();
    outputs.insert(
        "I adopted a beagle named Toby last month.".to_string(),
        format!(
            "[{},{}]",
            fact(
                "The user adopted a beagle named Toby.",
                "user: I adopted a beagle named Toby last month",
                Some("last month")
            ),
            // Copied from elsewhere: verification drops it.
            fact(
                "The assistant recommended a light waterproof jacket for a rainy week.",
                "assistant: Pack a light waterproof jacket",
                None
            )
        ),
    );
    outputs.insert(
        "I work as a nurse at the city hospital, night shifts mostly.".to_string(),
        format!(
            "[{},{}]",
            fact(
                "The user works as a nurse at the city hospital.",
                "user: I work as a nurse at the city hospital",
                None
            ),
            // The same fact again: an exact duplicate within the session.
            fact(
                "The user works as a nurse at the city hospital!",
                "user: I work as a nurse at the city hospital",
                None
            )
        ),
    );
    outputs.insert(
        "I started learning the cello this week.".to_string(),
        format!(
            "[{}]",
            fact(
                "The user started learning the cello.",
                "user: I started learning the cello this week",
                Some("this week")
            )
        ),
    );
    Arc::new(Scripted {
        outputs,
        calls: AtomicUsize::new(0),
        fail: AtomicUsize::new(0),
        poison: None,
        delay_ms: 0,
        block: false,
        cancelled: std::sync::atomic::AtomicBool::new(false),
        batch: 1,
        groups: std::sync::Mutex::default(),
    })
}

impl Extractor for Scripted {
    fn pins(&self) -> ExtractorPins {
        ExtractorPins {
            name: "scripted".into(),
            model_blake3: "0".repeat(64),
            quant: "none".into(),
            runtime: "test".into(),
            decode: "table".into(),
            prompt: "facts.rs".into(),
        }
    }

    fn extract_cancellable(
        &self,
        turns: &[Turn],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> mnemon::Result<Extraction> {
        if self.block {
            self.calls.fetch_add(1, Ordering::SeqCst);
            for _ in 0..3000 {
                if cancel.load(Ordering::SeqCst) {
                    self.cancelled.store(true, Ordering::SeqCst);
                    return Err(Error::Cancelled);
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(self.delay_ms));
        self.extract(turns)
    }

    fn extract_batch(
        &self,
        rounds: &[&[Turn]],
        cancel: &std::sync::atomic::AtomicBool,
    ) -> mnemon::Result<Vec<mnemon::Result<Extraction>>> {
        self.groups.lock().unwrap().push(rounds.len());
        Ok(rounds.iter().map(|r| self.extract_cancellable(r, cancel)).collect())
    }

    fn batch_size(&self) -> usize {
        self.batch
    }

    fn extract(&self, turns: &[Turn]) -> mnemon::Result<Extraction> {
        if self.poison.is_some_and(|p| turns[0].content.starts_with(p)) {
            return Err(Error::Extractor("poisoned round".into()));
        }
        if self.fail.load(Ordering::SeqCst) > 0 {
            self.fail.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::Extractor("scripted failure".into()));
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        let out = self.outputs.get(&turns[0].content).cloned().unwrap_or_else(|| "[]".into());
        Ok(Extraction::from_output(out, false, 10, 5))
    }
}

fn open(path: &std::path::Path, x: &Arc<Scripted>, background: bool) -> Memory {
    let config = Config { background_extraction: background, ..Config::default() };
    Memory::builder(path)
        .embedder(HashingEmbedder::default())
        .extractor(x.clone() as Arc<dyn Extractor>)
        .config(config)
        .open()
        .unwrap()
}

fn exports(m: &Memory, user: &str) -> [String; 3] {
    [ExportFormat::Markdown, ExportFormat::Text, ExportFormat::Jsonl].map(|f| m.export(f, user).unwrap())
}

#[test]
fn facts_are_verified_deduplicated_stored_and_logged() {
    let t = temp_store();
    let x = scripted();
    let m = open(&t.path, &x, false);
    m.add(&conversation(), "u").unwrap();
    assert_eq!(m.pending(None).unwrap(), 0);
    let facts = m.active_facts("u").unwrap();
    let contents: Vec<&str> = facts.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "The user adopted a beagle named Toby.",
            "The user works as a nurse at the city hospital.",
            "The user started learning the cello."
        ]
    );
    // "last month" from 2023/05/20 is April 2023; "this week" is vague.
    assert_eq!(facts[0].valid_time.as_deref(), Some("2023-04"));
    assert_eq!(facts[0].mention.as_deref(), Some("last month"));
    assert!(facts[0].key.ends_with("/1"), "{}", facts[0].key);
    let text = m.export(ExportFormat::Text, "u").unwrap();
    assert_eq!(text.matches(" fact.stored ").count(), 3, "{text}");
    assert_eq!(text.matches(" fact.duplicate ").count(), 1, "{text}");
    assert_eq!(text.matches(" round.extracted ").count(), 4, "{text}");
    assert!(text.contains(r#""ungrounded":1"#), "{text}");
    // A round's facts sort right after it in the log.
    let stored = text.find(" round.stored 2023-05-20").unwrap();
    let log = &text[text.find("decisions:").unwrap()..];
    assert!(
        text[stored..].find(" fact.stored ").unwrap()
            < text[stored + 1..].find(" round.stored ").unwrap_or(usize::MAX),
        "{log}"
    );
}

#[test]
fn facts_rank_with_their_round_and_render_under_it() {
    let t = temp_store();
    let x = scripted();
    let m = open(&t.path, &x, false);
    m.add(&conversation(), "u").unwrap();
    let plain_dir = temp_store();
    let plain = Memory::builder(&plain_dir.path).embedder(HashingEmbedder::default()).open().unwrap();
    plain.add(&conversation(), "u").unwrap();

    let q = Query::new("The user adopted a beagle named Toby.").top_k(1);
    let with = m.recall(q.clone(), "u").unwrap();
    let without = plain.recall(q.clone(), "u").unwrap();
    assert_eq!(with.rounds[0].key, without.rounds[0].key);
    // The round scores as its best record: here the fact, a closer match than the round's text.
    assert!(
        with.rounds[0].cosine > without.rounds[0].cosine + 0.1,
        "{} vs {}",
        with.rounds[0].cosine,
        without.rounds[0].cosine
    );
    assert_eq!(with.rounds[0].facts.len(), 1);

    let context = m.get_context(Query::new("What is my dog called?").top_k(2), "u").unwrap();
    assert!(
        context.text.contains("facts:\n- The user adopted a beagle named Toby. (2023-04)\n"),
        "{}",
        context.text
    );
    // An undated fact that updates nothing is not rendered: it repeats its round, shown in full
    // beneath, in other words. Recall and the export still hold it.
    let work = m.get_context(Query::new("Where do I work as a nurse?").top_k(1), "u").unwrap();
    assert!(work.text.contains("I work as a nurse at the city hospital"), "{}", work.text);
    assert!(!work.text.contains("facts:"), "{}", work.text);
    let nurse = m.recall(Query::new("Where do I work as a nurse?").top_k(1), "u").unwrap();
    assert!(nurse.rounds[0].facts.iter().any(|f| !f.in_context()), "{:?}", nurse.rounds[0].facts);
    let md = m.export(ExportFormat::Markdown, "u").unwrap();
    assert!(md.contains("The user started learning the cello."), "{md}");
    assert!(md.contains("The user works as a nurse at the city hospital."), "{md}");
    // Recall after a reopen (index rebuilt from the store) equals recall on the warm index.
    drop(m);
    let again = open(&t.path, &x, false);
    assert_eq!(again.recall(q.clone(), "u").unwrap(), with);
}

#[test]
fn the_queue_drained_in_the_background_ends_where_inline_extraction_does() {
    let x = scripted();
    let inline = temp_store();
    let background = temp_store();
    let a = open(&inline.path, &x, false);
    let b = open(&background.path, &x, true);
    // A chat loop: one call per message.
    for message in conversation() {
        a.add(std::slice::from_ref(&message), "u").unwrap();
        b.add(std::slice::from_ref(&message), "u").unwrap();
    }
    b.flush().unwrap();
    assert_eq!(b.pending(Some("u".into())).unwrap(), 0);
    assert_eq!(exports(&a, "u"), exports(&b, "u"));
}

#[test]
fn a_failed_extraction_stays_queued_and_resumes_after_a_restart() {
    let x = scripted();
    let t = temp_store();
    x.fail.store(usize::MAX / 2, Ordering::SeqCst);
    {
        let m = open(&t.path, &x, false);
        // Inline: the rounds are committed, the error is returned, the rounds wait.
        let err = m.add(&conversation(), "u").unwrap_err();
        assert!(matches!(err, Error::Extractor(_)), "{err}");
        assert_eq!(m.pending(Some("u".into())).unwrap(), 4);
        assert_eq!(m.rounds("u").unwrap().len(), 4);
        assert!(m.flush().is_err());
        // A dump keeps the queue.
        assert!(m.export(ExportFormat::Jsonl, "u").unwrap().contains(r#""kind":"queued""#));
    }
    // Without an extractor the queue cannot drain, and says so.
    let stored = Memory::builder(&t.path).stored().open().unwrap();
    assert!(matches!(stored.flush(), Err(Error::NoExtractor { pending: 4, .. })));
    drop(stored);
    x.fail.store(0, Ordering::SeqCst);
    let m = open(&t.path, &x, true);
    m.flush().unwrap();
    assert_eq!(m.pending(None).unwrap(), 0);

    let reference = temp_store();
    let r = open(&reference.path, &x, false);
    r.add(&conversation(), "u").unwrap();
    assert_eq!(m.active_facts("u").unwrap(), r.active_facts("u").unwrap());
    assert_eq!(
        m.export(ExportFormat::Markdown, "u").unwrap(),
        r.export(ExportFormat::Markdown, "u").unwrap()
    );
}

#[test]
fn a_plain_store_refuses_an_extractor_and_an_extracting_one_opens_without_it() {
    let x = scripted();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&conversation(), "u").unwrap();
    let md = m.export(ExportFormat::Markdown, "u").unwrap();
    drop(m);
    // Reading needs no extractor.
    let reader = Memory::builder(&t.path).embedder(HashingEmbedder::default()).open().unwrap();
    assert_eq!(reader.export(ExportFormat::Markdown, "u").unwrap(), md);
    assert_eq!(reader.active_facts("u").unwrap().len(), 3);
    let plain = temp_store();
    Memory::builder(&plain.path).embedder(HashingEmbedder::default()).open().unwrap();
    match Memory::builder(&plain.path)
        .embedder(HashingEmbedder::default())
        .extractor(x as Arc<dyn Extractor>)
        .open()
    {
        Err(Error::PinMismatch { differences, .. }) => {
            assert!(differences.iter().any(|d| d.key == "extraction"), "{differences:?}");
        }
        other => panic!("expected a pin mismatch, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_dump_with_facts_imports_losslessly_and_forget_removes_them() {
    let x = scripted();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&conversation(), "u").unwrap();
    let dump = m.export(ExportFormat::Jsonl, "u").unwrap();
    let copy = t.dir.path().join("copy.db");
    let report = Memory::builder(&copy).import(&dump).unwrap();
    assert_eq!((report.rounds, report.facts, report.queued), (4, 3, 0));
    let imported = open(&copy, &x, false);
    assert_eq!(exports(&imported, "u"), exports(&m, "u"));
    let q = Query::new("Which instrument am I learning?");
    assert_eq!(imported.recall(q.clone(), "u").unwrap(), m.recall(q.clone(), "u").unwrap());
    assert_eq!(m.forget_user("u").unwrap().rounds, 4);
    assert!(m.active_facts("u").unwrap().is_empty());
    assert_eq!(m.pending(None).unwrap(), 0);
}

#[test]
fn a_prefiltered_round_never_reaches_the_model() {
    let x = scripted();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&[Message::user("ok thanks!", "2023-05-20T10:00:00")], "u").unwrap();
    assert_eq!(x.calls.load(Ordering::SeqCst), 0);
    let text = m.export(ExportFormat::Text, "u").unwrap();
    assert!(text.contains(" round.prefiltered "), "{text}");
}

fn triple(content: &str, raw: &str, s: &str, p: &str, o: &str) -> String {
    serde_json::json!({
        "content": content, "raw": raw, "when": null,
        "subject": s, "predicate": p, "object": o, "salience": 1.0
    })
    .to_string()
}

/// A move superseding a home, a refinement that does not, and an assistant fact that never does.
fn moves() -> (Arc<Scripted>, Vec<Message>) {
    let mut outputs = HashMap::new();
    let mut say = |turn: &str, facts: Vec<String>| {
        outputs.insert(turn.to_string(), format!("[{}]", facts.join(",")));
    };
    say(
        "I live in Porto, near the river.",
        vec![triple("The user lives in Porto.", "user: I live in Porto", "user", "lives in", "Porto")],
    );
    say(
        "I have a cat named Pixel.",
        vec![triple(
            "The user has a cat named Pixel.",
            "user: I have a cat named Pixel",
            "user",
            "has",
            "a cat",
        )],
    );
    say(
        "Big news: I moved to Lisbon last week!",
        vec![triple(
            "The user moved to Lisbon.",
            "user: I moved to Lisbon last week",
            "user",
            "moved to",
            "Lisbon",
        )],
    );
    say(
        "We also adopted a dog named Rex.",
        vec![triple(
            "The user has a dog named Rex.",
            "user: We also adopted a dog named Rex",
            "user",
            "has",
            "a dog",
        )],
    );
    let x = Arc::new(Scripted { outputs, ..Arc::try_unwrap(scripted()).ok().expect("fresh") });
    let messages = vec![
        Message::user("I live in Porto, near the river.", "2024-01-10T10:00:00").in_session("a"),
        Message::assistant("Porto is lovely.", "2024-01-10T10:00:00").in_session("a"),
        Message::user("I have a cat named Pixel.", "2024-01-10T10:00:00").in_session("a"),
        Message::user("Big news: I moved to Lisbon last week!", "2024-06-02T09:00:00").in_session("b"),
        Message::assistant("Congratulations on the move!", "2024-06-02T09:00:00").in_session("b"),
        Message::user("We also adopted a dog named Rex.", "2024-06-02T09:00:00").in_session("b"),
    ];
    (x, messages)
}

#[test]
fn a_move_supersedes_the_old_home_which_every_read_path_then_hides() {
    let (x, messages) = moves();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&messages, "maya").unwrap();
    let facts = m.active_facts("maya").unwrap();
    assert!(facts.iter().all(|f| !f.content.contains("Porto")), "superseded facts are on no read path");
    let lisbon = facts.iter().find(|f| f.content.contains("Lisbon")).unwrap();
    assert_eq!(lisbon.salience, 1.0);
    // Pets coexist: the dog does not replace the cat.
    assert_eq!(facts.iter().filter(|f| f.content.contains("cat") || f.content.contains("dog")).count(), 2);
    let log = m.decisions("maya").unwrap();
    let superseded: Vec<_> = log.iter().filter(|d| d.kind == DecisionKind::FactSuperseded).collect();
    assert_eq!(superseded.len(), 1);
    assert_eq!(superseded[0].other.as_deref(), Some(lisbon.key.as_str()));
    let porto = superseded[0].record.clone();

    let q = Query::new("Where does the user live?").top_k(10);
    let recall = m.recall(q.clone(), "maya").unwrap();
    assert!(recall.rounds.iter().flat_map(|r| &r.facts).all(|f| !f.content.contains("Porto")));
    let context = m.get_context(q.clone(), "maya").unwrap();
    // Undated, but an update of the old home: rendered.
    let moved = recall.rounds.iter().flat_map(|r| &r.facts).find(|f| f.content.contains("Lisbon")).unwrap();
    assert_eq!(
        (moved.valid_time.as_deref(), moved.supersedes.as_slice()),
        (None, [porto.clone()].as_slice())
    );
    assert!(context.text.contains("- The user moved to Lisbon."), "{}", context.text);
    assert!(!context.text.contains("- The user lives in Porto."), "{}", context.text);
    // The round itself is evidence and stays, marked with what its fact became.
    assert!(
        context.text.contains("(superseded 2024-06-02: now Lisbon)\nuser: I live in Porto, near the river."),
        "{}",
        context.text
    );

    // A search ranks the active facts on request, by cosine, the superseded one never.
    let found = m.search(&Search::new("The user moved to Lisbon.").limit(1000).with_facts(), "maya").unwrap();
    assert_eq!(found.facts.len(), facts.len());
    assert_eq!(found.facts[0].fact.key, lisbon.key);
    assert!(found.facts[0].cosine > 0.8 && found.facts[0].score <= 1.0, "{:?}", found.facts[0]);
    assert!(found.facts.windows(2).all(|w| w[0].cosine >= w[1].cosine));
    assert!(found.facts.iter().all(|h| !h.fact.content.contains("Porto")));
    let top = m
        .search(&Search::new("The user moved to Lisbon.").limit(1).min_score(0.8).with_facts(), "maya")
        .unwrap();
    assert_eq!(top.facts.len(), 1);
    let tagged =
        Search::new("Lisbon").with_facts().filter(Filter { tags_any: vec!["x".into()], ..Filter::default() });
    assert!(m.search(&tagged, "maya").unwrap().facts.is_empty(), "facts carry no tags");
    assert!(m.search(&Search::new("Lisbon"), "maya").unwrap().facts.is_empty(), "facts only on request");

    let md = m.export(ExportFormat::Markdown, "maya").unwrap();
    assert!(md.contains(&format!("~~The user lives in Porto.~~ (superseded by `{}`)", lisbon.key)), "{md}");
    assert!(md.contains(&format!("The user moved to Lisbon. → supersedes `{porto}`")), "{md}");
    let text = m.export(ExportFormat::Text, "maya").unwrap();
    assert_eq!(text.matches(" fact.superseded ").count(), 1, "{text}");
    assert!(
        text.contains(r#""rule":"functional-value""#) && text.contains(r#""key":"user|lives_in""#),
        "{text}"
    );
    assert!(text.contains(r#""old":"Porto""#) && text.contains(r#""new":"Lisbon""#), "{text}");

    // The same after a reopen (the index rebuilt from the store) and through a dump.
    drop(m);
    let again = open(&t.path, &x, false);
    assert_eq!(again.recall(q.clone(), "maya").unwrap(), recall);
    let copy = t.dir.path().join("copy.db");
    Memory::builder(&copy).import(&again.export(ExportFormat::Jsonl, "maya").unwrap()).unwrap();
    assert_eq!(open(&copy, &x, false).export(ExportFormat::Markdown, "maya").unwrap(), md);
}

/// The facts of every round `recall` finds as of `ts`, and the rounds' keys.
fn recalled_as_of(m: &Memory, user: &str, question: &str, at: &str) -> (Vec<String>, Vec<String>) {
    let recall = m.recall(Query::new(question).top_k(20).as_of(ts(at)), user).unwrap();
    let facts = recall.rounds.iter().flat_map(|r| &r.facts).map(|f| f.content.clone()).collect();
    (facts, recall.rounds.into_iter().map(|r| r.ts).collect())
}

#[test]
fn read_as_of_a_time_the_memory_holds_the_home_it_held_then() {
    let (x, messages) = moves();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&messages, "maya").unwrap();
    let q = "Where does the user live?";

    // Before the move: the old home is current, and nothing said later is there.
    let (facts, rounds) = recalled_as_of(&m, "maya", q, "2024-03-01T00:00:00");
    assert!(facts.contains(&"The user lives in Porto.".to_owned()), "{facts:?}");
    assert!(facts.iter().all(|f| !f.contains("Lisbon") && !f.contains("dog")), "{facts:?}");
    assert!(rounds.iter().all(|ts| ts.starts_with("2024-01-10")), "{rounds:?}");
    let context = m.get_context(Query::new(q).as_of(ts("2024-03-01T00:00:00")), "maya").unwrap();
    assert!(context.text.contains("I live in Porto") && !context.text.contains("Lisbon"), "{}", context.text);
    // The question is dated by the time it is read at.
    assert_eq!(
        m.recall(Query::new(q).as_of(ts("2024-03-01T00:00:00")), "maya").unwrap().anchor.as_deref(),
        Some("2024-03-01")
    );

    // From the move's own time on (inclusive): the new home, and the old one superseded.
    let (facts, _) = recalled_as_of(&m, "maya", q, "2024-06-02T09:00:00");
    assert!(facts.contains(&"The user moved to Lisbon.".to_owned()), "{facts:?}");
    assert!(facts.iter().all(|f| !f.contains("Porto")), "{facts:?}");
    // As of the latest time, everything: exactly the plain reads dated then.
    let latest = "2024-06-02T09:00:00";
    for question in [Query::new(q), Query::new(q).top_k(3), Query::new("a dog named Rex")] {
        assert_eq!(
            m.get_context(question.clone().as_of(ts(latest)), "maya").unwrap(),
            m.get_context(question.clone().date(ts(latest)), "maya").unwrap()
        );
        assert_eq!(
            m.recall(question.clone().as_of(ts(latest)), "maya").unwrap(),
            m.recall(question.clone().date(ts(latest)), "maya").unwrap()
        );
    }
    for format in [ExportFormat::Markdown, ExportFormat::Text] {
        assert_eq!(m.export_as_of(format, &ts(latest), "maya").unwrap(), m.export(format, "maya").unwrap());
    }

    // The export then: the old home not struck through, no move, no supersession logged.
    let md = m.export_as_of(ExportFormat::Markdown, &ts("2024-03-01T00:00:00"), "maya").unwrap();
    assert!(md.contains("The user lives in Porto.") && !md.contains("~~") && !md.contains("Lisbon"), "{md}");
    let text = m.export_as_of(ExportFormat::Text, &ts("2024-03-01T00:00:00"), "maya").unwrap();
    assert!(!text.contains(" fact.superseded ") && text.contains("\nfacts: 2\n"), "{text}");
    // Before anything was said: nothing.
    assert!(m.recall(Query::new(q).as_of(ts("2023-01-01T00:00:00")), "maya").unwrap().rounds.is_empty());

    // A bad time names its field; a dump is always the whole store.
    for result in [
        mnemon::Timestamp::parse_field("next week", "as_of").map(drop),
        mnemon::Timestamp::parse_field("", "as_of").map(drop),
        m.export_as_of(ExportFormat::Jsonl, &ts(latest), "maya").map(drop),
    ] {
        match result {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "as_of"),
            other => panic!("{other:?}"),
        }
    }
    // The same bytes from another handle on the same file (the as-of view is never cached).
    let again = open(&t.path, &x, false);
    assert_eq!(again.export_as_of(ExportFormat::Text, &ts("2024-03-01T00:00:00"), "maya").unwrap(), text);
    assert_eq!(
        recalled_as_of(&again, "maya", q, "2024-03-01T00:00:00"),
        recalled_as_of(&m, "maya", q, "2024-03-01T00:00:00")
    );
}

#[test]
fn a_number_changed_twice_reads_as_each_value_in_turn() {
    let mut outputs = HashMap::new();
    let mut say = |turn: &str, raw: &str, content: &str, value: &str| {
        let fact = triple(content, raw, "user's postcard", "count", value);
        outputs.insert(turn.to_string(), format!("[{fact}]"));
    };
    say(
        "I have 17 postcards in my collection.",
        "user: I have 17 postcards",
        "The user has 17 postcards.",
        "17",
    );
    say(
        "Eight more came, so 25 postcards now.",
        "user: so 25 postcards now",
        "The user has 25 postcards.",
        "25",
    );
    say(
        "The collection is up to 31 postcards.",
        "user: up to 31 postcards",
        "The user has 31 postcards.",
        "31",
    );
    let x = Arc::new(Scripted { outputs, ..Arc::try_unwrap(scripted()).ok().expect("fresh") });
    let t = temp_store();
    let m = open(&t.path, &x, false);
    let said = [
        ("I have 17 postcards in my collection.", "2024-01-05T10:00:00"),
        ("Eight more came, so 25 postcards now.", "2024-02-05T10:00:00"),
        ("The collection is up to 31 postcards.", "2024-03-05T10:00:00"),
    ];
    for (i, (text, ts)) in said.iter().enumerate() {
        m.add(&[Message::user(*text, *ts).in_session(format!("s{i}"))], "ana").unwrap();
    }
    let superseded =
        m.decisions("ana").unwrap().into_iter().filter(|d| d.kind == DecisionKind::FactSuperseded).count();
    assert_eq!(superseded, 2);
    let q = "How many postcards does the user have?";
    for (at, current) in [
        ("2024-01-31T00:00:00", "The user has 17 postcards."),
        ("2024-02-05T10:00:00", "The user has 25 postcards."),
        ("2024-03-01T00:00:00", "The user has 25 postcards."),
        ("2024-12-31T00:00:00", "The user has 31 postcards."),
    ] {
        let (facts, _) = recalled_as_of(&m, "ana", q, at);
        assert_eq!(facts, [current], "as of {at}");
        // A value that replaced another is a fact line of the context then.
        let context = m.get_context(Query::new(q).as_of(ts(at)), "ana").unwrap();
        let lines: Vec<&str> =
            context.text.lines().map(str::trim).filter(|l| l.starts_with("- The user has")).collect();
        let expected = if current.contains("17") { vec![] } else { vec![format!("- {current}")] };
        assert_eq!(lines, expected, "as of {at}: {}", context.text);
        // Each older round is marked with the value that held then, at the end of the chain.
        let marks: Vec<&str> = context.text.lines().filter(|l| l.starts_with("(superseded ")).collect();
        let expected: Vec<&str> = match current {
            c if c.contains("17") => vec![],
            c if c.contains("25") => vec!["(superseded 2024-02-05: now 25)"],
            _ => vec!["(superseded 2024-03-05: now 31)"; 2],
        };
        assert_eq!(marks, expected, "as of {at}: {}", context.text);
    }
    let md = m.export_as_of(ExportFormat::Markdown, &ts("2024-03-01T00:00:00"), "ana").unwrap();
    assert_eq!(md.matches("~~").count(), 2, "17 struck through, 25 current: {md}");
    assert!(!md.contains("31 postcards"), "{md}");
}

#[test]
fn a_fact_about_an_older_state_is_stored_but_hidden_at_once() {
    let (x, messages) = moves();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    // The move is told first; the old home comes up later in a dated aside.
    m.add(&messages[3..5], "maya").unwrap();
    // Told after the move, about a session dated before it: the older state.
    let later = Message::user("I live in Porto, near the river.", "2023-12-01T10:00:00").in_session("old");
    m.add(&[later], "maya").unwrap();
    let facts = m.active_facts("maya").unwrap();
    assert!(facts.iter().all(|f| !f.content.contains("Porto")), "the older state loses though stored last");
    let text = m.export(ExportFormat::Text, "maya").unwrap();
    assert!(text.contains("\nfacts: 2\n"), "never dropped: {text}");
    assert!(text.contains("The user lives in Porto.") && text.contains(" superseded by "), "{text}");
}

#[test]
fn consolidate_is_a_no_op_on_a_store_built_by_add_and_settles_an_imported_one() {
    let (x, messages) = moves();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&messages, "maya").unwrap();
    let before = exports(&m, "maya");
    assert_eq!(m.consolidate("maya").unwrap(), mnemon::facts::ConsolidateReport::default());
    assert_eq!(exports(&m, "maya"), before, "a no-op changes no byte");

    // A dump with the supersession undone: both homes active, no links, no decision.
    let dump: String = before[2]
        .lines()
        .filter(|l| !l.contains(r#""decision":"fact.superseded""#))
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["kind"] == "fact" {
                v["salience"] = v["initial_salience"].clone();
                v["supersedes"] = serde_json::Value::Null;
                v["superseded_by"] = serde_json::Value::Null;
            }
            v.to_string() + "\n"
        })
        .collect();
    let copy = t.dir.path().join("undone.db");
    Memory::builder(&copy).import(&dump).unwrap();
    let undone = open(&copy, &x, false);
    assert_eq!(undone.active_facts("maya").unwrap().len(), 4, "both homes active before the pass");
    let report = undone.consolidate("maya").unwrap();
    assert_eq!(report.superseded, 1);
    assert_eq!(
        undone.consolidate("maya").unwrap(),
        mnemon::facts::ConsolidateReport::default(),
        "twice = once"
    );
    assert_eq!(
        undone.active_facts("maya").unwrap(),
        m.active_facts("maya").unwrap(),
        "the same facts as the write path left"
    );
    let log = undone.decisions("maya").unwrap();
    assert_eq!(
        log.iter().filter(|d| d.kind == DecisionKind::FactSuperseded).count(),
        1,
        "logged exactly once"
    );
}

#[test]
fn decay_lowers_salience_once_never_to_zero_and_never_up() {
    let (x, messages) = moves();
    let t = temp_store();
    open(&t.path, &x, false).add(&messages, "maya").unwrap();
    let config = Config { decay: Some(mnemon::config::Decay::default()), ..Config::default() };
    let m = Memory::builder(&t.path).stored().config(config).open().unwrap();
    let before = m.active_facts("maya").unwrap();
    let report = m.consolidate("maya").unwrap();
    // The cat (January) is 144 days older than the logical now (June 2); June's facts are fresh,
    // and the superseded Porto fact is not touched.
    assert_eq!(report, mnemon::facts::ConsolidateReport { decayed: 1, ..Default::default() });
    let after = m.active_facts("maya").unwrap();
    for (b, a) in before.iter().zip(&after) {
        assert!(a.salience <= b.salience, "{} rose", a.key);
        assert!(a.salience >= 0.15f32.min(b.salience), "{} fell below the floor", a.key);
    }
    let cat = after.iter().find(|f| f.content.contains("cat")).unwrap();
    assert!((cat.salience - 0.5f32.powf(144.0 / 30.0).max(0.15)).abs() < 1e-6, "{}", cat.salience);
    let once = exports(&m, "maya");
    assert_eq!(m.consolidate("maya").unwrap(), mnemon::facts::ConsolidateReport::default());
    assert_eq!(exports(&m, "maya"), once, "twice = once");

    // With a one-day half-life, 144 days would take the cat to 0.5^144 (0 in practice): the
    // floor holds it at 0.15.
    let t = temp_store();
    open(&t.path, &x, false).add(&messages, "maya").unwrap();
    let fast = mnemon::config::Decay { half_life_days: 1.0, ..mnemon::config::Decay::default() };
    let m = Memory::builder(&t.path)
        .stored()
        .config(Config { decay: Some(fast), ..Config::default() })
        .open()
        .unwrap();
    m.consolidate("maya").unwrap();
    let cat = m.active_facts("maya").unwrap().into_iter().find(|f| f.content.contains("cat")).unwrap();
    assert_eq!(cat.salience, 0.15, "held at the floor, not decayed to nothing");
}

proptest::proptest! {
    #[test]
    fn decay_is_bounded_by_the_floor_and_the_initial_salience(
        initial in 0.01f32..=1.0, days in 0.0f64..100_000.0, half in 0.5f32..365.0, floor in 0.01f32..=1.0,
    ) {
        let d = mnemon::config::Decay { half_life_days: half, floor };
        let s = d.apply(initial, days);
        proptest::prop_assert!(s <= initial && s > 0.0 && s >= floor.min(initial));
        proptest::prop_assert!(d.apply(initial, days + 1.0) <= s, "older never ranks higher");
    }
}

#[test]
fn the_whole_conflict_pass_is_deterministic_across_stores_and_queue_modes() {
    let (x, messages) = moves();
    let (a, b) = (temp_store(), temp_store());
    let config = Config { decay: Some(mnemon::config::Decay::default()), ..Config::default() };
    let inline = open(&a.path, &x, false);
    let background = open(&b.path, &x, true);
    for exchange in messages.chunk_by(|_, m| m.role == mnemon::rounds::Role::Assistant) {
        inline.add(exchange, "maya").unwrap();
        background.add(exchange, "maya").unwrap();
    }
    background.flush().unwrap();
    assert_eq!(exports(&inline, "maya"), exports(&background, "maya"));
    drop((inline, background));
    let (a, b) = (
        Memory::builder(&a.path).stored().config(config.clone()).open().unwrap(),
        Memory::builder(&b.path).stored().config(config).open().unwrap(),
    );
    assert_eq!(a.consolidate("maya").unwrap(), b.consolidate("maya").unwrap());
    assert_eq!(exports(&a, "maya"), exports(&b, "maya"));
}

#[test]
fn the_same_input_gives_stores_equal_in_every_row_of_every_table_and_in_file_bytes() {
    let (x, messages) = moves();
    let build = |path: &std::path::Path| {
        let m = open(path, &x, false);
        for exchange in messages.chunk_by(|_, m| m.role == mnemon::rounds::Role::Assistant) {
            m.add(exchange, "maya").unwrap();
        }
        m.add(&conversation(), "u").unwrap();
        let notes =
            [mnemon::notes::NewNote::new("Maya prefers window seats.", "2026-01-03T10:00:00")
                .tags(["travel"])];
        m.remember(&notes, "maya").unwrap();
        let first = m.rounds("u").unwrap()[0].key.clone();
        m.delete(&first, "u").unwrap();
        m.forget_user("u").unwrap();
        m
    };
    let (a, b) = (temp_store(), temp_store());
    let (ma, mb) = (build(&a.path), build(&b.path));
    let dump = common::canonical_dump(&a.path);
    assert!(
        dump.contains("## round_vectors_chunks") && dump.contains("## round_fts_data"),
        "shadow tables dumped"
    );
    assert!(dump.contains("## facts\n") && dump.matches('\n').count() > 100, "{dump}");
    assert_eq!(dump, common::canonical_dump(&b.path));
    drop((ma, mb));
    // Closed (the WAL checkpointed into the file): the files are equal byte for byte.
    assert!(common::file_bytes(&a.path) == common::file_bytes(&b.path), "store files differ");

    // Background extraction interleaves the worker's writes with the caller's, so its row ids
    // may differ: across queue modes the exports are equal (the test above), not the rows.
}

fn with(change: impl FnOnce(&mut Scripted)) -> Arc<Scripted> {
    let mut x = Arc::try_unwrap(scripted()).ok().expect("fresh");
    change(&mut x);
    Arc::new(x)
}

#[test]
fn one_users_failing_round_never_blocks_another_users_rounds() {
    let x = with(|x| x.poison = Some("POISON"));
    let t = temp_store();
    let m = open(&t.path, &x, false);
    let bad = [Message::user("POISON: I work as a nurse at the city hospital.", "2026-01-01T10:00:00")];
    let err = m.add(&bad, "bad").unwrap_err();
    assert!(matches!(err, Error::Extractor(_)), "{err}");
    // The failing round is first in the queue; the other user's rounds are extracted anyway, and
    // their add does not report the other user's failure.
    m.add(&conversation(), "good").unwrap();
    assert_eq!((m.pending(Some("good".into())).unwrap(), m.pending(Some("bad".into())).unwrap()), (0, 1));
    assert!(!m.active_facts("good").unwrap().is_empty());
    // The failing user's later rounds wait behind its failed round (a user's rounds settle in order).
    let later = [Message::user("I adopted a beagle named Toby last month.", "2026-01-02T10:00:00")];
    assert!(m.add(&later, "bad").is_err());
    assert_eq!(m.pending(Some("bad".into())).unwrap(), 2);
    assert!(matches!(m.flush(), Err(Error::Extractor(_))), "flush reports the failure");
}

/// The queue drained several rounds per extractor call ends where it ends drained one at a time:
/// rounds stored in queue order, a failing round and its user's later rounds left queued while
/// other users' rounds in the same call are stored.
#[test]
fn rounds_drained_several_at_a_time_end_as_rounds_drained_one_at_a_time() {
    let run = |batch: usize| {
        let x = with(|x| {
            x.poison = Some("POISON");
            x.batch = batch;
        });
        let t = temp_store();
        let m = open(&t.path, &x, false);
        // Every round queued first (the extractor fails while adding), then drained at once.
        x.fail.store(usize::MAX / 2, Ordering::SeqCst);
        let mut bo = conversation();
        bo.insert(2, Message::user("POISON: I work as a nurse.", "2023/05/20 (Sat) 02:22"));
        for (user, messages) in [("ana", conversation()), ("bo", bo)] {
            let _ = m.add(&messages, user);
        }
        x.fail.store(0, Ordering::SeqCst);
        assert!(matches!(m.flush(), Err(Error::Extractor(_))), "the poisoned round is reported");
        let pending = (m.pending(Some("ana".into())).unwrap(), m.pending(Some("bo".into())).unwrap());
        let groups = x.groups.lock().unwrap().clone();
        (exports(&m, "ana"), exports(&m, "bo"), pending, groups)
    };
    let (ana1, bo1, pending1, groups1) = run(1);
    let (ana3, bo3, pending3, groups3) = run(3);
    assert!(groups1.iter().all(|&g| g == 1), "{groups1:?}");
    assert!(groups3.contains(&3), "rounds went to the extractor three at a time: {groups3:?}");
    assert_eq!(pending1.0, 0, "ana's rounds all extracted");
    assert!(pending1.1 >= 2, "bo's poisoned round and the ones after it wait: {pending1:?}");
    assert_eq!((pending3, &ana3, &bo3), (pending1, &ana1, &bo1));
}

#[test]
fn two_stores_on_one_file_never_extract_a_round_twice() {
    let x = with(|x| x.delay_ms = 30);
    let t = temp_store();
    let rounds = {
        let writer = Memory::builder(&t.path)
            .embedder(HashingEmbedder::default())
            .extractor(x.clone() as Arc<dyn Extractor>)
            .config(Config { background_extraction: false, ..Config::default() })
            .open()
            .unwrap();
        // Rounds committed without extraction: a store opened with an extractor that fails once
        // per round leaves them all queued.
        x.fail.store(usize::MAX / 2, Ordering::SeqCst);
        let _ = writer.add(&conversation(), "u");
        x.fail.store(0, Ordering::SeqCst);
        writer.pending(Some("u".into())).unwrap()
    };
    assert_eq!(rounds, 4);
    // Two handles (as two processes would be) drain the same queue at once.
    let a = open(&t.path, &x, false);
    let b = open(&t.path, &x, false);
    std::thread::scope(|s| {
        s.spawn(|| a.flush().unwrap());
        s.spawn(|| b.flush().unwrap());
    });
    assert_eq!(a.pending(None).unwrap(), 0);
    assert_eq!(x.calls.load(Ordering::SeqCst), rounds, "each round through the model once");
}

#[test]
fn closing_a_store_cancels_the_extraction_in_progress_and_keeps_its_round_queued() {
    let x = with(|x| x.block = true);
    let t = temp_store();
    {
        let m = open(&t.path, &x, true);
        m.add(&conversation()[..2], "u").unwrap();
        // Wait until the worker is inside the extractor.
        for _ in 0..3000 {
            if x.calls.load(Ordering::SeqCst) > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(x.calls.load(Ordering::SeqCst), 1);
    } // dropped here: the worker must give up the round rather than finish it
    assert!(x.cancelled.load(Ordering::SeqCst), "the extraction saw the cancel");
    let stored = Memory::builder(&t.path).stored().open().unwrap();
    assert_eq!(stored.pending(Some("u".into())).unwrap(), 1, "the round stays queued");
}

/// A user's history of `n` rounds: every round a thing bought, every tenth a new home (a key the
/// moves share), every seventh a count of plants (a frame the counts share); the first round buys
/// a clock and the last sells it (an ending).
fn history(n: usize) -> (Arc<Scripted>, Vec<Message>) {
    const THINGS: [&str; 10] =
        ["lamp", "kayak", "drone", "violin", "tent", "easel", "blender", "telescope", "scooter", "loom"];
    const COLOURS: [&str; 8] = ["red", "teal", "amber", "ivory", "navy", "olive", "plum", "coral"];
    const PLACES: [&str; 6] = ["flea market", "mall", "auction", "garage sale", "bazaar", "outlet"];
    const CITIES: [&str; 5] = ["Porto", "Lisbon", "Braga", "Faro", "Evora"];
    let mut outputs = HashMap::new();
    let mut messages = Vec::new();
    for i in 0..n {
        let (thing, colour, place) = (THINGS[i % 10], COLOURS[i / 10 % 8], PLACES[i / 80 % 6]);
        let turn = if i + 1 == n {
            "I sold my grandfather clock.".to_owned()
        } else if i == 0 {
            "I bought a grandfather clock at the flea market.".to_owned()
        } else if i % 10 == 9 {
            format!("I moved to {} this spring.", CITIES[i / 10 % 5])
        } else if i % 7 == 6 {
            format!("I have {} plants on my balcony now.", i / 7 + 2)
        } else {
            format!("I bought a {colour} {thing} at the {place}.")
        };
        let said = turn.trim_end_matches('.');
        let facts = if i + 1 == n {
            fact("The user sold the grandfather clock.", &format!("user: {said}"), None)
        } else if i == 0 {
            fact("The user bought a grandfather clock at the flea market.", &format!("user: {said}"), None)
        } else if i % 10 == 9 {
            let city = CITIES[i / 10 % 5];
            triple(&format!("The user lives in {city}."), &format!("user: {said}"), "user", "lives in", city)
        } else if i % 7 == 6 {
            fact(
                &format!("The user has {} plants on the balcony.", i / 7 + 2),
                &format!("user: {said}"),
                None,
            )
        } else {
            fact(
                &format!("The user bought a {colour} {thing} at the {place}."),
                &format!("user: {said}"),
                None,
            )
        };
        outputs.insert(turn.clone(), format!("[{facts}]"));
        // One round a day (28-day months).
        let at = format!("{}-{:02}-{:02}T10:00:00Z", 2024 + i / 336, i / 28 % 12 + 1, i % 28 + 1);
        messages.push(Message::user(&turn, &at).in_session(format!("s{i}")));
        messages.push(Message::assistant("Noted.", &at).in_session(format!("s{i}")));
    }
    let x = Arc::new(Scripted { outputs, ..Arc::try_unwrap(scripted()).ok().expect("fresh") });
    (x, messages)
}

/// Settling a round reads the user's active facts once per store handle (a ledger kept in step
/// with the writes), and compares each new fact only with the facts it can meet: per round the
/// same few, whether the user holds 40 facts or 300.
#[test]
fn settling_compares_a_fact_with_the_facts_it_can_meet_however_long_the_history() {
    use mnemon::internals::settle_stats;
    let n = 400;
    let (x, messages) = history(n);
    let t = temp_store();
    let m = open(&t.path, &x, false);
    let rounds: Vec<&[Message]> = messages.chunks(2).collect();
    let mut compared = Vec::new();
    for (i, round) in rounds.iter().enumerate() {
        let before = settle_stats(&m).compared;
        m.add(round, "ana").unwrap();
        compared.push(settle_stats(&m).compared - before);
        if i == 49 {
            assert!(m.active_facts("ana").unwrap().len() >= 40);
        }
    }
    let active = m.active_facts("ana").unwrap();
    assert!(active.len() > 200, "a long history: {}", active.len());
    let stats = settle_stats(&m);
    assert_eq!((stats.loads, stats.loaded), (1, 0), "loaded once, when the user had no fact");
    // A move meets the one home before it, a count the one count before it, a purchase nothing.
    let most = |r: std::ops::Range<usize>| compared[r].iter().copied().max().unwrap();
    assert!(most(0..50) <= 1 && most(50..n - 1) <= 1, "{compared:?}");
    assert_eq!(compared[n - 1], 1, "the sale meets the one purchase it names");
    let sold = m.all_facts("ana").unwrap().into_iter().find(|f| f.content.contains("bought a grandfather"));
    assert!(sold.is_some_and(|f| f.salience == 0.0), "the sale ended the purchase");
    let homes = active.iter().filter(|f| f.content.starts_with("The user lives in")).count();
    let counts = active.iter().filter(|f| f.content.contains("plants")).count();
    assert_eq!((homes, counts), (1, 1), "one home and one count are current");

    // Another handle's write leaves this handle's ledger behind: it is loaded again, whole.
    let other = open(&t.path, &x, false);
    let (x2, more) = history(n + 10);
    drop(x2);
    other.add(&more[2 * n..2 * n + 2], "ana").unwrap();
    drop(other);
    let held = m.active_facts("ana").unwrap().len() as u64;
    m.add(&more[2 * n + 2..2 * n + 4], "ana").unwrap();
    let after = settle_stats(&m);
    assert_eq!((after.loads, after.loaded), (2, held), "loaded again after another handle's write");
}

/// The profile: the user's current facts by relation, with how often each changed; in a context
/// on request, at the top of the block within its own token bound, as it stood at an as-of time.
#[test]
fn the_profile_holds_the_current_facts_and_opens_a_context_on_request() {
    let (x, messages) = moves();
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&messages, "maya").unwrap();
    let profile = m.profile("maya").unwrap();
    let relations: Vec<&str> = profile.relations.iter().map(|r| r.relation.as_str()).collect();
    assert_eq!(relations, ["lives_in", "own"], "{profile:?}");
    let home = &profile.relations[0].facts;
    assert_eq!(home.len(), 1);
    assert_eq!(
        (home[0].content.as_str(), home[0].value.as_deref(), home[0].since.as_str(), home[0].changes),
        ("The user moved to Lisbon.", Some("Lisbon"), "2024-06-02", 1)
    );
    assert_eq!(profile.relations[1].facts.len(), 2, "the cat and the dog coexist");
    assert!(m.profile("nobody").unwrap().is_empty());

    // Off by default: the block is what it was.
    let q = Query::new("What pets does the user have?").budget(1000);
    let plain = m.get_context(q.clone(), "maya").unwrap();
    assert!(!plain.text.contains("[Profile"), "{}", plain.text);
    let with = m.get_context(q.clone().profile(120), "maya").unwrap();
    let body = mnemon::context::context_body(&with.text).unwrap();
    assert!(
        body.starts_with("[Profile · what the user holds true now, by relation]\n- lives_in: "),
        "{body}"
    );
    assert!(
        body.contains("- lives_in: The user moved to Lisbon. (since 2024-06-02, changed once)\n"),
        "{body}"
    );
    assert!(with.tokens <= 1000 && with.rounds.len() <= plain.rounds.len());
    // A bound too small for one line leaves the section out; one over half the budget is refused.
    let tiny = m.get_context(q.clone().profile(5), "maya").unwrap();
    assert_eq!(tiny.text, plain.text);
    let err = m.get_context(q.clone().profile(600), "maya").unwrap_err();
    assert!(matches!(&err, Error::InvalidInput { field, .. } if field == "profile"), "{err}");
    // As of a time before the move, the old home is the current one.
    let then = m.get_context(q.profile(120).as_of(ts("2024-02-01T00:00:00")), "maya").unwrap();
    assert!(then.text.contains("- lives_in: The user lives in Porto. (since 2024-01-10)\n"), "{}", then.text);
    assert!(!then.text.contains("Lisbon"), "{}", then.text);
}

/// Two undated statements of the user's that give one attribute two numbers in the same words
/// (rule `value-frame`): the later supersedes the earlier without a key, the log names the two
/// numbers, and the conflict pass run again changes nothing.
#[test]
fn another_number_in_the_same_frame_supersedes_and_logs_both_numbers() {
    let mut outputs = HashMap::new();
    let said = [
        ("I've had Luna for about 6 months now.", "The user has had Luna for about 6 months now."),
        (
            "I've had my cat, Luna, for about 9 months now.",
            "The user has had the user's cat, Luna, for about 9 months now.",
        ),
    ];
    for (turn, content) in said {
        let raw = format!("user: {}", turn.trim_end_matches('.'));
        outputs.insert(turn.to_owned(), format!("[{}]", fact(content, &raw, None)));
    }
    let x = Arc::new(Scripted { outputs, ..Arc::try_unwrap(scripted()).ok().expect("fresh") });
    let t = temp_store();
    let m = open(&t.path, &x, false);
    m.add(&[Message::user(said[0].0, "2024-01-10T10:00:00").in_session("a")], "ana").unwrap();
    m.add(&[Message::user(said[1].0, "2024-04-10T10:00:00").in_session("b")], "ana").unwrap();
    let active: Vec<String> = m.active_facts("ana").unwrap().into_iter().map(|f| f.content).collect();
    assert_eq!(active, [said[1].1], "{active:?}");
    let log = m.decisions("ana").unwrap();
    let superseded: Vec<_> = log.iter().filter(|d| d.kind == DecisionKind::FactSuperseded).collect();
    assert_eq!(superseded.len(), 1);
    let detail: serde_json::Value = serde_json::from_str(&superseded[0].detail).unwrap();
    assert_eq!(detail, serde_json::json!({"rule": "value-frame", "key": null, "old": "6", "new": "9"}));
    let report = m.consolidate("ana").unwrap();
    assert_eq!((report.superseded, report.restored, report.rekeyed), (0, 0, 0));
}
