//! The pre-filter: rounds where nothing can be extracted skip the model.
//!
//! Each turn is normalized (lowercase, apostrophes removed, other punctuation to spaces) and
//! dropped when it is:
//! - `empty`;
//! - `acknowledgement`: only acknowledgement, greeting or closing phrases and filler words;
//! - `memory-reference`: a user turn of 8 words or fewer built around a reference to memory or a
//!   bare imperative pointing back ("do you remember", "explain that again"), with no digit and no
//!   capitalized word after the first;
//! - `assistant-boilerplate`: an assistant turn of 40 words or fewer built around boilerplate
//!   ("happy to help", "let me know if"), with no digit and no capitalized word after the first;
//! - `no-slot-cue`: a non-question of 12 words or fewer with no digit, no capitalized word after the
//!   first, no first-person word and no date word.
//!
//! A question is never dropped as such: evidence is often an aside inside one. A round goes to the
//! model when at least one of its turns survives; otherwise it is skipped under the rule that
//! dropped its first turn. The phrase lists are versioned files in `lexicons/`, hashed by
//! [`prefilter_blake3`] into the pins.

use std::collections::HashSet;
use std::sync::LazyLock;

use serde::Serialize;

use crate::model::round::{Role, Turn};

const ACKNOWLEDGEMENTS: &str = include_str!("../../lexicons/acknowledgements.txt");
const FILLER: &str = include_str!("../../lexicons/filler.txt");
const MEMORY_REFERENCES: &str = include_str!("../../lexicons/memory_references.txt");
const ASSISTANT_BOILERPLATE: &str = include_str!("../../lexicons/assistant_boilerplate.txt");
const SLOT_CUES: &str = include_str!("../../lexicons/slot_cues.txt");

/// The version of the rules below (the lexicons are hashed separately).
const RULES_VERSION: &str = "prefilter-rules-v1";

/// Why a turn was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Nothing after normalization.
    Empty,
    /// Only acknowledgements, greetings, closings and filler.
    Acknowledgement,
    /// A short user turn about what was said, or asking for more of it.
    MemoryReference,
    /// A short assistant closing or offer of help.
    AssistantBoilerplate,
    /// A short statement with no digit, name, first-person or date word.
    NoSlotCue,
}

impl Rule {
    /// The kebab-case name used in counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Empty => "empty",
            Rule::Acknowledgement => "acknowledgement",
            Rule::MemoryReference => "memory-reference",
            Rule::AssistantBoilerplate => "assistant-boilerplate",
            Rule::NoSlotCue => "no-slot-cue",
        }
    }
}

/// Lines of a lexicon file that are phrases (not blank, not `#` comments).
pub(crate) fn phrases(file: &'static str) -> Vec<&'static str> {
    file.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

struct Lexicons {
    acknowledgements: Vec<Vec<&'static str>>,
    filler: HashSet<&'static str>,
    memory_references: Vec<Vec<&'static str>>,
    boilerplate: Vec<Vec<&'static str>>,
    slot_cues: HashSet<&'static str>,
}

static LEXICONS: LazyLock<Lexicons> = LazyLock::new(|| {
    let split = |file| phrases(file).into_iter().map(|p| p.split(' ').collect()).collect();
    let mut acknowledgements: Vec<Vec<&str>> = split(ACKNOWLEDGEMENTS);
    // Longest first, so that "thank you so much" is consumed whole.
    acknowledgements.sort_by_key(|p| std::cmp::Reverse(p.len()));
    Lexicons {
        acknowledgements,
        filler: phrases(FILLER).into_iter().collect(),
        memory_references: split(MEMORY_REFERENCES),
        boilerplate: split(ASSISTANT_BOILERPLATE),
        slot_cues: phrases(SLOT_CUES).into_iter().collect(),
    }
});

/// blake3 over the rules' version and every lexicon file, in a fixed framing.
pub fn prefilter_blake3() -> String {
    let framed = serde_json::json!([
        RULES_VERSION,
        ACKNOWLEDGEMENTS,
        FILLER,
        MEMORY_REFERENCES,
        ASSISTANT_BOILERPLATE,
        SLOT_CUES
    ]);
    blake3::hash(framed.to_string().as_bytes()).to_hex().to_string()
}

/// Lowercase words with apostrophes removed and other punctuation as spaces.
pub(crate) fn normalize(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['\'', '’'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(crate) fn contains_phrase(words: &[String], phrase: &[&str]) -> bool {
    words.windows(phrase.len()).any(|w| w.iter().zip(phrase).all(|(a, b)| a == b))
}

fn contains_any(words: &[String], phrases: &[Vec<&str>]) -> bool {
    phrases.iter().any(|p| contains_phrase(words, p))
}

/// A digit anywhere, or a capitalized word that does not start a sentence and is not "I".
pub(crate) fn has_digit_or_name(text: &str) -> bool {
    if text.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let mut sentence_start = true;
    for word in text.split_whitespace() {
        let core = word.trim_matches(|c: char| !c.is_alphanumeric());
        let capitalized = core.chars().next().is_some_and(char::is_uppercase);
        let is_i = core == "I" || core.starts_with("I'") || core.starts_with("I’");
        if capitalized && !sentence_start && !is_i {
            return true;
        }
        if !core.is_empty() {
            sentence_start = word.ends_with(['.', '!', '?', ':']);
        }
    }
    false
}

/// Whether the words are only acknowledgement phrases and filler.
fn only_acknowledgement(words: &[String]) -> bool {
    let lex = &*LEXICONS;
    let mut i = 0;
    'outer: while i < words.len() {
        for p in &lex.acknowledgements {
            if words[i..].len() >= p.len() && words[i..i + p.len()].iter().zip(p).all(|(a, b)| a == b) {
                i += p.len();
                continue 'outer;
            }
        }
        if lex.filler.contains(words[i].as_str()) {
            i += 1;
            continue;
        }
        return false;
    }
    true
}

/// The rule that drops `turn`, if any.
pub fn drops(turn: &Turn) -> Option<Rule> {
    let lex = &*LEXICONS;
    let words = normalize(&turn.content);
    if words.is_empty() {
        return Some(Rule::Empty);
    }
    if only_acknowledgement(&words) {
        return Some(Rule::Acknowledgement);
    }
    let question = turn.content.contains('?');
    let cue = has_digit_or_name(&turn.content);
    if turn.role == Role::User && words.len() <= 8 && !cue && contains_any(&words, &lex.memory_references) {
        return Some(Rule::MemoryReference);
    }
    if turn.role == Role::Assistant && words.len() <= 40 && !cue && contains_any(&words, &lex.boilerplate) {
        return Some(Rule::AssistantBoilerplate);
    }
    // A possessive loses its apostrophe in normalization: "tomorrow's" → "tomorrows".
    let slot = |w: &String| {
        lex.slot_cues.contains(w.as_str()) || w.strip_suffix('s').is_some_and(|b| lex.slot_cues.contains(b))
    };
    if !question && words.len() <= 12 && !cue && !words.iter().any(slot) {
        return Some(Rule::NoSlotCue);
    }
    None
}

/// `None` when the round goes to the model; otherwise the rule that dropped its first turn.
pub fn skip(turns: &[Turn]) -> Option<Rule> {
    let mut first = None;
    for t in turns {
        match drops(t) {
            None => return None,
            Some(rule) => {
                first.get_or_insert(rule);
            }
        }
    }
    first.or(Some(Rule::Empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(role: Role, content: &str) -> Turn {
        Turn::new(role, content, "")
    }

    #[test]
    fn each_rule_drops_what_it_names() {
        let user = |c| drops(&t(Role::User, c));
        let assistant = |c| drops(&t(Role::Assistant, c));
        assert_eq!(user("  ...  "), Some(Rule::Empty));
        assert_eq!(user("Thank you so much!"), Some(Rule::Acknowledgement));
        assert_eq!(user("ok, thanks! Bye."), Some(Rule::Acknowledgement));
        assert_eq!(user("Hi there, well, hello!"), Some(Rule::Acknowledgement));
        assert_eq!(user("Do you remember what we discussed?"), Some(Rule::MemoryReference));
        assert_eq!(user("Please explain that again."), Some(Rule::MemoryReference));
        assert_eq!(
            assistant("You're welcome! Let me know if you need anything else."),
            Some(Rule::AssistantBoilerplate)
        );
        assert_eq!(user("That sounds like a plan."), Some(Rule::NoSlotCue));
    }

    #[test]
    fn facts_questions_names_numbers_and_dates_survive() {
        let user = |c| drops(&t(Role::User, c));
        let assistant = |c| drops(&t(Role::Assistant, c));
        assert_eq!(user("Thanks! By the way, I adopted a beagle."), None, "an aside after thanks");
        assert_eq!(user("Do you remember my dog Toby?"), None, "a name is a slot");
        assert_eq!(user("What should I cook for six people?"), None, "questions are never dropped as such");
        assert_eq!(user("Is pasta healthy?"), None);
        assert_eq!(user("We moved last week."), None, "first person and a date word");
        assert_eq!(user("The meeting is at 3."), None, "a digit");
        assert_eq!(user("Can't wait for tomorrow's grand opening!"), None, "a possessive date word");
        assert_eq!(assistant("It's adorable! Watching them enjoy their snacks is so fun."), None);
        assert_eq!(user("Sounds good, see you in Lisbon."), None, "a name");
        assert_eq!(assistant("Happy to help! Try the Douro riverside path early on weekends."), None);
        assert_eq!(assistant("Let me know if 2 servings is enough."), None);
    }

    #[test]
    fn a_round_is_skipped_only_when_every_turn_is_dropped() {
        let thanks = t(Role::User, "thanks!");
        let boiler = t(Role::Assistant, "Glad I could help!");
        assert_eq!(skip(&[thanks.clone(), boiler.clone()]), Some(Rule::Acknowledgement));
        assert_eq!(skip(&[thanks, t(Role::Assistant, "Your flight to Rome leaves at 9.")]), None);
        assert_eq!(skip(&[]), Some(Rule::Empty));
    }

    #[test]
    fn the_lexicons_parse_and_hash() {
        let lex = &*LEXICONS;
        assert!(lex.acknowledgements.iter().all(|p| p.iter().all(|w| !w.is_empty())));
        assert!(lex.slot_cues.contains("yesterday") && lex.filler.contains("yeah"));
        for file in [ACKNOWLEDGEMENTS, FILLER, MEMORY_REFERENCES, ASSISTANT_BOILERPLATE, SLOT_CUES] {
            for p in phrases(file) {
                assert_eq!(normalize(p).join(" "), p, "lexicon lines are stored normalized: {p:?}");
            }
        }
        assert_eq!(prefilter_blake3().len(), 64);
    }
}
