//! Reading the files the commands take: UTF-8 text, and JSONL messages.

use std::path::Path;

use anyhow::{anyhow, Context as _, Result};
use mnemon::Message;

/// Reads a UTF-8 file, naming the line of the first invalid byte.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        anyhow!("{}: line {line}: invalid UTF-8", path.display())
    })
}

/// The messages of a JSONL file, one per line.
pub fn parse_jsonl(path: &Path) -> Result<Vec<Message>> {
    parse_jsonl_text(&read_text(path)?, &path.display().to_string())
}

/// The messages of a JSONL text, one per line; `name` names it in errors.
pub fn parse_jsonl_text(text: &str, name: &str) -> Result<Vec<Message>> {
    let mut messages = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{name}: line {}", i + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| anyhow!("{at}: not JSON: {e}"))?;
        let message = Message::from_json(&value, &at)?;
        mnemon::Timestamp::parse(&message.ts).map_err(|e| anyhow!("{at}: {e}"))?;
        messages.push(message);
    }
    Ok(messages)
}
