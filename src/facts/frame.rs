//! Value frames: two statements of the user's that give the same attribute another number, read
//! from their sentences with the numbers masked ("I've had Luna for about 6 months now" and "I've
//! had my cat, Luna, for about 9 months now"; "determined to reach level 100" and "my current
//! goal is to reach level 150").
//!
//! The keyed rules meet two facts only when the model named the same entity and relation for
//! both, and a small model often does not ("microchipped" and no record at all; "level" and
//! "eventually"). Here each number of a sentence has a frame: the content words around it (three
//! on each side, function and time words left out, stemmed). Two statements give the same
//! attribute another value when a frame of each shares at least two content words, their numbers
//! differ, and their numbers count the same unit when both name one ("30 minutes every week" and
//! "three times a week" are two attributes). A time
//! of day ("10:30 pm") says when, not how many: it has no frame. A name both sentences write
//! ("Luna") counts as two shared words. Pure functions of the two sentences.

use std::collections::BTreeSet;

use super::conflict::is_number;
use super::ending::{holder, is_filler, is_function};
use super::normalize::{joins_range, normalize, qualifies_number};

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

/// Words before a number that make it the value a sentence changes from ("up from 20 to 25"):
/// such a number is not restated ([`Frames::met`]).
const PRIOR: [&str; 2] = ["from", "than"];

/// Words that make a number a time of day ("11 pm", "six o'clock"), normalized.
pub(crate) const CLOCK: [&str; 3] = ["am", "pm", "oclock"];

/// Words that make a number a rate: the unit is the word after them ("$50 per tire", "15 a
/// night").
const RATE: [&str; 5] = ["per", "a", "an", "every", "each"];

/// The unit of a number, from the words after it: the first that is not a number or a word that
/// joins a range ("$50 to $100 per tire"), the word after a rate word ("per tire"); none when it
/// is a function word (a clock word is a unit: "10:30 pm").
fn unit(after: &[&str]) -> Option<String> {
    let mut rest = after.iter().skip_while(|w| is_number(w) || joins_range(w));
    let first = *rest.next()?;
    let word = if RATE.contains(&first) { *rest.next()? } else { first };
    (CLOCK.contains(&word) || !is_function(word)).then(|| word.to_owned())
}

/// One number of a sentence: the number, the unit it counts (the word right after it, numbers
/// skipped, unless a function word: "30 minutes", "10:30 pm"), and the content words around it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    number: String,
    unit: Option<String>,
    words: BTreeSet<String>,
    /// Whether the number is one the sentence changes from ("up from 20", "more than 3").
    prior: bool,
}

/// The frames of a sentence: who it is about, and each of its numbers with the content words
/// around it. Times of day have none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frames {
    holder: Option<String>,
    numbers: Vec<Frame>,
    /// The words written capitalized after the sentence's first (names), normalized.
    names: BTreeSet<String>,
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
        // Content words: not numbers, function or time words, approximators ("around", "at
        // least"), "per", or clock words (those say what a number counts, its unit).
        let content = |w: &&&str| {
            !is_number(w)
                && !is_filler(w)
                && !qualifies_number(w)
                && !RATE.contains(w)
                && !CLOCK.contains(w)
                && w.len() > 1
        };
        let mut numbers = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if !is_number(w) {
                continue;
            }
            let before = words[..i].iter().rev().filter(&content).take(SIDE);
            let after = words[i + 1..].iter().filter(&content).take(SIDE);
            let unit = unit(&words[i + 1..]);
            // "a bamboo one": the word "one" with no unit is a pronoun, not a number; and a time of
            // day says when, not how many.
            if *w == "1" && unit.is_none() || unit.as_deref().is_some_and(|u| CLOCK.contains(&u)) {
                continue;
            }
            numbers.push(Frame {
                number: (*w).to_owned(),
                unit,
                words: before.chain(after).map(|w| (*w).to_owned()).collect(),
                prior: i.checked_sub(1).is_some_and(|j| PRIOR.contains(&words[j])),
            });
        }
        let names = said
            .split_whitespace()
            .skip(1)
            .filter(|w| w.starts_with(char::is_uppercase) && !w.starts_with("I'") && *w != "I")
            .flat_map(|w| {
                normalize("text", "says", w).object.split_whitespace().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect();
        Frames { holder: holder(sentence), numbers, names }
    }

    /// Whether the sentence has no number to frame.
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// The content words of all its frames: two sentences whose frames meet share one of them.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.numbers.iter().flat_map(|f| f.words.iter().map(String::as_str))
    }

    /// Whether these frames give an attribute of `other`'s another number: both of one holder
    /// ("my dad weighs 90 kg" is not the speaker's weight), and a frame of each shares
    /// [`SHARED`] content words, around two different numbers of one unit (or where either names
    /// none). Symmetric.
    pub fn meets(&self, other: &Frames) -> bool {
        self.met(other).is_some()
    }

    /// The two numbers of the first frames that meet ([`Frames::meets`]): this one's, then
    /// `other`'s.
    pub fn met<'a>(&'a self, other: &'a Frames) -> Option<(&'a str, &'a str)> {
        if self.holder != other.holder {
            return None;
        }
        // A number the other sentence states too, not as the one it changes from, is restated,
        // not replaced ("the 14th floor" and "on the 14th floor, room 1408").
        let restated = |n: &str, by: &Frames| by.numbers.iter().any(|f| f.number == n && !f.prior);
        self.numbers.iter().filter(|x| !restated(&x.number, other)).find_map(|x| {
            other
                .numbers
                .iter()
                .find(|y| {
                    let units_agree = match (&x.unit, &y.unit) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    };
                    // A name both write ("Luna") identifies the thing: it counts twice.
                    let shared: usize = x
                        .words
                        .intersection(&y.words)
                        .map(|w| 1 + usize::from(self.names.contains(w) && other.names.contains(w)))
                        .sum();
                    x.number != y.number && !restated(&y.number, self) && units_agree && shared >= SHARED
                })
                .map(|y| (x.number.as_str(), y.number.as_str()))
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
    fn a_number_the_newer_sentence_restates_is_not_replaced() {
        assert!(!same_frame(
            "user: I'm staying on the 14th floor, room 1408, and I have a great view of the city skyline from my room.",
            "user: The view from the 14th floor was amazing, and I especially loved the city lights at night.",
        ));
        assert!(same_frame(
            "user: My collection went up from 20 to 25 coins this month.",
            "user: I have 20 coins in my collection now.",
        ));
    }

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
        assert!(
            !same_frame(
                "user: I try to write at least 30 minutes every week, which has been really helpful.",
                "user: I've been using it at least three times a week, and it's been really reliable."
            ),
            "numbers of two units"
        );
        assert!(
            !same_frame(
                "user: I'm looking to spend around $50 to $100 per tire.",
                "user: My budget is around $200-300 per night."
            ),
            "rates of two units"
        );
        assert!(
            !same_frame(
                "user: I remember buying a few clothes for my nephew from H&M, which cost around $80.",
                "user: I also ordered some photo albums for my grandma from Shutterfly, that cost around $120."
            ),
            "\"around\" says nothing of what was bought"
        );
        assert!(
            !same_frame(
                "user: I replaced my plastic toothbrush with a bamboo one and started using reusable bags.",
                "user: I've been using a reusable water bottle and saved around 20 single-use plastic bottles."
            ),
            "\"a bamboo one\" is no number"
        );
        assert!(
            !same_frame(
                "user: I set a reminder on my Fitbit to go to bed by 10:30 pm every night.",
                "user: I've been getting a head start on my day by waking up at 6:30 AM every day."
            ),
            "two times of day"
        );
        assert!(
            !same_frame(
                "user: I'm available to train on weekdays from 7-9 am.",
                "user: I'm available to work from 9 am to 5 pm."
            ),
            "a time of day says when, not how many"
        );
        let (new, old) = (
            Frames::of("user: My current goal is to reach level 150."),
            Frames::of("user: I'm determined to reach level 100."),
        );
        assert_eq!(new.met(&old), Some(("150", "100")));
    }
}
