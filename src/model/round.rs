//! Messages in, rounds out: validation and round formation.

use serde::{Deserialize, Serialize};

use super::time::Timestamp;
use crate::error::{Error, Result};

/// Largest accepted turn, in bytes. Larger turns are refused rather than silently cut.
pub const MAX_CONTENT_BYTES: usize = 4 * 1024 * 1024;

/// Who spoke a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Role {
    /// The person the memory is about.
    User,
    /// The agent answering them.
    Assistant,
}

impl Role {
    /// `user` or `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    /// Parses `user` or `assistant` (exactly, lowercase).
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Role, D::Error> {
        let text = String::deserialize(d)?;
        Role::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not `user` or `assistant`")))
    }
}

/// One chat message as the caller gives it.
///
/// `ts` is required (the library has no clock). `session` groups messages of one conversation;
/// without it, a round's session is its first turn's `ts`. A user turn and the assistant turn
/// right after it form one round unless both name different sessions. `id` and `speaker` are kept verbatim
/// for the caller's bookkeeping (e.g. a benchmark's turn id, a speaker's name).
///
/// ```
/// let m = mnemon::Message::user("I moved to Lisbon.", "2026-10-08T09:00:00");
/// assert_eq!(m.role, mnemon::rounds::Role::User);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// When, in one of the forms [`Timestamp::parse`] accepts.
    pub ts: String,
    /// The conversation this message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The caller's id for this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The speaker's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    /// The caller's metadata: a JSON object, kept verbatim with the turn (and so with its round)
    /// and matched by metadata filters; it is not part of the round's text or key.
    #[serde(default, deserialize_with = "super::json::metadata", skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>, ts: impl Into<String>) -> Message {
        Message::new(Role::User, content, ts)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>, ts: impl Into<String>) -> Message {
        Message::new(Role::Assistant, content, ts)
    }

    /// A message with the given role.
    pub fn new(role: Role, content: impl Into<String>, ts: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            ts: ts.into(),
            session: None,
            id: None,
            speaker: None,
            metadata: None,
        }
    }

    /// The same message with this metadata (a JSON object).
    pub fn with_metadata(mut self, metadata: serde_json::Value) -> Message {
        self.metadata = Some(metadata);
        self
    }

    /// The same message in the given session.
    pub fn in_session(mut self, session: impl Into<String>) -> Message {
        self.session = Some(session.into());
        self
    }

    /// Reads one JSON object with `role`, `content`, `ts` (and optional `session`, `id`,
    /// `speaker`, `metadata`; unknown fields refused), naming the offending field on error. `at` prefixes
    /// field names (e.g. `line 3`).
    ///
    /// ```
    /// let v = serde_json::json!({"role": "user", "content": 7, "ts": "2026-01-01"});
    /// let err = mnemon::Message::from_json(&v, "line 3").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid input: line 3.content: expected a string, found a number");
    /// ```
    pub fn from_json(value: &serde_json::Value, at: &str) -> Result<Message> {
        super::json::read(value, at)
    }
}

/// A stored turn: the message after validation, as kept in the round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Turn {
    /// Who spoke.
    pub role: Role,
    /// What was said, verbatim.
    pub content: String,
    /// The caller's timestamp, verbatim.
    pub ts: String,
    /// The caller's message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The speaker's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    /// The caller's metadata (a JSON object), as given with the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

impl Turn {
    /// A turn with no id, speaker or metadata.
    ///
    /// ```
    /// let t = mnemon::rounds::Turn::new(mnemon::rounds::Role::User, "I live in Porto.", "2026-01-01");
    /// assert!(t.id.is_none() && t.metadata.is_none());
    /// ```
    pub fn new(role: Role, content: impl Into<String>, ts: impl Into<String>) -> Turn {
        Turn { role, content: content.into(), ts: ts.into(), id: None, speaker: None, metadata: None }
    }
}

/// A round before storage: one user turn and the assistant turn right after it, or a lone turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewRound {
    pub session: String,
    pub ts: Timestamp,
    pub turns: Vec<Turn>,
}

impl NewRound {
    /// The text that is hashed into the round's key and its exact-dedup key: `role: content` lines.
    pub fn text(&self) -> String {
        round_text(&self.turns)
    }

    /// The text that is embedded and indexed for words ([`index_text`]).
    pub fn index_text(&self) -> String {
        index_text(&self.turns)
    }
}

/// `role: content` lines of a round's turns: what its key and exact-dedup key are taken over.
pub(crate) fn round_text(turns: &[Turn]) -> String {
    lines(turns, |t| t.role.as_str())
}

/// `speaker: content` lines of a round's turns, the role standing in for a turn without a
/// speaker: what a round is embedded and indexed for words as (stored as `rounds.text`). A
/// question that names a speaker ("what did Caroline paint?") then meets the name in the round.
/// Without speakers it equals [`round_text`].
pub(crate) fn index_text(turns: &[Turn]) -> String {
    lines(turns, |t| t.speaker.as_deref().unwrap_or(t.role.as_str()))
}

fn lines<'t>(turns: &'t [Turn], who: impl Fn(&'t Turn) -> &'t str) -> String {
    let mut out = String::new();
    for (i, t) in turns.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(who(t));
        out.push_str(": ");
        out.push_str(&t.content);
    }
    out
}

/// Checks messages as [`Memory::add`](crate::Memory::add) would, without storing anything; the
/// error names the first bad field (`messages[i].ts`).
pub fn validate_messages(messages: &[Message]) -> Result<()> {
    form_rounds(messages, &super::time::YEARS).map(|_| ())
}

/// Validates every message, drops empty turns and pairs the rest into rounds.
///
/// Fails on the first invalid message, naming it (`messages[i].ts`); nothing is partially
/// accepted. Returns the rounds and the number of empty turns dropped.
pub(crate) fn form_rounds(
    messages: &[Message],
    years: &std::ops::RangeInclusive<i32>,
) -> Result<(Vec<NewRound>, usize)> {
    let mut parsed = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let at = |f: &str| format!("messages[{i}].{f}");
        let ts = Timestamp::parse(&m.ts).map_err(|e| match e {
            Error::InvalidInput { reason, .. } => Error::input(at("ts"), reason),
            other => other,
        })?;
        ts.check_years(years, &at("ts"))?;
        if m.content.len() > MAX_CONTENT_BYTES {
            return Err(Error::input(
                at("content"),
                format!("{} bytes is over the {} byte limit", m.content.len(), MAX_CONTENT_BYTES),
            ));
        }
        if m.content.contains('\0') {
            return Err(Error::input(at("content"), "contains a NUL character"));
        }
        if let Some(s) = &m.session
            && s.trim().is_empty()
        {
            return Err(Error::input(at("session"), "is empty; omit it instead"));
        }
        if let Some(meta) = &m.metadata {
            super::note::check_metadata(Some(meta), &at("metadata"))?;
        }
        parsed.push((m, ts));
    }
    let mut dropped = 0;
    let kept: Vec<_> = parsed
        .into_iter()
        .filter(|(m, _)| {
            let empty = m.content.trim().is_empty();
            dropped += usize::from(empty);
            !empty
        })
        .collect();

    let session_of = |m: &Message, ts: &Timestamp| m.session.clone().unwrap_or_else(|| ts.sortable());
    let turn = |m: &Message| Turn {
        role: m.role,
        content: m.content.clone(),
        ts: m.ts.clone(),
        id: m.id.clone(),
        speaker: m.speaker.clone(),
        metadata: m.metadata.clone(),
    };
    let mut rounds = Vec::new();
    let mut i = 0;
    while i < kept.len() {
        let (m, ts) = &kept[i];
        let session = session_of(m, ts);
        let mut turns = vec![turn(m)];
        if m.role == Role::User
            && let Some((next, _)) = kept.get(i + 1)
        {
            // A reply pairs with the turn before it unless both name different sessions.
            let same_session = match (&m.session, &next.session) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            if next.role == Role::Assistant && same_session {
                turns.push(turn(next));
                i += 1;
            }
        }
        rounds.push(NewRound { session, ts: ts.clone(), turns });
        i += 1;
    }
    Ok((rounds, dropped))
}

/// Key of a round: sortable ts, then 12 hex digits of blake3 over session and text (and the
/// agent, for an agent's round; shared rounds keep the keys they always had).
pub(crate) fn round_key(ts: &Timestamp, session: &str, text: &str, agent: Option<&str>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(session.as_bytes());
    h.update(&[0]);
    h.update(text.as_bytes());
    if let Some(a) = agent {
        // 0xff never occurs in UTF-8: no text can end the way an agent's suffix begins.
        h.update(&[0xff]);
        h.update(a.as_bytes());
    }
    format!("{}#{}", ts.sortable(), &h.finalize().to_hex()[..12])
}

/// The exact-dedup key: blake3 of the text lowercased, apostrophes dropped, other punctuation
/// and whitespace collapsed to single spaces.
pub(crate) fn normalized_key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        } else if c != '\'' && c != '\u{2019}' {
            // Apostrophes join ("don't" → "dont"); any other mark separates ("6-7" → "6 7").
            pending_space = true;
        }
    }
    blake3::hash(out.as_bytes()).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "2026-01-01T10:00:00";

    fn shape(rounds: &[NewRound]) -> Vec<Vec<&'static str>> {
        rounds.iter().map(|r| r.turns.iter().map(|t| t.role.as_str()).collect()).collect()
    }

    #[test]
    fn user_then_assistant_pair_and_everything_else_stands_alone() {
        let msgs = vec![
            Message::assistant("hello", T),
            Message::user("a", T),
            Message::user("b", T),
            Message::assistant("c", T),
            Message::assistant("d", T),
            Message::user("e", T),
        ];
        let (rounds, dropped) = form_rounds(&msgs, &super::super::time::YEARS).unwrap();
        assert_eq!(dropped, 0);
        assert_eq!(
            shape(&rounds),
            vec![vec!["assistant"], vec!["user"], vec!["user", "assistant"], vec!["assistant"], vec!["user"]]
        );
    }

    #[test]
    fn empty_turns_are_dropped_before_pairing() {
        let msgs = vec![Message::user("q", T), Message::assistant("  \n", T), Message::assistant("a", T)];
        let (rounds, dropped) = form_rounds(&msgs, &super::super::time::YEARS).unwrap();
        assert_eq!(dropped, 1);
        assert_eq!(shape(&rounds), vec![vec!["user", "assistant"]]);
        assert_eq!(rounds[0].text(), "user: q\nassistant: a");
    }

    #[test]
    fn a_reply_with_its_own_timestamp_still_pairs() {
        let msgs = vec![Message::user("q", T), Message::assistant("a", "2026-01-01T10:00:07")];
        let (rounds, _) = form_rounds(&msgs, &super::super::time::YEARS).unwrap();
        assert_eq!(rounds.len(), 1);
        assert_eq!(rounds[0].session, "2026-01-01T10:00:00");
    }

    #[test]
    fn turns_of_different_sessions_do_not_pair() {
        let msgs = vec![Message::user("q", T).in_session("s1"), Message::assistant("a", T).in_session("s2")];
        let (rounds, _) = form_rounds(&msgs, &super::super::time::YEARS).unwrap();
        assert_eq!(rounds.len(), 2);
    }

    #[test]
    fn a_bad_timestamp_names_its_message() {
        let msgs = vec![Message::user("q", T), Message::assistant("a", "tomorrow")];
        match form_rounds(&msgs, &super::super::time::YEARS) {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "messages[1].ts"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_messages_name_the_bad_field() {
        let cases = [
            (r#"{"role":"user","content":5,"ts":"2026-01-01"}"#, "line 1.content"),
            (r#"{"role":"system","content":"x","ts":"2026-01-01"}"#, "line 1.role"),
            (r#"{"role":"user","content":"x"}"#, "line 1.ts"),
            (r#"{"role":"user","content":"x","ts":"2026-01-01","extra":1}"#, "line 1.extra"),
            (r#"[1]"#, "line 1"),
        ];
        for (json, want) in cases {
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            match Message::from_json(&v, "line 1") {
                Err(Error::InvalidInput { field, .. }) => assert_eq!(field, want, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
    }

    #[test]
    fn normalized_key_ignores_case_punctuation_and_spacing() {
        assert_eq!(normalized_key("Hello,   World!"), normalized_key("hello world"));
        assert_ne!(normalized_key("hello world"), normalized_key("hello, word"));
        assert_ne!(normalized_key("6-7 hours"), normalized_key("67 hours"));
        assert_eq!(normalized_key("I don't know"), normalized_key("i dont know"));
    }
}
