//! Notes: direct memories, stated outright by the caller (`remember("The user prefers tea")`).
//!
//! A note has content, an optional title, tags, a JSON-object metadata, a [`NoteKind`], an
//! importance in `0..=1`, the caller's timestamp and the timestamp of its last update. Its key is
//! derived from its scope, timestamp and content at creation (`n-` + 16 hex digits of blake3), so
//! the same call on two fresh stores gives the same key, and it stays the note's key across
//! updates. This module holds the value types and their validation; filters are in `filter`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json::{self, json_kind};
use super::time::Timestamp;
use crate::error::{Error, Result};

/// The largest note content, in bytes (64 KiB): a note is a memory, not a document store; the
/// embedder reads its first 256 word pieces in any case.
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// The largest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 1024;
/// At most this many tags per note, each at most [`MAX_TAG_BYTES`].
pub const MAX_TAGS: usize = 64;
/// The longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 128;
/// The largest metadata object, serialized, in bytes.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// An importance no weighting changes (the default, and what rounds and facts count as).
pub const NEUTRAL_IMPORTANCE: f32 = 0.5;

/// What kind of memory a note is (after memex and the cognitive-science split it borrows).
///
/// The default is [`Semantic`](NoteKind::Semantic): what an agent saves outright is most often a
/// standing statement ("The user prefers tea"), and condensing ([`Memory::condense`](crate::Memory::condense))
/// only ever touches episodic notes, so a note saved without a kind is never summarized away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum NoteKind {
    /// Something that happened, at a time ("Went hiking in Sintra with Ana").
    Episodic,
    /// A standing fact or preference ("The user is vegetarian").
    #[default]
    Semantic,
    /// How to do something ("Deploy with `make release`, then tag").
    Procedural,
}

impl NoteKind {
    /// Every kind, in order.
    pub const ALL: [NoteKind; 3] = [NoteKind::Episodic, NoteKind::Semantic, NoteKind::Procedural];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Episodic => "episodic",
            NoteKind::Semantic => "semantic",
            NoteKind::Procedural => "procedural",
        }
    }

    /// Parses a kind's name; the error names `field`.
    ///
    /// ```
    /// use mnemon::notes::NoteKind;
    /// assert_eq!(NoteKind::parse("episodic", "kind")?, NoteKind::Episodic);
    /// assert!(NoteKind::parse("dream", "kind").is_err());
    /// # Ok::<(), mnemon::Error>(())
    /// ```
    pub fn parse(name: &str, field: &str) -> Result<NoteKind> {
        NoteKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
            Error::input(field, format!("{name:?} is not one of episodic, semantic, procedural"))
        })
    }
}

impl<'de> Deserialize<'de> for NoteKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<NoteKind, D::Error> {
        let name = String::deserialize(d)?;
        NoteKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
            serde::de::Error::custom(format!("{name:?} is not one of episodic, semantic, procedural"))
        })
    }
}

/// A note to store, as given to [`Memory::remember`](crate::Memory::remember).
///
/// ```
/// use mnemon::notes::{NewNote, NoteKind};
/// let note = NewNote::new("The user is vegetarian.", "2026-03-01T10:00:00")
///     .title("Diet")
///     .tags(["food", "health"])
///     .kind(NoteKind::Semantic)
///     .importance(0.9);
/// assert_eq!(note.tags, ["food", "health"]);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewNote {
    /// What to remember; not empty, at most [`MAX_NOTE_BYTES`].
    pub content: String,
    /// The caller's timestamp (the library has no clock; see [`Timestamp`]).
    pub ts: String,
    /// An optional title, embedded and word-indexed with the content.
    #[serde(default)]
    pub title: Option<String>,
    /// Tags, matched case-insensitively by filters; kept as given (trimmed, first of repeats).
    #[serde(default, deserialize_with = "json::tags::list")]
    pub tags: Vec<String>,
    /// A JSON object kept verbatim (canonical key order); `None` is `{}`.
    #[serde(default, deserialize_with = "json::metadata")]
    pub metadata: Option<Value>,
    /// `None`: [`NoteKind::Semantic`].
    #[serde(default)]
    pub kind: Option<NoteKind>,
    /// In `0..=1`; `None`: [`NEUTRAL_IMPORTANCE`].
    #[serde(default)]
    pub importance: Option<f32>,
}

impl NewNote {
    /// A note with content and timestamp and nothing else.
    pub fn new(content: impl Into<String>, ts: impl Into<String>) -> NewNote {
        NewNote { content: content.into(), ts: ts.into(), ..NewNote::default() }
    }
    /// Sets the title.
    pub fn title(self, title: impl Into<String>) -> NewNote {
        NewNote { title: Some(title.into()), ..self }
    }
    /// Sets the tags.
    pub fn tags<S: Into<String>>(self, tags: impl IntoIterator<Item = S>) -> NewNote {
        NewNote { tags: tags.into_iter().map(Into::into).collect(), ..self }
    }
    /// Sets the metadata (must be a JSON object).
    pub fn metadata(self, metadata: Value) -> NewNote {
        NewNote { metadata: Some(metadata), ..self }
    }
    /// Sets the kind.
    pub fn kind(self, kind: NoteKind) -> NewNote {
        NewNote { kind: Some(kind), ..self }
    }
    /// Sets the importance.
    pub fn importance(self, importance: f32) -> NewNote {
        NewNote { importance: Some(importance), ..self }
    }

    /// Reads one JSON object (`content`, `ts`, and optional `title`, `tags`, `metadata`, `kind`,
    /// `importance`; unknown fields refused), naming the offending field under `at` (e.g.
    /// `memories[2].tags[1]`).
    ///
    /// ```
    /// let v = serde_json::json!({"content": "Likes jazz", "ts": "2026-01-01", "tags": ["music", 7]});
    /// let err = mnemon::notes::NewNote::from_json(&v, "memories[0]").unwrap_err();
    /// assert!(err.to_string().contains("memories[0].tags[1]"));
    /// ```
    pub fn from_json(value: &Value, at: &str) -> Result<NewNote> {
        json::read(value, at)
    }
}

/// The fields of a note to change, as given to [`Memory::update`](crate::Memory::update); `None`
/// leaves a field as it is. New content is re-embedded and its tokens re-counted.
///
/// ```
/// let u = mnemon::notes::NoteUpdate { importance: Some(1.0), ..Default::default() };
/// assert!(u.content.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteUpdate {
    /// New content.
    #[serde(default)]
    pub content: Option<String>,
    /// `Some(None)` removes the title.
    #[serde(default, deserialize_with = "json::null_or")]
    pub title: Option<Option<String>>,
    /// Replaces every tag.
    #[serde(default, deserialize_with = "json::tags::option")]
    pub tags: Option<Vec<String>>,
    /// Replaces the metadata object.
    #[serde(default, deserialize_with = "json::metadata")]
    pub metadata: Option<Value>,
    /// New kind.
    #[serde(default)]
    pub kind: Option<NoteKind>,
    /// New importance.
    #[serde(default)]
    pub importance: Option<f32>,
}

impl NoteUpdate {
    /// Reads one JSON object of the fields to change (a `null` title removes it; unknown fields
    /// refused), naming the offending field under `at`.
    pub fn from_json(value: &Value, at: &str) -> Result<NoteUpdate> {
        json::read(value, at)
    }

    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self == &NoteUpdate::default()
    }

    /// The names of the fields this update sets, in a fixed order (for the decision log).
    pub(crate) fn fields(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |set: bool, name| {
            if set {
                out.push(name);
            }
        };
        add(self.content.is_some(), "content");
        add(self.title.is_some(), "title");
        add(self.tags.is_some(), "tags");
        add(self.metadata.is_some(), "metadata");
        add(self.kind.is_some(), "kind");
        add(self.importance.is_some(), "importance");
        out
    }
}

/// A stored note.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Note {
    /// `n-` + 16 hex digits, derived at creation from scope, timestamp and content.
    pub key: String,
    /// The agent it is private to; `None`: shared by every agent of the user.
    pub agent: Option<String>,
    /// Its kind.
    pub kind: NoteKind,
    /// Its title.
    pub title: Option<String>,
    /// Its content.
    pub content: String,
    /// Its tags, as given.
    pub tags: Vec<String>,
    /// Its metadata object.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metadata: Value,
    /// In `0..=1`.
    pub importance: f32,
    /// When it was stated, as the caller gave it.
    pub ts: String,
    /// When it last changed (its `ts` until the first update).
    pub updated: String,
    /// `o200k_base` tokens in its content.
    pub tokens: usize,
    /// The semantic note that condenses it, if it was condensed (then it is on no read path).
    pub condensed_into: Option<String>,
    /// The episodic notes it condenses, oldest first (empty unless made by condensing).
    pub condenses: Vec<String>,
}

/// A note's fields after validation, ready to store.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub content: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    /// Canonical JSON text of an object.
    pub metadata: String,
    pub kind: NoteKind,
    pub importance: f32,
}

pub(crate) fn check_content(content: &str, field: &str) -> Result<()> {
    if content.trim().is_empty() {
        return Err(Error::EmptyMemory { field: field.to_owned() });
    }
    if content.len() > MAX_NOTE_BYTES {
        return Err(Error::input(
            field,
            format!("{} bytes is over the {MAX_NOTE_BYTES} byte limit", content.len()),
        ));
    }
    if content.contains('\0') {
        return Err(Error::input(field, "contains a NUL character"));
    }
    Ok(())
}

pub(crate) fn check_title(title: &str, field: &str) -> Result<()> {
    if title.len() > MAX_TITLE_BYTES {
        return Err(Error::input(field, format!("is over the {MAX_TITLE_BYTES} byte limit")));
    }
    if title.chars().any(char::is_control) {
        return Err(Error::input(field, "contains a control character"));
    }
    Ok(())
}

pub(crate) fn check_tag<'t>(tag: &'t str, field: &str) -> Result<&'t str> {
    let t = tag.trim();
    if t.is_empty() {
        return Err(Error::input(field, "is empty"));
    }
    if t.len() > MAX_TAG_BYTES {
        return Err(Error::input(field, format!("is over the {MAX_TAG_BYTES} byte limit")));
    }
    if t.chars().any(char::is_control) {
        return Err(Error::input(field, "contains a control character"));
    }
    Ok(t)
}

/// Trims tags and drops repeats (case-insensitively; the first spelling stays).
pub(crate) fn check_tags(tags: &[String], field: &str) -> Result<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(Error::input(field, format!("has {} tags; at most {MAX_TAGS}", tags.len())));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    let mut seen = std::collections::HashSet::with_capacity(tags.len());
    for (i, t) in tags.iter().enumerate() {
        let t = check_tag(t, &format!("{field}[{i}]"))?;
        if seen.insert(t.to_lowercase()) {
            out.push(t.to_owned());
        }
    }
    Ok(out)
}

/// The canonical text of a metadata object (`None`: `{}`).
pub(crate) fn check_metadata(metadata: Option<&Value>, field: &str) -> Result<String> {
    let text = match metadata {
        None => "{}".to_owned(),
        Some(v @ Value::Object(_)) => canonical(v),
        Some(other) => {
            return Err(Error::input(field, format!("expected a JSON object, found {}", json_kind(other))));
        }
    };
    if text.len() > MAX_METADATA_BYTES {
        return Err(Error::input(field, format!("is over the {MAX_METADATA_BYTES} byte limit")));
    }
    Ok(text)
}

pub(crate) fn check_importance(importance: Option<f32>, field: &str) -> Result<f32> {
    match importance {
        None => Ok(NEUTRAL_IMPORTANCE),
        Some(i) if i.is_finite() && (0.0..=1.0).contains(&i) => Ok(i),
        Some(i) => Err(Error::input(field, format!("{i} is not in 0..=1"))),
    }
}

/// JSON with object keys sorted at every level, no whitespace.
pub(crate) fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let sorted: std::collections::BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, sort(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sort(v)).unwrap_or_default()
}

impl NewNote {
    /// Every field checked; errors name `at.field`.
    pub(crate) fn check(
        &self,
        at: &str,
        years: &std::ops::RangeInclusive<i32>,
    ) -> Result<(Checked, Timestamp)> {
        let f = |name: &str| format!("{at}.{name}");
        check_content(&self.content, &f("content"))?;
        let ts = Timestamp::parse(&self.ts).map_err(|e| rename(e, &f("ts")))?;
        ts.check_years(years, &f("ts"))?;
        if let Some(t) = &self.title {
            check_title(t, &f("title"))?;
        }
        Ok((
            Checked {
                content: self.content.clone(),
                title: self.title.clone().filter(|t| !t.trim().is_empty()),
                tags: check_tags(&self.tags, &f("tags"))?,
                metadata: check_metadata(self.metadata.as_ref(), &f("metadata"))?,
                kind: self.kind.unwrap_or_default(),
                importance: check_importance(self.importance, &f("importance"))?,
            },
            ts,
        ))
    }
}

/// Checks notes as [`Memory::remember`](crate::Memory::remember) would, without storing anything;
/// the error names the first bad field (`memories[i].field`, counting from `first`).
///
/// ```
/// use mnemon::notes::{validate_notes, NewNote};
/// assert!(validate_notes(&[NewNote::new("ok", "2026-01-01")], 0).is_ok());
/// let err = validate_notes(&[NewNote::new("", "2026-01-01")], 1000).unwrap_err();
/// assert!(err.to_string().contains("memories[1000].content"));
/// ```
pub fn validate_notes(notes: &[NewNote], first: usize) -> Result<()> {
    for (i, n) in notes.iter().enumerate() {
        n.check(&format!("memories[{}]", first + i), &super::time::YEARS)?;
    }
    Ok(())
}

/// The same error, naming `field`.
pub(crate) fn rename(e: Error, field: &str) -> Error {
    match e {
        Error::InvalidInput { reason, .. } => Error::input(field, reason),
        other => other,
    }
}

/// A note's key: `n-` + 16 hex digits of blake3 over the scope, the timestamp's sortable form and
/// the content. `attempt` > 0 disambiguates a key already taken by a note whose content changed
/// since (`-2`, `-3`, …).
pub(crate) fn note_key(
    user: &str,
    agent: Option<&str>,
    ts: &Timestamp,
    content: &str,
    attempt: u32,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mnemon note v1\0");
    h.update(user.as_bytes());
    h.update(&[0]);
    match agent {
        // 0xff never occurs in UTF-8: "no agent" cannot collide with any agent's name.
        None => h.update(&[0xff]),
        Some(a) => h.update(a.as_bytes()),
    };
    h.update(&[0]);
    h.update(ts.sortable().as_bytes());
    h.update(&[0]);
    h.update(content.as_bytes());
    let hex = h.finalize().to_hex();
    match attempt {
        0 => format!("n-{}", &hex[..16]),
        n => format!("n-{}-{}", &hex[..16], n + 1),
    }
}

/// The text a note is embedded as: its title (if any) on the first line, then its content.
pub(crate) fn embed_text(title: Option<&str>, content: &str) -> String {
    match title {
        Some(t) => format!("{t}\n{content}"),
        None => content.to_owned(),
    }
}

/// The text a note is word-indexed as: title, content and tags.
pub(crate) fn word_text(title: Option<&str>, content: &str, tags: &[String]) -> String {
    let mut text = embed_text(title, content);
    for t in tags {
        text.push('\n');
        text.push_str(t);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_scope_time_and_content_only() {
        let ts = Timestamp::parse("2026-03-01T10:00:00").unwrap();
        let k = note_key("alice", None, &ts, "Likes tea", 0);
        assert!(k.starts_with("n-") && k.len() == 18, "{k}");
        assert_eq!(k, note_key("alice", None, &ts, "Likes tea", 0));
        assert_ne!(k, note_key("alice", Some("coder"), &ts, "Likes tea", 0));
        assert_ne!(k, note_key("bob", None, &ts, "Likes tea", 0));
        assert_ne!(k, note_key("alice", None, &ts, "Likes coffee", 0));
        let later = Timestamp::parse("2026-03-02T10:00:00").unwrap();
        assert_ne!(k, note_key("alice", None, &later, "Likes tea", 0));
        assert_eq!(note_key("alice", None, &ts, "Likes tea", 1), format!("{k}-2"));
    }

    #[test]
    fn metadata_is_canonical_and_must_be_an_object() {
        let v = serde_json::json!({"b": 1, "a": {"d": [2, {"z": 1, "y": 0}], "c": null}});
        assert_eq!(check_metadata(Some(&v), "m").unwrap(), r#"{"a":{"c":null,"d":[2,{"y":0,"z":1}]},"b":1}"#);
        assert_eq!(check_metadata(None, "m").unwrap(), "{}");
        let err = check_metadata(Some(&serde_json::json!([1])), "memories[0].metadata").unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput { ref field, .. } if field == "memories[0].metadata"),
            "{err}"
        );
    }

    #[test]
    fn tags_are_trimmed_and_repeats_dropped_case_insensitively() {
        let tags: Vec<String> = [" Work ", "work", "home"].map(String::from).to_vec();
        assert_eq!(check_tags(&tags, "tags").unwrap(), ["Work", "home"]);
        assert!(check_tags(&["  ".to_owned()], "tags").is_err());
    }
}
