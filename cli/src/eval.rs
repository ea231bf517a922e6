//! `mnemon eval`: the harness behind the command line.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::config::Config;
use std::sync::Arc;

use mnemon::internals::generate::LlamaReader;
use mnemon_eval::qa::{Endpoint, Judge, Local, LocalConfig, QaConfig, Templates};
use mnemon_eval::{Benchmark, RunConfig};

use crate::flags::{BenchmarkArg, EvalCommand, ModelArgs, QaArgs};

impl From<BenchmarkArg> for Benchmark {
    fn from(b: BenchmarkArg) -> Benchmark {
        match b {
            BenchmarkArg::Longmemeval => Benchmark::LongMemEval,
            BenchmarkArg::Locomo => Benchmark::LoCoMo,
        }
    }
}

/// A `gguf:default` or `gguf:PATH` model name's file; `None` for a model at the chat endpoint.
fn gguf(name: &str) -> Option<PathBuf> {
    let path = name.strip_prefix("gguf:")?;
    Some(match path {
        "default" => mnemon::extract::default_gguf(mnemon::extract::DEFAULT_GGUF),
        p => PathBuf::from(p),
    })
}

impl QaArgs {
    fn templates(&self) -> Result<Templates> {
        Ok(match &self.templates {
            Some(path) => Templates::from_file(path)?,
            None => Templates::default(),
        })
    }

    fn cache(&self) -> PathBuf {
        self.qa_cache.clone().unwrap_or_else(|| {
            // Beside the models folder's default home: `$XDG_CACHE_HOME/mnemon` or `~/.cache/mnemon`.
            let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
            var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|h| h.join(".cache")))
                .map_or_else(|| PathBuf::from(".mnemon-qa-cache.db"), |c| c.join("mnemon/qa-cache.db"))
        })
    }

    /// A local GGUF at `path`, able to read the largest context asked for.
    fn local(&self, path: &std::path::Path) -> Result<Arc<dyn Local>> {
        // The prompt's own words and the reply beside the largest block.
        let most = self.reader_budgets.iter().max().copied().unwrap_or(4000) + 1024;
        let reader = LlamaReader::load(path, self.reader_threads, u32::try_from(most).unwrap_or(u32::MAX))
            .with_context(|| format!("the local reader {}", path.display()))?;
        Ok(Arc::new(reader))
    }

    /// Remote QA mode: a reader and a judge at the chat endpoint.
    fn config(&self) -> Result<Option<QaConfig>> {
        let Some(reader) = &self.reader else { return Ok(None) };
        if gguf(reader).is_some() {
            return Ok(None);
        }
        let Some(judge) = &self.judge else {
            bail!("--reader {reader} (a model at the chat endpoint) needs --judge")
        };
        if gguf(judge).is_some() {
            bail!("--judge {judge}: a local judge grades a local reader (--reader gguf:…) only");
        }
        Ok(Some(QaConfig {
            reader: reader.clone(),
            judge: judge.clone(),
            endpoint: Endpoint::from_env(),
            cache: self.cache(),
            templates: self.templates()?,
            reader_max_tokens: self.reader_max_tokens,
            retries: (6, std::time::Duration::from_secs(2)),
        }))
    }

    /// Local reading: a GGUF reader (and a judge, local or remote, if given).
    fn local_config(&self) -> Result<Option<LocalConfig>> {
        let Some(path) = self.reader.as_deref().and_then(gguf) else { return Ok(None) };
        if self.reader_budgets.is_empty()
            || self.reader_budgets.iter().any(|b| *b < mnemon::config::MIN_BUDGET)
        {
            bail!("--reader-budgets: each at least {} tokens", mnemon::config::MIN_BUDGET);
        }
        let reader = self.local(&path)?;
        let judge = match self.judge.as_deref() {
            None => None,
            Some(j) => Some(match gguf(j) {
                Some(p) if p == path => Judge::Local(reader.clone()),
                Some(p) => Judge::Local(self.local(&p)?),
                None => Judge::Remote { model: j.to_owned(), endpoint: Endpoint::from_env() },
            }),
        };
        Ok(Some(LocalConfig {
            reader,
            judge,
            budgets: self.reader_budgets.clone(),
            cache: self.cache(),
            templates: self.templates()?,
        }))
    }
}

pub fn run(command: EvalCommand) -> Result<()> {
    match command {
        EvalCommand::Run {
            dataset,
            benchmark,
            out,
            max_questions,
            types,
            questions,
            jobs,
            budget,
            time_weight,
            scratch,
            fusion,
            ranking,
            models,
            qa,
        } => {
            let jobs = jobs.clamp(1, 16);
            let config = RunConfig {
                dataset,
                benchmark: benchmark.into(),
                out: out.clone(),
                limit: max_questions,
                types,
                questions,
                jobs,
                engine: Config {
                    context_budget: budget,
                    rrf_k: fusion.rrf_k(),
                    time_weight,
                    ..Config::default()
                },
                command_line: mnemon::stores::redact(&std::env::args().collect::<Vec<_>>().join(" ")),
                qa: qa.config()?,
                local: qa.local_config()?,
                extractor: models.extractor()?,
                ranking: ranking.ranking(),
                postgres: scratch,
            };
            let per_job = ModelArgs { embed_threads: (models.embed_threads / jobs).max(1), ..models.clone() };
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{spinner} {wide_bar} {pos}/{len} questions, elapsed {elapsed}, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let summary = mnemon_eval::run(
                &config,
                &|| per_job.embedder().map_err(|e| mnemon::Error::Embedder(format!("{e:#}"))),
                &|done, total| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                },
            )?;
            bar.finish_and_clear();
            print!("{}", mnemon_eval::report::report(&summary));
            eprintln!("artifacts in {}", out.display());
        }
        EvalCommand::Facts { dataset, benchmark, out, sessions, max_haystacks, types, models } => {
            let Some(extractor) = models.extractor()? else {
                anyhow::bail!("eval facts measures an extractor: give --extractor");
            };
            let config = mnemon_eval::facts::FactsConfig {
                dataset,
                benchmark: benchmark.into(),
                out: out.clone(),
                extractor,
                embedder: models.embedder()?,
                engine: Config::default(),
                sessions,
                limit: max_haystacks,
                types,
            };
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{spinner} {wide_bar} {pos}/{len} haystacks, elapsed {elapsed}, eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let summary = mnemon_eval::facts::run(&config, &|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })?;
            bar.finish_and_clear();
            print!("{}", mnemon_eval::facts::report(&summary));
            eprintln!("artifacts in {}", out.display());
        }
        EvalCommand::Compare { a, b } => print!("{}", mnemon_eval::report::compare(&a, &b)?),
        EvalCommand::Extract {
            dataset,
            extractor,
            evidence,
            other,
            scored_only,
            out,
            extract_threads,
            extract_batch,
            extract_contract,
            extract_draft,
            same_as,
        } => {
            let config = mnemon::extract::LlamaConfig {
                threads: extract_threads,
                contract: extract_contract.into(),
                draft: extract_draft,
                ..Default::default()
            };
            let path = crate::models::extractor_path(&extractor, &mnemon::model_files::default_dir());
            let extractor = mnemon::extract::LlamaExtractor::load(path, config)?;
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
                usize::from(extract_batch),
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
            std::fs::write(out.join("summary.txt"), &text)
                .with_context(|| format!("writing {}", out.display()))?;
            print!("{text}");
            if !differ.is_empty() {
                bail!("{} rounds gave other bytes", differ.len());
            }
        }
        EvalCommand::Labels { dataset, benchmark, anchors, max_haystacks, models } => {
            let embedder = models.embedder()?;
            let calibration = match anchors {
                Some(a) => mnemon::embed::Calibration::new(
                    a.try_into().map_err(|_| anyhow::anyhow!("--anchors takes three cosines"))?,
                )?,
                None => embedder.calibration(),
            };
            let r = mnemon_eval::labels::measure(&dataset, benchmark.into(), embedder, max_haystacks)?;
            println!("## Scores as cosines\n\n{}", mnemon_eval::labels::render(&r, |c| c));
            println!(
                "## Scores through anchors {:?}\n\n{}",
                calibration.anchors,
                mnemon_eval::labels::render(&r, |c| calibration.score(c))
            );
        }
        EvalCommand::Prefilter { dataset, benchmark, max_haystacks } => {
            let r = mnemon_eval::prefilter::measure(&dataset, benchmark.into(), max_haystacks)?;
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
