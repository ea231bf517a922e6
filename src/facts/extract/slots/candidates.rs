//! Which sentences of a round the slots contract reads: its first-person statements (openers
//! and lead-ins cut, an unsaid subject supplied), those that carry a value going to the model,
//! and which of the others describe their speaker.

use super::*;

/// Words that open a sentence whose subject, the speaker, goes unsaid ("Just got back from a
/// road trip"), before a verb.
pub(super) const UNSAID_OPENERS: [&str; 5] = ["just", "finally", "recently", "also", "still"];

/// Words ending in "ed" that are not a past verb opening a sentence.
pub(super) const NOT_PAST: [&str; 8] = ["based", "need", "needed", "indeed", "bed", "red", "speed", "seed"];

/// Verbs that make an opening "-ing" phrase the sentence's subject ("Spending time with loved
/// ones is important"), not the speaker's doing.
pub(super) const FINITE: [&str; 18] = [
    "is", "was", "are", "were", "isnt", "wasnt", "must", "can", "could", "would", "should", "will", "makes",
    "made", "beats", "creates", "brings", "means",
];

/// A statement with its unsaid subject supplied, the speaker: "Finishing up choreography …" is
/// "I'm finishing up …" (unless the "-ing" phrase is the subject of a verb after it), "Been only
/// to Rome once" is "I've been …", "Just got back …" and "Started a new job …" take "I". `None`
/// for any other opening, and for one that is not a word ("[shared an image: …]").
pub(super) fn supplied(text: &str) -> Option<String> {
    if !text.starts_with(char::is_alphabetic) {
        return None;
    }
    let words = normalize(text);
    let first = words.first()?.clone();
    let subject = if first == "been" {
        "I've"
    } else if first.len() > 4 && first.ends_with("ing") && !words.iter().any(|w| FINITE.contains(&w.as_str()))
    {
        "I'm"
    } else if UNSAID_OPENERS.contains(&first.as_str())
        || first.len() > 4 && first.ends_with("ed") && !NOT_PAST.contains(&first.as_str())
    {
        "I"
    } else {
        return None;
    };
    let mut chars = text.chars();
    let head: String = chars.next()?.to_lowercase().collect();
    Some(format!("{subject} {head}{}", chars.as_str()))
}

/// The sentences of a text: split at line ends, and after `.`, `!` or `?` followed by a space.
pub(super) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut start = 0;
        for (k, &(i, c)) in chars.iter().enumerate() {
            let ends =
                matches!(c, '.' | '!' | '?') && chars.get(k + 1).is_none_or(|(_, next)| next.is_whitespace());
            if ends {
                let end = i + c.len_utf8();
                let s = line[start..end].trim();
                if !s.is_empty() {
                    out.push(s);
                }
                start = end;
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest);
        }
    }
    out
}

pub(super) fn starts_with_any<'a>(words: &[String], phrases: &'a [Vec<String>]) -> Option<&'a Vec<String>> {
    phrases.iter().find(|p| words.starts_with(p))
}

pub(super) fn holds_any(words: &[String], phrases: &[Vec<String>]) -> bool {
    phrases.iter().any(|p| {
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        contains_phrase(words, &p)
    })
}

/// `sentence` without a lead-in of up to three words that ends in a colon ("Big news:",
/// "Update:") when a first-person statement follows it.
pub(super) fn strip_lead_in(sentence: &str) -> &str {
    for w in sentence.split_whitespace().take(3) {
        if w.ends_with(':') {
            let end = w.as_ptr() as usize - sentence.as_ptr() as usize + w.len();
            let rest = sentence[end..].trim_start();
            let first_person = normalize(rest).first().is_some_and(|f| FIRST_PERSON.contains(&f.as_str()));
            return if first_person { rest } else { sentence };
        }
    }
    sentence
}

/// `sentence` without its leading openers ("By the way, I …", "So I …"), each cut only at whole
/// words and only when a comma or a first-person word follows it ("So far I …" keeps its "So").
pub(super) fn strip_openers(sentence: &str) -> &str {
    let mut rest = sentence;
    while let Some(opener) = starts_with_any(&normalize(rest), &LEXICON.openers) {
        // The written words that make up the opener's normalized words.
        let (mut taken, mut end, mut comma) = (0, 0, false);
        for w in rest.split_whitespace() {
            if taken >= opener.len() {
                break;
            }
            taken += normalize(w).len();
            end = w.as_ptr() as usize - rest.as_ptr() as usize + w.len();
            comma = w.ends_with([',', ';', ':']);
        }
        let next =
            rest[end..].trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ',' | '-' | '—' | '–'));
        let first_person = normalize(next).first().is_some_and(|w| FIRST_PERSON.contains(&w.as_str()));
        if taken != opener.len() || next.is_empty() || !(comma || first_person) {
            break;
        }
        rest = next;
    }
    rest
}

/// The statement a sentence makes, if it makes one: openers cut off; a question only for the
/// statement before its question clause; no requests.
pub(super) fn statement(sentence: &str) -> Option<String> {
    let lex = &*LEXICON;
    let s = strip_openers(strip_lead_in(sentence));
    let s = if s.ends_with('?') {
        // The first comma that opens a question clause ends the statement.
        let cut = s.match_indices(", ").map(|(i, _)| i).find(|&i| {
            let after = normalize(&s[i + 2..]);
            starts_with_any(&after, &lex.clauses).is_some()
        })?;
        s[..cut].trim_end()
    } else {
        s
    };
    let words = normalize(s);
    if starts_with_any(&words, &lex.requests).is_some() || holds_any(&words, &lex.asks) {
        return None;
    }
    Some(capitalized(s.to_owned()))
}

/// `text` with its first letter upper case.
pub(super) fn capitalized(mut text: String) -> String {
    if let Some(first) = text.chars().next() {
        let upper: String = first.to_uppercase().collect();
        text.replace_range(..first.len_utf8(), &upper);
    }
    text
}

/// Whether a statement is a first-person one of a usable length.
pub(super) fn usable(text: &str) -> bool {
    let words = normalize(text);
    (MIN_WORDS..=MAX_WORDS).contains(&words.len())
        && (words.iter().any(|w| FIRST_PERSON.contains(&w.as_str())) || we_contracted(text))
}

/// How many kinds of value a usable statement carries (a number, a name, a time, a relation
/// cue).
pub(super) fn cues(text: &str) -> usize {
    let lex = &*LEXICON;
    let words = normalize(text);
    let number = text.chars().any(|c| c.is_ascii_digit()) || words.iter().any(|w| number_word(w).is_some());
    // A digit would pass for a name: look without the digits.
    let name = has_digit_or_name(&text.chars().filter(|c| !c.is_ascii_digit()).collect::<String>());
    let time = words
        .iter()
        .any(|w| lex.times.contains(w) || w.strip_suffix('s').is_some_and(|b| lex.times.contains(b)));
    let cue = holds_any(&words, &lex.cues);
    [number, name, time, cue].into_iter().filter(|b| *b).count()
}

/// Whether a text holds "we're", "we'd" or "we'll" as written: normalized, they read "were",
/// "wed", "well", which are not first person.
pub(super) fn we_contracted(text: &str) -> bool {
    text.to_lowercase()
        .replace('\u{2019}', "'")
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| matches!(w, "we're" | "we'd" | "we'll"))
}

/// The first-person statements of a round of a usable length (those whose subject goes unsaid
/// read with it, [`supplied`]), in turn and sentence order, each with how many kinds of value it
/// carries ([`cues`]). User turns always; an assistant turn only when it names its speaker (a
/// person in a conversation between people, not a model).
pub(super) fn statements(turns: &[Turn]) -> Vec<(usize, Candidate)> {
    let mut found = Vec::new();
    for turn in turns.iter().filter(|t| t.role == Role::User || t.speaker.is_some()) {
        // A stored turn's time always parses; the fallback only keeps this total.
        let anchor = Timestamp::parse(&turn.ts)
            .map_or(NaiveDate::from_ymd_opt(2000, 1, 1).expect("a valid date"), |t| t.date());
        let mut before: Option<&str> = None;
        for sentence in sentences(&turn.content) {
            let read = statement(sentence).and_then(|text| {
                if usable(&text) {
                    Some((text, None))
                } else {
                    supplied(&text).filter(|s| usable(s)).map(|s| (s, Some(text)))
                }
            });
            if let Some((text, said)) = read {
                let points_back = normalize(&text).iter().any(|w| POINTERS.contains(&w.as_str()));
                let context = before.filter(|_| points_back).map(str::to_owned);
                found.push((cues(&text), Candidate { role: turn.role, text, context, anchor, said }));
            }
            before = Some(sentence);
        }
    }
    found
}

/// Which of `statements` go to the model, as indices in order: those that carry a value, at most
/// [`MAX_CANDIDATES`], those with the most kinds of value first when there are more.
pub(super) fn chosen(statements: &[(usize, Candidate)]) -> Vec<usize> {
    let mut found: Vec<(usize, usize)> = statements
        .iter()
        .enumerate()
        .filter(|(_, (score, c))| *score > 0 && c.said.is_none())
        .map(|(i, (s, _))| (*s, i))
        .collect();
    if found.len() > MAX_CANDIDATES {
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        found.truncate(MAX_CANDIDATES);
        found.sort_by_key(|c| c.1);
    }
    found.into_iter().map(|(_, i)| i).collect()
}

/// The candidate sentences of a round, the ones the model reads, in turn and sentence order:
/// its first-person statements that carry a value, at most [`MAX_CANDIDATES`].
pub fn candidates(turns: &[Turn]) -> Vec<Candidate> {
    let all = statements(turns);
    chosen(&all).into_iter().map(|i| all[i].1.clone()).collect()
}

/// Words that open a sentence about something said before (normalized: "it's" is "its").
pub(super) const OPENING_POINTERS: [&str; 16] = [
    "it", "its", "they", "theyre", "theyve", "theyll", "them", "their", "those", "these", "this", "that",
    "thats", "there", "theres", "ones",
];

/// Fewest content words a description holds ([`describes`]).
pub(super) const DESCRIPTION_WORDS: usize = 4;

/// Words that name the speaker alone (normalized): "we" may be anyone the speaker is with.
pub(super) const SPEAKER_ALONE: [&str; 9] = ["i", "im", "ive", "id", "ill", "me", "my", "mine", "myself"];

/// Whether a statement is about its speaker and not social talk: it names the speaker alone
/// ("I", "my"; "we" may be anyone, and "We should cherish every moment" says nothing of the
/// speaker), and it does not speak to the listener, greet, thank, agree or invite
/// (`lexicons/slot_descriptions.txt`).
pub(super) fn of_speaker(text: &str) -> bool {
    let words = normalize(text);
    words.iter().any(|w| SPEAKER_ALONE.contains(&w.as_str())) && !holds_any(&words, &LEXICON.social)
}

/// Whether a statement with no record and no date is kept as a description of its speaker
/// (`lexicons/slot_descriptions.txt`): it is about its speaker ([`of_speaker`]), holds at least
/// [`DESCRIPTION_WORDS`] content words (four letters or more, not function words), and does not
/// open with a word that points back ("It's special to me" names nothing).
pub(super) fn describes(text: &str) -> bool {
    let lex = &*LEXICON;
    let words = normalize(text);
    let content = words
        .iter()
        .filter(|w| {
            w.chars().count() >= 4 && !lex.function_words.contains(*w) && !FIRST_PERSON.contains(&w.as_str())
        })
        .count();
    let points_back = words.first().is_some_and(|w| OPENING_POINTERS.contains(&w.as_str()));
    content >= DESCRIPTION_WORDS && !points_back && of_speaker(text)
}
