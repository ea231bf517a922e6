//! The `eval` commands: `run`, `compare`, `extract`, `prefilter`.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

use super::common::{ContractArg, FusionArgs, ModelArgs, RankingArgs};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
/// A benchmark file's kind.
pub enum BenchmarkArg {
    /// LongMemEval (S or oracle; JSON or gzip).
    Longmemeval,
    /// LoCoMo.
    Locomo,
}

// Parsed once per process: the size of the largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Ingest every selected haystack into a fresh store, recall each question, score the ranks;
    /// with --reader and --judge, also answer each question from its context and grade it.
    Run {
        /// The benchmark file (JSON or gzip).
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long, value_enum)]
        benchmark: BenchmarkArg,
        /// The run directory; an existing one is resumed.
        #[arg(long)]
        out: PathBuf,
        /// At most this many questions.
        #[arg(long = "max-questions", alias = "limit")]
        max_questions: Option<usize>,
        /// Only these question types (LoCoMo: category-1 … category-5).
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
        /// Only these question ids.
        #[arg(long, value_delimiter = ',')]
        questions: Vec<String>,
        /// Haystacks in parallel, each with its own embedder (threads are split between them).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Token budget of the measured context.
        #[arg(long)]
        budget: Option<usize>,
        /// The score a round gains when its date is in the question's time window (0..=1).
        #[arg(long, default_value_t = mnemon::config::Config::default().time_weight)]
        time_weight: f32,
        /// Store each haystack in PostgreSQL (a schema of its own in this database, dropped after)
        /// instead of a temporary file.
        #[arg(long = "scratch", alias = "postgres", value_name = "URL")]
        scratch: Option<String>,
        #[command(flatten)]
        fusion: FusionArgs,
        #[command(flatten)]
        ranking: RankingArgs,
        #[command(flatten)]
        models: ModelArgs,
        #[command(flatten)]
        qa: Box<QaArgs>,
    },
    /// Paired per-question comparison of two runs (exact McNemar).
    Compare { a: PathBuf, b: PathBuf },
    /// Extraction quality and speed on sampled LongMemEval rounds (evidence and other).
    Extract {
        #[arg(long)]
        dataset: PathBuf,
        /// The GGUF model file (`default`: the pinned default model in the models folder).
        #[arg(long, alias = "model")]
        extractor: PathBuf,
        /// Evidence rounds sampled (at most two per question, in file order).
        #[arg(long, default_value_t = 100)]
        evidence: usize,
        /// Other rounds sampled (one per question).
        #[arg(long, default_value_t = 100)]
        other: usize,
        /// Evidence rounds only from the question types key information is scored on (the same
        /// rounds as the scored part of the full sample; a quick prompt iteration).
        #[arg(long)]
        scored_only: bool,
        /// The run directory (`rounds.jsonl`; an existing one is resumed).
        #[arg(long)]
        out: PathBuf,
        /// llama.cpp threads.
        #[arg(long = "extract-threads", alias = "threads", default_value_t = 2)]
        extract_threads: i32,
        /// Rounds decoded together, each its own sequence in one llama.cpp context (1: alone).
        #[arg(long = "extract-batch", alias = "batch", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
        extract_batch: u16,
        /// The output contract.
        #[arg(long = "extract-contract", alias = "contract", value_enum, default_value_t = ContractArg::Slots)]
        extract_contract: ContractArg,
        /// Most tokens drafted per generation step from the round's own prompt and output
        /// (prompt lookup; 0: none).
        #[arg(long = "extract-draft", alias = "draft", default_value_t = mnemon::extract::LlamaConfig::default().draft)]
        extract_draft: usize,
        /// Another run of the same sample (say, with `--batch 1`): report how many rounds gave
        /// the same output byte for byte, and exit non-zero if any did not.
        #[arg(long, value_name = "RUN")]
        same_as: Option<PathBuf>,
    },
    /// Facts against outside references: knowledge updates (LongMemEval), dates (both), LoCoMo's
    /// observations, and the cost per round. Each question's haystack (or each conversation)
    /// goes into a fresh store with the extractor inline (docs/EVAL.md, "Facts").
    Facts {
        /// The benchmark file (LongMemEval oracle or S; LoCoMo).
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long, value_enum)]
        benchmark: BenchmarkArg,
        /// The run directory (`units.jsonl`; an existing one is resumed).
        #[arg(long)]
        out: PathBuf,
        /// LoCoMo: only the first this many sessions of each conversation.
        #[arg(long)]
        sessions: Option<usize>,
        /// At most this many haystacks (LongMemEval questions, LoCoMo conversations).
        #[arg(long = "max-haystacks", alias = "limit")]
        max_haystacks: Option<usize>,
        /// LongMemEval: only the haystacks of questions of these types (`knowledge-update`,
        /// `temporal-reasoning`); without it, both.
        #[arg(long, value_delimiter = ',')]
        types: Vec<String>,
        #[command(flatten)]
        models: ModelArgs,
    },
    /// What search scores say about relevance: the cosine of each question to its evidence rounds,
    /// to its haystack's other rounds and to another user's rounds, per half of the haystacks,
    /// and the labels each class gets under a map from cosine to score (docs/EVAL.md, "Labels").
    Labels {
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long, value_enum)]
        benchmark: BenchmarkArg,
        /// The cosines that score 0.50 (`low`), 0.75 (`medium`) and 0.90 (`high`), ascending;
        /// without it, the embedder's own calibration.
        #[arg(long, value_delimiter = ',')]
        anchors: Option<Vec<f32>>,
        /// At most this many haystacks.
        #[arg(long = "max-haystacks")]
        max_haystacks: Option<usize>,
        #[command(flatten)]
        models: ModelArgs,
    },
    /// How many rounds the extraction pre-filter skips, by rule, and which evidence rounds.
    Prefilter {
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long, value_enum)]
        benchmark: BenchmarkArg,
        /// At most this many haystacks.
        #[arg(long = "max-haystacks", alias = "limit")]
        max_haystacks: Option<usize>,
    },
}

/// QA mode. The endpoint is read from `MNEMON_EVAL_BASE_URL` (else `OPENAI_BASE_URL`, else
/// OpenAI's) and the key from `MNEMON_EVAL_API_KEY` (else `OPENAI_API_KEY`).
#[derive(clap::Args, Clone, Debug)]
pub struct QaArgs {
    /// QA mode: the reader's model name at the chat endpoint (with --judge); or `gguf:default`
    /// (the default extractor's model) or `gguf:PATH`, a local GGUF that answers each question
    /// from no memory, mnemon's context and the oracle's at each --reader-budgets, scored by
    /// LoCoMo's token F1 or LongMemEval answer containment (a judge optional).
    #[arg(long)]
    pub reader: Option<String>,
    /// The judge's model name at the chat endpoint, or `gguf:default` / `gguf:PATH`.
    #[arg(long, requires = "reader")]
    pub judge: Option<String>,
    /// Reader replies and verdicts, shared by runs [default: <cache>/mnemon/qa-cache.db].
    #[arg(long)]
    pub qa_cache: Option<PathBuf>,
    /// A JSON object of template name to text replacing built-in prompts (e.g. official wording).
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// Bound on the reader's reply, in tokens (a remote reader; a local one answers in at most 48).
    #[arg(long, default_value_t = 1024)]
    pub reader_max_tokens: u32,
    /// A local reader reads mnemon's and the oracle's contexts rendered at each of these budgets.
    #[arg(long, value_delimiter = ',', default_value = "4000")]
    pub reader_budgets: Vec<usize>,
    /// llama.cpp threads for a local reader or judge.
    #[arg(long, default_value_t = 2)]
    pub reader_threads: i32,
}
