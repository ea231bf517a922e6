//! What becomes of an extracted fact before it is stored: the excerpt must come from
//! the round, the time mention must occur in it, and the mention resolves to a `valid_time`.
//!
//! A small model copies worked examples into real answers (Qwen2.5-Coder-0.5B wrote the prompt's
//! rain-jacket recommendation into a round about postcards, with an excerpt that was from the
//! round). So [`verify`] checks both the excerpt and the sentence: most of the excerpt's words, and
//! most of the sentence's content words, must occur in the round (words compared as stems, so
//! "collecting" matches "collection" only through the stemmer, never by guess). A fact whose `when` does not occur in the round keeps
//! its content and loses the mention. All of it is a pure function of the fact and the round.

use std::collections::HashSet;

use chrono::NaiveDate;
use serde::Serialize;

use super::extract::ExtractedFact;
use super::resolve::resolve;
use crate::model::fact::fact_text;
use crate::model::round::Turn;
use crate::model::words::terms;

/// Share of the excerpt's words that must occur in the round for the fact to be kept.
pub const GROUNDING: f32 = 0.6;
/// Share of the sentence's content words that must occur in the round.
pub const CONTENT_GROUNDING: f32 = 0.5;
/// Words a sentence may add to what the round says: the contract's own framing.
const FRAMING: &[&str] = &[
    "user",
    "assistant",
    "recommend",
    "suggest",
    "advis",
    "decid",
    "the",
    "and",
    "for",
    "with",
    "that",
    "this",
];
/// Version of the verification rules, pinned in stores built with an extractor.
pub const VERIFY_VERSION: &str =
    "excerpt 0.6 + content 0.5 of stems, mention in round, predicate other is none, v2";

/// A fact that passed verification, ready to store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifiedFact {
    /// The fact as extracted, with `when` cleared when the round does not hold it.
    pub fact: ExtractedFact,
    /// The mention resolved against the round's date (`YYYY-MM-DD`, `YYYY-MM` or `YYYY`).
    pub valid_time: Option<String>,
}

/// Why a fact was changed or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Note {
    /// Dropped: too little of its excerpt occurs in the round.
    Ungrounded,
    /// Kept without its time mention, which the round does not contain.
    MentionNotInRound,
}

/// Lowercase with every run of whitespace collapsed to one space.
fn squash(text: &str) -> String {
    text.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

/// Whether at least `share` of `words` are in `round`; an empty list is not grounded.
fn enough(words: &[String], round: &HashSet<String>, share: f32) -> bool {
    let found = words.iter().filter(|w| round.contains(*w)).count();
    !words.is_empty() && found as f32 >= share * words.len() as f32
}

/// Whether enough of `raw`'s words (its role prefix set aside) occur among the round's stems.
pub fn grounded(raw: &str, round: &HashSet<String>) -> bool {
    let body = raw.strip_prefix("user:").or_else(|| raw.strip_prefix("assistant:")).unwrap_or(raw);
    enough(&terms(body), round, GROUNDING)
}

/// Whether enough of the sentence's content words (3+ letters, the framing set aside) occur
/// among the round's stems. A sentence with no content word passes on its excerpt alone.
pub fn content_grounded(content: &str, round: &HashSet<String>) -> bool {
    let words: Vec<String> = terms(content)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !FRAMING.contains(&w.as_str()))
        .collect();
    words.is_empty() || enough(&words, round, CONTENT_GROUNDING)
}

/// Verifies `facts` against the round they came from, dated `anchor`; returns the kept facts and,
/// for each fact in input order, what was done to it. A kept fact's predicate `other` becomes
/// none.
pub fn verify(
    facts: &[ExtractedFact],
    turns: &[Turn],
    anchor: NaiveDate,
) -> (Vec<VerifiedFact>, Vec<Option<Note>>) {
    let text: String = turns.iter().map(|t| t.content.as_str()).collect::<Vec<_>>().join("\n");
    let round: HashSet<String> = terms(&text).into_iter().collect();
    let squashed = squash(&text);
    let mut kept = Vec::with_capacity(facts.len());
    let mut notes = Vec::with_capacity(facts.len());
    for fact in facts {
        if !grounded(&fact.raw, &round) || !content_grounded(&fact.content, &round) {
            notes.push(Some(Note::Ungrounded));
            continue;
        }
        let mut fact = fact.clone();
        // The closed contract's "none of the relations": no predicate, so no `subject|predicate`
        // key that every such fact would share (and conflict under).
        if fact.predicate.as_deref() == Some("other") {
            fact.predicate = None;
        }
        let mut note = None;
        if let Some(when) = &fact.when {
            let w = squash(when);
            if w.is_empty() || !squashed.contains(&w) {
                fact.when = None;
                note = Some(Note::MentionNotInRound);
            }
        }
        let valid_time = fact.when.as_deref().and_then(|w| resolve(w, anchor, &fact.content));
        notes.push(note);
        kept.push(VerifiedFact { fact, valid_time });
    }
    (kept, notes)
}

/// The text a fact is embedded as: its excerpt, a newline, its sentence (facts are not word-indexed).
pub fn embed_text(fact: &ExtractedFact) -> String {
    fact_text(&fact.raw, &fact.content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::round::Role;

    fn fact(content: &str, raw: &str, when: Option<&str>) -> ExtractedFact {
        ExtractedFact {
            content: content.into(),
            raw: raw.into(),
            when: when.map(Into::into),
            subject: None,
            predicate: None,
            object: None,
            salience: 1.0,
        }
    }

    fn turns() -> Vec<Turn> {
        let t = |role, content: &str| Turn::new(role, content, "2024-03-14");
        vec![
            t(Role::User, "My old sneakers smell.  Last   Tuesday I put them under the bed."),
            t(Role::Assistant, "Try shoe trees and a breathable bag."),
        ]
    }

    fn anchor() -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 3, 14).unwrap()
    }

    #[test]
    fn an_excerpt_from_elsewhere_is_dropped() {
        let facts = [
            fact("The user's sneakers smell.", "user: My old sneakers smell", None),
            fact(
                "The assistant recommended a light waterproof jacket.",
                "assistant: Pack a light waterproof jacket and quick-dry shoes",
                None,
            ),
            fact("The assistant recommended shoe trees.", "assistant: try SHOE trees", None),
            fact("Empty excerpt.", "user: ", None),
            // An excerpt from the round, a sentence from the prompt's example.
            fact(
                "The assistant recommended a light waterproof jacket for a rainy week.",
                "assistant: Try shoe trees and a breathable bag",
                None,
            ),
            fact("The user's old sneakers smelled.", "user: My old sneakers smell", None),
        ];
        let (kept, notes) = verify(&facts, &turns(), anchor());
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[1].fact.content, "The assistant recommended shoe trees.");
        assert_eq!(kept[2].fact.content, "The user's old sneakers smelled.", "stems match across tenses");
        assert_eq!(
            notes,
            vec![None, Some(Note::Ungrounded), None, Some(Note::Ungrounded), Some(Note::Ungrounded), None]
        );
    }

    #[test]
    fn the_predicate_other_is_no_predicate() {
        let with = |p: &str| ExtractedFact {
            subject: Some("user".into()),
            predicate: Some(p.into()),
            object: Some("sneakers".into()),
            ..fact("The user's sneakers smell.", "user: My old sneakers smell", None)
        };
        let (kept, _) = verify(&[with("other"), with("smell")], &turns(), anchor());
        assert_eq!(kept[0].fact.predicate, None);
        assert_eq!(kept[1].fact.predicate.as_deref(), Some("smell"));
    }

    #[test]
    fn a_mention_must_occur_in_the_round_and_resolves_against_its_date() {
        let facts = [
            fact(
                "The user put the sneakers under the bed.",
                "user: I put them under the bed",
                Some("last tuesday"),
            ),
            fact(
                "The user put the sneakers under the bed.",
                "user: I put them under the bed",
                Some("in October"),
            ),
            fact(
                "The user put the sneakers under the bed.",
                "user: I put them under the bed",
                Some("last Tuesday I"),
            ),
        ];
        let (kept, notes) = verify(&facts, &turns(), anchor());
        assert_eq!(kept[0].fact.when.as_deref(), Some("last tuesday"));
        assert_eq!(kept[0].valid_time.as_deref(), Some("2024-03-12"));
        assert_eq!((kept[1].fact.when.as_deref(), kept[1].valid_time.as_deref()), (None, None));
        // Whitespace and case do not matter; the resolver decides what a longer mention means.
        assert_eq!(kept[2].fact.when.as_deref(), Some("last Tuesday I"));
        assert_eq!(notes, vec![None, Some(Note::MentionNotInRound), None]);
    }

    #[test]
    fn the_embedded_text_is_the_excerpt_then_the_sentence() {
        assert_eq!(embed_text(&fact("The user runs.", "user: I run", None)), "user: I run\nThe user runs.");
    }
}
