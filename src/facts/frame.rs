//! Value frames: two statements of the user's that give the same attribute another number, read
//! from their sentences with the numbers masked ("I've had Luna for about 6 months now" and "I've
//! had my cat, Luna, for about 9 months now"; "determined to reach level 100" and "my current
//! goal is to reach level 150").
//!
//! The keyed rules meet two facts only when the model named the same entity and relation for
//! both, and a small model often does not ("microchipped" and no record at all; "level" and
//! "eventually"). Here each number of a sentence has a frame: the content words around it (three
//! on each side, function and time words left out, stemmed). Two statements give the same
//! attribute another value when a frame of each shares at least two content words and their
//! numbers differ. Pure functions of the two sentences.

use std::collections::BTreeSet;

use super::conflict::is_number;
use super::ending::{holder, is_filler};
use super::normalize::normalize;

/// Content words on each side of a number that make its frame.
const SIDE: usize = 3;

/// Content words two frames must share.
const SHARED: usize = 2;

/// Words that make a sentence a plan or a wish, not a state ("I'm thinking of changing my limit
/// to two cups"): such a sentence has no frames.
const PLANS: [&str; 13] = [
    "thinking",
    "planning",
    "considering",
    "want",
    "wants",
    "wanted",
    "hope",
    "hoping",
    "might",
    "would",
    "could",
    "should",
    "if",
];

/// The frames of a sentence: who it is about, and each of its numbers with the content words
/// around it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frames {
    holder: Option<String>,
    numbers: Vec<(String, BTreeSet<String>)>,
}

impl Frames {
    /// The frames of a sentence, normalized as an object is (number words as digits, words
    /// stemmed, negations out); a `user: ` excerpt prefix is dropped. A plan or a wish has none.
    pub fn of(sentence: &str) -> Frames {
        let said = sentence
            .split_once(": ")
            .filter(|(who, _)| ["user", "assistant"].contains(who))
            .map_or(sentence, |(_, s)| s);
        if super::normalize::text(said).split_whitespace().any(|w| PLANS.contains(&w)) {
            return Frames::default();
        }
        let object = normalize("text", "says", said).object;
        let words: Vec<&str> = object.split_whitespace().collect();
        let content = |w: &&&str| !is_number(w) && !is_filler(w) && w.len() > 1;
        let mut numbers = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if !is_number(w) {
                continue;
            }
            let before = words[..i].iter().rev().filter(&content).take(SIDE);
            let after = words[i + 1..].iter().filter(&content).take(SIDE);
            numbers.push(((*w).to_owned(), before.chain(after).map(|w| (*w).to_owned()).collect()));
        }
        Frames { holder: holder(sentence), numbers }
    }

    /// Whether the sentence has no number to frame.
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// The content words of all its frames: two sentences whose frames meet share one of them.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.numbers.iter().flat_map(|(_, f)| f.iter().map(String::as_str))
    }

    /// Whether these frames give an attribute of `other`'s another number: both of one holder
    /// ("my dad weighs 90 kg" is not the speaker's weight), and a frame of each shares
    /// [`SHARED`] content words, around two different numbers. Symmetric.
    pub fn meets(&self, other: &Frames) -> bool {
        self.met(other).is_some()
    }

    /// The two numbers of the first frames that meet ([`Frames::meets`]): this one's, then
    /// `other`'s.
    pub fn met<'a>(&'a self, other: &'a Frames) -> Option<(&'a str, &'a str)> {
        if self.holder != other.holder {
            return None;
        }
        self.numbers.iter().find_map(|(x, fx)| {
            other
                .numbers
                .iter()
                .find(|(y, fy)| x != y && fx.intersection(fy).count() >= SHARED)
                .map(|(y, _)| (x.as_str(), y.as_str()))
        })
    }
}

/// Whether `new` gives an attribute `old` has another number ([`Frames::meets`]). Symmetric.
pub fn same_frame(new: &str, old: &str) -> bool {
    Frames::of(new).meets(&Frames::of(old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_in_the_same_frame_is_another_value_of_the_same_attribute() {
        assert!(same_frame(
            "user: I've had my cat, Luna, for about 9 months now, and I've been trying to keep her active.",
            "user: I've had Luna for about 6 months now, and I've been meaning to get her microchipped.",
        ));
        assert!(same_frame(
            "user: My current goal is to reach level 150.",
            "user: I'm determined to reach level 100 before the end of the year.",
        ));
        assert!(same_frame(
            "user: I've tried out 3 of Emma's recipes so far.",
            "user: I've already tried out two of them."
        ));
        assert!(!same_frame("user: I have 3 dogs.", "user: I have 2 cats."), "other things");
        assert!(!same_frame("user: My sister has 3 kids.", "user: I have 2 kids."), "one shared word");
        assert!(!same_frame("The user's dad weighs 90 kg.", "The user weighs 70 kg."), "another holder");
        assert!(
            !same_frame(
                "user: I'm thinking of changing my coffee limit to two cups.",
                "user: I cut back to one cup of coffee."
            ),
            "a plan"
        );
        assert!(
            !same_frame("user: I run 5 km every week.", "user: I run 5 km every week, no matter what."),
            "the same number"
        );
        let (new, old) = (
            Frames::of("user: My current goal is to reach level 150."),
            Frames::of("user: I'm determined to reach level 100."),
        );
        assert_eq!(new.met(&old), Some(("150", "100")));
    }
}
