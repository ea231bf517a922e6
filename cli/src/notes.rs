//! `mnemon remember | get | update | delete | list | count | search | copy | move`: direct
//! memories (notes), one command per library operation, JSON on stdout.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context as _, Result};
use mnemon::config::Config;
use mnemon::notes::{ListNotes, NewNote, NoteUpdate, Search};
use mnemon::stores::{Reach, Stores};
use mnemon::{Memory, Scope, Timestamp};

use crate::flags::{NotesCommand, ReachArg, Target, TransferArgs};
use crate::models::store_path;

/// The caller's timestamp, or the current time (UTC, printed to stderr so the stamp is known).
pub fn stamp(ts: Option<String>) -> String {
    ts.unwrap_or_else(|| {
        // The binary, not the library, reads the clock, and says so.
        #[allow(clippy::disallowed_methods)]
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let ts = chrono::DateTime::from_timestamp(now as i64, 0).map_or_else(
            || "1970-01-01T00:00:00Z".to_owned(),
            |d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        );
        eprintln!("stamped {ts} (the current time; pass --ts to give your own)");
        ts
    })
}

fn json_object(text: &str, flag: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| anyhow!("{flag}: not JSON: {e}"))
}

fn print_pretty(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value).context("json")?);
    Ok(())
}

fn print_line(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string(value).context("json")?);
    Ok(())
}

/// The two stores a `--reach` covers: the named one and/or the global one (once, when the named
/// store is the global one).
fn reach(
    target: &Target,
    reach: ReachArg,
    open: impl Fn(&PathBuf) -> Result<Memory>,
) -> Result<(Memory, Option<Memory>)> {
    let local = target.path()?;
    let global = store_path(Some("global"))?;
    let same = local == global;
    Ok(match Reach::from(reach) {
        Reach::Local => (open(&local)?, None),
        Reach::Global => (open(&global)?, None),
        Reach::All if same => (open(&local)?, None),
        Reach::All => (open(&local)?, Some(open(&global)?)),
    })
}

pub fn run(command: NotesCommand) -> Result<()> {
    match command {
        NotesCommand::Remember {
            target,
            ts,
            title,
            tags,
            kind,
            importance,
            metadata,
            file,
            models,
            content,
        } => {
            let notes = match file {
                Some(path) => {
                    let text = crate::input::read_text(&path)?;
                    let mut notes = Vec::new();
                    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                        let at = format!("{}: line {}", path.display(), i + 1);
                        let value: serde_json::Value =
                            serde_json::from_str(line).map_err(|e| anyhow!("{at}: not JSON: {e}"))?;
                        let note = NewNote::from_json(&value, &at)?;
                        // Checked here, so that an error names the line.
                        mnemon::notes::validate_notes(std::slice::from_ref(&note), notes.len())
                            .map_err(|e| anyhow!("{at}: {e}"))?;
                        notes.push(note);
                    }
                    notes
                }
                None => vec![NewNote {
                    content: content.unwrap_or_default(),
                    ts: stamp(ts),
                    title,
                    tags,
                    metadata: metadata.as_deref().map(|m| json_object(m, "--metadata")).transpose()?,
                    kind: kind.map(Into::into),
                    importance,
                }],
            };
            // Every note was checked before the first write; a long file is then stored a call's
            // worth at a time, each call one transaction.
            mnemon::notes::validate_notes(&notes, 0)?;
            let memory = models.open(&target.path()?, Config::default())?;
            let mut report = mnemon::notes::RememberReport::default();
            for chunk in notes.chunks(mnemon::notes::MAX_NOTES_PER_CALL) {
                report.notes.extend(memory.remember(chunk, target.scope())?.notes);
            }
            print_line(&report)?;
        }
        NotesCommand::Get { target, key } => print_pretty(&target.stored()?.get(&key, target.scope())?)?,
        NotesCommand::Update {
            target,
            ts,
            content,
            title,
            no_title,
            tags,
            clear_tags,
            kind,
            importance,
            metadata,
            models,
            key,
        } => {
            let change = NoteUpdate {
                content,
                title: if no_title { Some(None) } else { title.map(Some) },
                tags: if clear_tags { Some(Vec::new()) } else { Some(tags).filter(|t| !t.is_empty()) },
                metadata: metadata.as_deref().map(|m| json_object(m, "--metadata")).transpose()?,
                kind: kind.map(Into::into),
                importance,
            };
            if change.is_empty() {
                bail!(
                    "nothing to change: give --content, --title, --tag, --kind, --importance or --metadata"
                );
            }
            let memory = models.open(&target.path()?, Config::default())?;
            print_line(&memory.update(&key, &change, &Timestamp::parse(&stamp(ts))?, target.scope())?)?;
        }
        NotesCommand::Delete { target, models, key } => {
            let memory = models.open(&target.path()?, Config::default())?;
            print_line(&memory.delete(&key, target.scope())?)?;
        }
        NotesCommand::List { target, reach: which, filter, limit, cursor } => {
            let list = ListNotes { filter: filter.filter()?, limit, cursor };
            let stored = |p: &PathBuf| -> Result<Memory> { Ok(Memory::builder(p).stored().open()?) };
            let page = match reach(&target, which, stored)? {
                (one, None) => one.list(&list, target.scope())?,
                (local, Some(global)) => {
                    Stores { local: &local, global: &global }.list(&list, target.scope())?
                }
            };
            print_pretty(&page)?;
        }
        NotesCommand::Count { target } => print_pretty(&target.stored()?.count(target.scope())?)?,
        NotesCommand::Search {
            target,
            reach: which,
            filter,
            limit,
            min_score,
            date,
            ranking,
            models,
            query,
        } => {
            let search = Search {
                text: &query,
                date: mnemon_server::api::times(date.as_deref(), None)?.0,
                filter: filter.filter()?,
                limit,
                min_score,
                ranking: ranking.ranking(),
                ..Search::new("")
            };
            // One embedder (and extractor) for both stores when the search reaches two.
            let (embedder, extractor) = (models.embedder()?, models.extractor()?);
            let config = Config { background_extraction: false, ..Config::default() };
            let open = |p: &PathBuf| -> Result<Memory> {
                Ok(Memory::builder(p)
                    .embedder(embedder.clone())
                    .optional_extractor(extractor.clone())
                    .config(config.clone())
                    .open()?)
            };
            let found = match reach(&target, which, open)? {
                (one, None) => one.search(&search, target.scope())?,
                (local, Some(global)) => {
                    Stores { local: &local, global: &global }.search(&search, target.scope())?
                }
            };
            print_pretty(&found)?;
        }
        NotesCommand::Copy { transfer } => transfer_notes(&transfer, false)?,
        NotesCommand::Move { transfer } => transfer_notes(&transfer, true)?,
    }
    Ok(())
}

fn transfer_notes(t: &TransferArgs, remove: bool) -> Result<()> {
    let from = Memory::builder(store_path(Some(&t.from))?).stored().open()?;
    let to = Memory::builder(store_path(Some(&t.to))?).like(&from).open()?;
    let keys: Vec<&str> = t.keys.iter().map(String::as_str).collect();
    let scope = Scope::user(&t.user).with_agent(t.agent.as_deref());
    let report = if remove { from.move_to(&keys, &to, scope)? } else { from.copy_to(&keys, &to, scope)? };
    print_line(&report)
}
