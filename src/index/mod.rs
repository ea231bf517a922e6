//! The in-memory index every read ranks with: per scope (a user, or one agent of the user), a
//! view of every record it sees, as vectors (exact quantized scan, rescored in full precision)
//! and words (BM25 per kind), and the one ranking function over them (dense scores, the time
//! bonus, fusion by reciprocal rank).
//!
//! Owns the cache of views: loaded from the store once per user at a time, grown by writes in
//! commit order, used by a read only at its snapshot's version, dropped least recently used past
//! its budget. Owns the ledgers too: the active facts that new facts are settled against, kept the
//! same way (`ledger`). Must not write the store, embed or render; it never decides what to store.

pub(crate) mod bm25;
pub(crate) mod fuse;
pub(crate) mod ledger;
pub(crate) mod rank;
pub(crate) mod view;
pub(crate) mod views;
