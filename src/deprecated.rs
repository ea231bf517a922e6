//! The names of the last release, kept for one release so that code written against them still
//! builds, with a warning that names the new path. Hidden from the documentation.
#![allow(missing_docs)]

use crate::{Memory, Result, Scope};

macro_rules! moved {
    ($($old:ident $(<$l:lifetime>)? => $($path:ident)::+;)*) => {
        $(
            #[doc(hidden)]
            #[deprecated(note = "moved from the crate's root into the module named for what it holds")]
            pub type $old $(<$l>)? = crate::$($path)::+ $(<$l>)?;
        )*
    };
}

moved! {
    Condense => config::Condense;
    Config => config::Config;
    Decay => config::Decay;
    MemoryBudget => config::MemoryBudget;
    CachedEmbedder => embed::CachedEmbedder;
    Calibration => embed::Calibration;
    EmbedderPins => embed::EmbedderPins;
    HashingEmbedder => embed::HashingEmbedder;
    PinDifference => error::PinDifference;
    SqliteError => error::SqliteError;
    ExportFormat => export::ExportFormat;
    ImportReport => export::ImportReport;
    ConsolidateReport => facts::ConsolidateReport;
    ExtractorInfo => facts::ExtractorInfo;
    ReextractReport => facts::ReextractReport;
    Fact => facts::Fact;
    FactHit => facts::FactHit;
    Location => stores::Location;
    Filter => notes::Filter;
    MetadataFilter => notes::MetadataFilter;
    MetadataTest => notes::MetadataTest;
    NewNote => notes::NewNote;
    Note => notes::Note;
    NoteKind => notes::NoteKind;
    NoteUpdate => notes::NoteUpdate;
    Search<'a> => notes::Search;
    Reextract<'a> => facts::Reextract;
    Cancel<'a> => context::Cancel;
    Found => notes::SearchResults;
    Hit => notes::NoteHit;
    List => notes::ListNotes;
    Page => notes::NotePage;
    RememberReport => notes::RememberReport;
    Remembered => notes::Remembered;
    CondenseReport => notes::CondenseReport;
    TransferReport => notes::TransferReport;
    Role => rounds::Role;
    Turn => rounds::Turn;
    StoredRound => rounds::StoredRound;
    RecalledRound => rounds::RecalledRound;
    Recall => rounds::Recall;
    AddReport => rounds::AddReport;
    Duplicate => rounds::Duplicate;
    Relevance => context::Relevance;
    ContextRecord => context::ContextRecord;
    Ranking => context::Ranking;
    Recency => context::Recency;
    Decision => decisions::Decision;
    DecisionPage => decisions::DecisionPage;
    Record => records::Record;
    Counts => records::Counts;
    Deleted => records::Deleted;
    ForgetReport => records::ForgetReport;
    Activity => browse::Activity;
    AgentSummary => browse::AgentSummary;
    Holdings => browse::RecordCounts;
    MonthActivity => browse::MonthActivity;
    Paging => browse::Paging;
    Supersession => browse::Supersession;
    TimelineFact => browse::TimelineFact;
    TimelinePage => browse::TimelinePage;
    TimelineRound => browse::TimelineRound;
    UserSummary => browse::UserSummary;
}

#[cfg(feature = "onnx")]
moved! {
    OnnxConfig => embed::OnnxConfig;
    OnnxEmbedder => embed::OnnxEmbedder;
}

macro_rules! moved_const {
    ($($old:ident: $ty:ty => $($path:ident)::+;)*) => {
        $(
            #[doc(hidden)]
            #[deprecated(note = "moved from the crate's root into the module named for what it holds")]
            pub const $old: $ty = crate::$($path)::+;
        )*
    };
}

moved_const! {
    MIN_BUDGET: usize => config::MIN_BUDGET;
    MAX_METADATA_BYTES: usize => notes::MAX_METADATA_BYTES;
    MAX_NOTE_BYTES: usize => notes::MAX_NOTE_BYTES;
    MAX_TAGS: usize => notes::MAX_TAGS;
    MAX_TAG_BYTES: usize => notes::MAX_TAG_BYTES;
    MAX_TITLE_BYTES: usize => notes::MAX_TITLE_BYTES;
    NEUTRAL_IMPORTANCE: f32 => notes::NEUTRAL_IMPORTANCE;
    MAX_NOTES_PER_CALL: usize => notes::MAX_NOTES_PER_CALL;
    MAX_TRANSFER_KEYS: usize => notes::MAX_TRANSFER_KEYS;
    MAX_CONTENT_BYTES: usize => rounds::MAX_CONTENT_BYTES;
    MAX_PAGE: usize => browse::MAX_PAGE;
    CONTEXT_INTRO: &str => context::CONTEXT_INTRO;
}

// Traits cannot be aliased, nor re-exports deprecated: these two stay reachable at the root for
// one release, hidden.
#[doc(hidden)]
pub use crate::embed::Embedder;
#[doc(hidden)]
pub use mnemon_backend::Backend;

#[doc(hidden)]
#[deprecated(note = "moved to mnemon::notes::validate_notes")]
pub fn validate_notes(notes: &[crate::notes::NewNote], first: usize) -> Result<()> {
    crate::notes::validate_notes(notes, first)
}

#[doc(hidden)]
#[deprecated(note = "moved to mnemon::rounds::validate_messages")]
pub fn validate_messages(messages: &[crate::Message]) -> Result<()> {
    crate::rounds::validate_messages(messages)
}

#[doc(hidden)]
#[deprecated(note = "moved to mnemon::context::count_tokens")]
pub fn count_tokens(text: &str) -> usize {
    crate::context::count_tokens(text)
}

impl Memory {
    #[doc(hidden)]
    #[deprecated(note = "renamed Memory::active_facts")]
    pub fn facts<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<crate::facts::Fact>> {
        self.active_facts(scope)
    }

    #[doc(hidden)]
    #[deprecated(note = "renamed Memory::all_facts")]
    pub fn every_fact<'s>(&self, scope: impl Into<Scope<'s>>) -> Result<Vec<crate::facts::Fact>> {
        self.all_facts(scope)
    }

    #[doc(hidden)]
    #[deprecated(note = "renamed Memory::users")]
    pub fn user_summaries(&self) -> Result<Vec<crate::browse::UserSummary>> {
        self.users()
    }
}
