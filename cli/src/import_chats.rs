//! `mnemon import-chats`: a user's history from ChatGPT or Claude (their `conversations.json`),
//! or mnemon's JSONL, stored one conversation per session and transaction
//! ([`mnemon::chats`]). Run again, it stores only what it had not; with `--extractor`, facts
//! are extracted by the store's background worker while the import goes on, and the command
//! waits for the queue at the end (interrupted, the rest stays queued for the next time the
//! store is opened with an extractor).

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressStyle};
use mnemon::chats::{self, ChatFormat, Entry};
use mnemon::config::Config;
use mnemon::Memory;

use crate::flags::ModelArgs;

/// A reader that moves a progress bar by the bytes it reads.
struct Counted<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

fn bar(len: u64, template: &str) -> ProgressBar {
    ProgressBar::new(len)
        .with_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()))
}

/// `mnemon import-chats`.
pub fn run(
    db: &Path,
    user: &str,
    format: ChatFormat,
    dry_run: bool,
    models: &ModelArgs,
    file: &Path,
) -> Result<()> {
    let opened = std::fs::File::open(file).with_context(|| format!("reading {}", file.display()))?;
    let size = opened.metadata().map(|m| m.len()).unwrap_or(0);
    let reading = bar(size, "{spinner} {wide_bar} {bytes}/{total_bytes} {msg}");
    let input = Counted { inner: opened, bar: reading.clone() };
    let name = file.display().to_string();
    let print_skipped = |entry: &chats::Skipped| {
        reading.suspend(|| eprintln!("skipped {name}: {}: {}", entry.entry, entry.reason));
    };

    if dry_run {
        // What would be stored, as mnemon's JSONL (which `--format jsonl` imports as it is).
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let tally = chats::read(format, input, |entry| {
            match entry {
                Entry::Conversation(c) => {
                    for m in &c.messages {
                        let line = serde_json::to_string(m)
                            .map_err(|e| mnemon::Error::input("message", e.to_string()))?;
                        writeln!(out, "{line}").map_err(|e| mnemon::Error::input("stdout", e.to_string()))?;
                    }
                }
                Entry::Skipped(s) => print_skipped(&s),
            }
            Ok(())
        })?;
        reading.finish_and_clear();
        eprintln!("{}", serde_json::json!({"dry_run": true, "file": tally}));
        return Ok(());
    }

    let extractor = models.extractor()?;
    let extracting = extractor.is_some();
    // With an extractor, its worker extracts in the background while conversations are stored.
    let memory = Memory::builder(db)
        .embedder(models.embedder()?)
        .optional_extractor(extractor)
        .config(Config { background_extraction: true, ..Config::default() })
        .open()?;
    let mut conversations = 0;
    let imported = chats::import(&memory, format, input, user, |_, _| {
        conversations += 1;
        reading.set_message(format!("{conversations} conversations"));
    });
    reading.finish_and_clear();
    let imported = imported?;
    for s in &imported.skipped {
        print_skipped(s);
    }
    if extracting {
        wait_for_extraction(&memory, user)?;
    }
    let facts = if extracting { Some(memory.active_facts(user)?.len()) } else { None };
    println!(
        "{}",
        serde_json::json!({
            "conversations": imported.tally.conversations,
            "messages": imported.tally.messages,
            "rounds_stored": imported.rounds_stored,
            "rounds_duplicate": imported.rounds_duplicate,
            "skipped": imported.skipped.len(),
            "left_out": imported.tally.left_out,
            "facts": facts,
        })
    );
    Ok(())
}

/// Shows the extraction queue draining while this thread helps drain it ([`Memory::flush`]);
/// returns when it is empty, or with the first failure (its round stays queued).
fn wait_for_extraction(memory: &Memory, user: &str) -> Result<()> {
    let queued = memory.pending(Some(user.into()))? as u64;
    let progress = bar(queued, "{spinner} {wide_bar} {pos}/{len} rounds extracted, {per_sec}, eta {eta}");
    let flushed = std::thread::scope(|scope| {
        let flushing = scope.spawn(|| memory.flush());
        while !flushing.is_finished() {
            if let Ok(left) = memory.pending(Some(user.into())) {
                progress.set_position(queued.saturating_sub(left as u64));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        flushing.join().unwrap_or_else(|_| Err(mnemon::Error::input("extractor", "the extraction panicked")))
    });
    progress.finish_and_clear();
    Ok(flushed?)
}
