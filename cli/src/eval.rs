//! `mnemon eval`: the harness behind the command line.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::Config;
use mnemon_eval::qa::{Endpoint, QaConfig, Templates};
use mnemon_eval::{Benchmark, RunConfig};

use crate::anyhow_lite::Fail;
use crate::{EmbedArgs, FusionArgs};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum BenchmarkArg {
    Longmemeval,
    Locomo,
}

impl From<BenchmarkArg> for Benchmark {
    fn from(b: BenchmarkArg) -> Benchmark {
        match b {
            BenchmarkArg::Longmemeval => Benchmark::LongMemEval,
            BenchmarkArg::Locomo => Benchmark::LoCoMo,
        }
    }
}

// Parsed once per process: the size of the largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Command {
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
        #[arg(long)]
        limit: Option<usize>,
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
        #[arg(long, default_value_t = mnemon::Config::default().time_weight)]
        time_weight: f32,
        /// Store each haystack in PostgreSQL (a schema of its own in this database, dropped after)
        /// instead of a temporary file.
        #[arg(long, value_name = "URL")]
        postgres: Option<String>,
        #[command(flatten)]
        fusion: FusionArgs,
        #[command(flatten)]
        ranking: crate::notes::RankingArgs,
        #[command(flatten)]
        embed: EmbedArgs,
        #[command(flatten)]
        qa: Box<QaArgs>,
    },
    /// Paired per-question comparison of two runs (exact McNemar).
    Compare { a: PathBuf, b: PathBuf },
    /// Extraction quality and speed on sampled LongMemEval rounds (evidence and other).
    Extract {
        #[arg(long)]
        dataset: PathBuf,
        /// The GGUF model file.
        #[arg(long)]
        model: PathBuf,
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
        #[arg(long, default_value_t = 2)]
        threads: i32,
        /// Rounds decoded together, each its own sequence in one llama.cpp context (1: alone).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
        batch: u16,
        /// The output contract: `open` (free predicates) or `closed` (predicates from the
        /// lexicons' relations or `other`; assistant facts only from the assistant's turn).
        #[arg(long, default_value = "open", value_parser = crate::parse_contract)]
        contract: mnemon::extract::Contract,
        /// Most tokens drafted per generation step from the round's own prompt and output
        /// (prompt lookup; 0: none).
        #[arg(long, default_value_t = mnemon::extract::LlamaConfig::default().draft)]
        draft: usize,
        /// Another run of the same sample (say, with `--batch 1`): report how many rounds gave
        /// the same output byte for byte, and exit non-zero if any did not.
        #[arg(long, value_name = "RUN")]
        same_as: Option<PathBuf>,
    },
    /// How many rounds the extraction pre-filter skips, by rule, and which evidence rounds.
    Prefilter {
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long, value_enum)]
        benchmark: BenchmarkArg,
        /// At most this many haystacks.
        #[arg(long)]
        limit: Option<usize>,
    },
}

/// QA mode. The endpoint is read from `MNEMON_EVAL_BASE_URL` (else `OPENAI_BASE_URL`, else
/// OpenAI's) and the key from `MNEMON_EVAL_API_KEY` (else `OPENAI_API_KEY`).
#[derive(clap::Args, Clone, Debug)]
pub struct QaArgs {
    /// QA mode: the reader's model name at the chat endpoint.
    #[arg(long, requires = "judge")]
    reader: Option<String>,
    /// The judge's model name.
    #[arg(long, requires = "reader")]
    judge: Option<String>,
    /// Reader replies and verdicts, shared by runs [default: <cache>/mnemon/qa-cache.db].
    #[arg(long)]
    qa_cache: Option<PathBuf>,
    /// A JSON object of template name to text replacing built-in prompts (e.g. official wording).
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Bound on the reader's reply, in tokens.
    #[arg(long, default_value_t = 1024)]
    reader_max_tokens: u32,
}

impl QaArgs {
    fn config(&self) -> Result<Option<QaConfig>, Fail> {
        let (Some(reader), Some(judge)) = (&self.reader, &self.judge) else { return Ok(None) };
        let templates = match &self.templates {
            Some(path) => Templates::from_file(path)?,
            None => Templates::default(),
        };
        let cache = self.qa_cache.clone().unwrap_or_else(|| {
            // Beside the models folder's default home: `$XDG_CACHE_HOME/mnemon` or `~/.cache/mnemon`.
            let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
            var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|h| h.join(".cache")))
                .map_or_else(|| PathBuf::from(".mnemon-qa-cache.db"), |c| c.join("mnemon/qa-cache.db"))
        });
        Ok(Some(QaConfig {
            reader: reader.clone(),
            judge: judge.clone(),
            endpoint: Endpoint::from_env(),
            cache,
            templates,
            reader_max_tokens: self.reader_max_tokens,
            retries: (6, std::time::Duration::from_secs(2)),
        }))
    }
}

pub fn run(command: Command) -> Result<(), Fail> {
    match command {
        Command::Run {
            dataset,
            benchmark,
            out,
            limit,
            types,
            questions,
            jobs,
            budget,
            time_weight,
            postgres,
            fusion,
            ranking,
            embed,
            qa,
        } => {
            let jobs = jobs.clamp(1, 16);
            let config = RunConfig {
                dataset,
                benchmark: benchmark.into(),
                out: out.clone(),
                limit,
                types,
                questions,
                jobs,
                engine: Config {
                    context_budget: budget,
                    rrf_k: fusion.rrf_k(),
                    time_weight,
                    ..Config::default()
                },
                command_line: std::env::args().collect::<Vec<_>>().join(" "),
                qa: qa.config()?,
                extractor: embed.build_extractor()?,
                ranking: ranking.ranking(),
                postgres,
            };
            let per_job = EmbedArgs { threads: (embed.threads / jobs).max(1), ..embed.clone() };
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{spinner} {wide_bar} {pos}/{len} questions, elapsed {elapsed}, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let summary = mnemon_eval::run(
                &config,
                &|| per_job.build().map_err(|e| mnemon::Error::Embedder(e.to_string())),
                &|done, total| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                },
            )?;
            bar.finish_and_clear();
            print!("{}", mnemon_eval::report::report(&summary));
            eprintln!("artifacts in {}", out.display());
        }
        Command::Compare { a, b } => print!("{}", mnemon_eval::report::compare(&a, &b)?),
        Command::Extract {
            dataset,
            model,
            evidence,
            other,
            scored_only,
            out,
            threads,
            batch,
            contract,
            draft,
            same_as,
        } => {
            let extractor = mnemon::extract::LlamaExtractor::load(
                &model,
                mnemon::extract::LlamaConfig { threads, contract, draft, ..Default::default() },
            )?;
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{spinner} {wide_bar} {pos}/{len} rounds, elapsed {elapsed}, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let results = mnemon_eval::extraction::run(
                &dataset,
                &extractor,
                mnemon_eval::extraction::Sample { evidence, other, scored_only },
                usize::from(batch),
                &out,
                &|d, t| {
                    bar.set_length(t as u64);
                    bar.set_position(d as u64);
                },
            )?;
            bar.finish_and_clear();
            let mut text = mnemon_eval::extraction::summary(&results);
            let mut differ = Vec::new();
            if let Some(other) = &same_as {
                let (both, same, keys) = mnemon_eval::extraction::identity(&results, other)?;
                text.push_str(&format!(
                    "same output as {}: {same} of {both} rounds{}\n",
                    other.display(),
                    if keys.is_empty() { String::new() } else { format!("; differ: {}", keys.join(" ")) }
                ));
                differ = keys;
            }
            std::fs::write(out.join("summary.txt"), &text).map_err(|e| Fail::msg(e.to_string()))?;
            print!("{text}");
            if !differ.is_empty() {
                return Err(Fail::msg(format!("{} rounds gave other bytes", differ.len())));
            }
        }
        Command::Prefilter { dataset, benchmark, limit } => {
            let r = mnemon_eval::prefilter::measure(&dataset, benchmark.into(), limit)?;
            println!(
                "{} rounds; {} skipped ({:.2} %): {:?}",
                r.rounds,
                r.skipped_total(),
                100.0 * r.skipped_total() as f64 / r.rounds.max(1) as f64,
                r.skipped
            );
            println!("{} evidence rounds; {} would be skipped", r.evidence_rounds, r.evidence_skipped.len());
            for (user, key, rule, text) in &r.evidence_skipped {
                println!("\n[{user} {key}] {rule}\n{text}");
            }
        }
    }
    Ok(())
}
