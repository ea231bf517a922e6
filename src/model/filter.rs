//! Filters over notes, and the relevance labels of their scores.

use serde::Serialize;

use super::metadata::MetadataFilter;
use super::note::{MAX_TAGS, NoteKind, check_tag, rename};
use super::time::Timestamp;
use crate::error::{Error, Result};

/// Which notes a list or search keeps. Every condition must hold; empty lists and `None` hold
/// for every note.
///
/// ```
/// let f = mnemon::notes::Filter { tags_any: vec!["work".into()], min_tokens: Some(3), ..Default::default() };
/// assert!(f.kinds.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    /// At least one of these tags (case-insensitive).
    pub tags_any: Vec<String>,
    /// Every one of these tags (case-insensitive).
    pub tags_all: Vec<String>,
    /// One of these kinds.
    pub kinds: Vec<NoteKind>,
    /// Stated strictly after this timestamp.
    pub after: Option<String>,
    /// Stated strictly before this timestamp.
    pub before: Option<String>,
    /// At least this many content tokens.
    pub min_tokens: Option<usize>,
    /// At most this many content tokens.
    pub max_tokens: Option<usize>,
    /// Also keep notes hidden by condensing.
    pub include_condensed: bool,
    /// A condition on the note's metadata object.
    pub metadata: Option<MetadataFilter>,
}

/// A [`Filter`] checked and in the form the store and the index compare against.
#[derive(Debug, Clone, Default)]
pub(crate) struct NoteFilter {
    pub tags_any: Vec<String>,
    pub tags_all: Vec<String>,
    pub kinds: Vec<NoteKind>,
    pub after: Option<i64>,
    pub before: Option<i64>,
    pub min_tokens: Option<i64>,
    pub max_tokens: Option<i64>,
    pub include_condensed: bool,
    pub metadata: Option<MetadataFilter>,
    /// The ids of the notes whose metadata passes (read from the store before ranking, as the
    /// index holds no metadata); `None`: every note.
    pub passing: Option<std::collections::HashSet<i64>>,
}

impl NoteFilter {
    /// Whether a note of this metadata (canonical JSON text) passes the metadata condition.
    pub fn metadata_holds(&self, metadata: &str) -> bool {
        self.metadata.as_ref().is_none_or(|m| m.holds_text(metadata))
    }
}

impl Filter {
    /// Checks the filter (timestamps parse, token bounds are ordered, tags are valid).
    pub(crate) fn resolve(&self, at: &str) -> Result<NoteFilter> {
        let tags = |list: &[String], name: &str| -> Result<Vec<String>> {
            if list.len() > MAX_TAGS {
                return Err(Error::input(
                    format!("{at}.{name}"),
                    format!("has {} tags; at most {MAX_TAGS}", list.len()),
                ));
            }
            let mut out = Vec::with_capacity(list.len());
            let mut seen = std::collections::HashSet::with_capacity(list.len());
            for (i, t) in list.iter().enumerate() {
                let t = check_tag(t, &format!("{at}.{name}[{i}]"))?;
                let folded = t.to_lowercase();
                if seen.insert(folded.clone()) {
                    out.push(folded);
                }
            }
            Ok(out)
        };
        let time = |ts: &Option<String>, name: &str| -> Result<Option<i64>> {
            ts.as_deref()
                .map(|t| Timestamp::parse(t).map(|t| t.unix_seconds()))
                .transpose()
                .map_err(|e| rename(e, &format!("{at}.{name}")))
        };
        let tokens = |n: Option<usize>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let filter = NoteFilter {
            tags_any: tags(&self.tags_any, "tags_any")?,
            tags_all: tags(&self.tags_all, "tags_all")?,
            kinds: {
                let mut k = self.kinds.clone();
                k.sort();
                k.dedup();
                k
            },
            after: time(&self.after, "after")?,
            before: time(&self.before, "before")?,
            min_tokens: tokens(self.min_tokens),
            max_tokens: tokens(self.max_tokens),
            include_condensed: self.include_condensed,
            metadata: self.metadata.clone(),
            passing: None,
        };
        if let (Some(lo), Some(hi)) = (filter.min_tokens, filter.max_tokens)
            && lo > hi
        {
            return Err(Error::input(format!("{at}.min_tokens"), "is above max_tokens"));
        }
        Ok(filter)
    }
}

/// How relevant a record is to a question, from its relevance score in `0..=1` (the cosine
/// through the embedder's [`Calibration`](crate::embed::Calibration)): `high` from 0.90, `medium` from
/// 0.75, `low` from 0.50, else `none` (nothing relevant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Relevance {
    /// Score ≥ 0.90.
    High,
    /// Score ≥ 0.75.
    Medium,
    /// Score ≥ 0.50.
    Low,
    /// Below 0.50: unrelated as far as the embedder can tell.
    None,
}

impl Relevance {
    /// The label of a score.
    ///
    /// ```
    /// use mnemon::context::Relevance;
    /// assert_eq!(Relevance::of(0.95), Relevance::High);
    /// assert_eq!(Relevance::of(0.75), Relevance::Medium);
    /// assert_eq!(Relevance::of(0.5), Relevance::Low);
    /// assert_eq!(Relevance::of(0.2), Relevance::None);
    /// ```
    pub fn of(score: f32) -> Relevance {
        if score >= 0.90 {
            Relevance::High
        } else if score >= 0.75 {
            Relevance::Medium
        } else if score >= 0.50 {
            Relevance::Low
        } else {
            Relevance::None
        }
    }

    /// The label's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Relevance::High => "high",
            Relevance::Medium => "medium",
            Relevance::Low => "low",
            Relevance::None => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_resolves_folded_tags_sorted_kinds_and_instants() {
        let f = Filter {
            tags_any: vec!["Work".into(), "work".into(), "Home".into()],
            kinds: vec![NoteKind::Procedural, NoteKind::Episodic, NoteKind::Procedural],
            after: Some("2026-01-01T00:00:00".into()),
            min_tokens: Some(2),
            max_tokens: Some(5),
            ..Filter::default()
        }
        .resolve("filter")
        .unwrap();
        assert_eq!(f.tags_any, ["work", "home"]);
        assert_eq!(f.kinds, [NoteKind::Episodic, NoteKind::Procedural]);
        assert_eq!(f.after, Some(Timestamp::parse("2026-01-01").unwrap().unix_seconds()));
        let bad = Filter { min_tokens: Some(5), max_tokens: Some(1), ..Filter::default() };
        assert!(
            matches!(bad.resolve("filter"), Err(Error::InvalidInput { field, .. }) if field == "filter.min_tokens")
        );
        let bad = Filter { before: Some("soon".into()), ..Filter::default() };
        assert!(
            matches!(bad.resolve("filter"), Err(Error::InvalidInput { field, .. }) if field == "filter.before")
        );
    }
}
