//! `mnemon eval`: the harness behind the command line.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::Config;
use mnemon_eval::{Benchmark, RunConfig};

use crate::anyhow_lite::Fail;
use crate::EmbedArgs;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum BenchmarkArg {
    Longmemeval,
    Locomo,
}

#[derive(Subcommand)]
pub enum Command {
    /// Ingest every selected haystack into a fresh store, recall each question, score the ranks.
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
        /// Fuse dense and BM25 rankings by reciprocal rank with this constant.
        #[arg(long)]
        rrf: Option<u32>,
        #[command(flatten)]
        embed: EmbedArgs,
    },
    /// Paired per-question comparison of two runs (exact McNemar).
    Compare { a: PathBuf, b: PathBuf },
}

pub fn run(command: Command) -> Result<(), Fail> {
    match command {
        Command::Run { dataset, benchmark, out, limit, types, questions, jobs, budget, rrf, embed } => {
            let jobs = jobs.clamp(1, 16);
            let config = RunConfig {
                dataset,
                benchmark: match benchmark {
                    BenchmarkArg::Longmemeval => Benchmark::LongMemEval,
                    BenchmarkArg::Locomo => Benchmark::LoCoMo,
                },
                out: out.clone(),
                limit,
                types,
                questions,
                jobs,
                engine: Config { context_budget: budget, rrf_k: rrf, ..Config::default() },
                command_line: std::env::args().collect::<Vec<_>>().join(" "),
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
    }
    Ok(())
}
