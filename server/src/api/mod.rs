//! The requests of every operation, shared by the MCP tools and the HTTP API: one type per
//! operation, its JSON Schema (MCP) and OpenAPI schema (HTTP) generated from it, unknown fields
//! refused. Results are the library's own types.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

mod replies;

pub use replies::*;

/// Declares a request type with the three fields every operation takes: whose memory
/// (`user_id`, `agent_id`) and which store (`store`).
macro_rules! request {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
            /// Whose memory: a user name (1 to 256 bytes). Default `default`.
            #[serde(default)]
            pub user_id: Option<String>,
            /// One of the user's agents: its records are private to it, and it sees the user's
            /// shared records too. Omit for the user's shared memory (which sees everything).
            #[serde(default)]
            pub agent_id: Option<String>,
            /// Which store: `global`, a `.db` file or a project directory inside the server's
            /// data directory or roots. Default: the server's store.
            #[serde(default)]
            pub store: Option<String>,
        }

        impl $name {
            /// Whose memory and which store.
            pub fn target(&self) -> Target<'_> {
                Target { user: self.user_id.as_deref(), agent: self.agent_id.as_deref(), store: self.store.as_deref() }
            }
        }
    };
}

/// Whose memory a request reaches, and in which store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Target<'a> {
    /// The user (`None`: `default`).
    pub user: Option<&'a str>,
    /// The agent.
    pub agent: Option<&'a str>,
    /// The store reference (`None`: the server's store).
    pub store: Option<&'a str>,
}

/// A memory's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Something that happened at one time.
    Episodic,
    /// A standing fact or preference (the default).
    Semantic,
    /// How to do something.
    Procedural,
}

impl From<Kind> for mnemon::notes::NoteKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Episodic => mnemon::notes::NoteKind::Episodic,
            Kind::Semantic => mnemon::notes::NoteKind::Semantic,
            Kind::Procedural => mnemon::notes::NoteKind::Procedural,
        }
    }
}

/// One memory to save: a string (its content), or an object with its fields.
#[derive(Debug, Clone, JsonSchema, ToSchema)]
#[serde(untagged)]
pub enum MemoryIn {
    /// Just the content.
    Text(String),
    /// Content with its optional fields.
    Full(NewMemory),
}

// By hand rather than untagged: an error inside an object names its field.
impl<'de> Deserialize<'de> for MemoryIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MemoryIn, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = MemoryIn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an object with `content`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MemoryIn, E> {
                Ok(MemoryIn::Text(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<MemoryIn, A::Error> {
                NewMemory::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MemoryIn::Full)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A memory with its optional fields.
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemory {
    /// What to remember: one concise, self-contained statement ("The user is vegetarian").
    pub content: String,
    /// A short title.
    #[serde(default)]
    pub title: Option<String>,
    /// Tags for filtering (case-insensitive).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Any JSON object, kept verbatim.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// `semantic` (default), `episodic` or `procedural`.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// 0 to 1 (default 0.5).
    #[serde(default)]
    pub importance: Option<f32>,
    /// When it was stated (ISO 8601). Default: the server's current UTC time.
    #[serde(default)]
    pub ts: Option<String>,
}

request! {
    /// Save memories: concise statements worth keeping across conversations.
    SaveMemories {
        /// The memories, 1 to 1000: strings, or objects with `content` and optional fields.
        memories: Vec<MemoryIn>,
        /// A key of the caller's choosing (1 to 256 bytes; over HTTP also the `Idempotency-Key`
        /// header) that makes a retry safe: the same key with the same request reuses the first
        /// attempt's default timestamps, so nothing is stored twice; with a different request it
        /// is refused. The server remembers a key for 24 hours.
        #[serde(default)]
        idempotency_key: Option<String>,
    }
}

request! {
    /// Build the prompt-ready context for a question: memories and conversation rounds, ranked,
    /// framed, within a token budget.
    RecallMemories {
        /// The question or topic.
        query: String,
        /// More phrasings or sub-questions; each is ranked and the results merged (at most 16).
        #[serde(default)]
        angles: Vec<String>,
        /// Token budget of the rendered block (default: the server's, 4000).
        #[serde(default)]
        budget: Option<usize>,
        /// Records considered per angle (1 to 1000, default 10).
        #[serde(default)]
        top_k: Option<usize>,
        /// The question's date (anchors "last week"); default: the user's latest timestamp
        /// (with `as_of`, that time).
        #[serde(default)]
        date: Option<String>,
        /// Read the memory as it stood at this time: rounds and memories dated at or before it,
        /// facts as they stood then (a fact superseded later still current).
        #[serde(default)]
        as_of: Option<String>,
        /// Also say why each ranked record is in the block or was cut (`records`).
        #[serde(default)]
        explain: bool,
        /// Open the block with the user's profile (their current facts by relation, as of
        /// `as_of`) in at most this many tokens of the budget (at most half of it).
        #[serde(default)]
        profile: Option<usize>,
        /// Show every round whole. By default a long assistant reply shows only the sentences
        /// that bear on the question, each run of left-out sentences marked `[…]` (the round is
        /// unchanged, and named in `rounds`).
        #[serde(default)]
        whole_rounds: bool,
    }
}

request! {
    /// The rounds that best answer a question, ranked (not rendered), each with its facts: what
    /// a program (the Python package's `recall`) reads when it ranks for itself.
    RecallRounds {
        /// The question.
        query: String,
        /// Rounds to return (1 to 1000, default 10).
        #[serde(default)]
        top_k: Option<usize>,
        /// The question's date (anchors "last week").
        #[serde(default)]
        date: Option<String>,
        /// Read the memory as it stood at this time.
        #[serde(default)]
        as_of: Option<String>,
    }
}

/// A request's question date and as-of time, read as timestamps (an error names the field).
pub fn times(
    date: Option<&str>,
    as_of: Option<&str>,
) -> Result<(Option<mnemon::Timestamp>, Option<mnemon::Timestamp>), mnemon::Error> {
    Ok((
        date.map(|d| mnemon::Timestamp::parse_field(d, "date")).transpose()?,
        as_of.map(|t| mnemon::Timestamp::parse_field(t, "as_of")).transpose()?,
    ))
}

/// One message of a conversation.
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageIn {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// When (ISO 8601). Default: the server's current UTC time.
    #[serde(default)]
    pub ts: Option<String>,
    /// The conversation it belongs to.
    #[serde(default)]
    pub session: Option<String>,
    /// The caller's id for it.
    #[serde(default)]
    pub id: Option<String>,
    /// The speaker's name.
    #[serde(default)]
    pub speaker: Option<String>,
    /// Metadata kept with the message's turn (a JSON object), matched by metadata filters.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

request! {
    /// Store conversation messages verbatim (a user turn and the reply form a round); facts are
    /// extracted in the background when the server has an extractor.
    AddMessages {
        /// The messages, in order.
        messages: Vec<MessageIn>,
        /// A key of the caller's choosing (1 to 256 bytes; over HTTP also the `Idempotency-Key`
        /// header) that makes a retry safe: the same key with the same request reuses the first
        /// attempt's default timestamps, so nothing is stored twice; with a different request it
        /// is refused. The server remembers a key for 24 hours.
        #[serde(default)]
        idempotency_key: Option<String>,
    }
}

/// The format of a chat history to import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatFormatIn {
    /// ChatGPT's `conversations.json` (its data export): the branch each conversation shows.
    Chatgpt,
    /// Claude's `conversations.json` (its data export).
    Claude,
    /// mnemon's JSONL, one message per line.
    Jsonl,
}

impl From<ChatFormatIn> for mnemon::chats::ChatFormat {
    fn from(f: ChatFormatIn) -> Self {
        match f {
            ChatFormatIn::Chatgpt => mnemon::chats::ChatFormat::ChatGpt,
            ChatFormatIn::Claude => mnemon::chats::ChatFormat::Claude,
            ChatFormatIn::Jsonl => mnemon::chats::ChatFormat::Jsonl,
        }
    }
}

request! {
    /// Import a user's chat history (the file is the request's body): each conversation stored
    /// as a session with its real times, only what the user saw in the app; unreadable entries
    /// skipped and named. Conversation by conversation, not one transaction: run again, it
    /// stores only what it had not.
    ImportChats {
        /// The file's format.
        format: ChatFormatIn,
    }
}

/// Which memories a search or listing keeps; every condition must hold.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterIn {
    /// At least one of these tags.
    #[serde(default)]
    pub tags_any: Vec<String>,
    /// All of these tags.
    #[serde(default)]
    pub tags_all: Vec<String>,
    /// One of these kinds.
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// Stated after this time (ISO 8601).
    #[serde(default)]
    pub after: Option<String>,
    /// Stated before this time.
    #[serde(default)]
    pub before: Option<String>,
    /// At least this many content tokens.
    #[serde(default)]
    pub min_tokens: Option<usize>,
    /// At most this many content tokens.
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// A condition on the metadata object (mem0's filter language): `{"key": value}`,
    /// `{"key": {"op": operand}}` with `eq ne in nin gt gte lt lte contains icontains`, `"*"` for
    /// a present key, and `AND` / `OR` / `NOT` over lists of conditions (`NOT`: none holds). A
    /// missing key fails every test but `ne` and `nin`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

impl FilterIn {
    /// The library's filter; a metadata condition that cannot be read is an error naming its
    /// place (`filter.metadata.year.near`).
    pub fn filter(&self, include_condensed: bool) -> Result<mnemon::notes::Filter, mnemon::Error> {
        let metadata = self
            .metadata
            .as_ref()
            .map(|m| mnemon::notes::MetadataFilter::parse(m, "filter.metadata"))
            .transpose()?;
        Ok(mnemon::notes::Filter {
            tags_any: self.tags_any.clone(),
            tags_all: self.tags_all.clone(),
            kinds: self.kinds.iter().map(|k| (*k).into()).collect(),
            after: self.after.clone(),
            before: self.before.clone(),
            min_tokens: self.min_tokens,
            max_tokens: self.max_tokens,
            include_condensed,
            metadata,
        })
    }
}

/// Which stores a search or listing covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReachIn {
    /// The named store only (default).
    #[default]
    Local,
    /// The global store only.
    Global,
    /// Both, merged, each memory once.
    All,
}

/// memex's recency blend: score = alpha·similarity + (1 − alpha)·exp(−ln 2 · age / half-life).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecencyIn {
    /// Weight of similarity, 0 to 1.
    pub alpha: f32,
    /// Age at which recency counts half, in days.
    pub half_life_days: f32,
}

request! {
    /// Search memories by meaning and words, with filters; scored 0..1 with relevance labels.
    SearchMemories {
        /// What to look for.
        query: String,
        /// Which memories to consider.
        #[serde(default)]
        filter: FilterIn,
        /// At most this many hits (1 to 1000, default 10).
        #[serde(default)]
        limit: Option<usize>,
        /// Drop hits scoring below this (0 to 1).
        #[serde(default)]
        min_score: Option<f32>,
        /// The query's date (anchors "last week").
        #[serde(default)]
        date: Option<String>,
        /// Blend in recency (off by default).
        #[serde(default)]
        recency: Option<RecencyIn>,
        /// Weight importance into the score, 0 to 1 (off by default).
        #[serde(default)]
        importance_weight: Option<f32>,
        /// `local` (default), `global` or `all`.
        #[serde(default)]
        reach: ReachIn,
        /// Also rank the facts extracted from conversations (by cosine), returned under `facts`;
        /// with any filter condition no fact passes (facts carry no tags or metadata).
        #[serde(default)]
        facts: bool,
    }
}

request! {
    /// List memories newest first, with filters, a page at a time.
    ListMemories {
        /// Which memories to list.
        #[serde(default)]
        filter: FilterIn,
        /// Memories per page (1 to 1000, default 50).
        #[serde(default)]
        limit: Option<usize>,
        /// The `next` cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
        /// Also list memories folded into a condensed summary.
        #[serde(default)]
        include_condensed: bool,
        /// `local` (default), `global` or `all`.
        #[serde(default)]
        reach: ReachIn,
    }
}

request! {
    /// One record by its key.
    GetMemory {
        /// A memory key (`n-…`), a round key or a fact key.
        key: String,
    }
}

/// `Some(None)` for an explicit `null`, `None` when the field is absent.
fn double_option<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

request! {
    /// Change the given fields of a memory; the rest stay. New content is embedded again.
    UpdateMemory {
        /// The memory's key.
        key: String,
        /// A key of the caller's choosing (1 to 256 bytes; over HTTP also the `Idempotency-Key`
        /// header) that makes a retry safe: the same key with the same request reuses the first
        /// attempt's default timestamps, so nothing is stored twice; with a different request it
        /// is refused. The server remembers a key for 24 hours.
        #[serde(default)]
        idempotency_key: Option<String>,

        /// New content.
        #[serde(default)]
        content: Option<String>,
        /// New title; `null` removes it.
        #[serde(default, deserialize_with = "double_option")]
        #[schemars(with = "Option<String>")]
        #[schema(value_type = Option<String>)]
        title: Option<Option<String>>,
        /// New tags (replace all).
        #[serde(default)]
        tags: Option<Vec<String>>,
        /// New metadata object (replaces it).
        #[serde(default)]
        #[schema(value_type = Option<Object>)]
        metadata: Option<Value>,
        /// New kind.
        #[serde(default)]
        kind: Option<Kind>,
        /// New importance, 0 to 1.
        #[serde(default)]
        importance: Option<f32>,
        /// When the change was made (ISO 8601). Default: the server's current UTC time.
        #[serde(default)]
        ts: Option<String>,
    }
}

request! {
    /// Delete one record by key: a memory, a round (with its facts) or a fact. Nothing of it is
    /// left in the store.
    DeleteMemory {
        /// The record's key.
        key: String,
    }
}

request! {
    /// How many memories, rounds and facts the scope sees.
    CountMemories {}
}

request! {
    /// Copy or move memories into another store, with their stored vectors.
    TransferMemories {
        /// The memories' keys (1 to 1000).
        keys: Vec<String>,
        /// The target store (as `store`).
        to: String,
    }
}

/// An export's format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FormatIn {
    /// Readable Markdown (default).
    #[default]
    Markdown,
    /// Plain text with every field and the decision log.
    Text,
    /// A JSONL dump (vectors included) that an import loads back losslessly.
    Jsonl,
}

request! {
    /// Everything the scope holds, rendered for reading.
    ExportMemories {
        /// `markdown` (default), `text` or `jsonl` (a dump an import loads back).
        #[serde(default)]
        format: FormatIn,
        /// What the scope held at this time: rounds and memories dated at or before it, facts as
        /// they stood then, the decisions logged by then.
        #[serde(default)]
        as_of: Option<String>,
    }
}

request! {
    /// A page of the scope's rounds, oldest first, each with every fact extracted from it.
    ReadTimeline {
        /// Rounds per page (1 to 500, default 50).
        #[serde(default)]
        limit: Option<usize>,
        /// The `next` cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
    }
}

request! {
    /// A page of the scope's decision log, in logical order.
    ReadDecisions {
        /// Only decisions of these kinds (`fact.superseded`, `round.stored`, …); default every kind.
        #[serde(default)]
        kinds: Vec<String>,
        /// Decisions per page (1 to 500, default 50).
        #[serde(default)]
        limit: Option<usize>,
        /// The `next` cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
    }
}

request! {
    /// What the scope stored per month.
    ReadActivity {}
}

request! {
    /// What the user holds true now: the current facts by relation.
    ReadProfile {}
}

/// Which store's users to list.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListUsers {
    /// Which store (as in every request).
    #[serde(default)]
    pub store: Option<String>,
}

/// Forget a user: every record, vector and word of theirs is removed from the store.
#[derive(Debug, Clone, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetUser {
    /// The user to forget (required: no default here).
    pub user_id: String,
    /// Which store (as in every request).
    #[serde(default)]
    pub store: Option<String>,
    /// Forget the user in every store the server knows instead: its default and global stores,
    /// every store file in its data directory (project stores included), and every store open
    /// now. Not with `store`.
    #[serde(default)]
    pub everywhere: bool,
}
