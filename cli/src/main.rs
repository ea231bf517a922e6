//! The `mnemon` command: thin glue over the library. Logs go to stderr; results to stdout.

mod bench;
mod demo;
mod doctor;
mod eval;
mod extract;
mod fuzz;
mod loadtest;
mod notes;
mod serve;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow_lite::{Context as _, Fail};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::extract::{CachedExtractor, Extractor, LlamaConfig, LlamaExtractor, ScriptedExtractor};
use mnemon::{
    Config, Embedder, ExportFormat, HashingEmbedder, Memory, Message, OnnxConfig, OnnxEmbedder, Query,
};
use mnemon_eval::data::{self, Benchmark};

mod anyhow_lite;

#[derive(Parser)]
#[command(name = "mnemon", version, about = "A deterministic, local-first memory engine for LLM agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum EmbedderChoice {
    /// all-MiniLM-L6-v2 int8 through ONNX Runtime (needs scripts/fetch-models.sh).
    Minilm,
    /// Feature hashing: no model, no meaning; for tests and model-free setups.
    Hashing,
}

/// `open` or `closed`, for the flags that choose an extractor's output contract.
pub(crate) fn parse_contract(s: &str) -> Result<mnemon::extract::Contract, String> {
    match s {
        "open" => Ok(mnemon::extract::Contract::Open),
        "closed" => Ok(mnemon::extract::Contract::Closed),
        other => Err(format!("{other:?}: expected open or closed")),
    }
}

#[derive(clap::Args, Clone)]
pub(crate) struct EmbedArgs {
    /// Which embedder computes vectors.
    #[arg(long, value_enum, default_value_t = EmbedderChoice::Minilm)]
    embedder: EmbedderChoice,
    /// Folder holding the model files [default: $MNEMON_MODELS or ~/.cache/mnemon/models].
    #[arg(long)]
    models: Option<PathBuf>,
    /// ONNX Runtime threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Let ONNX Runtime's idle threads spin (faster on an idle machine, slower on a busy one).
    #[arg(long)]
    spin: bool,
    /// Keep computed vectors in this SQLite file and reuse them (outputs are unchanged).
    #[arg(long)]
    embed_cache: Option<PathBuf>,
    /// Texts per ONNX call [default: 1 (batching did not pay on real rounds; see
    /// docs/DECISIONS.md); 32 for `mcp` and `serve`, whose texts are short and arrive together].
    #[arg(long)]
    batch: Option<usize>,
    /// A GGUF model that extracts facts from every round (e.g. from scripts/fetch-models.sh
    /// --qwen), or a JSON script of given facts (`ScriptedExtractor`). Only writes need it (a
    /// store created with one queues its rounds for it); another model or version than the one a
    /// store was built with is recorded beside it, and `mnemon reextract` brings older rounds up
    /// to date.
    #[arg(long)]
    extractor: Option<PathBuf>,
    /// Keep the extractor's outputs in this SQLite file and reuse them (outputs are unchanged).
    #[arg(long, requires = "extractor")]
    extract_cache: Option<PathBuf>,
    /// llama.cpp threads for the extractor.
    #[arg(long, default_value_t = 2)]
    extract_threads: i32,
    /// The extractor's output contract: `open` (free predicates) or `closed` (predicates from the
    /// lexicons' relations or `other`; assistant facts only from the assistant's turn).
    #[arg(long, default_value = "open", value_parser = parse_contract)]
    extract_contract: mnemon::extract::Contract,
    /// Rounds the extractor decodes together (each gives the bytes it gives alone): only with a
    /// row-invariant llama.cpp build and `--extract-draft 0`; otherwise one at a time.
    #[arg(long, default_value_t = LlamaConfig::default().batch, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=64), usize::from))]
    extract_batch: usize,
    /// Most tokens the extractor drafts per decode from the round's own prompt and output, kept
    /// where greedy choice agrees (0: none). Pinned: another value is another extractor.
    #[arg(long, default_value_t = LlamaConfig::default().draft)]
    extract_draft: usize,
}

impl EmbedArgs {
    fn models_dir(&self) -> PathBuf {
        self.models.clone().unwrap_or_else(mnemon::models::default_dir)
    }

    fn build(&self) -> Result<Arc<dyn Embedder>, Fail> {
        let embedder = self.build_uncached()?;
        Ok(match &self.embed_cache {
            Some(path) => Arc::new(mnemon::CachedEmbedder::open(path, embedder)?),
            None => embedder,
        })
    }

    fn build_uncached(&self) -> Result<Arc<dyn Embedder>, Fail> {
        Ok(match self.embedder {
            EmbedderChoice::Hashing => Arc::new(HashingEmbedder::default()),
            EmbedderChoice::Minilm => {
                let config = OnnxConfig {
                    threads: self.threads,
                    spinning: self.spin,
                    batch_size: self.batch.unwrap_or(1),
                    ..OnnxConfig::from_dir(&self.models_dir())
                };
                Arc::new(OnnxEmbedder::new(config)?)
            }
        })
    }

    /// The extractor the flags name, behind its cache when one is given.
    fn build_extractor(&self) -> Result<Option<Arc<dyn Extractor>>, Fail> {
        let Some(path) = &self.extractor else { return Ok(None) };
        if path.extension().is_some_and(|e| e == "json") {
            return Ok(Some(Arc::new(ScriptedExtractor::load(path)?)));
        }
        let config = LlamaConfig {
            threads: self.extract_threads.max(1),
            batch: self.extract_batch,
            draft: self.extract_draft,
            contract: self.extract_contract,
            ..LlamaConfig::default()
        };
        let model = LlamaExtractor::load(path, config)?;
        Ok(Some(match &self.extract_cache {
            Some(cache) => Arc::new(CachedExtractor::open(cache, model)?),
            None => Arc::new(model),
        }))
    }

    fn open(&self, db: &Path) -> Result<Memory, Fail> {
        self.open_with(db, Config::default())
    }

    /// Opens the store; with an extractor, extraction runs inside each `add` (the CLI's progress
    /// bar then shows it).
    fn open_with(&self, db: &Path, config: Config) -> Result<Memory, Fail> {
        let config = Config { background_extraction: false, ..config };
        Ok(mnemon_postgres::reference::open_with(db, self.build()?, self.build_extractor()?, config)?)
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum InputFormat {
    /// One JSON message per line: {"role", "content", "ts"[, "session", "id", "speaker"]}.
    Jsonl,
    /// LongMemEval (S or oracle; JSON or gzip): one user per question.
    Longmemeval,
    /// LoCoMo: one user per conversation.
    Locomo,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum OutputFormat {
    Md,
    Text,
    Jsonl,
}

/// What `context` and `recall` share: which store, whose memory, which question.
#[derive(clap::Args)]
struct QueryArgs {
    #[command(flatten)]
    target: notes::Target,
    /// The question's date (anchors "last week" and the like).
    #[arg(long)]
    date: Option<String>,
    /// Records to consider (per query angle).
    #[arg(long)]
    top_k: Option<usize>,
    #[command(flatten)]
    fusion: FusionArgs,
    #[command(flatten)]
    ranking: notes::RankingArgs,
    #[command(flatten)]
    embed: EmbedArgs,
    question: String,
}

/// How the dense and the lexical rankings combine.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct FusionArgs {
    /// Reciprocal-rank fusion constant for dense + BM25 [default: 10].
    #[arg(long, conflicts_with = "dense_only")]
    rrf: Option<u32>,
    /// Rank by the dense score alone (no BM25 fusion).
    #[arg(long)]
    dense_only: bool,
}

impl FusionArgs {
    /// The engine's `rrf_k` these flags ask for.
    pub fn rrf_k(self) -> Option<u32> {
        if self.dense_only {
            None
        } else {
            self.rrf.or(Config::default().rrf_k)
        }
    }
}

impl QueryArgs {
    fn open(&self) -> Result<Memory, Fail> {
        self.embed.open_with(&self.target.path()?, Config { rrf_k: self.fusion.rrf_k(), ..Config::default() })
    }

    fn query<'a>(&'a self, budget: Option<usize>, angles: &'a [&'a str]) -> Query<'a> {
        Query {
            date: self.date.as_deref(),
            top_k: self.top_k,
            budget,
            angles,
            ranking: self.ranking.ranking(),
            ..Query::new(&self.question)
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Store messages from a file.
    Ingest {
        #[arg(long)]
        db: PathBuf,
        /// User to store under (for benchmarks: only this question or conversation).
        #[arg(long)]
        user: Option<String>,
        #[arg(long, value_enum, default_value_t = InputFormat::Jsonl)]
        format: InputFormat,
        /// For benchmarks: ingest at most this many users.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        embed: EmbedArgs,
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
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        user: String,
        /// Only what this agent sees (its records and the user's shared ones).
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
        format: OutputFormat,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Load a JSONL dump (creates the store with the dump's pins if it does not exist).
    Import {
        #[arg(long)]
        db: PathBuf,
        file: PathBuf,
    },
    /// Remove everything stored for a user, the user's name with it, and (given the caches the
    /// store was written through: --embed-cache with its --embedder, --extractor with its
    /// --extract-cache) every entry the caches hold of the user; then empty the WALs. Without
    /// cache flags it needs no model and leaves the caches as they are.
    Forget {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        user: String,
        #[command(flatten)]
        embed: EmbedArgs,
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
        #[arg(long)]
        db: PathBuf,
        /// The new file (must not exist).
        out: PathBuf,
    },
    /// Send rounds through the extractor again (after a change of model, prompt, lexicons or
    /// conflict rules; through --extract-cache, so unchanged rounds cost nothing), then settle
    /// every fact again; prints what changed and which extractors the store knows.
    Reextract {
        #[arg(long)]
        db: PathBuf,
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
        embed: EmbedArgs,
    },
    /// Re-run the conflict pass over a user's facts (every fact, superseded ones included, keyed
    /// again under the current lexicons), then decay salience and condense old episodic notes if
    /// asked (needs no model unless condensing).
    Consolidate {
        #[arg(long)]
        db: PathBuf,
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
        embed: EmbedArgs,
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
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        user: String,
    },
    /// Check models, ONNX Runtime, SQLite and a store; exits non-zero on any failure.
    Doctor {
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long)]
        models: Option<PathBuf>,
        /// Also load this GGUF extractor and decode one short round.
        #[arg(long)]
        extractor: Option<PathBuf>,
    },
    /// Ingest a small conversation, then print a context and the Markdown export.
    Demo {
        /// Keep the demo store here (default: a temporary file, removed afterwards).
        #[arg(long)]
        db: Option<PathBuf>,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Measure ingest and recall speed on synthetic rounds.
    Bench(bench::Args),
    /// Print the facts a GGUF model extracts from one round (a debugging aid).
    Extract(extract::Args),
    /// Measure retrieval quality on LongMemEval or LoCoMo, or compare two runs.
    #[command(subcommand)]
    Eval(eval::Command),
    #[command(flatten)]
    Notes(notes::Command),
    /// Serve MCP over stdin/stdout (for Claude Code, Claude Desktop, Cursor, any MCP client).
    /// Logs go to stderr.
    Mcp(serve::McpArgs),
    /// Serve the HTTP API under /v1, MCP (streamable HTTP) at /mcp, /health, /metrics,
    /// /openapi.json and /docs.
    Serve(serve::ServeArgs),
    /// Load a running server with concurrent clients (searches and writes) and print RPS and
    /// latency percentiles.
    Loadtest(loadtest::Args),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MNEMON_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .without_time()
        .init();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode, Fail> {
    match command {
        Command::Ingest { db, user, format, limit, embed, file } => {
            ingest(&db, user, format, limit, &embed, &file)?
        }
        Command::Context { query, budget, angles, json } => {
            let memory = query.open()?;
            let angles: Vec<&str> = angles.iter().map(String::as_str).collect();
            let context = memory.get_context(query.query(budget, &angles), query.target.scope())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&context).context("json")?);
            } else {
                print!("{}", context.text);
                eprintln!(
                    "{} rounds, {} notes, {} tokens{}",
                    context.rounds.len(),
                    context.notes.len(),
                    context.tokens,
                    if context.truncated {
                        format!(", {} left out by the budget", context.omitted.len())
                    } else {
                        String::new()
                    }
                );
            }
        }
        Command::Recall { query } => {
            let memory = query.open()?;
            let recall = memory.recall(query.query(None, &[]), query.target.scope())?;
            println!("{}", serde_json::to_string_pretty(&recall).context("json")?);
        }
        Command::Export { db, user, agent, format, output } => {
            let memory = mnemon_postgres::reference::open_stored(&db, Config::default())?;
            let format = match format {
                OutputFormat::Md => ExportFormat::Markdown,
                OutputFormat::Text => ExportFormat::Text,
                OutputFormat::Jsonl => ExportFormat::Jsonl,
            };
            let text = memory.export(mnemon::Scope::user(&user).with_agent(agent.as_deref()), format)?;
            match output {
                Some(path) => std::fs::write(&path, text).context(format!("writing {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        Command::Import { db, file } => {
            let dump = read_text(&file)?;
            let report = mnemon_postgres::reference::import(&db, &dump, Config::default())?;
            println!("{}", serde_json::to_string(&report).context("json")?);
        }
        Command::Reextract { db, user, all, round, embed } => {
            if embed.extractor.is_none() {
                return Err(Fail::msg("reextract needs --extractor"));
            }
            let memory = embed.open(&db)?;
            let keys: Vec<&str> = round.iter().map(String::as_str).collect();
            let which = match (all, keys.is_empty()) {
                (true, _) => mnemon::Reextract::All,
                (false, false) => mnemon::Reextract::Rounds(&keys),
                (false, true) => mnemon::Reextract::Stale,
            };
            let report = memory.reextract(user.as_deref(), which)?;
            memory.flush()?;
            let users = match &user {
                Some(u) => vec![u.clone()],
                None => memory.users()?,
            };
            let mut settled = Vec::new();
            for u in &users {
                settled.push((u.clone(), memory.consolidate(u.as_str())?));
            }
            let extractors = memory.extractors(user.as_deref())?;
            let out = serde_json::json!({
                "reextract": report,
                "consolidate": settled.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
                "extractors": extractors.iter().map(|e| serde_json::json!({
                    "hash": e.hash, "current": e.current, "name": e.pins.get("extractor"),
                    "rounds": e.rounds, "facts": e.facts,
                })).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string(&out).context("json")?);
        }
        Command::Consolidate {
            db,
            user,
            agent,
            condense,
            condense_batch,
            embed,
            decay,
            half_life,
            floor,
        } => {
            let decay = decay.then_some(mnemon::Decay { half_life_days: half_life, floor });
            let condense = condense.map(|keep| mnemon::Condense { keep, batch: condense_batch });
            let config = Config { decay, condense, ..Config::default() };
            // Condensing embeds the notes it makes; the conflict pass and decay need no model.
            let memory = match condense {
                Some(_) => embed.open_with(&db, config)?,
                None => mnemon_postgres::reference::open_stored(&db, config)?,
            };
            let report = memory.consolidate(mnemon::Scope::user(&user).with_agent(agent.as_deref()))?;
            println!("{}", serde_json::to_string(&report).context("json")?);
        }
        Command::Log { db, user } => {
            let memory = mnemon_postgres::reference::open_stored(&db, Config::default())?;
            for (n, d) in memory.decisions(&user)?.iter().enumerate() {
                let other = d.other.as_deref().map(|o| format!(" of {o}")).unwrap_or_default();
                println!("#{} at {} {} {}{other} {}", n + 1, d.at, d.kind, d.record, d.detail);
            }
        }
        Command::Forget { db, user, embed } => {
            let memory = if embed.embed_cache.is_some() || embed.extractor.is_some() {
                embed.open(&db)?
            } else {
                mnemon_postgres::reference::open_stored(&db, Config::default())?
            };
            let report = memory.forget_user(&user)?;
            println!("{}", serde_json::to_string(&report).context("json")?);
        }
        Command::Fuzz { cases, seed, target } => {
            let tallies = fuzz::run(cases, seed, target.as_deref(), |t| {
                parse_jsonl_text(t, "fuzz").is_ok_and(|m| mnemon::validate_messages(&m).is_ok())
            })?;
            println!(
                "| target | cases | accepted | rejected (typed error) | panics |\n|---|---|---|---|---|"
            );
            let mut total = fuzz::Tally::default();
            for (name, t) in &tallies {
                println!("| {name} | {} | {} | {} | {} |", t.cases, t.accepted, t.rejected, t.panics);
                total.cases += t.cases;
                total.accepted += t.accepted;
                total.rejected += t.rejected;
                total.panics += t.panics;
            }
            println!(
                "| all | {} | {} | {} | {} |",
                total.cases, total.accepted, total.rejected, total.panics
            );
            if total.panics > 0 {
                return Err(Fail::msg(format!(
                    "{} cases panicked (inputs in fuzz-panic-*.txt)",
                    total.panics
                )));
            }
        }
        Command::Backup { db, out } => {
            let memory = mnemon_postgres::reference::open_stored(&db, Config::default())?;
            let bytes = memory.backup(&out)?;
            println!("{} -> {}: {bytes} bytes, quick_check ok", db.display(), out.display());
        }
        Command::Doctor { db, models, extractor } => {
            return Ok(doctor::run(db.as_deref(), models, extractor.as_deref()))
        }
        Command::Demo { db, embed } => demo::run(db, &embed)?,
        Command::Bench(args) => bench::run(&args)?,
        Command::Extract(args) => extract::run(&args)?,
        Command::Eval(command) => eval::run(command)?,
        Command::Notes(command) => notes::run(command)?,
        Command::Mcp(args) => serve::mcp(&args)?,
        Command::Serve(args) => serve::serve(&args)?,
        Command::Loadtest(args) => loadtest::run(&args)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a UTF-8 file, naming the line and column of the first invalid byte.
fn read_text(path: &Path) -> Result<String, Fail> {
    let bytes = std::fs::read(path).context(format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        Fail::msg(format!("{}: line {line}: invalid UTF-8", path.display()))
    })
}

fn parse_jsonl(path: &Path) -> Result<Vec<Message>, Fail> {
    parse_jsonl_text(&read_text(path)?, &path.display().to_string())
}

/// The messages of a JSONL text, one per line; `name` names it in errors.
fn parse_jsonl_text(text: &str, name: &str) -> Result<Vec<Message>, Fail> {
    let mut messages = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{name}: line {}", i + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| Fail::msg(format!("{at}: not JSON: {e}")))?;
        let message = Message::from_json(&value, &at)?;
        mnemon::Timestamp::parse(&message.ts).map_err(|e| Fail::msg(format!("{at}: {e}")))?;
        messages.push(message);
    }
    Ok(messages)
}

fn ingest(
    db: &Path,
    user: Option<String>,
    format: InputFormat,
    limit: Option<usize>,
    embed: &EmbedArgs,
    file: &Path,
) -> Result<(), Fail> {
    let haystacks = match format {
        InputFormat::Jsonl => {
            let user = user.clone().ok_or_else(|| Fail::msg("--user is required for a JSONL file"))?;
            vec![data::Haystack { user, messages: parse_jsonl(file)? }]
        }
        InputFormat::Longmemeval | InputFormat::Locomo => {
            let kind =
                if format == InputFormat::Longmemeval { Benchmark::LongMemEval } else { Benchmark::LoCoMo };
            let mut all = data::load(file, kind)?.haystacks;
            if let Some(u) = &user {
                all.retain(|h| &h.user == u);
                if all.is_empty() {
                    return Err(Fail::msg(format!("{}: no question or conversation {u:?}", file.display())));
                }
            }
            all.truncate(limit.unwrap_or(usize::MAX));
            all
        }
    };
    for h in &haystacks {
        // Check everything before the first write, so a bad message stores nothing.
        mnemon::validate_messages(&h.messages)
            .map_err(|e| Fail::msg(format!("{}: user {}: {e}", file.display(), h.user)))?;
    }
    let memory = embed.open(db)?;
    let total: usize = haystacks.iter().map(|h| h.messages.len()).sum();
    let bar = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template("{spinner} {wide_bar} {pos}/{len} messages, {per_sec}, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let (mut stored, mut duplicates, mut dropped) = (0, 0, 0);
    for h in &haystacks {
        // One transaction per session keeps progress visible; each session lands whole or not at all.
        for chunk in sessions(&h.messages) {
            let report = memory.add(chunk, &h.user)?;
            stored += report.stored.len();
            duplicates += report.duplicates.len();
            dropped += report.empty_turns_dropped;
            bar.inc(chunk.len() as u64);
        }
    }
    bar.finish_and_clear();
    let facts: usize =
        haystacks.iter().map(|h| memory.facts(&h.user).map(|f| f.len())).sum::<mnemon::Result<usize>>()?;
    println!(
        "{}",
        serde_json::json!({"users": haystacks.len(), "messages": total, "rounds_stored": stored, "rounds_duplicate": duplicates, "empty_turns_dropped": dropped, "facts": facts, "extractor": memory.extractors(None)?.into_iter().find(|e| e.current).map(|e| e.pins["extractor"].clone())})
    );
    Ok(())
}

/// Consecutive runs of messages with the same session (or, without one, the same `ts`).
fn sessions(messages: &[Message]) -> impl Iterator<Item = &[Message]> {
    messages.chunk_by(|a, b| a.session.as_ref().unwrap_or(&a.ts) == b.session.as_ref().unwrap_or(&b.ts))
}
