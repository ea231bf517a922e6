//! The values every path shares: messages and the rounds they form, notes and their filters,
//! timestamps and the date windows questions name, part records, scopes, and the word tokenizer.
//!
//! Owns validation (each error names its field), keys (rounds' and notes', derived from their
//! content, never from a counter or a clock) and the texts records are embedded and indexed as.
//! Must not touch the store, embed, rank or render: everything here is a pure function of its
//! input.

pub(crate) mod decision;
pub(crate) mod fact;
pub(crate) mod filter;
pub(crate) mod json;
pub(crate) mod metadata;
pub(crate) mod note;
pub(crate) mod parts;
pub(crate) mod round;
pub(crate) mod scope;
pub mod time;
pub(crate) mod words;
