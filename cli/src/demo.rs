//! `mnemon demo`: the main job end to end on a conversation written for the project.

use std::path::PathBuf;

use std::sync::Arc;

use mnemon::config::Config;
use mnemon::decisions::DecisionKind;
use mnemon::export::ExportFormat;
use mnemon::extract::{Contract, Extractor, LlamaConfig, LlamaExtractor};
use mnemon::notes::{NewNote, Search};
use mnemon::{Memory, Message, Query, Scope, Timestamp};

use anyhow::{Context as _, Result};

use crate::flags::ModelArgs;
use crate::models::extractor_path;

const CONVERSATION: &str = include_str!("demo.jsonl");
const USER: &str = "maya";
const QUESTION: &str = "Where does Maya live now, and what should I avoid when suggesting food?";
const DATE: &str = "2026-06-25T08:00:00";

pub fn run(db: Option<PathBuf>, models: &ModelArgs) -> Result<()> {
    let temp = tempfile::tempdir().context("creating a temporary folder")?;
    let path = db.unwrap_or_else(|| temp.path().join("demo.db"));
    // The extractor the flags name, else the pinned default GGUF (scripts/fetch-models.sh --qwen)
    // under the slots contract: the facts below are the model's.
    let facts: Arc<dyn Extractor> = match models.extractor()? {
        Some(given) => given,
        None => {
            let path = extractor_path(std::path::Path::new("default"), &models.models_dir());
            let config = LlamaConfig { contract: Contract::Slots, ..models.extractor.decoding.llama() };
            Arc::new(LlamaExtractor::load(path, config)?)
        }
    };
    let config = Config { background_extraction: false, ..Config::default() };
    let memory =
        Memory::builder(&path).embedder(models.embedder()?).extractor(facts.clone()).config(config).open()?;
    let messages = CONVERSATION
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let v: serde_json::Value =
                serde_json::from_str(line).with_context(|| format!("demo line {}", i + 1))?;
            Ok(Message::from_json(&v, &format!("demo line {}", i + 1))?)
        })
        .collect::<Result<Vec<_>>>()?;
    let report = memory.add(&messages, USER)?;
    println!(
        "== ingest: {} messages → {} rounds stored, {} duplicate rounds skipped, {} empty turns dropped",
        messages.len(),
        report.stored.len(),
        report.duplicates.len(),
        report.empty_turns_dropped
    );
    let superseded =
        memory.decisions(USER)?.iter().filter(|d| d.kind == DecisionKind::FactSuperseded).count();
    println!(
        "   facts made by {} from {} rounds: {} active, {superseded} superseded",
        facts.pins().name,
        report.stored.len(),
        memory.active_facts(USER)?.len(),
    );
    println!("   store: {}", path.display());
    println!("\n== context for: [{DATE}] {QUESTION:?} (budget 600 tokens)\n");
    let context =
        memory.get_context(Query::new(QUESTION).date(Timestamp::parse(DATE)?).budget(600).top_k(5), USER)?;
    print!("{}", context.text);
    println!(
        "\n   {} rounds, {} tokens, truncated: {}{}",
        context.rounds.len(),
        context.tokens,
        context.truncated,
        if context.omitted.is_empty() {
            String::new()
        } else {
            format!(" (left out: {})", context.omitted.join(", "))
        }
    );
    // An agent's own memory: a note the "chef" agent states outright, private to it.
    let chef = Scope::user(USER).agent("chef");
    let note = NewNote::new(
        "Maya cooks vegetarian on weekdays; suggest fish only at weekends.",
        "2026-06-22T12:00:00",
    )
    .title("Weekday cooking")
    .tags(["food"]);
    let key = memory.remember(&[note], chef)?.notes.remove(0).key;
    println!("\n== a direct memory of agent \"chef\": {key}\n");
    for hit in memory.search(&Search::new("what does Maya cook on a Tuesday?").limit(1), chef)?.hits {
        println!("   search as chef: {:.2} ({}) {}", hit.score, hit.relevance.as_str(), hit.note.content);
    }
    let other = Scope::user(USER).agent("travel");
    println!(
        "   notes seen by chef: {}, by another agent: {} (a note is private to the agent that made it)",
        memory.count(chef)?.notes,
        memory.count(other)?.notes
    );
    let angles = ["weekday dinner ideas"];
    let context = memory.get_context(
        Query::new(QUESTION).date(Timestamp::parse(DATE)?).budget(600).top_k(5).angles(&angles),
        chef,
    )?;
    println!(
        "\n== context for chef, with the angle {:?} (rounds: {}, notes: {}, tokens: {})\n",
        angles[0],
        context.rounds.len(),
        context.notes.len(),
        context.tokens
    );
    print!("{}", context.text);
    println!("\n== Markdown export\n");
    print!("{}", memory.export(ExportFormat::Markdown, USER)?);
    let before = "2026-05-01T00:00:00";
    println!("\n== the facts as of {before}, before the move (`--as-of`)\n");
    let then =
        memory.recall(Query::new("Where does Maya live?").as_of(Timestamp::parse(before)?).top_k(5), USER)?;
    for fact in then.rounds.iter().flat_map(|r| &r.facts) {
        println!("   {}", fact.content);
    }
    println!("\n== decision log (facts)\n");
    for d in memory.decisions(USER)?.iter().filter(|d| d.kind.as_str().starts_with("fact.")) {
        println!("{} {} {} {}", d.kind, d.record, d.other.as_deref().unwrap_or("-"), d.detail);
    }
    Ok(())
}
