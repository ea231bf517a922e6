//! Every flag of the `mnemon` command, in one place (after ripgrep's `flags/`): the commands and
//! their arguments here, what they do in the command modules.
//!
//! One name per concept, in every command (the glossary in docs/ARCHITECTURE.md says which word
//! means what in the library, the CLI, HTTP and MCP):
//!
//! - `--store REF`: a store: a `.db`/`.sqlite` file, a project directory, `global`, or a
//!   `postgres://` URL. `--from` and `--to` name the two stores of a copy or move the same way.
//! - `--user`, `--agent`: whose memory (a scope). `--reach local|global|all`: which of a project's
//!   store and the global store a read covers.
//! - `--embedder`, `--embed-threads`, `--embed-batch`, `--embed-cache`: the embedder;
//!   `--extractor`, `--extract-threads`, `--extract-batch`, `--extract-contract`, `--extract-draft`,
//!   `--extract-cache`: the extractor (a GGUF model, or a JSON script of facts).
//! - `--limit`: the most results a command prints; `--max-users`, `--max-questions`,
//!   `--max-haystacks`: the most inputs a command reads.
//! - `--scratch URL`: where a benchmark or an evaluation keeps the throwaway stores it makes.
//!
//! Names used before these are accepted as hidden aliases for one release (`--db`, `--threads`,
//! `--batch`, `--model`, `--contract`, `--draft`, `--scope`, `--postgres`, `--limit` where it
//! counted inputs, `--format md`).

mod common;
mod eval;
mod notes;
mod serve;
mod tools;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use common::*;
pub use eval::{BenchmarkArg, EvalCommand, QaArgs};
pub use notes::{NotesCommand, TransferArgs};
pub use serve::{McpArgs, ServeArgs, ServerArgs, UpstreamArgs};
pub use tools::{BenchArgs, ExtractArgs, LoadtestArgs};

#[derive(Parser)]
#[command(name = "mnemon", version, about = "A deterministic, local-first memory engine for LLM agents")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Store messages from a file.
    Ingest {
        #[command(flatten)]
        store: StoreArg,
        /// User to store under (for benchmarks: only this question or conversation).
        #[arg(long)]
        user: Option<String>,
        #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
        format: InputFormat,
        /// For benchmarks: ingest at most this many users.
        #[arg(long = "max-users", alias = "limit")]
        max_users: Option<usize>,
        #[command(flatten)]
        models: ModelArgs,
        file: PathBuf,
    },
    /// Import a user's chat history: ChatGPT's or Claude's `conversations.json` (from the app's
    /// data export) or mnemon's JSONL. Each conversation is stored as a session with its real
    /// times; only what the user saw is kept (the branch shown, user and assistant text,
    /// attachments by name). Run again, it stores only what it had not. Unreadable entries are
    /// skipped and named on stderr; a JSON summary goes to stdout.
    ImportChats {
        #[command(flatten)]
        store: StoreArg,
        /// Whose history it is.
        #[arg(long)]
        user: String,
        /// The file's format: `chatgpt`, `claude` or `jsonl`.
        #[arg(long, value_parser = parse_chat_format)]
        format: mnemon::chats::ChatFormat,
        /// Store nothing: print the messages that would be stored, as mnemon's JSONL.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        models: ModelArgs,
        file: PathBuf,
    },
    /// Print the context block for a question: rounds and notes, in one budget.
    Context {
        #[command(flatten)]
        query: QueryArgs,
        /// Token budget for the block.
        #[arg(long)]
        budget: Option<usize>,
        /// Another way to ask the same thing (repeatable): its records join the block, each once.
        #[arg(long = "query", value_name = "ANGLE")]
        angles: Vec<String>,
        /// Open the block with the user's profile (current facts by relation) in at most this
        /// many tokens of the budget.
        #[arg(long, value_name = "TOKENS")]
        profile: Option<usize>,
        /// Show every round whole (by default a long assistant reply shows only the sentences
        /// that bear on the question, each run of left-out sentences marked "[…]").
        #[arg(long)]
        whole_rounds: bool,
        /// Print the block and what went into it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the ranked rounds for a question as JSON.
    Recall {
        #[command(flatten)]
        query: QueryArgs,
    },
    /// Export a user's memory (opens with the stored pins; needs no model).
    Export {
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        user: String,
        /// Only what this agent sees (its records and the user's shared ones).
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Markdown)]
        format: OutputFormat,
        /// What the memory held at this time: rounds and notes dated at or before it, facts as
        /// they stood then, the decisions logged by then (markdown and text; a dump is always
        /// the whole store).
        #[arg(long, value_name = "TS")]
        as_of: Option<String>,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Load a JSONL dump (creates the store with the dump's pins if it does not exist).
    Import {
        #[command(flatten)]
        store: StoreArg,
        file: PathBuf,
    },
    /// Remove everything stored for a user, the user's name with it, and (given the caches the
    /// store was written through: --embed-cache with its --embedder, --extractor with its
    /// --extract-cache) every entry the caches hold of the user; then empty the WALs. Without
    /// cache flags it needs no model and leaves the caches as they are.
    Forget {
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        user: String,
        #[command(flatten)]
        models: ModelArgs,
    },
    /// Feed every parser of outside text mutated inputs (timestamps, JSONL messages, dumps, the
    /// benchmark loaders, extractor output, query windows, the normalizer, the date resolver);
    /// fails if any case panics. Seeded: the same seed gives the same cases.
    Fuzz {
        /// Cases per target.
        #[arg(long, default_value_t = 125_000)]
        cases: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only this target (its name as the table prints it).
        #[arg(long)]
        target: Option<String>,
    },
    /// Copy a store into a new file with SQLite's online backup: one consistent snapshot, taken
    /// while writers go on; the copy is checked before the command succeeds.
    Backup {
        #[command(flatten)]
        store: StoreArg,
        /// The new file (must not exist).
        out: PathBuf,
    },
    /// Send rounds through the extractor again (after a change of model, prompt, lexicons or
    /// conflict rules; through --extract-cache, so unchanged rounds cost nothing), then settle
    /// every fact again; prints what changed and which extractors the store knows.
    Reextract {
        #[command(flatten)]
        store: StoreArg,
        /// Only this user's rounds (default: every user's).
        #[arg(long)]
        user: Option<String>,
        /// Every round, not only those another extractor made.
        #[arg(long, conflicts_with = "round")]
        all: bool,
        /// Only these rounds (by key; needs --user).
        #[arg(long, requires = "user")]
        round: Vec<String>,
        #[command(flatten)]
        models: ModelArgs,
    },
    /// Re-run the conflict pass over a user's facts (every fact, superseded ones included, keyed
    /// again under the current lexicons), then decay salience and condense old episodic notes if
    /// asked (needs no model unless condensing).
    Consolidate {
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        user: String,
        /// Only this agent's records.
        #[arg(long)]
        agent: Option<String>,
        /// Condense episodic notes beyond the newest KEEP into semantic notes (needs the embedder).
        #[arg(long, value_name = "KEEP")]
        condense: Option<usize>,
        /// Originals per condensed note.
        #[arg(long, default_value_t = 20, requires = "condense")]
        condense_batch: usize,
        #[command(flatten)]
        models: ModelArgs,
        /// Lower each fact's salience with its age (off by default).
        #[arg(long)]
        decay: bool,
        /// Days for a salience to halve.
        #[arg(long, default_value_t = 30.0, requires = "decay")]
        half_life: f32,
        /// The lowest salience decay leaves.
        #[arg(long, default_value_t = 0.15, requires = "decay")]
        floor: f32,
    },
    /// Print a user's decision log: every round and fact stored, deduplicated, merged, kept apart,
    /// superseded, decayed or forgotten, in logical order.
    Log {
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        user: String,
    },
    /// Print what a user holds true now: the user's current facts by relation, each with the day
    /// it holds since and how often it changed (needs no model).
    Profile {
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        user: String,
        /// Only what this agent sees (its facts and the user's shared ones).
        #[arg(long)]
        agent: Option<String>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check models, ONNX Runtime, SQLite and a store; exits non-zero on any failure.
    Doctor {
        /// A store to check too.
        #[arg(long = "store", alias = "db", value_name = "REF")]
        store: Option<String>,
        #[arg(long)]
        models: Option<PathBuf>,
        /// Also load this GGUF extractor and decode one short round.
        #[arg(long)]
        extractor: Option<PathBuf>,
    },
    /// Ingest a small conversation, then print a context and the Markdown export.
    Demo {
        /// Keep the demo store here (default: a temporary file, removed afterwards).
        #[arg(long = "store", alias = "db", value_name = "FILE")]
        store: Option<PathBuf>,
        #[command(flatten)]
        models: ModelArgs,
    },
    /// Measure ingest and recall speed on synthetic rounds.
    Bench(BenchArgs),
    /// Print the facts a GGUF model extracts from one round (a debugging aid).
    Extract(ExtractArgs),
    /// Measure retrieval quality on LongMemEval or LoCoMo, or compare two runs.
    #[command(subcommand)]
    Eval(EvalCommand),
    #[command(flatten)]
    Notes(NotesCommand),
    /// Serve MCP over stdin/stdout (for Claude Code, Claude Desktop, Cursor, any MCP client).
    /// Logs go to stderr.
    Mcp(McpArgs),
    /// Serve the HTTP API under /v1, MCP (streamable HTTP) at /mcp, /health, /metrics,
    /// /openapi.json, /docs and the web page at /ui.
    Serve(ServeArgs),
    /// An OpenAI-compatible chat endpoint with memory: point an app's OpenAI base URL at
    /// http://127.0.0.1:7424/v1. Each chat request gets what the user's memory recalls for its
    /// last message as a system message, goes on to --upstream, and its round is stored once
    /// the answer is complete. Takes every `serve` option and serves all that `serve` does.
    Proxy(ServeArgs),
    /// Load a running server with concurrent clients (searches and writes) and print RPS and
    /// latency percentiles.
    Loadtest(LoadtestArgs),
}

/// `chatgpt`, `claude` or `jsonl`.
fn parse_chat_format(s: &str) -> Result<mnemon::chats::ChatFormat, String> {
    mnemon::chats::ChatFormat::parse(s).ok_or_else(|| format!("{s:?}: expected chatgpt, claude or jsonl"))
}
