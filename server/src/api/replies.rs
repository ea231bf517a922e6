//! What the operations answer, where it is not the library's own type: the framed context, what
//! a write did, an export, the stores, what forgetting did, and the liveness answer.

use serde::Serialize;
use utoipa::ToSchema;

/// The stores the server may open, by the names requests give them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoreList {
    /// The store a request without `store` reaches.
    pub default: String,
    /// Every store the server knows, in name order: its default and global stores, the store
    /// files in its data directory and its `projects/` folder, and every store open now.
    pub stores: Vec<String>,
}

/// What forgetting did: the totals, and each store's outcome.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Forgotten {
    /// Rounds removed, in all.
    pub rounds: usize,
    /// Notes removed, in all.
    pub notes: usize,
    /// Whether every store's and cache's log was emptied (never on PostgreSQL: see README).
    pub scrubbed: bool,
    /// Whether every store answered; when not, calling again completes the forget.
    pub complete: bool,
    /// Each store reached, in name order.
    pub stores: Vec<ForgottenIn>,
}

/// One store's outcome.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ForgottenIn {
    /// The store: a path inside the data directory, else as the server names it.
    pub store: String,
    /// Rounds removed.
    pub rounds: usize,
    /// Notes removed.
    pub notes: usize,
    /// Whether its logs were emptied.
    pub scrubbed: bool,
    /// Why this store could not forget (nothing of it changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::error::ApiError>,
}

/// The framed, prompt-ready context and what is in it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Recalled {
    /// The block to put in the prompt: memories with relevance labels, then conversation rounds,
    /// between `<memory-ID>` and `</memory-ID>` (ID: a hash of the block's body, which stored
    /// text cannot forge), marked as background, not instructions.
    pub context: String,
    /// Keys of the memories in it.
    pub memories: Vec<String>,
    /// Keys of the rounds in it.
    pub rounds: Vec<String>,
    /// Its size in tokens (`o200k_base`).
    pub tokens: usize,
    /// Whether records were left out, or the top one cut, to fit the budget.
    pub truncated: bool,
    /// Whether the top record's text was cut to fit the budget (it is then the only record, and
    /// the block ends with a line saying so).
    pub cut: bool,
    /// With `explain`: every record ranked, best first, with its score, relevance, why it ranked
    /// there (its places in the dense, word and time-window rankings, and the phrasing) and
    /// whether it is in the block or was cut.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<mnemon::context::ContextRecord>,
    /// With `explain`: the token budget the block was fitted to (none: no budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
}

/// What saving did with each memory, in input order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Saved {
    /// One entry per memory given.
    pub memories: Vec<mnemon::notes::Remembered>,
}

/// What adding messages did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Added {
    /// Keys of the rounds stored.
    pub stored: Vec<String>,
    /// Rounds skipped as duplicates.
    pub duplicates: Vec<mnemon::rounds::Duplicate>,
    /// Rounds of this user waiting for fact extraction.
    pub pending_extraction: usize,
}

/// An export.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Exported {
    /// The rendered text.
    pub text: String,
}

/// The liveness answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// The server's store answered a read (with the token, or when the server has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The server's version (with the token, or when the server has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
