//! The write path: `add` (conversation rounds), `remember` (notes, with group commit), `update`,
//! `delete`, `condense`, copying and moving notes between stores, and forgetting a user.
//!
//! Owns validation before anything is written, deduplication within a session, keys, one
//! transaction per call (a failed call leaves the store as it was), the decision logged for each
//! record, and growing the views in memory before the write connection is let go. Must not call
//! the extractor: rounds a store extracts are queued in the same transaction, and `facts` drains
//! the queue.

mod add;
mod condense;
mod edit;
mod forget;
mod note;
mod remember;
mod transfer;
mod types;

pub(crate) use add::{add, fill_derived};
pub(crate) use condense::condense;
pub(crate) use edit::{delete, update};
pub(crate) use forget::forget_user;
pub(crate) use remember::Commits;
pub use transfer::MAX_TRANSFER_KEYS;
pub(crate) use transfer::transfer;
pub use types::*;
