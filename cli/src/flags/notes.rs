//! The note commands: `remember`, `get`, `update`, `delete`, `list`, `count`, `search`, `copy`,
//! `move`.

use std::path::PathBuf;

use super::common::{FilterArgs, KindArg, ModelArgs, RankingArgs, ReachArg, Target};

/// Direct memories.
#[derive(clap::Subcommand)]
pub enum NotesCommand {
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
        /// Semantic by default.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
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
        models: ModelArgs,
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
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        #[arg(long)]
        importance: Option<f32>,
        /// Replace the metadata (a JSON object).
        #[arg(long)]
        metadata: Option<String>,
        #[command(flatten)]
        models: ModelArgs,
        key: String,
    },
    /// Delete a note, round or fact, with its vectors, words and cache entries.
    Delete {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        models: ModelArgs,
        key: String,
    },
    /// List notes, newest first, a page at a time (needs no model).
    List {
        #[command(flatten)]
        target: Target,
        /// Which of the named store and the global store to read.
        #[arg(long = "reach", alias = "scope", value_enum, default_value_t = ReachArg::Local)]
        reach: ReachArg,
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
        /// Which of the named store and the global store to read.
        #[arg(long = "reach", alias = "scope", value_enum, default_value_t = ReachArg::Local)]
        reach: ReachArg,
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
        models: ModelArgs,
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
    /// Where the notes are: a store reference, as `--store` takes.
    #[arg(long)]
    pub from: String,
    /// Where they go: a store reference, as `--store` takes.
    #[arg(long)]
    pub to: String,
    #[arg(long, default_value = "default")]
    pub user: String,
    #[arg(long)]
    pub agent: Option<String>,
    /// Note keys.
    #[arg(required = true)]
    pub keys: Vec<String>,
}
