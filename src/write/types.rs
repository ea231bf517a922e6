//! The write path's public value types: what each write did.

use serde::Serialize;

/// Most notes one [`Memory::remember`] call takes.
pub const MAX_NOTES_PER_CALL: usize = 1000;

/// What an [`Memory::add`] call did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddReport {
    /// Keys of the rounds stored, in input order.
    pub stored: Vec<String>,
    /// Rounds not stored because the same session already holds them.
    pub duplicates: Vec<Duplicate>,
    /// Turns dropped because their content was empty or whitespace.
    pub empty_turns_dropped: usize,
}

/// A round skipped as a duplicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Duplicate {
    /// The key the round would have had.
    pub key: String,
    /// The stored round it duplicates.
    pub of: String,
    /// `None` for an exact (normalized-text) duplicate, else the cosine that matched.
    pub cosine: Option<f32>,
}

/// What [`Memory::forget_user`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ForgetReport {
    /// Rounds removed, with their vectors and word-index rows.
    pub rounds: usize,
    /// Notes removed, with their vectors and word-index rows.
    pub notes: usize,
    /// Whether the store's and the caches' write-ahead logs were emptied (a reader in another
    /// connection can keep one from it; see [`Memory::forget_user`]).
    pub scrubbed: bool,
}

/// What [`Memory::remember`] did with each note, in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RememberReport {
    /// One entry per note given.
    pub notes: Vec<Remembered>,
}

/// What happened to one note given to [`Memory::remember`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Remembered {
    /// The key of the note that holds it: the new note, or the one it duplicates.
    pub key: String,
    /// `false` when a note with the same normalized content was already there (in the scope,
    /// or shared), or earlier in the same call.
    pub stored: bool,
}

/// A record removed by [`Memory::delete`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Deleted {
    /// Its key.
    pub key: String,
    /// `note`, `round` or `fact`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub record: &'static str,
    /// Facts removed with a round.
    pub facts: Vec<String>,
}

/// What [`Memory::condense`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CondenseReport {
    /// Episodic notes hidden behind a condensed note.
    pub condensed: usize,
    /// The semantic notes made, in the order they were made.
    pub notes: Vec<String>,
}

/// What [`Memory::copy_to`] and [`Memory::move_to`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransferReport {
    /// Notes written into the target store, in the order given.
    pub copied: Vec<String>,
    /// Notes the target store already held, the same (same key, content and fields), left as
    /// they were there. A target holding another version of a note refuses the whole call.
    pub present: Vec<String>,
    /// Notes removed from this store (a move): each one the target holds the same.
    pub removed: Vec<String>,
    /// Notes a move left in this store because they changed while it ran: the target holds the
    /// version read before the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}
