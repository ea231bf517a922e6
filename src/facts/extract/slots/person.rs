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

/// Words after "I" that change in the third person otherwise than by an "s" ("I am" → "the user
/// is").
pub(super) const IRREGULAR: [(&str, &str); 5] =
    [("am", "is"), ("have", "has"), ("do", "does"), ("don't", "doesn't"), ("haven't", "hasn't")];

/// Words after "I" that stay as they are: modals, the past of be, and the function words that can
/// follow a subject ("I and my wife", "I too"). A word of other than lower-case letters ("can't",
/// "2"), one ending in "ed" but not "eed" (a past form, not "need"), one ending in "ly" that is not
/// a verb ([`LY_VERBS`]: an adverb) and an irregular past ([`PAST`]) stay as well; any other word
/// is a present-tense verb and takes an "s".
pub(super) const NOT_PRESENT: [&str; 33] = [
    "can", "could", "will", "would", "shall", "should", "may", "might", "must", "ought", "was", "were",
    "and", "or", "but", "nor", "too", "as", "at", "in", "on", "with", "from", "to", "for", "of", "if", "so",
    "myself", "alone", "wanna", "gonna", "gotta",
];

/// English irregular past forms (a closed class): after "I" they stay as they are.
pub(super) const PAST: [&str; 127] = [
    "arose",
    "ate",
    "awoke",
    "became",
    "began",
    "bent",
    "bet",
    "bit",
    "bled",
    "blew",
    "bore",
    "bought",
    "bound",
    "broke",
    "brought",
    "built",
    "burnt",
    "came",
    "caught",
    "chose",
    "cost",
    "crept",
    "cut",
    "dealt",
    "did",
    "dove",
    "drank",
    "dreamt",
    "drew",
    "drove",
    "dug",
    "fed",
    "fell",
    "felt",
    "fled",
    "flew",
    "forbade",
    "forgave",
    "forgot",
    "fought",
    "found",
    "froze",
    "gave",
    "got",
    "grew",
    "had",
    "heard",
    "held",
    "hid",
    "hit",
    "hung",
    "hurt",
    "kept",
    "knelt",
    "knew",
    "laid",
    "lay",
    "leapt",
    "learnt",
    "led",
    "left",
    "lent",
    "let",
    "lit",
    "lost",
    "made",
    "meant",
    "met",
    "mistook",
    "overcame",
    "paid",
    "put",
    "quit",
    "ran",
    "rang",
    "rode",
    "rose",
    "said",
    "sang",
    "sank",
    "sat",
    "saw",
    "sent",
    "set",
    "shone",
    "shook",
    "shot",
    "shut",
    "slept",
    "slid",
    "sold",
    "sought",
    "spat",
    "sped",
    "spent",
    "split",
    "spoke",
    "sprang",
    "spread",
    "spun",
    "stank",
    "stole",
    "stood",
    "strove",
    "struck",
    "stuck",
    "stung",
    "swam",
    "swept",
    "swore",
    "swung",
    "taught",
    "thought",
    "threw",
    "told",
    "took",
    "tore",
    "understood",
    "undertook",
    "went",
    "wept",
    "withdrew",
    "woke",
    "won",
    "wore",
    "wound",
    "wrote",
];

/// The third-person present of a verb: "go" → "goes", "watch" → "watches", "try" → "tries",
/// "play" → "plays", "bike" → "bikes".
pub(super) fn third_person_s(verb: &str) -> String {
    let consonant_y =
        verb.len() > 1 && verb.ends_with('y') && !verb[..verb.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &verb[..verb.len() - 1])
    } else if ["s", "sh", "ch", "x", "z", "o"].iter().any(|e| verb.ends_with(e)) {
        format!("{verb}es")
    } else {
        format!("{verb}s")
    }
}

/// Verbs that end in "ly" (every other word ending so after "I" is an adverb: "I personally").
pub(super) const LY_VERBS: [&str; 13] = [
    "apply", "reply", "rely", "fly", "supply", "comply", "imply", "multiply", "ally", "rally", "tally",
    "bully", "sully",
];

fn is_ly_adverb(word: &str) -> bool {
    word.ends_with("ly") && !LY_VERBS.contains(&word)
}

/// What "I <word>" is as "the user <word>": `None` when the word stays as it is.
pub(super) fn agreeing(word: &str) -> Option<String> {
    if let Some((_, s)) = IRREGULAR.iter().find(|(v, _)| *v == word) {
        return Some((*s).to_owned());
    }
    let stays = !word.chars().all(|c| c.is_ascii_lowercase())
        || word.len() < 2
        || word.ends_with("ed") && !word.ends_with("eed")
        || is_ly_adverb(word)
        || NOT_PRESENT.contains(&word)
        || PAST.contains(&word)
        || ADVERBS.contains(&word);
    (!stays).then(|| third_person_s(word))
}

/// Adverbs between "I" and its verb ("I usually go"), besides those ending in "ly".
pub(super) const ADVERBS: [&str; 20] = [
    "also",
    "just",
    "still",
    "often",
    "always",
    "never",
    "actually",
    "even",
    "only",
    "ever",
    "almost",
    "already",
    "sometimes",
    "now",
    "then",
    "not",
    "first",
    "once",
    "later",
    "soon",
];

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
            // An adverb between: agree with the word after it ("I usually go").
            *agree = ADVERBS.contains(&key.as_str()) || is_ly_adverb(&key);
            // Only a word as it was written in lower case ("I Love" is a title).
            if core.chars().all(|c| c.is_ascii_lowercase() || c == '\'' || c == '’') {
                agreeing(&key)
            } else {
                None
            }
        }
        _ => None,
    };
    match replaced {
        Some(r) => format!("{pre}{r}{post}"),
        None => word.to_owned(),
    }
}
