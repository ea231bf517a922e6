//! Endings: a statement that ends something its speaker held or did ("I quit my job at Globex",
//! "I sold the Honda Civic", "both my roommates moved out", "I'm not vegetarian anymore") and the
//! earlier facts it ends, whatever words those used.
//!
//! The conflict rules compare facts by their `subject|predicate` key, and a statement of an end
//! rarely has one: "I finally quit my job at Globex last Friday" is a dated statement with no
//! value, while the fact it ends may be a workplace ("The user has been working at Globex"). So an
//! ending is read from the sentence itself, with the cues of `lexicons/endings.txt`:
//!
//! - **who**: the speaker ("I", "we", "my partner and I"), someone else ("my sister quit her
//!   job"), or, for a cue that ends its subject ("moved out", "passed away"), the speaker's own
//!   thing named before it ("both of my roommates");
//! - **what ended**: the words after the cue up to the clause's end, a conjunction or a time word,
//!   less function words and numbers ("my job at Globex" → `job`, `globex`); for "not … anymore",
//!   the words between;
//! - **not an ending**: a plan, a wish or a negation before the cue ("I need to cancel"), another
//!   sense ("stopped by"), a pause ("for a week"), or a number of items rather than a thing held
//!   ("I sold 15 records").
//!
//! An ending ends an earlier fact of the same speaker when the fact is about the same holder and
//! names what ended: one of its specific words (not a generic head like "job" or "subscription")
//! and at least half of all of them. Pure functions of the two sentences.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use super::normalize::{entries, number_word, text};
use crate::model::words::stem;

/// The lexicon, hashed into the conflict rules' pin.
pub(crate) const ENDINGS: &str = include_str!("../../lexicons/endings.txt");

/// Who an ending is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// The speaker: what ended is named after the cue.
    Speaker,
    /// Someone else, by the stems of the words that name them ("my sister" → `sister`).
    Other(BTreeSet<String>),
    /// The speaker's own thing named before the cue ("my roommates moved out"): what ended is
    /// the subject itself.
    Own,
}

/// A statement read as the end of something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// Whose thing ended.
    pub holder: Holder,
    /// What ended: the stems of its content words.
    pub thing: BTreeSet<String>,
    /// The stem of its head: the last word of its first run of content words ("my red lamp" →
    /// `lamp`, "my job at Globex" → `job`); for the speaker's own thing that ended, the last word
    /// of the subject ("both of my roommates" → `roommat`).
    pub head: Option<String>,
}

struct Lexicon {
    /// (cue words, group), longest first.
    cues: Vec<(Vec<String>, Group)>,
    not_after: BTreeSet<String>,
    pause_after_for: Vec<Vec<String>>,
    pause: Vec<Vec<String>>,
    times: BTreeSet<String>,
    not_done: BTreeSet<String>,
    between: Vec<Vec<String>>,
    generic: BTreeSet<String>,
    function: BTreeSet<String>,
    holders: BTreeSet<String>,
}

/// What a cue ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    /// What follows it.
    Follows,
    /// What follows it, when that is the speaker's own (a possessive first).
    OwnFollows,
    /// Its subject, when that is the speaker's own.
    Subject,
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let all = entries(ENDINGS);
    let group = |name: &str| -> Vec<Vec<String>> {
        all.iter()
            .filter(|(g, _)| g == name)
            .map(|(_, l)| text(l).split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let set = |name: &str| -> BTreeSet<String> { group(name).into_iter().map(|w| w.join(" ")).collect() };
    let mut cues = Vec::new();
    for (name, g) in
        [("follows", Group::Follows), ("own follows", Group::OwnFollows), ("subject", Group::Subject)]
    {
        cues.extend(group(name).into_iter().map(|w| (w, g)));
    }
    // Longest first; a phrase in several groups keeps each (the subject decides which applies).
    cues.sort_by_key(|c| std::cmp::Reverse(c.0.len()));
    let longest_first = |mut v: Vec<Vec<String>>| {
        v.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        v
    };
    Lexicon {
        cues,
        not_after: set("not after"),
        pause_after_for: longest_first(group("pause after for")),
        pause: longest_first(group("pause")),
        times: set("times"),
        not_done: set("not done"),
        between: longest_first(group("between")),
        generic: set("generic").iter().map(|w| stem(w)).collect(),
        function: set("function"),
        holders: set("holders"),
    }
});

/// Words that make what follows the speaker's own.
const POSSESSIVES: [&str; 2] = ["my", "our"];

/// The clauses of a sentence: split at punctuation that is not between two digits ("7:15",
/// "1.5" stay whole), each normalized into words.
fn clauses(sentence: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = sentence.chars().collect();
    // Each piece with whether a comma ended it.
    let mut pieces = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let digit = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(char::is_ascii_digit);
        let splits = matches!(c, ',' | ';' | ':' | '!' | '?' | '(' | ')' | '.' | '\u{2014}' | '\u{2013}')
            && !(digit(i.checked_sub(1)) && digit(Some(i + 1)));
        if splits {
            pieces.push((std::mem::take(&mut current), c == ','));
        } else {
            current.push(c);
        }
    }
    pieces.push((current, false));
    let pieces: Vec<(Vec<String>, bool)> = pieces
        .iter()
        .map(|(c, comma)| (text(c).split_whitespace().map(str::to_owned).collect::<Vec<_>>(), *comma))
        .filter(|(w, _)| !w.is_empty())
        .collect();
    // A comma right after a determiner and one word separates two adjectives of one phrase ("a
    // rare, limited edition figurine"), not two clauses: the piece goes on into the next.
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut open = false;
    for (words, comma) in pieces {
        match out.last_mut() {
            Some(last) if open => last.extend(words),
            _ => out.push(words),
        }
        let last = out.last().expect("pushed above");
        open = comma && last.len() >= 2 && PHRASE_OPENERS.contains(&last[last.len() - 2].as_str());
    }
    out
}

/// Words that open a noun phrase: after one of them and a single word, a comma sits between two
/// adjectives ([`clauses`]).
const PHRASE_OPENERS: [&str; 9] = ["a", "an", "the", "my", "our", "his", "her", "their", "your"];

fn is_number(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_digit()) || number_word(word).is_some()
}

/// The subject before a cue with the words between it and the cue removed: `None` when the
/// statement is not done (a plan, a wish, a condition, a negation).
fn subject(lex: &Lexicon, prefix: &[String]) -> Option<Vec<String>> {
    if prefix.iter().any(|w| lex.not_done.contains(w)) {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 0;
    'words: while i < prefix.len() {
        for phrase in &lex.between {
            if prefix[i..].starts_with(phrase) {
                i += phrase.len();
                continue 'words;
            }
        }
        out.push(prefix[i].clone());
        i += 1;
    }
    Some(out)
}

/// Whether a subject is the speaker: "i", "we", or the speaker with someone ("my partner and i");
/// in a fact's sentence, "the user".
fn is_speaker(subject: &[String]) -> bool {
    let last = subject.last().map(String::as_str);
    (matches!(last, Some("i" | "we")) && (subject.len() == 1 || subject.iter().any(|w| w == "and")))
        || subject == ["the", "user"]
}

/// The stems of a phrase's content words, less function words, time words and numbers.
fn content(lex: &Lexicon, words: &[String]) -> BTreeSet<String> {
    words
        .iter()
        .filter(|w| !lex.function.contains(*w) && !lex.times.contains(*w) && !is_number(w))
        .map(|w| stem(w))
        .collect()
}

/// The stem of a phrase's head: the last word of its first run of content words.
fn head(lex: &Lexicon, words: &[String]) -> Option<String> {
    let is_content = |w: &String| !lex.function.contains(w) && !lex.times.contains(w) && !is_number(w);
    let start = words.iter().position(is_content)?;
    let run = words[start..].iter().take_while(|w| is_content(w)).last()?;
    Some(stem(run))
}

/// The words a cue ends: those after it up to a conjunction, a relative word or a time word.
fn what_follows<'a>(lex: &Lexicon, rest: &'a [String]) -> &'a [String] {
    const BOUNDS: [&str; 14] = [
        "and", "but", "because", "since", "so", "after", "before", "when", "while", "as", "though",
        "although", "that", "which",
    ];
    let end = rest.iter().position(|w| BOUNDS.contains(&w.as_str()) || lex.times.contains(w));
    &rest[..end.unwrap_or(rest.len())]
}

/// Whether the words after a cue say it was a pause ("for a week", "until May", "today").
fn paused(lex: &Lexicon, rest: &[String]) -> bool {
    (0..rest.len()).any(|i| {
        lex.pause.iter().any(|p| rest[i..].starts_with(p))
            || rest[i] == "for" && lex.pause_after_for.iter().any(|p| rest[i + 1..].starts_with(p))
    })
}

/// The ending a clause states, if any.
fn clause(lex: &Lexicon, words: &[String]) -> Option<Ending> {
    // "not … anymore", "not … any more": what ended is between.
    let anymore = (0..words.len()).find(|&j| {
        words[j] == "anymore" || words[j] == "any" && words.get(j + 1).is_some_and(|w| w == "more")
    });
    if let Some(j) = anymore
        && let Some(i) = words[..j].iter().rposition(|w| w == "not" || w == "never")
    {
        let who = subject(lex, &words[..i])?;
        let thing = content(lex, &words[i + 1..j]);
        let head = head(lex, &words[i + 1..j]);
        let holder = if is_speaker(&who) { Holder::Speaker } else { Holder::Other(content(lex, &who)) };
        return (!thing.is_empty()).then_some(Ending { holder, thing, head });
    }
    for at in 0..words.len() {
        for (cue, group) in &lex.cues {
            if !words[at..].starts_with(cue) {
                continue;
            }
            let rest = &words[at + cue.len()..];
            if rest.first().is_some_and(|w| lex.not_after.contains(w)) || paused(lex, rest) {
                return None;
            }
            let who = subject(lex, &words[..at])?;
            let speaker = is_speaker(&who);
            let own_subject = !speaker && who.iter().any(|w| POSSESSIVES.contains(&w.as_str()));
            let ending = match group {
                Group::Subject if own_subject => Ending {
                    holder: Holder::Own,
                    thing: content(lex, &who),
                    head: who.last().map(|w| stem(w)),
                },
                Group::Subject => continue,
                Group::Follows | Group::OwnFollows => {
                    let object = what_follows(lex, rest);
                    let first = object.iter().find(|w| !["the", "a", "an"].contains(&w.as_str()));
                    if *group == Group::OwnFollows
                        && !object.first().is_some_and(|w| POSSESSIVES.contains(&w.as_str()))
                    {
                        continue;
                    }
                    // "sold 15 records", "sold three paintings": some items, not a thing held.
                    if first.is_some_and(|w| is_number(w) && w != "one") {
                        return None;
                    }
                    let holder = if speaker {
                        Holder::Speaker
                    } else if who.is_empty() {
                        return None;
                    } else {
                        Holder::Other(content(lex, &who))
                    };
                    Ending { holder, thing: content(lex, object), head: head(lex, object) }
                }
            };
            return (!ending.thing.is_empty()).then_some(ending);
        }
    }
    None
}

/// Whether a normalized word is a function word of the endings lexicon.
pub(crate) fn is_function(word: &str) -> bool {
    LEXICON.function.contains(word)
}

/// Whether a normalized word says nothing of what a statement is about: a function word or a
/// time word of the endings lexicon (shared with the value frames, [`super::frame`]).
pub(crate) fn is_filler(word: &str) -> bool {
    let lex = &*LEXICON;
    lex.function.contains(word)
        || lex.times.contains(word)
        || lex.between.iter().any(|p| p.len() == 1 && p[0] == word)
}

/// Who a sentence is about when it starts with one of the speaker's people or animals ("my
/// sister …", "the user's dog …"); `None` for the speaker.
pub(crate) fn holder(sentence: &str) -> Option<String> {
    let lex = &*LEXICON;
    let said = sentence
        .split_once(": ")
        .filter(|(who, _)| ["user", "assistant"].contains(who))
        .map_or(sentence, |(_, s)| s);
    let words: Vec<String> = text(said).split_whitespace().take(5).map(str::to_owned).collect();
    let rest = match words.iter().position(|w| ["my", "our", "users", "assistants"].contains(&w.as_str())) {
        Some(at) if at <= 1 => &words[at + 1..],
        _ => return None,
    };
    rest.iter().take(2).find(|w| lex.holders.contains(*w)).cloned()
}

/// The ending a sentence states (the first of its clauses that states one), if any. `sentence`
/// is the speaker's own words, with or without the `user: ` of a fact's excerpt.
///
/// ```
/// use mnemon::internals::ending::{ending, Holder};
/// let e = ending("user: I finally quit my job at Globex last Friday.").unwrap();
/// assert_eq!(e.holder, Holder::Speaker);
/// assert_eq!(e.thing.iter().map(String::as_str).collect::<Vec<_>>(), ["globex", "job"]);
/// assert!(ending("I stopped by the tennis club.").is_none(), "a visit");
/// assert!(ending("I need to cancel my Hulu subscription.").is_none(), "a plan");
/// assert!(ending("I stopped running for a week because of the flu.").is_none(), "a pause");
/// ```
pub fn ending(sentence: &str) -> Option<Ending> {
    let lex = &*LEXICON;
    let said = sentence
        .split_once(": ")
        .filter(|(who, _)| ["user", "assistant"].contains(who))
        .map_or(sentence, |(_, s)| s);
    clauses(said).iter().find_map(|words| clause(lex, words))
}

/// Whether `e` ends an earlier fact whose sentence (third person, "The user …") is
/// `content` and whose excerpt (the speaker's words) is `raw`: the fact is not itself an ending
/// or a denial, it is about the ending's holder, and it names what ended (one specific word and
/// at least half of its words; all of them when it names only generic heads; and its head, unless
/// that is generic: "I sold my red lamp" does not end "the user bought a red kayak").
pub fn ends(e: &Ending, content: &str, raw: &str) -> bool {
    let lex = &*LEXICON;
    let normal = text(content);
    let words: Vec<&str> = normal.split_whitespace().collect();
    if ending(raw).is_some() || words.iter().any(|w| ["not", "never", "no"].contains(w)) {
        return false;
    }
    let stems: BTreeSet<String> = words.iter().map(|w| stem(w)).collect();
    // Who the fact is about: "the user …" is the user; "the user's sister …" is the sister.
    let about_user = words.starts_with(&["the", "user"]);
    let about_users = words.starts_with(&["the", "users"]);
    let head = words.get(2).map(|w| stem(w));
    // "the user's partner and the user share …": the user too.
    let with_user =
        about_users && words.get(3..).is_some_and(|rest| rest.starts_with(&["and", "the", "user"]));
    let holder_ok = match &e.holder {
        Holder::Speaker | Holder::Own => {
            about_user || with_user || about_users && head.as_ref().is_some_and(|h| e.thing.contains(h))
        }
        Holder::Other(who) => !who.is_empty() && who.iter().all(|w| stems.contains(w)),
    };
    if !holder_ok {
        return false;
    }
    let matched = e.thing.intersection(&stems).count();
    let specific: Vec<&String> = e.thing.iter().filter(|w| !lex.generic.contains(*w)).collect();
    if e.head.as_ref().is_some_and(|h| !lex.generic.contains(h) && !stems.contains(h)) {
        return false;
    }
    if specific.is_empty() {
        matched == e.thing.len()
    } else {
        specific.iter().any(|w| stems.contains(*w)) && 2 * matched >= e.thing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(e: &Ending) -> Vec<&str> {
        e.thing.iter().map(String::as_str).collect()
    }

    #[test]
    fn who_and_what_ended() {
        let e = ending("Both of my roommates moved out last month.").unwrap();
        assert_eq!((e.holder.clone(), stems(&e)), (Holder::Own, vec!["roommat"]));
        let e = ending("My sister quit her job at Initech last week.").unwrap();
        assert_eq!(e.holder, Holder::Other(["sister".to_owned()].into()));
        let e = ending("I'm not vegetarian anymore, I started eating fish again.").unwrap();
        assert_eq!((e.holder.clone(), stems(&e)), (Holder::Speaker, vec!["vegetarian"]));
        let e = ending("We cancelled Netflix since we barely watched it.").unwrap();
        assert_eq!(stems(&e), ["netflix"]);
        assert!(ending("I sold 15 records at the flea market.").is_none());
        assert!(ending("We closed the food bank early on Friday.").is_none(), "not the speaker's own");
        assert!(ending("I closed my Etsy shop at the end of the year.").is_some());
        assert!(ending("I take the 7:15 train to work.").is_none());
    }

    #[test]
    fn an_ending_ends_the_fact_that_names_what_ended_for_the_same_holder() {
        let quit = ending("I finally quit my job at Globex last Friday.").unwrap();
        let at = "The user has been working at Globex as a data analyst.";
        assert!(ends(&quit, at, "user: I've been working at Globex as a data analyst."));
        assert!(!ends(&quit, "The user's sister works at Globex.", "user: My sister works at Globex."));
        assert!(!ends(&quit, "The user works at Initech.", "user: I work at Initech."));
        // Two adjectives of one phrase: the figurine ended, not everything rare.
        let sold = ending(
            "user: I recently sold a rare, limited edition figurine from my favorite cartoon to a collector.",
        )
        .unwrap();
        assert_eq!(sold.head.as_deref(), Some("figurin"));
        let records = "The user is looking for advice on how to store the user's rare vinyl records.";
        assert!(!ends(&sold, records, "user: I'm looking for advice on how to store my rare vinyl records."));
        let sister = ending("My sister quit her job at Initech.").unwrap();
        assert!(!ends(&sister, "The user works at Initech.", "user: I work at Initech."));
        assert!(ends(&sister, "The user's sister works at Initech.", "user: My sister works at Initech."));
        let netflix = ending("I cancelled my Netflix subscription.").unwrap();
        assert!(!ends(
            &netflix,
            "The user has a Spotify subscription.",
            "user: I have a Spotify subscription."
        ));
        let any = ending("I cancelled my subscription.").unwrap();
        assert!(ends(&any, "The user has a Spotify subscription.", "user: I have a Spotify subscription."));
        assert!(
            !ends(&quit, "The user quit the job at Globex.", "user: I quit my job at Globex."),
            "an ending"
        );
        // The head names the thing; a word it shares with another thing does not.
        let lamp = ending("I sold my red lamp.").unwrap();
        assert_eq!(lamp.head.as_deref(), Some("lamp"));
        assert!(ends(&lamp, "The user bought a red lamp.", "user: I bought a red lamp."));
        assert!(!ends(&lamp, "The user bought a red kayak.", "user: I bought a red kayak."));
        let gym = ending("I cancelled my gym membership at Planet Fitness.").unwrap();
        assert_eq!(gym.head.as_deref(), Some("membership"), "a generic head: a specific word decides");
        assert!(ends(&gym, "The user has a gym membership.", "user: I have a gym membership."));
    }
}
