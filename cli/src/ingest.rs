//! `mnemon ingest`: a JSONL file of messages, or a benchmark's haystacks, stored one session per
//! transaction.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::config::Config;
use mnemon::Message;
use mnemon_eval::data::{self, Benchmark};

use crate::flags::{InputFormat, ModelArgs};
use crate::input::parse_jsonl;

/// `mnemon ingest`: every message of `file` stored (checked whole before the first write).
pub fn run(
    db: &Path,
    user: Option<String>,
    format: InputFormat,
    max_users: Option<usize>,
    models: &ModelArgs,
    file: &Path,
) -> Result<()> {
    let haystacks = match format {
        InputFormat::Jsonl => {
            let user = user.clone().ok_or_else(|| anyhow!("--user is required for a JSONL file"))?;
            vec![data::Haystack { user, messages: parse_jsonl(file)? }]
        }
        InputFormat::Longmemeval | InputFormat::Locomo => {
            let kind =
                if format == InputFormat::Longmemeval { Benchmark::LongMemEval } else { Benchmark::LoCoMo };
            let mut all = data::load(file, kind)?.haystacks;
            if let Some(u) = &user {
                all.retain(|h| &h.user == u);
                if all.is_empty() {
                    bail!("{}: no question or conversation {u:?}", file.display());
                }
            }
            all.truncate(max_users.unwrap_or(usize::MAX));
            all
        }
    };
    for h in &haystacks {
        // Check everything before the first write, so a bad message stores nothing.
        mnemon::rounds::validate_messages(&h.messages)
            .map_err(|e| anyhow!("{}: user {}: {e}", file.display(), h.user))?;
    }
    let memory = models.open(db, Config::default())?;
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
    let facts: usize = haystacks
        .iter()
        .map(|h| memory.active_facts(&h.user).map(|f| f.len()))
        .sum::<mnemon::Result<usize>>()?;
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
