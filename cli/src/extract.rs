//! `mnemon extract`: the facts of one round, as the extractor sees it (a debugging aid).
// Timing the call is this command's job; the library never reads a clock.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::time::Instant;

use mnemon::extract::{Extractor, LlamaConfig, LlamaExtractor};
use mnemon::{Role, Turn};

use crate::anyhow_lite::{Context as _, Fail};

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF model file.
    #[arg(long)]
    model: PathBuf,
    /// CPU threads.
    #[arg(long, default_value_t = 2)]
    threads: i32,
    /// Most tokens generated.
    #[arg(long, default_value_t = LlamaConfig::default().max_tokens)]
    max_tokens: usize,
    /// Most tokens of round text read (the user turn first).
    #[arg(long, default_value_t = LlamaConfig::default().input_cap)]
    input_cap: usize,
    /// The output contract: `open` or `closed`.
    #[arg(long, default_value = "open", value_parser = crate::parse_contract)]
    contract: mnemon::extract::Contract,
    /// Most tokens drafted per decode from the round's own prompt and output (0: none).
    #[arg(long, default_value_t = LlamaConfig::default().draft)]
    draft: usize,
    /// The round: lines starting `user:` or `assistant:` begin a turn; other lines continue it.
    round: String,
}

/// Turns from `user: …` / `assistant: …` lines.
pub fn parse_round(text: &str) -> Result<Vec<Turn>, Fail> {
    let mut turns: Vec<Turn> = Vec::new();
    for line in text.lines() {
        let start = [("user:", Role::User), ("assistant:", Role::Assistant)]
            .into_iter()
            .find_map(|(p, role)| line.strip_prefix(p).map(|rest| (role, rest.trim_start())));
        match (start, turns.last_mut()) {
            (Some((role, rest)), _) => turns.push(Turn {
                role,
                content: rest.to_string(),
                ts: String::new(),
                id: None,
                speaker: None,
            }),
            (None, Some(t)) => {
                t.content.push('\n');
                t.content.push_str(line);
            }
            (None, None) => return Err(Fail::msg("the round must start with `user:` or `assistant:`")),
        }
    }
    if turns.is_empty() {
        return Err(Fail::msg("the round is empty"));
    }
    Ok(turns)
}

pub fn run(args: &Args) -> Result<(), Fail> {
    let turns = parse_round(&args.round)?;
    let config = LlamaConfig {
        threads: args.threads,
        max_tokens: args.max_tokens,
        input_cap: args.input_cap,
        contract: args.contract,
        draft: args.draft,
        ..LlamaConfig::default()
    };
    let started = Instant::now();
    let extractor = LlamaExtractor::load(&args.model, config)?;
    let loaded = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let extraction = extractor.extract(&turns)?;
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", serde_json::to_string_pretty(&extraction).context("json")?);
    eprintln!(
        "{}: loaded in {loaded:.2} s; {} prompt + {} generated tokens in {seconds:.2} s{}",
        extractor.name(),
        extraction.prompt_tokens,
        extraction.generated_tokens,
        if extraction.truncated { "; truncated (output off contract or cut at the token bound)" } else { "" }
    );
    Ok(())
}
