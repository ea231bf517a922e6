//! The measuring and debugging commands: `bench`, `loadtest`, `extract`.

use std::path::PathBuf;

use mnemon::extract::LlamaConfig;

use super::common::{ContractArg, FusionArgs, ModelArgs};

#[derive(clap::Args)]
/// `mnemon bench`.
pub struct BenchArgs {
    #[command(flatten)]
    pub models: ModelArgs,
    /// Store sizes to measure, in rounds.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub sizes: Vec<usize>,
    /// Recall queries per size.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Draw round texts from this many distinct texts, embedding each once (for sizes where
    /// embedding every round would take hours; the embed-only column then covers the pool).
    #[arg(long)]
    pub pool: Option<usize>,
    /// Rounds per add() call (one session each).
    #[arg(long, default_value_t = 10)]
    pub session_rounds: usize,
    /// Words in each synthetic reply. At 85 or more a round reaches 100 words, so it also gets
    /// part records (one per sentence of its user turn).
    #[arg(long, default_value_t = 35)]
    pub reply_words: usize,
    /// Sentences of 15 words in each synthetic user turn.
    #[arg(long, default_value_t = 1)]
    pub user_sentences: usize,
    /// Measure notes (remember, list and search, with and without filters) instead of rounds;
    /// sizes are then in notes.
    #[arg(long)]
    pub notes: bool,
    /// With --notes: also write each size's notes and queries to `<FILE>.<size>.json`, so that
    /// another client (`python/bench.py --workload`) measures the very same work.
    #[arg(long, value_name = "FILE", requires = "notes")]
    pub workload_out: Option<std::path::PathBuf>,
    /// Measure the reads the web page makes (a timeline page, the users, the decision log by
    /// kind, activity) on one user of each size's rounds, each round with a scripted fact and
    /// every tenth a move that supersedes the one before, instead of recall.
    #[arg(long, conflicts_with = "notes")]
    pub browse: bool,
    /// Build each store in a fresh database on this PostgreSQL server (a URL whose user may
    /// create databases) instead of a temporary file; dropped afterwards.
    #[arg(long = "scratch", alias = "postgres", value_name = "URL")]
    pub scratch: Option<String>,
    /// Spread each size's rounds over this many users (a session each in turn); queries go to
    /// the users in turn.
    #[arg(long, default_value_t = 1)]
    pub users: usize,
    /// With --scratch: also measure pgvector's HNSW index (built after ingest) against the exact
    /// scan on the same queries: build time, KNN p50 both ways, recall@10 of HNSW.
    #[arg(long)]
    pub hnsw: bool,
    /// Memory, in MiB, the views may hold (`Config::view_cache_bytes`). With many users and a
    /// budget smaller than their views, each load drops the least recently used view and reuses
    /// its memory: the cold view of a server that has run a while, not a process's first loads.
    #[arg(long, default_value_t = 2048)]
    pub view_cache_mib: usize,
    #[command(flatten)]
    pub fusion: FusionArgs,
    /// Also time the dense ranking alone on a second handle of the same store, question by
    /// question in turn with the fused one (every user's view loaded on both first), and print
    /// both p50s and their ratio: one process and one stretch of time, so the ratio is free of
    /// the drift between separate runs.
    #[arg(long, conflicts_with = "dense_only")]
    pub alternate: bool,
    /// Draw the rounds' and the questions' words by Zipf's law over this many words (the common
    /// words first, then made-up ones), as natural text's are, instead of uniformly from 162
    /// common words (where every word is in about a quarter of the rounds: the word side's worst
    /// case).
    #[arg(long, value_name = "WORDS")]
    pub zipf: Option<usize>,
}

#[derive(clap::Args)]
/// `mnemon loadtest`.
pub struct LoadtestArgs {
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:7424")]
    pub url: String,
    /// Concurrent clients.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Share of requests that write (save one memory); the rest search.
    #[arg(long, default_value_t = 0.25)]
    pub writes: f64,
    /// Users the requests spread over.
    #[arg(long, default_value_t = 10)]
    pub users: usize,
    /// Memories saved per user before the load starts.
    #[arg(long, default_value_t = 1000)]
    pub seed: usize,
    /// Requests per second offered in total, on a fixed schedule (open loop); none: each client
    /// sends as soon as its last request is answered (closed loop).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Bearer token, if the server wants one.
    #[arg(long)]
    pub token: Option<String>,
    /// Users are named `<prefix>-0`, `<prefix>-1`, …: several load generators on one store
    /// (through several servers) keep to users of their own, so each can count its writes.
    #[arg(long, default_value = "load")]
    pub prefix: String,
    /// Writes cycle through this many memories per user (fixed texts and timestamps), so that
    /// once all are stored a write is an exact repeat and the data stops growing: a long run
    /// then measures leaks, not data. 0: every write is new.
    #[arg(long, default_value_t = 0)]
    pub write_pool: u64,
    /// Print a line every this many seconds (requests, admitted p99, shed, errors), so a long
    /// run shows drift; 0: only the totals.
    #[arg(long, default_value_t = 0)]
    pub interval: u64,
    /// After the load, probe with one search every 100 ms for this many seconds and print when
    /// service was whole again (every later probe answered 200 within 200 ms).
    #[arg(long, default_value_t = 0)]
    pub recovery: u64,
}

#[derive(clap::Args)]
/// `mnemon extract`.
pub struct ExtractArgs {
    /// The GGUF model file (`default`: the pinned default model in the models folder).
    #[arg(long, alias = "model")]
    pub extractor: PathBuf,
    /// llama.cpp threads.
    #[arg(long = "extract-threads", alias = "threads", default_value_t = 2)]
    pub extract_threads: i32,
    /// Most tokens generated.
    #[arg(long = "extract-max-tokens", alias = "max-tokens", default_value_t = LlamaConfig::default().max_tokens)]
    pub extract_max_tokens: usize,
    /// Most tokens of round text read (the user turn first).
    #[arg(long = "extract-input-cap", alias = "input-cap", default_value_t = LlamaConfig::default().input_cap)]
    pub extract_input_cap: usize,
    /// The output contract.
    #[arg(long = "extract-contract", alias = "contract", value_enum, default_value_t = ContractArg::Slots)]
    pub extract_contract: ContractArg,
    /// Most tokens drafted per decode from the round's own prompt and output (0: none).
    #[arg(long = "extract-draft", alias = "draft", default_value_t = LlamaConfig::default().draft)]
    pub extract_draft: usize,
    /// The round: lines starting `user:` or `assistant:` begin a turn; other lines continue it.
    pub round: String,
}
