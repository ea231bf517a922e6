//! A sentence's time mention, found without a model: the words the date resolver reads.

use super::*;

/// Words a time mention may start with (besides digits, number words, and capitalized month and
/// day names).
pub(super) const TIME_STARTS: [&str; 12] =
    ["last", "next", "this", "on", "in", "yesterday", "today", "tonight", "tomorrow", "the", "a", "an"];

/// Longest time mention, in words.
pub(super) const MENTION_WORDS: usize = 5;

/// Whether a mention's first word says nothing of its time ("a nearby festival next month"): not
/// a time word, a number or a word a mention starts with, and for an article, not one before a
/// time word ("a week ago").
pub(super) fn loose(span: &[&str]) -> bool {
    let word = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    let timely = |w: &str| {
        let unit = singular(w);
        LEXICON.times.contains(w)
            || LEXICON.times.contains(&unit)
            || TIME_UNITS.contains(&unit.as_str())
            || w.starts_with(|c: char| c.is_ascii_digit())
            || number_word(w).is_some()
    };
    let first = word(span[0]);
    match first.as_str() {
        "a" | "an" | "the" => span.get(1).is_some_and(|next| !timely(&word(next))),
        w => !timely(w) && !TIME_STARTS.contains(&w),
    }
}

/// The sentence's first time mention the date resolver reads, found without a model: from each
/// word a mention may start with, the windows of up to [`MENTION_WORDS`] words; the shortest that
/// resolves to what the longest resolving one does ("last Tuesday", not "Tuesday"; "on May 5th",
/// not "on May"), cut from the left while it still does ("next month", not "a nearby festival next
/// month").
pub fn mention(sentence: &str, anchor: NaiveDate) -> Option<String> {
    let lex = &*LEXICON;
    let words: Vec<&str> = sentence.split_whitespace().collect();
    for i in 0..words.len() {
        let core = words[i].trim_matches(|c: char| !c.is_alphanumeric());
        let lower = core.to_lowercase();
        let first = core.chars().next();
        let starts = TIME_STARTS.contains(&lower.as_str())
            || first.is_some_and(|c| c.is_ascii_digit())
            || number_word(&lower).is_some()
            || first.is_some_and(char::is_uppercase) && lex.times.contains(&lower);
        if !starts {
            continue;
        }
        let read: Vec<Option<String>> = (1..=MENTION_WORDS.min(words.len() - i))
            .map(|k| resolve(&words[i..i + k].join(" "), anchor, sentence))
            .collect();
        let Some(longest) = read.iter().rev().flatten().next() else { continue };
        let mut k = read.iter().position(|r| r.as_ref() == Some(longest)).expect("found above") + 1;
        // And from the left ("next month", not "a nearby festival next month").
        let mut from = i;
        while k > 1
            && loose(&words[from..from + k])
            && resolve(&words[from + 1..from + k].join(" "), anchor, sentence).as_ref() == Some(longest)
        {
            from += 1;
            k -= 1;
        }
        let span = words[from..from + k].join(" ");
        return Some(span.trim_matches(|c: char| !c.is_alphanumeric()).to_owned());
    }
    None
}
