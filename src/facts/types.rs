//! The facts path's public value types: what consolidation and re-extraction did, and the
//! extractors a store knows.

use serde::Serialize;

/// What [`Memory::consolidate`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ConsolidateReport {
    /// Facts superseded by the conflict pass.
    pub superseded: usize,
    /// Superseded facts the conflict pass made active again (after a change of the lexicons or
    /// the conflict rules, or a re-extraction).
    pub restored: usize,
    /// Facts whose `subject|predicate` key changed under the current lexicons.
    pub rekeyed: usize,
    /// Facts whose salience decay lowered.
    pub decayed: usize,
    /// Episodic notes condensed (hidden behind a semantic note).
    pub condensed: usize,
}

/// Which rounds [`Memory::reextract`](crate::Memory::reextract) sends through the extractor again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reextract<'a> {
    /// Rounds whose latest extraction another extractor made (another model, prompt, decoding,
    /// pre-filter, verification, lexicons or conflict rules).
    Stale,
    /// Every round that is not queued.
    All,
    /// These rounds, by key.
    Rounds(&'a [&'a str]),
}

/// What [`Memory::reextract`](crate::Memory::reextract) did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReextractReport {
    /// Users with a round sent again.
    pub users: usize,
    /// Rounds sent through the extractor again.
    pub rounds: usize,
    /// Facts of those rounds removed (each logged as `fact.replaced`).
    pub replaced: usize,
    /// Facts those had superseded, active again until the new facts settle.
    pub restored: usize,
    /// The current extractor's pins hash.
    pub extractor: String,
}

/// An extractor a store knows, with what it produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractorInfo {
    /// blake3 of its pins' canonical JSON: what exports name it by.
    pub hash: String,
    /// Its pins.
    pub pins: std::collections::BTreeMap<String, String>,
    /// Rounds of the scope whose latest extraction it made.
    pub rounds: usize,
    /// Facts of the scope it produced (active or superseded).
    pub facts: usize,
    /// Whether it is this handle's extractor.
    pub current: bool,
}
