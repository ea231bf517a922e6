//! A statement in the third person ("I love" becomes "the user loves") and the subject a
//! fact is keyed by (`user's <head noun>`).

use super::*;

/// `user's <head>` (`assistant's <head>` for the other speaker's sentence): the entity's head
/// noun (before a preposition, after determiners), singular. "my new postcards" and "postcards"
/// give one subject, so their facts share a key; two speakers' homes do not.
pub fn subject(entity: &str, role: Role) -> String {
    let words = normalize(entity);
    let start = words.iter().take_while(|w| DETERMINERS.contains(&w.as_str())).count();
    let end = words
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, w)| PREPOSITIONS.contains(&w.as_str()))
        .map_or(words.len(), |(i, _)| i);
    let phrase = words.get(start..end).unwrap_or_default();
    // A generic head names its thing by the word before it: "yoga classes" is yoga, as "yoga" is.
    let head = match phrase {
        [.., thing, last] if GENERIC_HEADS.contains(&singular(last).as_str()) => Some(thing),
        [.., last] => Some(last),
        [] => None,
    };
    let owner = role.as_str();
    match head {
        Some(head) => format!("{owner}'s {}", singular(head)),
        None => owner.to_owned(),
    }
}

/// Head nouns that say what kind of thing, not which: the word before them names it.
pub(super) const GENERIC_HEADS: [&str; 12] = [
    "class",
    "lesson",
    "session",
    "course",
    "practice",
    "routine",
    "habit",
    "collection",
    "activity",
    "hobby",
    "stuff",
    "thing",
];

/// An English plural's singular by its ending ("cups" → "cup", "classes" → "class", "stories"
/// → "story"); other words as they are.
pub(super) fn singular(word: &str) -> String {
    let n = word.len();
    if n > 4 && word.ends_with("ies") {
        format!("{}y", &word[..n - 3])
    } else if n > 4 && ["sses", "shes", "ches", "xes", "zes"].iter().any(|e| word.ends_with(e)) {
        word[..n - 2].to_owned()
    } else if n > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word[..n - 1].to_owned()
    } else {
        word.to_owned()
    }
}

/// Present-tense verbs that take an "s" after "the user" (any other word after "I" is kept:
/// a past form, a modal, an adverb).
pub(super) const VERBS: [(&str, &str); 35] = [
    ("am", "is"),
    ("ask", "asks"),
    ("have", "has"),
    ("do", "does"),
    ("don't", "doesn't"),
    ("haven't", "hasn't"),
    ("go", "goes"),
    ("love", "loves"),
    ("like", "likes"),
    ("live", "lives"),
    ("work", "works"),
    ("want", "wants"),
    ("need", "needs"),
    ("think", "thinks"),
    ("hope", "hopes"),
    ("plan", "plans"),
    ("enjoy", "enjoys"),
    ("prefer", "prefers"),
    ("play", "plays"),
    ("feel", "feels"),
    ("know", "knows"),
    ("try", "tries"),
    ("run", "runs"),
    ("use", "uses"),
    ("own", "owns"),
    ("hate", "hates"),
    ("keep", "keeps"),
    ("get", "gets"),
    ("take", "takes"),
    ("make", "makes"),
    ("eat", "eats"),
    ("drink", "drinks"),
    ("train", "trains"),
    ("study", "studies"),
    ("teach", "teaches"),
];

/// Adverbs between "I" and its verb ("I usually go").
pub(super) const ADVERBS: [&str; 9] =
    ["usually", "also", "really", "just", "still", "often", "always", "never", "actually"];

/// The sentence in the third person: "I've" → "the user has", "my" → "the user's", "I love" →
/// "the user loves"; for an assistant turn, "the assistant". Ends with a full stop.
pub fn third_person(text: &str, role: Role) -> String {
    let who = format!("the {}", role.as_str());
    // Words split at white space, and at a dash glued between two ("happening--I'm").
    let words: Vec<Vec<&str>> = text
        .split_whitespace()
        .map(|w| {
            let mut parts = Vec::new();
            let mut rest = w;
            while let Some((at, dash)) =
                ["--", "—"].iter().filter_map(|d| rest.find(d).map(|i| (i, *d))).min()
            {
                parts.push(&rest[..at]);
                parts.push(dash);
                rest = &rest[at + dash.len()..];
            }
            parts.push(rest);
            parts
        })
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len() + 4);
    let mut agree = false;
    for parts in words {
        let mut joined = String::new();
        for word in parts {
            if word.is_empty() || word == "--" || word == "—" {
                joined.push_str(word);
                continue;
            }
            joined.push_str(&in_person(word, &who, &mut agree));
        }
        out.push(joined);
    }
    let mut sentence = capitalized(out.join(" "));
    if !sentence.ends_with(['.', '!', '?']) {
        sentence.push('.');
    }
    sentence
}

/// One word of [`third_person`] in the third person, `who` for the speaker; `agree` carries
/// whether the word before was the speaker as subject (so "love" is "loves").
pub(super) fn in_person(word: &str, who: &str, agree: &mut bool) -> String {
    let lead = word.len() - word.trim_start_matches(|c: char| !c.is_alphanumeric()).len();
    let core_end = word.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’').len();
    let (pre, core, post) = (&word[..lead], &word[lead..core_end.max(lead)], &word[core_end.max(lead)..]);
    let key = core.to_lowercase().replace('’', "'");
    let replaced = match key.as_str() {
        "i" => {
            *agree = true;
            Some(who.to_owned())
        }
        "i'm" => Some(format!("{who} is")),
        "i've" => Some(format!("{who} has")),
        "i'd" => Some(format!("{who} would")),
        "i'll" => Some(format!("{who} will")),
        "my" | "mine" => Some(format!("{who}'s")),
        "me" | "myself" => Some(who.to_owned()),
        _ if *agree => {
            let verb = VERBS.iter().find(|(v, _)| *v == key).map(|(_, s)| (*s).to_owned());
            // An adverb between: agree with the word after it.
            *agree = ADVERBS.contains(&key.as_str());
            verb
        }
        _ => None,
    };
    match replaced {
        Some(r) => format!("{pre}{r}{post}"),
        None => word.to_owned(),
    }
}
