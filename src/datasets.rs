//! Loaders for the public benchmarks mnemon is measured on: LongMemEval and LoCoMo.
//!
//! Each turns a benchmark file into per-user message lists ready for [`Memory::add`](crate::Memory::add):
//! one user per LongMemEval question (its haystack, sessions in chronological order, the
//! session date as every turn's `ts`) and one per LoCoMo conversation (speaker A as `user`,
//! speaker B as `assistant`, image captions appended to their turn). Errors name the file's
//! record and field.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::round::{Message, Role};
use crate::time::Timestamp;

/// Which benchmark a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    /// LongMemEval (S or oracle), a JSON array of questions.
    LongMemEval,
    /// LoCoMo, a JSON array of conversations.
    LoCoMo,
}

/// One benchmark user: the question or conversation id and its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Haystack {
    /// `question_id` or `sample_id`.
    pub user: String,
    /// Every message, oldest session first.
    pub messages: Vec<Message>,
}

/// Reads a benchmark file (plain JSON or gzip, by content) into haystacks.
pub fn load(path: &Path, benchmark: Benchmark) -> Result<Vec<Haystack>> {
    let bytes = std::fs::read(path)?;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)?;
        out
    } else {
        bytes
    };
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::input(path.display().to_string(), format!("not JSON: {e}")))?;
    let items =
        value.as_array().ok_or_else(|| Error::input(path.display().to_string(), "expected a JSON array"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match benchmark {
            Benchmark::LongMemEval => longmemeval(item, &format!("{}[{i}]", path.display())),
            Benchmark::LoCoMo => locomo(item, &format!("{}[{i}]", path.display())),
        })
        .collect()
}

fn str_field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::input(format!("{at}.{key}"), "missing or not a string"))
}

fn array_field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Vec<Value>> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| Error::input(format!("{at}.{key}"), "missing or not an array"))
}

fn longmemeval(q: &Value, at: &str) -> Result<Haystack> {
    let user = str_field(q, "question_id", at)?.to_owned();
    let at = format!("{at}({user})");
    let dates = array_field(q, "haystack_dates", &at)?;
    let ids = array_field(q, "haystack_session_ids", &at)?;
    let sessions = array_field(q, "haystack_sessions", &at)?;
    if dates.len() != sessions.len() || ids.len() != sessions.len() {
        return Err(Error::input(
            format!("{at}.haystack_sessions"),
            "lengths of dates, ids and sessions differ",
        ));
    }
    let mut order = Vec::with_capacity(sessions.len());
    for (i, d) in dates.iter().enumerate() {
        let raw =
            d.as_str().ok_or_else(|| Error::input(format!("{at}.haystack_dates[{i}]"), "not a string"))?;
        let ts = Timestamp::parse(raw)
            .map_err(|_| Error::input(format!("{at}.haystack_dates[{i}]"), "not a timestamp"))?;
        order.push((ts, i));
    }
    // Haystack dates are not always sorted; the stable sort keeps file order for equal dates.
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut messages = Vec::new();
    for (ts, i) in order {
        let session_id = match &ids[i] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let turns = sessions[i]
            .as_array()
            .ok_or_else(|| Error::input(format!("{at}.haystack_sessions[{i}]"), "not an array"))?;
        for (j, t) in turns.iter().enumerate() {
            let tat = format!("{at}.haystack_sessions[{i}][{j}]");
            let role = Role::parse(str_field(t, "role", &tat)?)
                .ok_or_else(|| Error::input(format!("{tat}.role"), "not user or assistant"))?;
            let mut m = Message::new(role, str_field(t, "content", &tat)?, ts.raw()).in_session(&session_id);
            m.id = Some(format!("{session_id}:{j}"));
            messages.push(m);
        }
    }
    Ok(Haystack { user, messages })
}

fn locomo(c: &Value, at: &str) -> Result<Haystack> {
    let user = str_field(c, "sample_id", at)?.to_owned();
    let at = format!("{at}({user})");
    let conv = c.get("conversation").ok_or_else(|| Error::input(format!("{at}.conversation"), "missing"))?;
    let speaker_a = str_field(conv, "speaker_a", &at)?;
    let obj = conv.as_object().ok_or_else(|| Error::input(format!("{at}.conversation"), "not an object"))?;
    let mut numbers: Vec<u32> = obj
        .keys()
        .filter_map(|k| k.strip_prefix("session_").and_then(|n| n.parse().ok()))
        .filter(|n| obj.get(&format!("session_{n}")).is_some_and(Value::is_array))
        .collect();
    numbers.sort_unstable();
    let mut messages = Vec::new();
    for n in numbers {
        let session = format!("session_{n}");
        let date = str_field(conv, &format!("{session}_date_time"), &at)?;
        Timestamp::parse(date)
            .map_err(|_| Error::input(format!("{at}.{session}_date_time"), "not a timestamp"))?;
        for (j, t) in conv[&session].as_array().into_iter().flatten().enumerate() {
            let tat = format!("{at}.{session}[{j}]");
            let speaker = str_field(t, "speaker", &tat)?;
            let mut content = str_field(t, "text", &tat)?.to_owned();
            if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                content.push_str(&format!(" [shared an image: {caption}]"));
            }
            let role = if speaker == speaker_a { Role::User } else { Role::Assistant };
            let mut m = Message::new(role, content, date).in_session(&session);
            m.speaker = Some(speaker.to_owned());
            m.id = t.get("dia_id").and_then(Value::as_str).map(str::to_owned);
            messages.push(m);
        }
    }
    Ok(Haystack { user, messages })
}
