//! Trimmed rounds: in a context, a long assistant reply is shown as the few sentences that bear
//! on the question or on the user's turn, each run of left-out sentences marked `[…]`.
//!
//! A reply is often hundreds of tokens of advice around the one sentence a question needs; shown
//! whole, a 4,000-token block holds a handful of rounds. The user's turns are always shown whole,
//! and so is a reply of at most [`TRIM_ABOVE`] tokens. Nothing stored changes: exports and
//! [`Memory::rounds`](crate::Memory::rounds) show every round whole, and a context names the
//! rounds it shows by key ([`Context::rounds`](crate::Context::rounds)), one call from the whole
//! round.
//!
//! A sentence scores two for each word it shares with the question and one for each other word
//! it shares with the round's user turns (words stemmed; `lexicons/common_words.txt` left out).
//! The [`KEEP`] best (the earlier on a tie) are kept in their order, when they score at all;
//! a reply no sentence of which scores keeps its first sentence.

use std::collections::HashSet;
use std::sync::LazyLock;

use super::render::count_tokens;
use crate::facts::normalize::entries;
use crate::model::parts::sentences;
use crate::model::round::{Role, Turn};
use crate::model::words::terms;

/// A reply of more tokens than this is trimmed.
pub(crate) const TRIM_ABOVE: usize = 100;

/// Sentences a trimmed reply keeps.
pub(crate) const KEEP: usize = 3;

/// What stands for each run of left-out sentences.
pub const TRIM_MARK: &str = "[…]";

const COMMON: &str = include_str!("../../lexicons/common_words.txt");

/// The common words, stemmed.
static COMMON_TERMS: LazyLock<HashSet<String>> =
    LazyLock::new(|| entries(COMMON).into_iter().flat_map(|(_, w)| terms(&w)).collect());

/// The words of `text` that can tell sentences apart: stemmed, common words left out.
fn telling(text: &str) -> HashSet<String> {
    terms(text).into_iter().filter(|t| !COMMON_TERMS.contains(t)).collect()
}

/// `turns` as a context shows them for `question`: each long reply trimmed; `None` when no turn
/// changes. One call; a context trims many rounds for one question through [`Trimmer`].
///
/// ```
/// use mnemon::rounds::{Role, Turn};
/// let turns = [Turn::new(Role::User, "Hi!", "2026-01-01"), Turn::new(Role::Assistant, "Hello.", "2026-01-01")];
/// assert_eq!(mnemon::context::trim(&turns, "anything"), None, "nothing long to trim");
/// ```
pub fn trim(turns: &[Turn], question: &str) -> Option<Vec<Turn>> {
    Trimmer::new(question).trim(turns)
}

/// Trims rounds for one question, whose telling words are read once.
pub(crate) struct Trimmer {
    asked: HashSet<String>,
}

impl Trimmer {
    pub(crate) fn new(question: &str) -> Trimmer {
        Trimmer { asked: telling(question) }
    }

    /// `turns` with each long reply trimmed; `None` when no turn changes.
    pub(crate) fn trim(&self, turns: &[Turn]) -> Option<Vec<Turn>> {
        // Tokens are never more than bytes: a short text needs no count.
        let long: Vec<bool> = turns
            .iter()
            .map(|t| {
                t.role == Role::Assistant
                    && t.content.len() > TRIM_ABOVE
                    && count_tokens(&t.content) > TRIM_ABOVE
            })
            .collect();
        if !long.contains(&true) {
            return None;
        }
        let said: HashSet<String> = turns
            .iter()
            .filter(|t| t.role == Role::User)
            .flat_map(|t| telling(&t.content))
            .filter(|t| !self.asked.contains(t))
            .collect();
        let mut changed = false;
        let out = turns
            .iter()
            .zip(long)
            .map(|(t, long)| match long.then(|| trimmed(&t.content, &self.asked, &said)).flatten() {
                Some(content) => {
                    changed = true;
                    Turn { content, ..t.clone() }
                }
                None => t.clone(),
            })
            .collect();
        changed.then_some(out)
    }
}

/// `text` cut to its best sentences with marks, or `None` when that keeps every sentence.
fn trimmed(text: &str, asked: &HashSet<String>, said: &HashSet<String>) -> Option<String> {
    let sentences = sentences(text);
    if sentences.len() <= KEEP {
        return None;
    }
    let scores: Vec<usize> = sentences
        .iter()
        .map(|s| {
            let words = telling(s);
            2 * words.intersection(asked).count() + words.intersection(said).count()
        })
        .collect();
    let mut order: Vec<usize> = (0..sentences.len()).filter(|i| scores[*i] > 0).collect();
    order.sort_by(|a, b| scores[*b].cmp(&scores[*a]).then(a.cmp(b)));
    let mut kept: Vec<usize> = order.into_iter().take(KEEP).collect();
    if kept.is_empty() {
        kept.push(0);
    }
    kept.sort_unstable();
    let mut out = String::new();
    let mut next = 0;
    for i in kept {
        if i > next {
            push(&mut out, TRIM_MARK);
        }
        push(&mut out, &sentences[i]);
        next = i + 1;
    }
    if next < sentences.len() {
        push(&mut out, TRIM_MARK);
    }
    Some(out)
}

fn push(out: &mut String, piece: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(piece);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(user: &str, reply: &str) -> Vec<Turn> {
        vec![Turn::new(Role::User, user, "t"), Turn::new(Role::Assistant, reply, "t")]
    }

    const ADVICE: &str = "Here are some general ideas that many people find useful when they plan a trip. \
        First, think carefully about your budget and the season before you book anything at all. \
        Second, read the reviews of several places and compare them with each other for a while. \
        Your kayak is red, as you told me last week, so it will be easy to spot on the lake. \
        Third, pack light and bring layers, because mountain weather changes quickly in the afternoon. \
        Finally, enjoy yourself and take plenty of photos so you remember the trip for years.";

    #[test]
    fn a_long_reply_keeps_the_sentences_that_bear_on_the_question() {
        let turns = round("Any tips for my trip to the lake?", ADVICE);
        let out = trim(&turns, "What colour is my kayak?").expect("the reply is long");
        assert_eq!(out[0], turns[0], "the user's turn is whole");
        let reply = &out[1].content;
        assert!(reply.contains("Your kayak is red"), "{reply}");
        assert!(reply.contains(TRIM_MARK), "{reply}");
        assert!(count_tokens(reply) < count_tokens(ADVICE));
        assert!(!reply.contains("Second, read the reviews"), "{reply}");
        // Deterministic, and the same for the same inputs.
        assert_eq!(trim(&turns, "What colour is my kayak?"), Some(out));
    }

    #[test]
    fn marks_stand_for_each_run_of_left_out_sentences() {
        let turns = round("Tips?", ADVICE);
        let reply = trim(&turns, "kayak budget").unwrap().remove(1).content;
        // Only the budget sentence (2nd) and the kayak sentence (4th) score.
        let s = sentences(ADVICE);
        assert_eq!(reply, format!("{TRIM_MARK} {} {TRIM_MARK} {} {TRIM_MARK}", s[1], s[3]));
    }

    #[test]
    fn short_replies_and_user_turns_stay_whole() {
        let turns = round(ADVICE, "Sounds lovely. Enjoy the lake!");
        assert_eq!(trim(&turns, "kayak"), None, "a long user turn is never trimmed");
        // A reply with nothing in common keeps its first sentence.
        let turns = round("Hello", ADVICE);
        let reply = trim(&turns, "zebra").unwrap().remove(1).content;
        assert_eq!(reply, format!("{} {TRIM_MARK}", sentences(ADVICE)[0]));
    }
}
