//! The kinds of decision the engine logs: one name per kind, written to the store as its text.

use serde::{Deserialize, Serialize};

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $text:literal,)*) => {
        /// What was decided about a record, as the decision log names it (`round.stored`,
        /// `fact.superseded`, …). Serialized as that text, and ordered by it.
        ///
        /// ```
        /// use mnemon::decisions::DecisionKind;
        /// assert_eq!(DecisionKind::FactSuperseded.as_str(), "fact.superseded");
        /// assert_eq!(DecisionKind::parse("round.stored"), Some(DecisionKind::RoundStored));
        /// assert_eq!(DecisionKind::parse("round.eaten"), None);
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum DecisionKind {
            $($(#[$doc])* #[serde(rename = $text)] $variant,)*
        }

        impl DecisionKind {
            /// Every kind, in the order of their names.
            pub const ALL: &[DecisionKind] = &[$(DecisionKind::$variant,)*];

            /// The kind's name in the log.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(DecisionKind::$variant => $text,)*
                }
            }

            /// The kind named `name`, if it is one.
            pub fn parse(name: &str) -> Option<DecisionKind> {
                match name {
                    $($text => Some(DecisionKind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

kinds! {
    /// A fact's salience decayed.
    FactDecayed = "fact.decayed",
    /// A fact was deleted by its key.
    FactDeleted = "fact.deleted",
    /// A fact repeated one of its round's, and was not stored.
    FactDuplicate = "fact.duplicate",
    /// A fact and an older one disagree, and neither supersedes the other: both stay.
    FactKeptApart = "fact.kept-apart",
    /// A fact said the same as an older one (cosine or text), which holds it.
    FactMerged = "fact.merged",
    /// A fact's key was computed again under the current lexicons.
    FactRekeyed = "fact.rekeyed",
    /// A fact was removed because its round was extracted again.
    FactReplaced = "fact.replaced",
    /// A superseded fact became active again.
    FactRestored = "fact.restored",
    /// A fact was stored.
    FactStored = "fact.stored",
    /// A newer fact replaced an older one (the rule and both values in the detail).
    FactSuperseded = "fact.superseded",
    /// Episodic notes were folded into one semantic note.
    NoteCondensed = "note.condensed",
    /// A note was copied in from another store.
    NoteCopied = "note.copied",
    /// A note was deleted.
    NoteDeleted = "note.deleted",
    /// A note repeated one the scope sees, and was not stored.
    NoteDuplicate = "note.duplicate",
    /// A note was moved to another store.
    NoteMoved = "note.moved",
    /// A condensed note's originals came back (their summary was deleted).
    NoteRestored = "note.restored",
    /// A note was stored.
    NoteStored = "note.stored",
    /// A note was changed.
    NoteUpdated = "note.updated",
    /// A round was deleted, with its facts.
    RoundDeleted = "round.deleted",
    /// A round repeated one of its session, and was not stored.
    RoundDuplicate = "round.duplicate",
    /// A round went through the extractor.
    RoundExtracted = "round.extracted",
    /// The pre-filter found nothing to extract in a round, which skipped the model.
    RoundPrefiltered = "round.prefiltered",
    /// A round was queued for extraction again.
    RoundRequeued = "round.requeued",
    /// A round was stored.
    RoundStored = "round.stored",
    /// A user was forgotten (written by builds before forgetting removed the log too).
    UserForgotten = "user.forgotten",
}

impl PartialOrd for DecisionKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// By name, so that a map keyed by kind lists them as the text does.
impl Ord for DecisionKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::DecisionKind;

    #[test]
    fn every_kind_reads_back_from_its_name_and_serializes_as_it() {
        for &k in DecisionKind::ALL {
            assert_eq!(DecisionKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{}\"", k.as_str()));
        }
        let mut names: Vec<&str> = DecisionKind::ALL.iter().map(|k| k.as_str()).collect();
        let listed = names.clone();
        names.sort_unstable();
        assert_eq!(names, listed, "ALL is in the order of the names");
    }
}
