//! Other apps' chat histories, read into messages: a user's export from ChatGPT or Claude (each
//! a `conversations.json`), or mnemon's own JSONL. Each conversation becomes one session, its
//! messages with their real timestamps, so that [`Memory::add`](crate::Memory::add) stores it
//! like any conversation, and a second import of the same file stores nothing (a round's key
//! derives from its session, time and text).
//!
//! The file is read as a stream, one conversation at a time, so an export of any size takes
//! the memory of its largest conversation. Only what the user saw in the app is kept: the
//! branch the conversation ended on (an edited message or a regenerated answer leaves the
//! others), user and assistant text; system prompts, tool calls and their results, hidden
//! messages and reasoning are left out and counted. An attachment is kept as its name
//! (`[attached: notes.pdf]`), not its content. Consecutive messages of one role (an answer the
//! app split around a tool call) join into one turn. An entry that cannot be read (a
//! conversation without messages, a message without a time) is skipped, named and counted;
//! only a file that is not JSON at all stops the reading.
//!
//! ```
//! use mnemon::chats::{read, ChatFormat, Entry};
//! let export = r#"[{"uuid": "c1", "name": "Plants", "created_at": "2025-04-01T09:00:00Z",
//!   "chat_messages": [
//!     {"uuid": "m1", "sender": "human", "text": "My fern is wilting.", "created_at": "2025-04-01T09:00:00Z"},
//!     {"uuid": "m2", "sender": "assistant", "text": "Water it less often.", "created_at": "2025-04-01T09:00:05Z"}]}]"#;
//! let mut conversations = Vec::new();
//! let tally = read(ChatFormat::Claude, export.as_bytes(), |entry| {
//!     if let Entry::Conversation(c) = entry {
//!         conversations.push(c);
//!     }
//!     Ok(())
//! })?;
//! assert_eq!(conversations[0].session, "claude:c1");
//! assert_eq!(conversations[0].messages.len(), 2);
//! assert_eq!((tally.conversations, tally.skipped), (1, 0));
//! # Ok::<(), mnemon::Error>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::io::Read;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::round::{Message, Role};

/// The formats [`read`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChatFormat {
    /// ChatGPT's `conversations.json` (Settings → Data controls → Export data): a tree of
    /// messages per conversation, `current_node` naming the branch shown.
    #[serde(rename = "chatgpt")]
    ChatGpt,
    /// Claude's `conversations.json` (Settings → Privacy → Export data).
    Claude,
    /// mnemon's JSONL: one message per line, as `mnemon ingest` takes (`role`, `content`,
    /// `ts`, optional `session`, `id`, `speaker`, `metadata`).
    Jsonl,
}

impl ChatFormat {
    /// The format named `chatgpt`, `claude` or `jsonl`.
    pub fn parse(name: &str) -> Option<ChatFormat> {
        match name {
            "chatgpt" => Some(ChatFormat::ChatGpt),
            "claude" => Some(ChatFormat::Claude),
            "jsonl" => Some(ChatFormat::Jsonl),
            _ => None,
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            ChatFormat::ChatGpt => "chatgpt",
            ChatFormat::Claude => "claude",
            ChatFormat::Jsonl => "jsonl",
        }
    }
}

/// One conversation, ready for [`Memory::add`](crate::Memory::add).
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The session its messages carry: `chatgpt:ID`, `claude:UUID`, or the JSONL's own.
    pub session: String,
    /// Its title in the app, if it had one.
    pub title: Option<String>,
    /// Its messages, in order, each with the session.
    pub messages: Vec<Message>,
}

/// An entry that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Skipped {
    /// Which entry: `conversation 3 "Title" (ID)`, with `, message ID` for one message.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

/// What [`read`] hands on, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A conversation with at least one message to keep.
    Conversation(Conversation),
    /// An entry that could not be read.
    Skipped(Skipped),
}

/// What a reading found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tally {
    /// Conversations handed on.
    pub conversations: usize,
    /// Messages in them (after joining consecutive ones of a role).
    pub messages: usize,
    /// Entries skipped as unreadable (conversations and single messages).
    pub skipped: usize,
    /// Messages left out by design: system, tool and hidden messages, reasoning, other branches,
    /// empty ones.
    pub left_out: usize,
}

/// Reads `input` in `format`, handing each conversation (and each skipped entry) to `each` as
/// it is read. An error from `each` stops the reading and is returned; so is a file that is not
/// JSON (JSONL: a line that is not), naming where.
pub fn read<R: Read>(
    format: ChatFormat,
    input: R,
    mut each: impl FnMut(Entry) -> Result<()>,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut hand = |entry: Entry, tally: &mut Tally| -> Result<()> {
        match &entry {
            Entry::Conversation(c) => {
                tally.conversations += 1;
                tally.messages += c.messages.len();
            }
            Entry::Skipped(_) => tally.skipped += 1,
        }
        each(entry)
    };
    if format == ChatFormat::Jsonl {
        read_jsonl(input, &mut tally, &mut hand)?;
        return Ok(tally);
    }
    let mut failed: Option<Error> = None;
    let mut index = 0usize;
    let mut on_value = |value: Value| -> std::result::Result<(), ()> {
        index += 1;
        let (entries, left_out) = match format {
            ChatFormat::ChatGpt => chatgpt(index, &value),
            _ => claude(index, &value),
        };
        tally.left_out += left_out;
        for entry in entries {
            if let Err(e) = hand(entry, &mut tally) {
                failed = Some(e);
                return Err(());
            }
        }
        Ok(())
    };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(input));
    let read = Elements { on_value: &mut on_value }.deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = failed {
        return Err(e);
    }
    read.map_err(|e| {
        Error::input(
            "file",
            format!(
                "not a {} conversations.json (a JSON array of conversations): {e}",
                if format == ChatFormat::ChatGpt { "ChatGPT" } else { "Claude" }
            ),
        )
    })?;
    Ok(tally)
}

/// A JSON array read element by element, each handed on as a value and dropped.
struct Elements<'a> {
    on_value: &'a mut dyn FnMut(Value) -> std::result::Result<(), ()>,
}

impl<'de> DeserializeSeed<'de> for Elements<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of conversations")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let on_value = self.on_value;
        while let Some(value) = seq.next_element::<Value>()? {
            on_value(value).map_err(|()| serde::de::Error::custom("stopped"))?;
        }
        Ok(())
    }
}

/// A conversation's name in messages: `conversation 3 "Title" (ID)`.
fn entry_name(index: usize, title: Option<&str>, id: Option<&str>) -> String {
    let mut name = format!("conversation {index}");
    if let Some(t) = title.filter(|t| !t.is_empty()) {
        name.push_str(&format!(" {t:?}"));
    }
    if let Some(id) = id {
        name.push_str(&format!(" ({id})"));
    }
    name
}

fn skipped(entry: String, reason: impl Into<String>) -> Entry {
    Entry::Skipped(Skipped { entry, reason: reason.into() })
}

/// A kept message before consecutive turns of one role are joined.
struct Said {
    role: Role,
    text: String,
    ts: String,
    id: Option<String>,
}

/// The conversation of `said` (consecutive turns of one role joined), or `None` when nothing is
/// left.
fn conversation(session: String, title: Option<String>, said: Vec<Said>) -> Option<Conversation> {
    let mut messages: Vec<Message> = Vec::new();
    for s in said {
        match messages.last_mut() {
            Some(last) if last.role == s.role => {
                last.content.push_str("\n\n");
                last.content.push_str(&s.text);
            }
            _ => messages.push(Message {
                session: Some(session.clone()),
                id: s.id,
                ..Message::new(s.role, s.text, s.ts)
            }),
        }
    }
    (!messages.is_empty()).then_some(Conversation { session, title, messages })
}

/// A UTC time from seconds since 1970 (ChatGPT's `create_time`), to the microsecond.
fn from_epoch(seconds: f64) -> Option<String> {
    if !seconds.is_finite() {
        return None;
    }
    let micros = (seconds * 1e6).round();
    if micros.abs() > 1e17 {
        return None;
    }
    let at = chrono::DateTime::from_timestamp_micros(micros as i64)?;
    let format =
        if at.timestamp_subsec_micros() == 0 { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S%.6fZ" };
    Some(at.format(format).to_string())
}

/// A message's time: its own, checked, else the time before it.
fn checked_ts(raw: Option<String>, before: Option<&str>) -> std::result::Result<String, String> {
    match raw {
        Some(ts) => match crate::model::time::Timestamp::parse(&ts) {
            Ok(_) => Ok(ts),
            Err(Error::InvalidInput { reason, .. }) => Err(reason),
            Err(e) => Err(e.to_string()),
        },
        None => before.map(str::to_owned).ok_or_else(|| "has no time, nor has anything before it".to_owned()),
    }
}

/// One ChatGPT conversation: the branch from the root to `current_node`.
fn chatgpt(index: usize, value: &Value) -> (Vec<Entry>, usize) {
    let id = value["conversation_id"].as_str().or(value["id"].as_str());
    let title = value["title"].as_str();
    let name = entry_name(index, title, id);
    let Some(mapping) = value["mapping"].as_object() else {
        return (vec![skipped(name, "has no `mapping` of messages")], 0);
    };
    let Some(id) = id else { return (vec![skipped(name, "has no `conversation_id` or `id`")], 0) };
    let Some(mut node) = value["current_node"].as_str() else {
        return (vec![skipped(name, "has no `current_node`")], 0);
    };
    // Up from the node shown to the root, then in order.
    let mut path = Vec::new();
    let mut visited = HashSet::new();
    loop {
        if !visited.insert(node) {
            return (vec![skipped(name, format!("its messages loop back at {node}"))], 0);
        }
        let Some(n) = mapping.get(node) else {
            return (vec![skipped(name, format!("names a message that is not in its mapping: {node}"))], 0);
        };
        path.push(n);
        match n["parent"].as_str() {
            Some(p) => node = p,
            None => break,
        }
    }
    path.reverse();
    let with_message = mapping.values().filter(|n| n["message"].is_object()).count();
    let mut left_out = with_message.saturating_sub(path.iter().filter(|n| n["message"].is_object()).count());
    let mut entries = Vec::new();
    let mut said = Vec::new();
    let conversation_ts = value["create_time"].as_f64().and_then(from_epoch);
    for n in path {
        let m = &n["message"];
        if m.is_null() {
            continue;
        }
        let message_id = m["id"].as_str().or(n["id"].as_str()).map(str::to_owned);
        let at = || format!("{name}, message {}", message_id.as_deref().unwrap_or("(no id)"));
        let role = match m["author"]["role"].as_str() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some(_) => {
                left_out += 1; // system, tool
                continue;
            }
            None => {
                entries.push(skipped(at(), "has no `author.role`"));
                continue;
            }
        };
        let hidden = m["metadata"]["is_visually_hidden_from_conversation"] == true;
        let to_tool = m["recipient"].as_str().is_some_and(|r| r != "all");
        let content_type = m["content"]["content_type"].as_str();
        if hidden || to_tool || !matches!(content_type, Some("text" | "multimodal_text")) {
            left_out += 1; // hidden context, a call to a tool, reasoning, code
            continue;
        }
        let Some(parts) = m["content"]["parts"].as_array() else {
            entries.push(skipped(at(), "has no `content.parts`"));
            continue;
        };
        let mut text: Vec<String> = parts
            .iter()
            .filter_map(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .map(str::to_owned)
            .collect();
        for a in m["metadata"]["attachments"].as_array().into_iter().flatten() {
            if let Some(file) = a["name"].as_str() {
                text.push(format!("[attached: {file}]"));
            }
        }
        if text.is_empty() {
            left_out += 1; // an empty message, or an image alone
            continue;
        }
        let raw = m["create_time"].as_f64().and_then(from_epoch);
        let before = said.last().map(|s: &Said| s.ts.as_str()).or(conversation_ts.as_deref());
        match checked_ts(raw, before) {
            Ok(ts) => said.push(Said { role, text: text.join("\n"), ts, id: message_id }),
            Err(reason) => entries.push(skipped(at(), reason)),
        }
    }
    if let Some(c) = conversation(format!("chatgpt:{id}"), title.map(str::to_owned), said) {
        entries.insert(0, Entry::Conversation(c));
    }
    (entries, left_out)
}

/// One Claude conversation: its messages in order, or, where they name their parents, the
/// branch that ends at the conversation's current leaf (else its last message).
fn claude(index: usize, value: &Value) -> (Vec<Entry>, usize) {
    let id = value["uuid"].as_str();
    let title = value["name"].as_str();
    let name = entry_name(index, title, id);
    let Some(all) = value["chat_messages"].as_array() else {
        return (vec![skipped(name, "has no `chat_messages`")], 0);
    };
    let Some(id) = id else { return (vec![skipped(name, "has no `uuid`")], 0) };
    let by_id: HashMap<&str, &Value> = all.iter().filter_map(|m| Some((m["uuid"].as_str()?, m))).collect();
    let branched = all.iter().any(|m| m["parent_message_uuid"].is_string());
    let messages: Vec<&Value> = if branched {
        let leaf = value["current_leaf_message_uuid"].as_str().or_else(|| all.last()?["uuid"].as_str());
        let mut path = Vec::new();
        let mut visited = HashSet::new();
        let mut at = leaf;
        while let Some(m) = at.and_then(|u| by_id.get(u)) {
            if !visited.insert(m["uuid"].as_str().unwrap_or_default()) {
                break;
            }
            path.push(*m);
            at = m["parent_message_uuid"].as_str();
        }
        path.reverse();
        path
    } else {
        all.iter().collect()
    };
    let mut left_out = all.len() - messages.len();
    let mut entries = Vec::new();
    let mut said = Vec::new();
    let conversation_ts = value["created_at"].as_str();
    for m in messages {
        let message_id = m["uuid"].as_str().map(str::to_owned);
        let at = || format!("{name}, message {}", message_id.as_deref().unwrap_or("(no id)"));
        let role = match m["sender"].as_str() {
            Some("human") | Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some(_) => {
                left_out += 1;
                continue;
            }
            None => {
                entries.push(skipped(at(), "has no `sender`"));
                continue;
            }
        };
        // The text blocks of `content` (not thinking, tool use or tool results), else `text`.
        let mut text: Vec<String> = match m["content"].as_array() {
            Some(blocks) if !blocks.is_empty() => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned)
                .collect(),
            _ => m["text"].as_str().filter(|t| !t.trim().is_empty()).map(str::to_owned).into_iter().collect(),
        };
        let files = m["attachments"].as_array().into_iter().chain(m["files"].as_array()).flatten();
        let mut named = HashSet::new();
        for f in files {
            if let Some(file) = f["file_name"].as_str().filter(|f| named.insert(*f)) {
                text.push(format!("[attached: {file}]"));
            }
        }
        if text.is_empty() {
            left_out += 1;
            continue;
        }
        let before = said.last().map(|s: &Said| s.ts.as_str()).or(conversation_ts);
        match checked_ts(m["created_at"].as_str().map(str::to_owned), before) {
            Ok(ts) => said.push(Said { role, text: text.join("\n\n"), ts, id: message_id }),
            Err(reason) => entries.push(skipped(at(), reason)),
        }
    }
    if let Some(c) = conversation(format!("claude:{id}"), title.map(str::to_owned), said) {
        entries.insert(0, Entry::Conversation(c));
    }
    (entries, left_out)
}

/// mnemon's JSONL: consecutive messages of one session form a conversation; an unreadable line
/// is skipped, named by its number.
fn read_jsonl<R: Read>(
    input: R,
    tally: &mut Tally,
    hand: &mut dyn FnMut(Entry, &mut Tally) -> Result<()>,
) -> Result<()> {
    use std::io::BufRead;
    let mut current: Option<Conversation> = None;
    for (i, line) in std::io::BufReader::new(input).lines().enumerate() {
        let line = line.map_err(|e| Error::input("file", format!("line {}: {e}", i + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        let message = serde_json::from_str::<Value>(&line)
            .map_err(|e| e.to_string())
            .and_then(|v| Message::from_json(&v, &at).map_err(|e| e.to_string()))
            .and_then(|m| crate::model::time::Timestamp::parse(&m.ts).map(|_| m).map_err(|e| e.to_string()));
        let message = match message {
            Ok(m) => m,
            Err(reason) => {
                hand(skipped(at, reason), tally)?;
                continue;
            }
        };
        let session = message.session.clone().unwrap_or_else(|| message.ts.clone());
        match &mut current {
            Some(c) if c.session == session => c.messages.push(message),
            _ => {
                if let Some(done) =
                    current.replace(Conversation { session, title: None, messages: vec![message] })
                {
                    hand(Entry::Conversation(done), tally)?;
                }
            }
        }
    }
    if let Some(done) = current {
        hand(Entry::Conversation(done), tally)?;
    }
    Ok(())
}

/// What [`import`] did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Imported {
    /// What the file held.
    pub tally: Tally,
    /// Rounds stored now.
    pub rounds_stored: usize,
    /// Rounds that were stored already (by an earlier import of the same file, or as a
    /// duplicate within their conversation).
    pub rounds_duplicate: usize,
    /// Every entry skipped, in the file's order: those [`read`] could not read, and
    /// conversations the store refused (a time outside the configured years, say).
    pub skipped: Vec<Skipped>,
}

/// Reads `input` in `format` and stores each conversation in `scope`, one transaction per
/// conversation, calling `progress` after each with what it stored. A conversation the store
/// refuses as invalid is skipped and named; any other failure (the disk, the store's size
/// limit) stops the import, every conversation before it stored. Run again, the import stores
/// only what it had not.
pub fn import<'s, R: Read>(
    memory: &crate::Memory,
    format: ChatFormat,
    input: R,
    scope: impl Into<crate::Scope<'s>>,
    mut progress: impl FnMut(&Conversation, &crate::rounds::AddReport),
) -> Result<Imported> {
    let scope = scope.into();
    let mut done = Imported::default();
    let mut refused = 0;
    let tally = read(format, input, |entry| {
        match entry {
            Entry::Skipped(s) => done.skipped.push(s),
            Entry::Conversation(c) => match memory.add(&c.messages, scope) {
                Ok(report) => {
                    done.rounds_stored += report.stored.len();
                    done.rounds_duplicate += report.duplicates.len();
                    progress(&c, &report);
                }
                Err(Error::InvalidInput { field, reason })
                    if !matches!(field.as_str(), "user_id" | "agent_id") =>
                {
                    refused += 1;
                    let title = c.title.as_deref().map(|t| format!(" {t:?}")).unwrap_or_default();
                    done.skipped.push(Skipped {
                        entry: format!("conversation{title} ({})", c.session),
                        reason: format!("{field}: {reason}"),
                    });
                }
                Err(e) => return Err(e),
            },
        }
        Ok(())
    })?;
    done.tally =
        Tally { conversations: tally.conversations - refused, skipped: tally.skipped + refused, ..tally };
    Ok(done)
}
