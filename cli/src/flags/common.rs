//! The arguments several commands share: which store and whose memory, the models, how a
//! question is ranked, which notes a filter keeps, and the values flags take.

use std::path::PathBuf;

use clap::ValueEnum;
use mnemon::config::Config;
use mnemon::context::{Ranking, Recency};
use mnemon::extract::LlamaConfig;

/// A store, named by `--store`.
#[derive(clap::Args, Clone, Debug)]
pub struct StoreArg {
    /// The store: a .db/.sqlite file, a project directory (mapped to a stable store in
    /// $MNEMON_DATA), `global`, or a postgres:// URL [default: global].
    #[arg(long = "store", alias = "db", value_name = "REF")]
    pub store: Option<String>,
}

/// Which store, and whose memory in it.
#[derive(clap::Args, Clone, Debug)]
pub struct Target {
    #[command(flatten)]
    pub store: StoreArg,
    /// The user whose memory it is.
    #[arg(long, default_value = "default")]
    pub user: String,
    /// The agent: writes are private to it; reads see its records and the user's shared ones.
    #[arg(long)]
    pub agent: Option<String>,
}

/// Which embedder computes vectors.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum EmbedderChoice {
    /// all-MiniLM-L6-v2 int8 through ONNX Runtime (needs scripts/fetch-models.sh).
    Minilm,
    /// Feature hashing: no model, no meaning; for tests and model-free setups.
    Hashing,
}

/// The models a command runs: the embedder and, for writes, an optional extractor.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArgs {
    /// Which embedder computes vectors.
    #[arg(long, value_enum, default_value_t = EmbedderChoice::Minilm)]
    pub embedder: EmbedderChoice,
    /// Folder holding the model files [default: $MNEMON_MODELS or ~/.cache/mnemon/models].
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// ONNX Runtime threads.
    #[arg(long = "embed-threads", alias = "threads", default_value_t = 2)]
    pub embed_threads: usize,
    /// Let ONNX Runtime's idle threads spin (faster on an idle machine, slower on a busy one).
    #[arg(long)]
    pub spin: bool,
    /// Keep computed vectors in this SQLite file and reuse them (outputs are unchanged).
    #[arg(long)]
    pub embed_cache: Option<PathBuf>,
    /// Texts per ONNX call [default: 1 (batching did not pay on real rounds; see
    /// docs/DECISIONS.md); 32 for `mcp` and `serve`, whose texts are short and arrive together].
    #[arg(long = "embed-batch", alias = "batch")]
    pub embed_batch: Option<usize>,
    #[command(flatten)]
    pub extractor: ExtractorArgs,
}

/// The extractor: a GGUF model (or a JSON script of given facts) and how it decodes.
#[derive(clap::Args, Clone, Debug)]
pub struct ExtractorArgs {
    /// A GGUF model that extracts facts from every round (`default`: the pinned default model
    /// that scripts/fetch-models.sh --qwen fetches into the models folder), or a JSON script of
    /// given facts (`ScriptedExtractor`). Only writes need it (a
    /// store created with one queues its rounds for it); another model or version than the one a
    /// store was built with is recorded beside it, and `mnemon reextract` brings older rounds up
    /// to date.
    #[arg(long, alias = "model")]
    pub extractor: Option<PathBuf>,
    /// Keep the extractor's outputs in this SQLite file and reuse them (outputs are unchanged).
    #[arg(long, requires = "extractor")]
    pub extract_cache: Option<PathBuf>,
    #[command(flatten)]
    pub decoding: DecodingArgs,
}

/// How the GGUF extractor decodes.
#[derive(clap::Args, Clone, Debug)]
pub struct DecodingArgs {
    /// llama.cpp threads for the extractor.
    #[arg(long = "extract-threads", default_value_t = 2)]
    pub extract_threads: i32,
    /// The extractor's output contract.
    #[arg(long = "extract-contract", alias = "contract", value_enum, default_value_t = ContractArg::Slots)]
    pub extract_contract: ContractArg,
    /// Rounds the extractor decodes together (each gives the bytes it gives alone): only with a
    /// row-invariant llama.cpp build and `--extract-draft 0`; otherwise one at a time.
    #[arg(long = "extract-batch", default_value_t = LlamaConfig::default().batch, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=64), usize::from))]
    pub extract_batch: usize,
    /// Most tokens the extractor drafts per decode from the round's own prompt and output, kept
    /// where greedy choice agrees (0: none). Pinned: another value is another extractor.
    #[arg(long = "extract-draft", alias = "draft", default_value_t = LlamaConfig::default().draft)]
    pub extract_draft: usize,
}

impl DecodingArgs {
    /// The extractor's settings these flags ask for.
    pub fn llama(&self) -> LlamaConfig {
        LlamaConfig {
            threads: self.extract_threads.max(1),
            batch: self.extract_batch,
            draft: self.extract_draft,
            contract: self.extract_contract.into(),
            ..LlamaConfig::default()
        }
    }
}

/// An extractor's output contract.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ContractArg {
    /// Free predicates: the grammar and prompt files as they are.
    Open,
    /// Predicates from the lexicons' relations or `other`; assistant facts only from the
    /// assistant's turn.
    Closed,
    /// The default. The model reads only the round's candidate sentences (first-person
    /// statements with a value) and fills slots: entity, relation from a closed list, value.
    /// Facts are the speakers' sentences; rounds without a candidate skip the model.
    Slots,
}

impl From<ContractArg> for mnemon::extract::Contract {
    fn from(c: ContractArg) -> Self {
        match c {
            ContractArg::Open => mnemon::extract::Contract::Open,
            ContractArg::Closed => mnemon::extract::Contract::Closed,
            ContractArg::Slots => mnemon::extract::Contract::Slots,
        }
    }
}

/// The format of a file of messages.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum InputFormat {
    /// One JSON message per line: {"role", "content", "ts"[, "session", "id", "speaker"]}.
    Jsonl,
    /// LongMemEval (S or oracle; JSON or gzip): one user per question.
    Longmemeval,
    /// LoCoMo: one user per conversation.
    Locomo,
}

/// The format of an export.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum OutputFormat {
    /// Readable Markdown.
    #[value(alias = "md")]
    Markdown,
    /// Plain text with every field and the decision log.
    Text,
    /// The lossless JSONL dump `import` loads.
    Jsonl,
}

impl From<OutputFormat> for mnemon::export::ExportFormat {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Markdown => mnemon::export::ExportFormat::Markdown,
            OutputFormat::Text => mnemon::export::ExportFormat::Text,
            OutputFormat::Jsonl => mnemon::export::ExportFormat::Jsonl,
        }
    }
}

/// A note's kind.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum KindArg {
    /// Something that happened at one time.
    Episodic,
    /// A standing fact or preference (the default).
    Semantic,
    /// How to do something.
    Procedural,
}

impl From<KindArg> for mnemon_server::api::Kind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Episodic => mnemon_server::api::Kind::Episodic,
            KindArg::Semantic => mnemon_server::api::Kind::Semantic,
            KindArg::Procedural => mnemon_server::api::Kind::Procedural,
        }
    }
}

impl From<KindArg> for mnemon::notes::NoteKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Episodic => mnemon::notes::NoteKind::Episodic,
            KindArg::Semantic => mnemon::notes::NoteKind::Semantic,
            KindArg::Procedural => mnemon::notes::NoteKind::Procedural,
        }
    }
}

/// Which of a project's store and the global store a read covers.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug, Default)]
pub enum ReachArg {
    /// The named store only.
    #[default]
    Local,
    /// The global store only.
    Global,
    /// Both, merged: each note once.
    All,
}

impl From<ReachArg> for mnemon::stores::Reach {
    fn from(r: ReachArg) -> Self {
        match r {
            ReachArg::Local => mnemon::stores::Reach::Local,
            ReachArg::Global => mnemon::stores::Reach::Global,
            ReachArg::All => mnemon::stores::Reach::All,
        }
    }
}

/// How the dense and the lexical rankings combine.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct FusionArgs {
    /// Reciprocal-rank fusion constant for dense + BM25 [default: 10].
    #[arg(long, conflicts_with = "dense_only")]
    pub rrf: Option<u32>,
    /// Rank by the dense score alone (no BM25 fusion).
    #[arg(long)]
    pub dense_only: bool,
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

/// Per-query ranking options (off by default).
#[derive(clap::Args, Clone, Copy, Default, Debug)]
pub struct RankingArgs {
    /// memex's recency term: weight of similarity ALPHA (0..=1) and HALF_LIFE in days, as
    /// ALPHA:HALF_LIFE (e.g. 0.8:30).
    #[arg(long, value_parser = parse_recency, value_name = "ALPHA:HALF_LIFE")]
    pub recency: Option<Recency>,
    /// Importance weighting (0..=1).
    #[arg(long = "importance-weight", value_name = "W")]
    pub importance: Option<f32>,
}

fn parse_recency(s: &str) -> Result<Recency, String> {
    let (a, h) = s.split_once(':').ok_or("expected ALPHA:HALF_LIFE, e.g. 0.8:30")?;
    Ok(Recency {
        alpha: a.parse().map_err(|_| format!("{a:?} is not a number"))?,
        half_life_days: h.parse().map_err(|_| format!("{h:?} is not a number"))?,
    })
}

impl RankingArgs {
    /// The library's ranking options.
    pub fn ranking(self) -> Ranking {
        Ranking { recency: self.recency, importance: self.importance }
    }
}

/// Which notes a list or search keeps.
#[derive(clap::Args, Clone, Default, Debug)]
pub struct FilterArgs {
    /// Keep notes with at least one of these tags (repeatable; case-insensitive).
    #[arg(long = "tag-any", value_name = "TAG")]
    pub tags_any: Vec<String>,
    /// Keep notes with every one of these tags (repeatable).
    #[arg(long = "tag-all", value_name = "TAG")]
    pub tags_all: Vec<String>,
    /// Keep notes of these kinds (repeatable).
    #[arg(long = "kind", value_name = "KIND", value_enum)]
    pub kinds: Vec<KindArg>,
    /// Keep notes stated strictly after this timestamp.
    #[arg(long)]
    pub after: Option<String>,
    /// Keep notes stated strictly before this timestamp.
    #[arg(long)]
    pub before: Option<String>,
    /// Keep notes of at least this many content tokens.
    #[arg(long)]
    pub min_tokens: Option<usize>,
    /// Keep notes of at most this many content tokens.
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// Also list notes hidden by condensing.
    #[arg(long)]
    pub include_condensed: bool,
    /// Keep notes whose metadata passes this JSON condition: `{"key": value}`, operators
    /// `{"key": {"gte": 3}}` (eq ne in nin gt gte lt lte contains icontains), `"*"` for a present
    /// key, and `AND` / `OR` / `NOT` over lists of conditions.
    #[arg(long = "where", value_name = "JSON", value_parser = parse_where)]
    pub metadata: Option<serde_json::Value>,
}

/// A `--where` condition, checked as the filter will read it (an error names `--where`).
fn parse_where(s: &str) -> Result<serde_json::Value, String> {
    let value: serde_json::Value = serde_json::from_str(s).map_err(|e| format!("not JSON: {e}"))?;
    mnemon::notes::MetadataFilter::parse(&value, "--where").map_err(|e| e.to_string())?;
    Ok(value)
}

impl FilterArgs {
    /// The filter as a request gives it to the servers (`api::FilterIn`), whose one mapping to
    /// the library's filter serves the command line too.
    pub fn filter(&self) -> Result<mnemon::notes::Filter, mnemon::Error> {
        let request = mnemon_server::api::FilterIn {
            tags_any: self.tags_any.clone(),
            tags_all: self.tags_all.clone(),
            kinds: self.kinds.iter().map(|k| (*k).into()).collect(),
            after: self.after.clone(),
            before: self.before.clone(),
            min_tokens: self.min_tokens,
            max_tokens: self.max_tokens,
            metadata: self.metadata.clone(),
        };
        request.filter(self.include_condensed)
    }
}

/// What `context` and `recall` share: which store, whose memory, which question.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub target: Target,
    /// The question's date (anchors "last week" and the like).
    #[arg(long)]
    pub date: Option<String>,
    /// Read the memory as it stood at this time: rounds and notes dated at or before it, facts
    /// as they stood then (a fact superseded later still current). Dates the question when
    /// `--date` is not given.
    #[arg(long, value_name = "TS")]
    pub as_of: Option<String>,
    /// Records to consider (per query angle).
    #[arg(long)]
    pub top_k: Option<usize>,
    #[command(flatten)]
    pub fusion: FusionArgs,
    #[command(flatten)]
    pub ranking: RankingArgs,
    #[command(flatten)]
    pub models: ModelArgs,
    pub question: String,
}
