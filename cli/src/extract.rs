//! `mnemon extract`: the facts of one round, as the extractor sees it (a debugging aid).
// Timing the call is this command's job; the library never reads a clock.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use mnemon::extract::{Extractor, LlamaConfig, LlamaExtractor};
use mnemon::rounds::{Role, Turn};

use anyhow::{anyhow, Context as _, Result};

use crate::flags::ExtractArgs as Args;

/// Turns from `user: …` / `assistant: …` lines.
pub fn parse_round(text: &str) -> Result<Vec<Turn>> {
    let mut turns: Vec<Turn> = Vec::new();
    for line in text.lines() {
        let start = [("user:", Role::User), ("assistant:", Role::Assistant)]
            .into_iter()
            .find_map(|(p, role)| line.strip_prefix(p).map(|rest| (role, rest.trim_start())));
        match (start, turns.last_mut()) {
            (Some((role, rest)), _) => turns.push(Turn::new(role, rest, String::new())),
            (None, Some(t)) => {
                t.content.push('\n');
                t.content.push_str(line);
            }
            (None, None) => return Err(anyhow!("the round must start with `user:` or `assistant:`")),
        }
    }
    if turns.is_empty() {
        return Err(anyhow!("the round is empty"));
    }
    Ok(turns)
}

pub fn run(args: &Args) -> Result<()> {
    let turns = parse_round(&args.round)?;
    let config = LlamaConfig {
        threads: args.extract_threads,
        max_tokens: args.extract_max_tokens,
        input_cap: args.extract_input_cap,
        contract: args.extract_contract.into(),
        draft: args.extract_draft,
        ..LlamaConfig::default()
    };
    let started = Instant::now();
    let path = crate::models::extractor_path(&args.extractor, &mnemon::model_files::default_dir());
    let extractor = LlamaExtractor::load(path, config)?;
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
