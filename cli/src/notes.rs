//! `mnemon remember | get | update | delete | list | count | search | copy | move`: direct
//! memories (notes), one command per library operation, JSON on stdout.

use std::path::PathBuf;

use mnemon::stores::{self, Reach, Stores};
use mnemon::{Config, Filter, List, Memory, NewNote, NoteKind, NoteUpdate, Ranking, Recency, Scope, Search};

use crate::anyhow_lite::{Context as _, Fail};
use crate::EmbedArgs;

/// Which store, and whose memory in it.
#[derive(clap::Args, Clone)]
pub struct Target {
    /// The store file.
    #[arg(long, conflicts_with = "store")]
    pub db: Option<PathBuf>,
    /// A store reference: a .db/.sqlite file, a project directory (mapped to a stable store in
    /// $MNEMON_DATA), or `global` [default: global].
    #[arg(long)]
    pub store: Option<String>,
    /// The user whose memory it is.
    #[arg(long, default_value = "default")]
    pub user: String,
    /// The agent: writes are private to it; reads see its records and the user's shared ones.
    #[arg(long)]
    pub agent: Option<String>,
}

impl Target {
    /// The store file this target names.
    pub fn path(&self) -> Result<PathBuf, Fail> {
        match &self.db {
            Some(db) => Ok(db.clone()),
            None => Ok(stores::resolve(self.store.as_deref())?),
        }
    }

    pub fn scope(&self) -> Scope<'_> {
        Scope::user(&self.user).with_agent(self.agent.as_deref())
    }

    /// Opens the store with its own pins and no model.
    fn stored(&self) -> Result<Memory, Fail> {
        Ok(mnemon_postgres::reference::open_stored(&self.path()?, Config::default())?)
    }
}

/// Which notes a list or search keeps.
#[derive(clap::Args, Clone, Default)]
pub struct FilterArgs {
    /// Keep notes with at least one of these tags (repeatable; case-insensitive).
    #[arg(long = "tag-any", value_name = "TAG")]
    tags_any: Vec<String>,
    /// Keep notes with every one of these tags (repeatable).
    #[arg(long = "tag-all", value_name = "TAG")]
    tags_all: Vec<String>,
    /// Keep notes of these kinds (repeatable): episodic, semantic, procedural.
    #[arg(long = "kind", value_name = "KIND")]
    kinds: Vec<String>,
    /// Keep notes stated strictly after this timestamp.
    #[arg(long)]
    after: Option<String>,
    /// Keep notes stated strictly before this timestamp.
    #[arg(long)]
    before: Option<String>,
    /// Keep notes of at least this many content tokens.
    #[arg(long)]
    min_tokens: Option<usize>,
    /// Keep notes of at most this many content tokens.
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Also list notes hidden by condensing.
    #[arg(long)]
    include_condensed: bool,
}

impl FilterArgs {
    fn filter(&self) -> Result<Filter, Fail> {
        Ok(Filter {
            tags_any: self.tags_any.clone(),
            tags_all: self.tags_all.clone(),
            kinds: self
                .kinds
                .iter()
                .map(|k| NoteKind::parse(k, "--kind"))
                .collect::<mnemon::Result<Vec<_>>>()?,
            after: self.after.clone(),
            before: self.before.clone(),
            min_tokens: self.min_tokens,
            max_tokens: self.max_tokens,
            include_condensed: self.include_condensed,
        })
    }
}

/// Per-query ranking options (off by default).
#[derive(clap::Args, Clone, Copy, Default)]
pub struct RankingArgs {
    /// memex's recency term: weight of similarity ALPHA (0..=1) and HALF_LIFE in days, as
    /// ALPHA:HALF_LIFE (e.g. 0.8:30).
    #[arg(long, value_parser = parse_recency, value_name = "ALPHA:HALF_LIFE")]
    recency: Option<Recency>,
    /// Importance weighting (0..=1).
    #[arg(long = "importance-weight", value_name = "W")]
    importance: Option<f32>,
}

fn parse_recency(s: &str) -> Result<Recency, String> {
    let (a, h) = s.split_once(':').ok_or("expected ALPHA:HALF_LIFE, e.g. 0.8:30")?;
    Ok(Recency {
        alpha: a.parse().map_err(|_| format!("{a:?} is not a number"))?,
        half_life_days: h.parse().map_err(|_| format!("{h:?} is not a number"))?,
    })
}

impl RankingArgs {
    pub fn ranking(self) -> Ranking {
        Ranking { recency: self.recency, importance: self.importance }
    }
}

/// Direct memories.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Store memories: one from the arguments, or many from a JSONL file (one
    /// {"content","ts"[,"title","tags","metadata","kind","importance"]} per line).
    Remember {
        #[command(flatten)]
        target: Target,
        /// The caller's timestamp [default: now, printed to stderr].
        #[arg(long)]
        ts: Option<String>,
        #[arg(long)]
        title: Option<String>,
        /// A tag (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// episodic, semantic (default) or procedural.
        #[arg(long)]
        kind: Option<String>,
        /// 0..=1 (default 0.5).
        #[arg(long)]
        importance: Option<f32>,
        /// A JSON object.
        #[arg(long)]
        metadata: Option<String>,
        /// Memories to store, one JSON object per line.
        #[arg(long, conflicts_with_all = ["title", "tags", "kind", "importance", "metadata", "content"])]
        file: Option<PathBuf>,
        #[command(flatten)]
        embed: EmbedArgs,
        /// What to remember.
        #[arg(required_unless_present = "file")]
        content: Option<String>,
    },
    /// Print a note, round or fact by key (needs no model).
    Get {
        #[command(flatten)]
        target: Target,
        key: String,
    },
    /// Change fields of a note (new content or title is embedded again).
    Update {
        #[command(flatten)]
        target: Target,
        /// The caller's time of the change [default: now, printed to stderr].
        #[arg(long)]
        ts: Option<String>,
        #[arg(long)]
        content: Option<String>,
        #[arg(long, conflicts_with = "no_title")]
        title: Option<String>,
        /// Remove the title.
        #[arg(long)]
        no_title: bool,
        /// Replace the tags (repeatable; --clear-tags removes them all).
        #[arg(long = "tag", value_name = "TAG", conflicts_with = "clear_tags")]
        tags: Vec<String>,
        /// Remove every tag.
        #[arg(long)]
        clear_tags: bool,
        #[arg(long)]
        kind: Option<String>,
        #[arg(long)]
        importance: Option<f32>,
        /// Replace the metadata (a JSON object).
        #[arg(long)]
        metadata: Option<String>,
        #[command(flatten)]
        embed: EmbedArgs,
        key: String,
    },
    /// Delete a note, round or fact, with its vectors, words and cache entries.
    Delete {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        embed: EmbedArgs,
        key: String,
    },
    /// List notes, newest first, a page at a time (needs no model).
    List {
        #[command(flatten)]
        target: Target,
        /// local (the named store), global, or all (both, merged).
        #[arg(long, default_value = "local")]
        scope: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The `next` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Count what a user (or agent) sees: notes per kind, rounds, facts (needs no model).
    Count {
        #[command(flatten)]
        target: Target,
    },
    /// Search notes: scores in 0..=1 with relevance labels.
    Search {
        #[command(flatten)]
        target: Target,
        /// local (the named store), global, or all (both, merged).
        #[arg(long, default_value = "local")]
        scope: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Drop hits scoring below this (0..=1).
        #[arg(long)]
        min_score: Option<f32>,
        /// The query's date (anchors "last week" and the recency term).
        #[arg(long)]
        date: Option<String>,
        #[command(flatten)]
        ranking: RankingArgs,
        #[command(flatten)]
        embed: EmbedArgs,
        query: String,
    },
    /// Copy notes to another store, reusing their vectors (needs no model).
    Copy {
        #[command(flatten)]
        transfer: TransferArgs,
    },
    /// Move notes to another store, reusing their vectors (needs no model).
    Move {
        #[command(flatten)]
        transfer: TransferArgs,
    },
}

#[derive(clap::Args)]
pub struct TransferArgs {
    /// Where the notes are: a .db file, a project directory or `global`.
    #[arg(long)]
    from: String,
    /// Where they go: a .db file, a project directory or `global`.
    #[arg(long)]
    to: String,
    #[arg(long, default_value = "default")]
    user: String,
    #[arg(long)]
    agent: Option<String>,
    /// Note keys.
    #[arg(required = true)]
    keys: Vec<String>,
}

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

fn json_object(text: &str, flag: &str) -> Result<serde_json::Value, Fail> {
    serde_json::from_str(text).map_err(|e| Fail::msg(format!("{flag}: not JSON: {e}")))
}

fn print_pretty(value: &impl serde::Serialize) -> Result<(), Fail> {
    println!("{}", serde_json::to_string_pretty(value).context("json")?);
    Ok(())
}

fn print_line(value: &impl serde::Serialize) -> Result<(), Fail> {
    println!("{}", serde_json::to_string(value).context("json")?);
    Ok(())
}

/// The two stores a `--scope` reaches: the named one and/or the global one (once, when the named
/// store is the global one).
fn reach(
    target: &Target,
    scope: &str,
    open: impl Fn(&PathBuf) -> Result<Memory, Fail>,
) -> Result<(Memory, Option<Memory>), Fail> {
    let local = target.path()?;
    let global = stores::resolve(Some("global"))?;
    let same = local == global;
    Ok(match Reach::parse(scope)? {
        Reach::Local => (open(&local)?, None),
        Reach::Global => (open(&global)?, None),
        Reach::All if same => (open(&local)?, None),
        Reach::All => (open(&local)?, Some(open(&global)?)),
    })
}

pub fn run(command: Command) -> Result<(), Fail> {
    match command {
        Command::Remember { target, ts, title, tags, kind, importance, metadata, file, embed, content } => {
            let notes = match file {
                Some(path) => {
                    let text = crate::read_text(&path)?;
                    let mut notes = Vec::new();
                    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                        let at = format!("{}: line {}", path.display(), i + 1);
                        let value: serde_json::Value = serde_json::from_str(line)
                            .map_err(|e| Fail::msg(format!("{at}: not JSON: {e}")))?;
                        let note = NewNote::from_json(&value, &at)?;
                        // Checked here, so that an error names the line.
                        mnemon::validate_notes(std::slice::from_ref(&note), notes.len())
                            .map_err(|e| Fail::msg(format!("{at}: {e}")))?;
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
                    kind: kind.as_deref().map(|k| NoteKind::parse(k, "--kind")).transpose()?,
                    importance,
                }],
            };
            // Every note was checked before the first write; a long file is then stored a call's
            // worth at a time, each call one transaction.
            mnemon::validate_notes(&notes, 0)?;
            let memory = embed.open(&target.path()?)?;
            let mut report = mnemon::RememberReport::default();
            for chunk in notes.chunks(mnemon::MAX_NOTES_PER_CALL) {
                report.notes.extend(memory.remember(chunk, target.scope())?.notes);
            }
            print_line(&report)?;
        }
        Command::Get { target, key } => print_pretty(&target.stored()?.get(&key, target.scope())?)?,
        Command::Update {
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
            embed,
            key,
        } => {
            let change = NoteUpdate {
                content,
                title: if no_title { Some(None) } else { title.map(Some) },
                tags: if clear_tags { Some(Vec::new()) } else { Some(tags).filter(|t| !t.is_empty()) },
                metadata: metadata.as_deref().map(|m| json_object(m, "--metadata")).transpose()?,
                kind: kind.as_deref().map(|k| NoteKind::parse(k, "--kind")).transpose()?,
                importance,
            };
            if change.is_empty() {
                return Err(Fail::msg(
                    "nothing to change: give --content, --title, --tag, --kind, --importance or --metadata",
                ));
            }
            let memory = embed.open(&target.path()?)?;
            print_line(&memory.update(&key, &change, &stamp(ts), target.scope())?)?;
        }
        Command::Delete { target, embed, key } => {
            let memory = embed.open(&target.path()?)?;
            print_line(&memory.delete(&key, target.scope())?)?;
        }
        Command::List { target, scope, filter, limit, cursor } => {
            let list = List { filter: filter.filter()?, limit, cursor };
            let stored = |p: &PathBuf| -> Result<Memory, Fail> {
                Ok(mnemon_postgres::reference::open_stored(p, Config::default())?)
            };
            let page = match reach(&target, &scope, stored)? {
                (one, None) => one.list(&list, target.scope())?,
                (local, Some(global)) => {
                    Stores { local: &local, global: &global }.list(&list, target.scope())?
                }
            };
            print_pretty(&page)?;
        }
        Command::Count { target } => print_pretty(&target.stored()?.count(target.scope())?)?,
        Command::Search { target, scope, filter, limit, min_score, date, ranking, embed, query } => {
            let search = Search {
                text: &query,
                date: date.as_deref(),
                filter: filter.filter()?,
                limit,
                min_score,
                ranking: ranking.ranking(),
            };
            // One embedder (and extractor) for both stores when the search reaches two.
            let (embedder, extractor) = (embed.build()?, embed.build_extractor()?);
            let config = Config { background_extraction: false, ..Config::default() };
            let open = |p: &PathBuf| -> Result<Memory, Fail> {
                Ok(mnemon_postgres::reference::open_with(
                    p,
                    embedder.clone(),
                    extractor.clone(),
                    config.clone(),
                )?)
            };
            let found = match reach(&target, &scope, open)? {
                (one, None) => one.search(&search, target.scope())?,
                (local, Some(global)) => {
                    Stores { local: &local, global: &global }.search(&search, target.scope())?
                }
            };
            print_pretty(&found)?;
        }
        Command::Copy { transfer } => transfer_notes(&transfer, false)?,
        Command::Move { transfer } => transfer_notes(&transfer, true)?,
    }
    Ok(())
}

fn transfer_notes(t: &TransferArgs, remove: bool) -> Result<(), Fail> {
    let from = mnemon_postgres::reference::open_stored(&stores::resolve(Some(&t.from))?, Config::default())?;
    let to = mnemon_postgres::reference::open_like(&stores::resolve(Some(&t.to))?, &from, Config::default())?;
    let keys: Vec<&str> = t.keys.iter().map(String::as_str).collect();
    let scope = Scope::user(&t.user).with_agent(t.agent.as_deref());
    let report = if remove { from.move_to(&keys, scope, &to)? } else { from.copy_to(&keys, scope, &to)? };
    print_line(&report)
}
