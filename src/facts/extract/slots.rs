//! The slots contract: the model reads only a round's candidate sentences and fills one record
//! per fact; the fact's sentence and excerpt are the speaker's own words.
//!
//! Under the open contract a small model writes each fact as prose, and on real conversations it
//! wrote the prompt's worked example into unrelated rounds, ran sentences on into the user's next
//! question, and gave free predicates whose keys never met, so nothing was ever superseded. Here:
//!
//! - [`candidates`] picks, deterministically, the first-person statements of a round that carry a
//!   value: a digit or number word, a name, a time word, or a relation cue
//!   (`lexicons/fact_cues.txt`). Questions and requests do not go; a question's leading statement
//!   ("I'm changing my limit to two cups, do you think …?") does. A round without a candidate
//!   skips the model.
//! - The model reads the numbered candidates only and writes records `{n, entity, relation,
//!   value}`, `relation` from a closed vocabulary ([`RELATIONS`]) that the grammar enforces.
//! - [`parse`] keeps a record only when its value is copied from its sentence and its entity from
//!   the sentence or the one before it (for "17 new ones"), so nothing can be invented; one per
//!   sentence. The fact's text is the sentence in the third person, its excerpt the sentence
//!   itself, its time mention the sentence's own as the date resolver reads it ([`mention`]), and
//!   its triple `user's <entity head> | <relation> | <value>`: a later value of the same thing
//!   meets the earlier one under one key, and the conflict rules can supersede it.
//! - A first-person statement no record holds is still a fact, with no key: dated when it holds a
//!   time mention that resolves ("I ran a charity race last Saturday"), else a description of its
//!   speaker when it says something of substance ([`describes`]: "I'm doing kickboxing at the
//!   local gym"). Descriptions cost no decode: the model reads only the candidates.
//!
//! Everything here is a pure function of the round and the model's output.

use std::collections::HashSet;
use std::sync::LazyLock;

use chrono::NaiveDate;
use serde_json::Value;

use super::{ExtractedFact, MAX_FACTS};
use crate::facts::normalize::{entries, number_word};
use crate::facts::prefilter::{contains_phrase, has_digit_or_name, normalize};
use crate::facts::resolve::resolve;
use crate::model::round::{Role, Turn};
use crate::model::time::Timestamp;

/// The prompt: instructions, then worked examples as chat turns.
pub const PROMPT: &str = include_str!("../../../prompts/slots.md");
const CUES: &str = include_str!("../../../lexicons/fact_cues.txt");
const SLOT_CUES: &str = include_str!("../../../lexicons/slot_cues.txt");
/// Relations read from the words before a value ([`cued`]); part of the facts rules.
const SLOT_RELATIONS: &str = include_str!("../../../lexicons/slot_relations.txt");
/// Number words are read through the conflict normalizer's lexicon; the file is hashed here
/// because the candidates depend on it.
const NUMBER_WORDS: &str = include_str!("../../../lexicons/number_words.txt");
/// What a description is ([`describes`]): social talk and function words; part of the facts rules.
const DESCRIPTIONS: &str = include_str!("../../../lexicons/slot_descriptions.txt");
/// Version of the rules that choose what the model reads ([`candidates`], [`input`]), hashed with
/// the lexicons into the extractor's prompt pin: another version is another model input.
const CANDIDATES_VERSION: &str = "slots-candidates-v3 at-most=6 words=3..60 colon-lead-ins we-contractions";
/// Version of the rules that make facts of the model's records ([`facts`]), pinned in stores built
/// with an extractor with the relation lexicon ([`facts_rules`]). A cache re-parses stored
/// outputs, so these rules can change without a model call.
pub const FACTS_VERSION: &str = "slots-facts-v5 one-per-sentence counted<=3 mention<=5 names measured-values cued-relations speaker-holds generic-heads single-is-one time-units-are-durations dated-statements speaker-owned goals-numbered places-elsewhere-not-times increments descriptions ratios unsaid-subjects dashes-split-words speaker-alone plain-records-of-speaker no-ago-values vocatives listener-holds years-not-counts appositions places-happened";

/// The facts rules' pin: [`FACTS_VERSION`] and the blake3 of the relation and description
/// lexicons.
pub fn facts_rules() -> String {
    let hash = |text: &str| blake3::hash(text.as_bytes()).to_hex()[..16].to_owned();
    format!("{FACTS_VERSION} relations={} descriptions={}", hash(SLOT_RELATIONS), hash(DESCRIPTIONS))
}

/// At most this many sentences of a round go to the model.
pub const MAX_CANDIDATES: usize = 6;
const MIN_WORDS: usize = 3;
const MAX_WORDS: usize = 60;

/// The relations a record may name, and the predicate each fact gets. All from `count` to `name`
/// hold one value at a time for their entity (`lexicons/functional.txt`): a new value supersedes
/// the old. `other` is a fact without a relation (no key, never superseded).
pub const RELATIONS: [(&str, &str); 17] = [
    ("count", "count"),
    ("frequency", "frequency"),
    ("duration", "duration"),
    ("score", "score"),
    ("goal", "goal"),
    ("schedule", "schedule"),
    ("place", "place"),
    ("home", "lives in"),
    ("workplace", "works at"),
    ("job", "works as"),
    ("name", "name is"),
    ("owns", "owns"),
    ("likes", "likes"),
    ("dislikes", "dislikes"),
    ("plans", "plans"),
    ("did", "did"),
    ("other", "other"),
];

/// Words that name the speaker as an entity.
const SPEAKER: [&str; 8] = ["i", "me", "myself", "user", "the user", "we", "us", "ourselves"];
/// First-person words (normalized: apostrophes removed).
const FIRST_PERSON: [&str; 14] =
    ["i", "im", "ive", "id", "ill", "me", "my", "mine", "myself", "we", "our", "ours", "us", "weve"];
/// Words that point back to something the sentence before named.
const POINTERS: [&str; 6] = ["ones", "it", "them", "they", "those", "these"];
/// Leading words of an entity that are not its head.
const DETERMINERS: [&str; 12] =
    ["my", "our", "the", "a", "an", "his", "her", "their", "your", "this", "that", "some"];
/// Words after which an entity's head has been named ("cups of coffee": cups).
const PREPOSITIONS: [&str; 10] = ["of", "from", "at", "in", "on", "for", "with", "to", "per", "by"];

struct Lexicon {
    openers: Vec<Vec<String>>,
    requests: Vec<Vec<String>>,
    asks: Vec<Vec<String>>,
    clauses: Vec<Vec<String>>,
    cues: Vec<Vec<String>>,
    times: HashSet<String>,
    /// Per relation, the phrases that name it before a value.
    relations: Vec<(String, Vec<Vec<String>>)>,
    social: Vec<Vec<String>>,
    function_words: HashSet<String>,
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let group = |name: &str| -> Vec<Vec<String>> {
        let mut g: Vec<Vec<String>> =
            entries(CUES).into_iter().filter(|(g, _)| g == name).map(|(_, l)| normalize(&l)).collect();
        // Longest first, so that "speaking of which" is taken whole.
        g.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        g
    };
    Lexicon {
        openers: group("openers"),
        requests: group("requests"),
        asks: group("asks"),
        clauses: group("question clauses"),
        cues: group("cues"),
        times: entries(SLOT_CUES)
            .into_iter()
            .filter(|(g, _)| g == "dates and times")
            .map(|(_, l)| l)
            .collect(),
        relations: entries(SLOT_RELATIONS).into_iter().fold(Vec::new(), |mut groups, (group, line)| {
            match groups.last_mut() {
                Some((name, phrases)) if *name == group => phrases.push(normalize(&line)),
                _ => groups.push((group, vec![normalize(&line)])),
            }
            groups
        }),
        social: entries(DESCRIPTIONS)
            .into_iter()
            .filter(|(g, _)| g == "social")
            .map(|(_, l)| normalize(&l))
            .collect(),
        function_words: entries(DESCRIPTIONS)
            .into_iter()
            .filter(|(g, _)| g == "function words")
            .map(|(_, l)| l)
            .collect(),
    }
});

/// blake3 over the candidate rules' version and the lexicons the candidates are chosen by.
pub fn rules_blake3() -> String {
    let framed = serde_json::json!([CANDIDATES_VERSION, CUES, SLOT_CUES, NUMBER_WORDS]);
    blake3::hash(framed.to_string().as_bytes()).to_hex().to_string()
}

/// One statement of a round: a candidate the model reads ([`candidates`]), or one only the rules
/// read (a dated statement or a description, [`facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Whose turn it is from.
    pub role: Role,
    /// The statement, as written (openers and a trailing question cut off), its subject supplied
    /// when it went unsaid.
    pub text: String,
    /// The sentence before it in its turn, when the statement points back ("ones", "it").
    pub context: Option<String>,
    /// Its turn's date, which time mentions are read against.
    pub anchor: NaiveDate,
    /// The sentence as written when it has no subject and `text` supplies one ("Been only to
    /// Rome once." is read "I've been only to Rome once."); such a sentence never goes to the
    /// model.
    pub said: Option<String>,
}

/// Words that open a sentence whose subject, the speaker, goes unsaid ("Just got back from a
/// road trip"), before a verb.
const UNSAID_OPENERS: [&str; 5] = ["just", "finally", "recently", "also", "still"];
/// Words ending in "ed" that are not a past verb opening a sentence.
const NOT_PAST: [&str; 8] = ["based", "need", "needed", "indeed", "bed", "red", "speed", "seed"];

/// Verbs that make an opening "-ing" phrase the sentence's subject ("Spending time with loved
/// ones is important"), not the speaker's doing.
const FINITE: [&str; 18] = [
    "is", "was", "are", "were", "isnt", "wasnt", "must", "can", "could", "would", "should", "will", "makes",
    "made", "beats", "creates", "brings", "means",
];

/// A statement with its unsaid subject supplied, the speaker: "Finishing up choreography …" is
/// "I'm finishing up …" (unless the "-ing" phrase is the subject of a verb after it), "Been only
/// to Rome once" is "I've been …", "Just got back …" and "Started a new job …" take "I". `None`
/// for any other opening, and for one that is not a word ("[shared an image: …]").
fn supplied(text: &str) -> Option<String> {
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
fn sentences(text: &str) -> Vec<&str> {
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

fn starts_with_any<'a>(words: &[String], phrases: &'a [Vec<String>]) -> Option<&'a Vec<String>> {
    phrases.iter().find(|p| words.starts_with(p))
}

fn holds_any(words: &[String], phrases: &[Vec<String>]) -> bool {
    phrases.iter().any(|p| {
        let p: Vec<&str> = p.iter().map(String::as_str).collect();
        contains_phrase(words, &p)
    })
}

/// `sentence` without a lead-in of up to three words that ends in a colon ("Big news:",
/// "Update:") when a first-person statement follows it.
fn strip_lead_in(sentence: &str) -> &str {
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
fn strip_openers(sentence: &str) -> &str {
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
fn statement(sentence: &str) -> Option<String> {
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
fn capitalized(mut text: String) -> String {
    if let Some(first) = text.chars().next() {
        let upper: String = first.to_uppercase().collect();
        text.replace_range(..first.len_utf8(), &upper);
    }
    text
}

/// Whether a statement is a first-person one of a usable length.
fn usable(text: &str) -> bool {
    let words = normalize(text);
    (MIN_WORDS..=MAX_WORDS).contains(&words.len())
        && (words.iter().any(|w| FIRST_PERSON.contains(&w.as_str())) || we_contracted(text))
}

/// How many kinds of value a usable statement carries (a number, a name, a time, a relation
/// cue).
fn cues(text: &str) -> usize {
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
fn we_contracted(text: &str) -> bool {
    text.to_lowercase()
        .replace('\u{2019}', "'")
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| matches!(w, "we're" | "we'd" | "we'll"))
}

/// The first-person statements of a round of a usable length (those whose subject goes unsaid
/// read with it, [`supplied`]), in turn and sentence order, each with how many kinds of value it
/// carries ([`cues`]). User turns always; an assistant turn only when it names its speaker (a
/// person in a conversation between people, not a model).
fn statements(turns: &[Turn]) -> Vec<(usize, Candidate)> {
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
fn chosen(statements: &[(usize, Candidate)]) -> Vec<usize> {
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
const OPENING_POINTERS: [&str; 16] = [
    "it", "its", "they", "theyre", "theyve", "theyll", "them", "their", "those", "these", "this", "that",
    "thats", "there", "theres", "ones",
];
/// Fewest content words a description holds ([`describes`]).
const DESCRIPTION_WORDS: usize = 4;
/// Words that name the speaker alone (normalized): "we" may be anyone the speaker is with.
const SPEAKER_ALONE: [&str; 9] = ["i", "im", "ive", "id", "ill", "me", "my", "mine", "myself"];

/// Whether a statement is about its speaker and not social talk: it names the speaker alone
/// ("I", "my"; "we" may be anyone, and "We should cherish every moment" says nothing of the
/// speaker), and it does not speak to the listener, greet, thank, agree or invite
/// (`lexicons/slot_descriptions.txt`).
fn of_speaker(text: &str) -> bool {
    let words = normalize(text);
    words.iter().any(|w| SPEAKER_ALONE.contains(&w.as_str())) && !holds_any(&words, &LEXICON.social)
}

/// Whether a statement with no record and no date is kept as a description of its speaker
/// (`lexicons/slot_descriptions.txt`): it is about its speaker ([`of_speaker`]), holds at least
/// [`DESCRIPTION_WORDS`] content words (four letters or more, not function words), and does not
/// open with a word that points back ("It's special to me" names nothing).
fn describes(text: &str) -> bool {
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

/// Whether a record's value is concrete: it holds a number ("40 points", "3 years") or a name as
/// the sentence writes it ("Door Dash"). A record of plain words ("agree", "powerful", "always")
/// vouches for nothing: its sentence is kept only when it is about its speaker ([`of_speaker`]).
fn concrete(r: &Record, c: &Candidate) -> bool {
    numbered(&r.value) || capitalized_in(&normalize(&r.value), &c.text)
}

/// What the model reads: the candidates numbered from 1, each with the sentence before it in
/// brackets when it points back.
pub fn input(candidates: &[Candidate]) -> String {
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.context {
            Some(before) => format!("{}. {} [before it: {}]", i + 1, c.text, before),
            None => format!("{}. {}", i + 1, c.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Version of the grammar's rules ([`grammar`]): hashed into the extractor's prompt pin, since
/// the grammar is made per round from its candidates.
pub const GRAMMAR_VERSION: &str = "slots-grammar-v2 copied spans";

/// A sentence's words as a span may use them: split at white space, punctuation cut off either
/// end (a currency sign kept before, a per cent sign after). `None` for a word that holds a quote,
/// a backslash or a control character: no span crosses it, so a span is always a plain JSON
/// string and a plain GBNF literal.
fn span_words(text: &str) -> Vec<Option<&str>> {
    text.split_whitespace()
        .map(|w| {
            let w = w.trim_start_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '$' | '£' | '€'));
            let w = w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
            let plain = !w.is_empty() && !w.chars().any(|c| c == '"' || c == '\\' || c.is_control());
            plain.then_some(w)
        })
        .collect()
}

/// GBNF rules for every span of `text`'s words: `name` is any run of consecutive words, joined
/// by single spaces. Linear in the words: `name-i` is word `i` followed, optionally, by a span
/// starting at word `i + 1`. `None` when the text has no word.
fn span_rules(name: &str, text: &str, rules: &mut Vec<String>) -> Option<()> {
    let words = span_words(text);
    let mut starts = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let Some(w) = w else { continue };
        let next = words.get(i + 1).copied().flatten().map(|_| format!(r#" (" " {name}-{})?"#, i + 1));
        rules.push(format!(r#"{name}-{i} ::= "{w}"{}"#, next.unwrap_or_default()));
        starts.push(format!("{name}-{i}"));
    }
    (!starts.is_empty()).then(|| rules.push(format!("{name} ::= {}", starts.join(" | "))))
}

/// The GBNF grammar for a round's candidates: a compact JSON array of at most [`MAX_FACTS`]
/// records, each naming a candidate by its number, with a value that is a span of that
/// candidate's words and an entity that is a span of them, of the sentence before it, or "I".
/// The model cannot write a value its sentence does not hold ("Lisboa" for "Lisbon"): the
/// record is copied, or it is not written.
pub fn grammar(candidates: &[Candidate]) -> String {
    let relations: Vec<String> = RELATIONS.iter().map(|(r, _)| format!(r#""\"{r}\"""#)).collect();
    let mut rules = vec![
        format!(r#"root ::= "[" (item ("," item){{0,{}}})? "]""#, MAX_FACTS - 1),
        format!("relation ::= {}", relations.join(" | ")),
    ];
    let mut items = Vec::new();
    for (i, c) in candidates.iter().enumerate().take(MAX_CANDIDATES) {
        let n = i + 1;
        if span_rules(&format!("v{n}"), &c.text, &mut rules).is_none() {
            continue;
        }
        let mut entity = vec![format!("v{n}"), r#""I""#.to_owned()];
        if c.context
            .as_deref()
            .is_some_and(|before| span_rules(&format!("x{n}"), before, &mut rules).is_some())
        {
            entity.push(format!("x{n}"));
        }
        rules.push(format!("e{n} ::= {}", entity.join(" | ")));
        rules.push(format!(
            r#"c{n} ::= "{{\"n\":{n},\"entity\":\"" e{n} "\",\"relation\":" relation ",\"value\":\"" v{n} "\"}}""#
        ));
        items.push(format!("c{n}"));
    }
    // With no candidate (the model is not called then) the grammar allows only `[]`.
    if items.is_empty() {
        rules[0] = r#"root ::= "[]""#.to_owned();
    } else {
        rules.push(format!("item ::= {}", items.join(" | ")));
    }
    rules.join("\n") + "\n"
}

/// One record as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The candidate's number, from 1.
    pub n: usize,
    /// What the fact is about.
    pub entity: String,
    /// One of [`RELATIONS`].
    pub relation: String,
    /// The value, copied from the sentence.
    pub value: String,
}

const FIELDS: [&str; 4] = ["n", "entity", "relation", "value"];

fn record(item: &Value) -> Option<Record> {
    let object = item.as_object()?;
    if object.len() != FIELDS.len() || !FIELDS.iter().all(|f| object.contains_key(*f)) {
        return None;
    }
    let text = |k: &str| object[k].as_str().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let relation = text("relation")?;
    if !RELATIONS.iter().any(|(r, _)| *r == relation) {
        return None;
    }
    Some(Record {
        n: usize::try_from(object["n"].as_u64()?).ok()?,
        entity: text("entity")?,
        relation,
        value: text("value")?,
    })
}

/// Parses the model's output for `turns`: a JSON array of at most [`MAX_FACTS`] records with
/// exactly the four fields, else `None` (the whole output is off contract). Records are then
/// checked against the candidates and made facts ([`facts`]).
pub fn parse(output: &str, turns: &[Turn]) -> Option<Vec<ExtractedFact>> {
    let value: Value = serde_json::from_str(output.trim()).ok()?;
    let items = value.as_array()?;
    if items.len() > MAX_FACTS {
        return None;
    }
    let records: Vec<Record> = items.iter().map(record).collect::<Option<_>>()?;
    Some(facts(&records, turns))
}

/// Words with number words as digits ("five" → "5"), so that a value copied as "five ounces"
/// matches "5 ounces". "single" counts one here ("a single free night's stay", later "two free
/// night's stays"), though not in the conflict screens, where "I'm single" is no number.
fn valued(text: &str) -> Vec<String> {
    normalize(text)
        .into_iter()
        .map(|w| match number_word(&w) {
            Some(n) => n.to_string(),
            None if w == "single" => "1".to_owned(),
            None => w,
        })
        .collect()
}

/// The words of `needle` occur in `hay`'s words, in order and together (number words and digits
/// alike).
fn copied(needle: &str, hay: &str) -> bool {
    position(&valued(needle), &valued(hay)).is_some()
}

/// Whether an entity names the speaker ("I", "me", "the user").
fn names_speaker(entity: &str) -> bool {
    SPEAKER.contains(&normalize(entity).join(" ").as_str())
}

/// Where `needle`'s words occur in `hay`'s words, in order and together: the index of the first.
fn position(needle: &[String], hay: &[String]) -> Option<usize> {
    (!needle.is_empty()).then(|| hay.windows(needle.len()).position(|w| w == needle)).flatten()
}

/// Words that cannot be a value on their own.
const EMPTY_VALUES: [&str; 17] = [
    "it", "them", "they", "this", "that", "these", "those", "one", "ones", "my", "me", "i", "there", "here",
    "we", "us", "you",
];

/// Ordinal words: a count or a score may be one ("my fourth marathon").
const ORDINALS: [&str; 12] = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "twelfth",
    "twentieth",
];
/// Units of time: a duration holds one or a number ("a month", "3 weeks").
const TIME_UNITS: [&str; 10] =
    ["second", "minute", "hour", "day", "night", "week", "weekend", "month", "year", "decade"];
/// Words that state how often without a number ("every Sunday", "daily").
const FREQUENCIES: [&str; 20] = [
    "every",
    "each",
    "per",
    "daily",
    "weekly",
    "monthly",
    "yearly",
    "annually",
    "nightly",
    "hourly",
    "once",
    "twice",
    "thrice",
    "times",
    "always",
    "usually",
    "often",
    "sometimes",
    "rarely",
    "never",
];

/// Words that put a thing or an activity somewhere.
const LOCATIVES: [&str; 19] = [
    "in", "at", "on", "under", "near", "to", "from", "inside", "behind", "beside", "by", "above", "below",
    "outside", "into", "onto", "over", "around", "between",
];

/// The sentence's words before `value`'s first occurrence in them, articles and possessives
/// right before it left out ("moved to" in "moved to the Lisbon flat"); `None` when the value is
/// not in the sentence.
fn lead_up<'a>(value: &[String], words: &'a [String]) -> Option<&'a [String]> {
    let mut end = position(value, words)?;
    while end > 0 && DETERMINERS.contains(&words[end - 1].as_str()) {
        end -= 1;
    }
    Some(&words[..end])
}

/// Words after a number that make it an increment ("8 more", "two extra", "3 additional").
const INCREMENTS: [&str; 4] = ["more", "extra", "additional", "another"];

/// Whether a count's number adds to an earlier count rather than states it: "more", "extra" or
/// "additional" right after the number, in the value or in the sentence, or "another" before it.
fn increment(r: &Record, c: &Candidate) -> bool {
    let words = valued(&c.text);
    let value = valued(&r.value);
    let Some(at) = position(&value, &words) else { return false };
    let number = (at..at + value.len()).find(|&i| words[i].chars().all(|ch| ch.is_ascii_digit()));
    number.is_some_and(|i| {
        words.get(i + 1).is_some_and(|w| INCREMENTS[..3].contains(&w.as_str()))
            || i.checked_sub(1).is_some_and(|j| words[j] == INCREMENTS[3])
    })
}

/// Whether a value holds a number: digits, a number word or an ordinal.
fn numbered(value: &str) -> bool {
    valued(value).iter().any(|w| w.chars().any(|ch| ch.is_ascii_digit()) || ORDINALS.contains(&w.as_str()))
}

/// Whether a value counts units of time: a number right before one ("6 months", "about three
/// weeks"; not "two cups a day").
fn counts_time(value: &str) -> bool {
    valued(value)
        .windows(2)
        .any(|w| w[0].chars().all(|c| c.is_ascii_digit()) && TIME_UNITS.contains(&singular(&w[1]).as_str()))
}

/// Whether words say how often ("twice", "every").
fn says_how_often(words: &[String]) -> bool {
    words.iter().any(|w| FREQUENCIES.contains(&w.as_str()))
}

/// Whether a place is one: its value opens with a locative ("under my bed"), follows one (articles
/// and possessives skipped: "on the shoe rack"), or is a name as the sentence writes it ("The
/// Vault") that does not stand right after its entity ("my colleague Rob" names the colleague).
/// "playtime" and "recipes" are not places.
fn located(r: &Record, c: &Candidate) -> bool {
    let words = normalize(&c.text);
    let value = normalize(&r.value);
    if value.first().is_some_and(|w| LOCATIVES.contains(&w.as_str())) {
        return true;
    }
    let before = lead_up(&value, &words).and_then(<[String]>::last);
    // A name right after its entity names it ("my colleague Rob"): it is not where it is.
    let head = normalize(&r.entity).pop().map(|h| singular(&h));
    if before.is_some_and(|w| Some(singular(w)) == head) {
        return false;
    }
    let after_locative = before.is_some_and(|w| LOCATIVES.contains(&w.as_str()));
    after_locative || capitalized_in(&value, &c.text)
}

/// Whether a word names a time: a unit of time or a word of the time lexicon (a month, a day),
/// but not "last", "next" or "ago" ("next to the window" is a place).
fn names_time(word: &str) -> bool {
    let unit = singular(word);
    let named = |w: &str| LEXICON.times.contains(w) && !matches!(w, "last" | "next" | "ago");
    TIME_UNITS.contains(&unit.as_str()) || named(word) || named(&unit)
}

/// Whether a record's value names its own entity (its head word, singular or not).
fn names_entity(r: &Record) -> bool {
    let value: Vec<String> = normalize(&r.value).iter().map(|w| singular(w)).collect();
    normalize(&r.entity).last().is_some_and(|head| value.contains(&singular(head)))
}

/// Whether `value`'s words occur in `text` with one of them capitalized as written, a pronoun or an
/// article aside ("I'm", "We", "The" open sentences; "The Vault" is a name by "Vault").
fn capitalized_in(value: &[String], text: &str) -> bool {
    const NOT_NAMES: [&str; 22] = [
        "i", "im", "ive", "id", "ill", "we", "weve", "you", "youre", "he", "she", "it", "its", "they",
        "theyre", "the", "a", "an", "this", "that", "there", "here",
    ];
    let written: Vec<&str> = text.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| normalize(w).join(" ")).collect();
    (0..written.len()).any(|i| {
        forms[i..].starts_with(value)
            && written[i..i + value.len()].iter().any(|w| {
                let core = w.trim_start_matches(|ch: char| !ch.is_alphanumeric());
                let common = normalize(core).first().is_some_and(|f| NOT_NAMES.contains(&f.as_str()));
                core.starts_with(char::is_uppercase) && !common
            })
    })
}

/// Words that open a sentence that calls its listener by name ("Hey Maria, …").
const INTERJECTIONS: [&str; 12] =
    ["hey", "hi", "hello", "yeah", "yes", "yep", "thanks", "wow", "oh", "aw", "congrats", "ok"];

/// The names a sentence calls its listener by, normalized: a capitalized word after an opening
/// interjection and before a comma ("Hey Maria, I started a yoga class"), or the last word after
/// a comma ("I totally agree, Melanie.").
fn vocatives(text: &str) -> Vec<String> {
    let written: Vec<&str> = text.split_whitespace().collect();
    let name = |w: &str| {
        let core = w.trim_matches(|ch: char| !ch.is_alphanumeric());
        core.starts_with(char::is_uppercase).then(|| normalize(core).join(" "))
    };
    let mut out = Vec::new();
    if let [first, second, ..] = written.as_slice() {
        let called = normalize(first).first().is_some_and(|w| INTERJECTIONS.contains(&w.as_str()));
        if called && second.ends_with(',') {
            out.extend(name(second));
        }
    }
    if let [.., before, last] = written.as_slice()
        && before.ends_with(',')
    {
        out.extend(name(last));
    }
    out
}

/// Whether a record's value or entity is the listener called by name ([`vocatives`]).
fn names_listener(r: &Record, c: &Candidate) -> bool {
    let called = vocatives(&c.text);
    let (value, entity) = (normalize(&r.value), normalize(&r.entity));
    called.iter().any(|n| value.contains(n) || entity.contains(n))
}

/// The sentence's words before the record's value (numbers as digits), if the value is in it.
fn before_value(r: &Record, c: &Candidate) -> Option<Vec<String>> {
    let mut words = valued(&c.text);
    words.truncate(position(&valued(&r.value), &words)?);
    Some(words)
}

/// Whether the listener is the last subject before the record's value ("I bet you never thought
/// you would be getting a third turtle"): the value is the listener's, not the speaker's.
fn listener_holds(r: &Record, c: &Candidate) -> bool {
    let Some(before) = before_value(r, c) else { return false };
    let you = before.iter().rposition(|w| matches!(w.as_str(), "you" | "youre" | "youve" | "youll" | "youd"));
    let me = before.iter().rposition(|w| SPEAKER_SUBJECTS.contains(&w.as_str()));
    you.is_some_and(|y| me.is_none_or(|m| y > m))
}

/// Words before a year that make it one ("in 2019", "since 2015").
const YEAR_OPENERS: [&str; 5] = ["in", "since", "from", "until", "of"];

/// Whether a record's number is a decade ("the 1900s", "the 80s") or a year after a word that
/// dates ("since 2015"): a time, not a count or a score.
fn year_like(r: &Record, c: &Candidate) -> bool {
    let value = valued(&r.value);
    let decade = value.iter().any(|w| {
        w.strip_suffix('s')
            .is_some_and(|d| d.len() >= 2 && d.ends_with('0') && d.chars().all(|ch| ch.is_ascii_digit()))
    });
    let four = value
        .first()
        .is_some_and(|w| w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..=2099).contains(&y)));
    let dated = || {
        before_value(r, c).and_then(|b| b.last().cloned()).is_some_and(|w| YEAR_OPENERS.contains(&w.as_str()))
    };
    decade || four && dated()
}

/// Whether a record's value can be a value: more than pronouns; for a count or a score a number
/// (digits, a number word or an ordinal), for a duration a number or a unit of time, for a
/// frequency a number or a word of frequency; and for a home, a workplace or a name, a name as
/// the sentence writes it (capitalized: "Lisbon", not "playtime"). With the value copied from
/// the sentence by the grammar, these keep the model from filing any words of it under a
/// relation that holds one value ("postcards" as a count would supersede "17").
fn holds_value(r: &Record, c: &Candidate) -> bool {
    let words = normalize(&r.value);
    let empty = |w: &String| {
        [&EMPTY_VALUES[..], &LOCATIVES[..], &DETERMINERS[..]].iter().any(|list| list.contains(&w.as_str()))
    };
    if words.iter().all(empty) {
        return false;
    }
    // "five years ago" says when, not how long or how many; "ago" or "week" is no entity.
    let time_entity = normalize(&r.entity)
        .last()
        .is_some_and(|h| LEXICON.times.contains(h) || LEXICON.times.contains(&singular(h)));
    if words.iter().any(|w| w == "ago") || time_entity || names_listener(r, c) || listener_holds(r, c) {
        return false;
    }
    let number = numbered(&r.value) && !year_like(r, c);
    let unit = words.iter().any(|w| TIME_UNITS.contains(&singular(w).as_str()));
    let often = says_how_often(&words);
    let measured = match r.relation.as_str() {
        // "8 more postcards" adds to a count; it is not the count.
        "count" => number && !increment(r, c),
        "score" => number,
        "duration" => number || unit,
        "frequency" => number || often,
        // A place other than the thing itself ("the store once" is not where the store is).
        // Nor a time ("in the next few months").
        "place" => located(r, c) && !names_entity(r) && !words.iter().any(|w| names_time(w)),
        _ => true,
    };
    if !measured {
        return false;
    }
    !matches!(r.relation.as_str(), "home" | "workplace" | "name") || capitalized_in(&words, &c.text)
}

/// How well a record fits its sentence, for choosing one record per sentence: a relation, and a
/// number value with its entity right after it ("25 new postcards": the postcards are counted).
fn fit(r: &Record, c: &Candidate) -> usize {
    let words = normalize(&c.text);
    let (value, entity) = (normalize(&r.value), normalize(&r.entity));
    let counted = position(&value, &words).is_some_and(|at| {
        let after = at + value.len();
        (after..words.len().min(after + 4)).any(|i| words[i..].starts_with(&entity))
    });
    usize::from(r.relation != "other") + 2 * usize::from(counted)
}

/// The record with its relation as the sentence states it: a home, a workplace or a job when the
/// words right before the value name one (`lexicons/slot_relations.txt`: "moved to Lisbon" is a
/// home whatever relation the model wrote), else a home or a workplace without those words is a
/// place; a count whose value says how often ("twice a week") is a frequency, and one in units of
/// time ("6 months") a duration.
fn cued(r: &Record, c: &Candidate) -> Record {
    let words = normalize(&c.text);
    let value = normalize(&r.value);
    let mut relation = r.relation.clone();
    if let Some(before) = lead_up(&value, &words) {
        let named = LEXICON.relations.iter().find(|(_, phrases)| phrases.iter().any(|p| before.ends_with(p)));
        match named {
            Some((name, _)) => relation = name.clone(),
            None if matches!(relation.as_str(), "home" | "workplace") => relation = "place".to_owned(),
            None => {}
        }
    }
    if relation == "count" && says_how_often(&value) {
        relation = "frequency".to_owned();
    } else if relation == "count" && counts_time(&r.value) {
        // "for about 6 months": how long, not how many.
        relation = "duration".to_owned();
    } else if relation == "goal" && !numbered(&r.value) {
        // A target is a number ("reach level 100"); "level up faster" or "plan out my week" is a
        // plan, and plans coexist.
        relation = "plans".to_owned();
    }
    Record { relation, ..r.clone() }
}

/// The facts of a round's `records`, one per first-person statement at most, in sentence order:
/// - a candidate gets, of the records whose value is copied from it and whose entity is copied
///   from it or its context (or names the speaker), the one that fits best ([`fit`]; the first on
///   a tie), keyed by its entity and relation; a record whose value is not [`concrete`] counts
///   only when its sentence is about its speaker ([`of_speaker`]);
/// - a statement with no record that holds but a time mention that resolves ([`mention`]) is a
///   dated statement ("I ran a charity race last Saturday"): no key, so it supersedes nothing;
/// - any other statement is a plain description of its speaker ("I'm doing kickboxing"), no key
///   and no date, when it says something of substance ([`describes`]).
pub fn facts(records: &[Record], turns: &[Turn]) -> Vec<ExtractedFact> {
    let all = statements(turns);
    let numbered = chosen(&all);
    let mut best: Vec<Option<(usize, Record)>> = vec![None; all.len()];
    for r in records {
        let Some(&at) = r.n.checked_sub(1).and_then(|i| numbered.get(i)) else { continue };
        let c = &all[at].1;
        let r = &cued(r, c);
        let entity_ok = names_speaker(&r.entity)
            || copied(&r.entity, &c.text)
            || c.context.as_deref().is_some_and(|before| copied(&r.entity, before));
        if !entity_ok || !copied(&r.value, &c.text) || !holds_value(r, c) {
            continue;
        }
        let score = fit(r, c);
        if best[at].as_ref().is_none_or(|(s, _)| score > *s) {
            best[at] = Some((score, r.clone()));
        }
    }
    let mut out = Vec::new();
    for ((_, c), chosen) in all.iter().zip(best) {
        let chosen = chosen.filter(|(_, r)| concrete(r, c) || of_speaker(&c.text));
        // `mention` gives only a span that resolves to a date.
        let when = mention(&c.text, c.anchor);
        let owner = c.role.as_str();
        let (subject, predicate, object) = match &chosen {
            Some((_, r)) => match ratio(r, c) {
                Some((things, value)) => (format!("{owner}'s {things} ratio"), Some("ratio"), Some(value)),
                None => {
                    let counted = counted(&r.value, &c.text);
                    let entity = counted.as_deref().unwrap_or(&r.entity);
                    let holder = if names_speaker(entity) || holder_is_speaker(r, c) {
                        owner.to_owned()
                    } else {
                        subject(entity, c.role)
                    };
                    let predicate = if r.relation == "place" && !owned(r, c) {
                        // Where something happened (a chat with a fan in California), not where a
                        // thing of the speaker's is kept: places of that kind coexist.
                        Some(HAPPENED_IN)
                    } else {
                        RELATIONS.iter().find(|(name, _)| *name == r.relation).map(|(_, p)| *p)
                    };
                    (holder, predicate, Some(r.value.clone()))
                }
            },
            None if when.is_some() || describes(&c.text) => (owner.to_owned(), Some("other"), None),
            None => continue,
        };
        out.push(ExtractedFact {
            content: third_person(&c.text, c.role),
            raw: format!("{owner}: {}", c.said.as_deref().unwrap_or(&c.text)),
            when,
            subject: Some(subject),
            predicate: predicate.map(str::to_owned),
            object,
            salience: 1.0,
        });
    }
    out
}

/// The predicate of a place of something not the speaker's own: where it happened. Not a
/// one-value relation, so two such places never supersede each other.
const HAPPENED_IN: &str = "happened in";

/// Whether a record's entity is the speaker's own thing: the speaker itself, or "my"/"our" at
/// most two words before the entity's head in the sentence ("my old sneakers").
fn owned(r: &Record, c: &Candidate) -> bool {
    if names_speaker(&r.entity) {
        return true;
    }
    let words = normalize(&c.text);
    let Some(head) = normalize(&r.entity).pop().map(|h| singular(&h)) else { return false };
    words.iter().enumerate().any(|(i, w)| {
        singular(w) == head
            && words[i.saturating_sub(3)..i].iter().any(|b| matches!(b.as_str(), "my" | "our"))
    })
}

/// Words that join the two sides of a ratio ("1 tablespoon of coffee for every 6 ounces of
/// water", "3 scoops per cup"), normalized.
const RATIO_JOINS: [&[&str]; 4] = [&["for", "every"], &["for", "each"], &["to", "every"], &["per"]];
/// Most words of a ratio's side after its number.
const RATIO_SIDE: usize = 3;

/// For a record whose value lies in a ratio of its sentence ("I found that 1 tablespoon of
/// coffee for every 6 ounces of water is the perfect ratio": the value "1 tablespoon"), what the
/// ratio relates and the ratio as written: ("tablespoon to water", "1 tablespoon of coffee for
/// every 6 ounces of water"). A ratio is a number, up to [`RATIO_SIDE`] words, a join
/// ([`RATIO_JOINS`]) and a number or a thing right after it ("3 scoops per cup"; "3 times per
/// week" says how often, no ratio). Each
/// side's thing is the word after its "of", else its unit (the word after its number), so
/// "… 5 ounces of water" later meets the earlier ratio under one key, and its other number
/// supersedes it.
fn ratio(r: &Record, c: &Candidate) -> Option<(String, String)> {
    // Written words, each with its normalized form (number words as digits).
    let written: Vec<&str> = c.text.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| valued(w).join(" ")).collect();
    let number =
        |i: usize| forms.get(i).is_some_and(|f| !f.is_empty() && f.chars().all(|ch| ch.is_ascii_digit()));
    let join = (0..written.len()).find_map(|i| {
        RATIO_JOINS
            .iter()
            .find(|j| forms[i..].starts_with(&j.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>()))
            .map(|j| (i, j.len()))
    })?;
    let (at, len) = join;
    // The right side's number, or a thing alone ("per cup") that is no unit of time ("per week"
    // says how often).
    let right = if number(at + len) { at + len } else { at + len - 1 };
    let alone =
        forms.get(at + len).filter(|w| !w.is_empty() && !names_time(w) && !FREQUENCIES.contains(&w.as_str()));
    if right != at + len && alone.is_none() {
        return None;
    }
    let left = (at.saturating_sub(RATIO_SIDE + 1)..at).rev().find(|&i| number(i))?;
    // A side ends at punctuation, at a joining word, or after RATIO_SIDE words.
    let mut end = right + 1;
    while end < written.len()
        && end <= right + RATIO_SIDE
        && !written[end - 1].ends_with(|ch: char| !ch.is_alphanumeric())
    {
        if PHRASE_ENDS.contains(&forms[end].as_str()) {
            break;
        }
        end += 1;
    }
    let thing = |from: usize, to: usize| -> Option<String> {
        let side = &forms[from + 1..to];
        let of = side.iter().position(|w| w == "of");
        let word = match of {
            Some(k) => side.get(k + 1),
            None => side.first(),
        }?;
        (!word.is_empty()).then(|| singular(word))
    };
    let (x, y) = (thing(left, at)?, thing(right, end)?);
    let value_words = valued(&r.value);
    let span_words: Vec<String> =
        forms[left..end].iter().flat_map(|f| f.split(' ').map(str::to_owned)).collect();
    if position(&value_words, &span_words).is_none() && position(&span_words, &value_words).is_none() {
        return None;
    }
    let span = written[left..end].join(" ");
    Some((format!("{x} to {y}"), span.trim_end_matches(|ch: char| !ch.is_alphanumeric()).to_owned()))
}

/// First-person subject words (normalized).
const SPEAKER_SUBJECTS: [&str; 7] = ["i", "im", "ive", "id", "ill", "we", "weve"];

/// Whether a home, a workplace, a job or a name is the speaker's whatever entity the model wrote:
/// the speaker is the sentence's last subject before the value, after any mention of the entity
/// ("I live in Porto with my beagle": the user lives in Porto, not the beagle; "I think my
/// brother lives in Austin": the brother).
fn holder_is_speaker(r: &Record, c: &Candidate) -> bool {
    if !matches!(r.relation.as_str(), "home" | "workplace" | "job" | "name") {
        return false;
    }
    let Some(before) = before_value(r, c) else { return false };
    let speaker = before.iter().rposition(|w| SPEAKER_SUBJECTS.contains(&w.as_str()));
    // The entity holds the value only where the sentence names it as someone: after a
    // possessive or an article ("my brother"), or as a name ("Tom"); "I moved to Lisbon" with
    // the entity "moved" is the speaker's move.
    let named = |w: &String| capitalized_in(std::slice::from_ref(w), &c.text);
    let entity = valued(&r.entity).pop().and_then(|h| {
        (0..before.len()).rev().find(|&i| {
            let same = before[i] == h || singular(&before[i]) == singular(&h);
            same && (i > 0 && DETERMINERS.contains(&before[i - 1].as_str()) || named(&before[i]))
        })
    });
    speaker.is_some_and(|s| entity.is_none_or(|e| s > e))
}

/// Words that end the noun phrase after a number ("25 new postcards to my collection").
const PHRASE_ENDS: [&str; 24] = [
    "and", "or", "but", "that", "which", "since", "so", "because", "i", "now", "already", "than", "to", "a",
    "the", "my", "before", "after", "until", "during", "every", "each", "last", "next",
];
/// Most words of the counted thing after a number.
const COUNTED_WORDS: usize = 3;

/// For a value that starts with a number (digits or number words), the thing it counts: the
/// value's own words after the number ("25 new postcards"), or for a bare number the words right
/// after it in the sentence ("I've added 25 new postcards to my collection": "new postcards",
/// where the model wrote "collection"). Up to [`COUNTED_WORDS`] words, ended by punctuation, a
/// preposition or a joining word; none when it points back ("17 new ones") or measures something
/// else ("1 tablespoon of coffee").
fn counted(value: &str, sentence: &str) -> Option<String> {
    // Number words as digits, in the value and in the sentence alike.
    let number = |w: &String| w.chars().all(|c| c.is_ascii_digit());
    let value_words = valued(value);
    let digits = value_words.iter().take_while(|w| number(w)).count();
    if digits == 0 {
        return None;
    }
    if digits < value_words.len() {
        // A number with its thing ("25 new postcards"): the thing, if it is one.
        let thing = &value_words[digits..];
        let head = thing.last().expect("not empty");
        let unit = thing.len() > COUNTED_WORDS
            || POINTERS.contains(&head.as_str())
            || TIME_UNITS.contains(&singular(head).as_str())
            || PREPOSITIONS.iter().chain(&PHRASE_ENDS).any(|w| thing.iter().any(|t| t == w));
        return (!unit).then(|| thing.join(" "));
    }
    // Written words, each with its normalized form, so that punctuation ends the phrase.
    let written: Vec<&str> = sentence.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| valued(w).join(" ")).collect();
    let at = (0..written.len()).find(|&i| forms[i..].starts_with(&value_words))?;
    let start = at + value_words.len();
    // The number's own word must not end in punctuation ("25, and").
    if written[start - 1].ends_with(|c: char| !c.is_alphanumeric()) {
        return None;
    }
    let mut phrase = Vec::new();
    for (w, form) in written.iter().zip(&forms).skip(start).take(COUNTED_WORDS) {
        if form.is_empty() || PREPOSITIONS.contains(&form.as_str()) || PHRASE_ENDS.contains(&form.as_str()) {
            break;
        }
        phrase.push(form.clone());
        if w.ends_with(|c: char| !c.is_alphanumeric()) {
            break;
        }
    }
    let head = phrase.last()?;
    let measure = TIME_UNITS.contains(&singular(head).as_str());
    (!POINTERS.contains(&head.as_str()) && head != "one" && head != "times" && !measure)
        .then(|| phrase.join(" "))
}

/// Words a time mention may start with (besides digits, number words, and capitalized month and
/// day names).
const TIME_STARTS: [&str; 12] =
    ["last", "next", "this", "on", "in", "yesterday", "today", "tonight", "tomorrow", "the", "a", "an"];
/// Longest time mention, in words.
const MENTION_WORDS: usize = 5;

/// Whether a mention's first word says nothing of its time ("a nearby festival next month"): not
/// a time word, a number or a word a mention starts with, and for an article, not one before a
/// time word ("a week ago").
fn loose(span: &[&str]) -> bool {
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
const GENERIC_HEADS: [&str; 12] = [
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
fn singular(word: &str) -> String {
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
const VERBS: [(&str, &str); 35] = [
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
const ADVERBS: [&str; 9] =
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
fn in_person(word: &str, who: &str, agree: &mut bool) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: Role, content: &str) -> Turn {
        Turn::new(role, content, "2024-03-14")
    }

    #[test]
    fn candidates_are_first_person_statements_with_a_value() {
        let user = "I didn't know there were so many online communities. By the way, speaking of my \
                    collection, I was wondering if you could help me generate a list of my postcards? I've \
                    added 17 new ones since I started collecting again, and I'd like to keep track of them.";
        let c = candidates(&[turn(Role::User, user), turn(Role::Assistant, "I have 3 ideas for you.")]);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            c[0].text,
            "I've added 17 new ones since I started collecting again, and I'd like to keep track of them."
        );
        assert!(c[0].context.as_deref().is_some_and(|b| b.contains("my postcards?")), "points back");
        // A question's leading statement is kept; a request is not.
        let c = candidates(&[turn(
            Role::User,
            "By the way, I'm thinking of changing my morning coffee limit to two cups, do you think that's a good idea? Can you recommend a coffee maker for 2 people?",
        )]);
        assert_eq!(
            c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(),
            ["I'm thinking of changing my morning coffee limit to two cups"]
        );
        assert!(candidates(&[turn(Role::User, "What's the capital of Australia?")]).is_empty());
        // A short lead-in with a colon goes; a colon later in the sentence stays.
        let c = candidates(&[turn(
            Role::User,
            "Big news: I moved to Lisbon last week! Note: Porto was 2 hours away.",
        )]);
        assert_eq!(c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["I moved to Lisbon last week!"]);
        let c = candidates(&[turn(Role::User, "I have 3 goals this year: run, read, rest.")]);
        assert_eq!(c[0].text, "I have 3 goals this year: run, read, rest.");
        assert!(candidates(&[turn(Role::User, "That sounds great, thanks a lot.")]).is_empty());
        // A named speaker's turn is a person's: its statements count.
        let mut named = turn(Role::Assistant, "I moved to Lisbon in 2021.");
        named.speaker = Some("Melanie".into());
        assert_eq!(candidates(&[named])[0].role, Role::Assistant);
    }

    #[test]
    fn we_re_is_first_person_and_they_were_is_not() {
        let c = candidates(&[turn(
            Role::User,
            "We’re thinking about going camping next month. They were there last week.",
        )]);
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["We’re thinking about going camping next month."]);
    }

    #[test]
    fn at_most_six_candidates_the_richest_first_kept_in_order() {
        let many: Vec<String> = (1..=9).map(|i| format!("I bought {i} apples.")).collect();
        let mut text = many.join(" ");
        text.push_str(" I moved to Porto last May with 2 cats.");
        let c = candidates(&[turn(Role::User, &text)]);
        assert_eq!(c.len(), MAX_CANDIDATES);
        assert_eq!(c.last().unwrap().text, "I moved to Porto last May with 2 cats.");
        assert_eq!(c[0].text, "I bought 1 apples.");
    }

    #[test]
    fn records_become_facts_only_when_copied_from_their_sentence() {
        let turns = [turn(
            Role::User,
            "Please help me plan. By the way, I've had my cat, Luna, for about 9 months now. I keep my old sneakers under my bed.",
        )];
        let c = candidates(&turns);
        assert_eq!(c.len(), 2, "{c:?}");
        let output = r#"[{"n":1,"entity":"cat","relation":"duration","value":"about 9 months"},{"n":1,"entity":"Luna","relation":"name","value":"Luna"},{"n":2,"entity":"sneakers","relation":"place","value":"under the bed"},{"n":3,"entity":"dog","relation":"owns","value":"dog"}]"#;
        let facts = parse(output, &turns).expect("on contract");
        assert_eq!(facts.len(), 1, "one record per sentence; a value not copied; no third sentence");
        let f = &facts[0];
        assert_eq!(f.content, "The user has had the user's cat, Luna, for about 9 months now.");
        assert_eq!(f.raw, "user: I've had my cat, Luna, for about 9 months now.");
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (Some("user's cat"), Some("duration"), Some("about 9 months"))
        );
        assert_eq!(f.when, None, "no time mention in the sentence");
        assert!(copied("nine months", "for about 9 months now"), "numbers as digits or words");
        let output = r#"[{"n":2,"entity":"old sneakers","relation":"place","value":"under my bed"}]"#;
        let facts = parse(output, &turns).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's sneaker"));
        assert_eq!(facts[0].content, "The user keeps the user's old sneakers under the user's bed.");
    }

    #[test]
    fn a_record_of_plain_words_counts_only_for_a_statement_about_its_speaker() {
        let turns = [turn(
            Role::User,
            "I totally agree with you, Melanie. We should cherish every moment with the kids. I'm always \
             here to support you! My goal is to give kids a loving home. I scored 40 points last game.",
        )];
        let c = candidates(&turns);
        assert_eq!(c.len(), 5, "{c:?}");
        let output = r#"[{"n":1,"entity":"Melanie","relation":"plans","value":"agree"},{"n":2,"entity":"kids","relation":"plans","value":"cherish every moment"},{"n":5,"entity":"points","relation":"score","value":"40 points"}]"#;
        let facts = parse(output, &turns).expect("on contract");
        let kept: Vec<(&str, Option<&str>)> =
            facts.iter().map(|f| (f.content.as_str(), f.object.as_deref())).collect();
        assert_eq!(
            kept,
            [
                ("The user's goal is to give kids a loving home.", None),
                ("The user scored 40 points last game.", Some("40 points")),
            ],
            "agreement is social talk and \"we\" names no one; a number is kept whatever its sentence"
        );
    }

    #[test]
    fn a_value_is_no_time_point_no_listener_no_year_and_no_apposition() {
        let one = |sentence: &str, record: &str| {
            let turns = [turn(Role::User, sentence)];
            assert_eq!(candidates(&turns).len(), 1, "{sentence}");
            let output = format!(r#"[{{"n":1,{record}}}]"#);
            let facts = parse(&output, &turns).expect("on contract");
            facts.into_iter().next().map(|f| (f.predicate, f.object, f.when))
        };
        let refused = [
            // When, not how long: the sentence stays a dated statement.
            (
                "I started playing the cello about six years ago.",
                r#""entity":"ago","relation":"duration","value":"six years ago""#,
            ),
            // The listener called by name.
            (
                "Hey Tom, I joined a weekend pottery class with a coworker.",
                r#""entity":"coworker","relation":"place","value":"Tom""#,
            ),
            // A name right after its entity names it.
            (
                "My coworker Dana invited me to a pottery class.",
                r#""entity":"coworker","relation":"place","value":"Dana""#,
            ),
            // A decade is a time.
            (
                "I found an old atlas from the 1800s at the market.",
                r#""entity":"atlas","relation":"count","value":"1800s""#,
            ),
            // The listener's cat.
            (
                "I bet you never thought you would be adopting a third cat this year!",
                r#""entity":"cat","relation":"count","value":"third""#,
            ),
        ];
        for (sentence, record) in refused {
            let got = one(sentence, record);
            assert!(
                got.as_ref().is_none_or(|(p, o, _)| p.as_deref() == Some("other") && o.is_none()),
                "{sentence}: {got:?}"
            );
        }
        let dated = one(refused[0].0, refused[0].1).expect("a dated statement");
        assert_eq!(dated.2.as_deref(), Some("six years ago"), "its time mention");
        let met = one(
            "I met a jazz fan in Chicago last week.",
            r#""entity":"jazz fan","relation":"place","value":"Chicago""#,
        );
        assert_eq!(
            met.map(|(p, o, _)| (p, o)),
            Some((Some("happened in".to_owned()), Some("Chicago".to_owned()))),
            "where something happened coexists with other such places"
        );
        let kept = one(
            "I keep my passport in the top drawer of my desk.",
            r#""entity":"passport","relation":"place","value":"in the top drawer""#,
        );
        assert_eq!(
            kept.and_then(|(p, _, _)| p).as_deref(),
            Some("place"),
            "where the speaker's own thing is"
        );
    }

    #[test]
    fn a_dated_sentence_without_a_record_is_a_dated_statement_with_no_key() {
        let turns =
            [turn(Role::User, "I ran a charity race for mental health last Saturday. I like 3 colours.")];
        // The model's record is refused (a count needs a number): the sentence still dates its event.
        let facts =
            parse(r#"[{"n":1,"entity":"charity race","relation":"count","value":"mental health"}]"#, &turns)
                .unwrap();
        assert_eq!(facts.len(), 1, "the undated sentence without a record gives nothing: {facts:?}");
        let f = &facts[0];
        assert_eq!(f.content, "The user ran a charity race for mental health last Saturday.");
        assert_eq!(f.when.as_deref(), Some("last Saturday"));
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (Some("user"), Some("other"), None)
        );
        let named =
            Turn { speaker: Some("Melanie".into()), ..turn(Role::Assistant, "I went camping yesterday.") };
        let facts = parse("[]", &[named]).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("assistant"), "the other speaker's");
        assert_eq!(facts[0].raw, "assistant: I went camping yesterday.");
    }

    #[test]
    fn a_statement_of_substance_without_a_record_or_a_date_is_a_description() {
        let turns = [
            turn(
                Role::User,
                "I'm doing kickboxing at the local gym and it's giving me energy. We got this! It's special to me \
                 because my grandmother painted it. Thanks, I really appreciate your support with the \
                 studio. I rehearsed with a small group of dancers after work. Painting relaxes me. We \
                 played games, ate good food and hung out together. Hey Melanie, my whole week has been \
                 full of pleasant surprises.",
            ),
            Turn {
                speaker: Some("Melanie".into()),
                ..turn(Role::Assistant, "I'm lucky to have my husband and kids; they keep me motivated.")
            },
        ];
        let facts = parse("[]", &turns).unwrap();
        let content: Vec<&str> = facts.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            content,
            [
                "The user is doing kickboxing at the local gym and it's giving the user energy.",
                "The user rehearsed with a small group of dancers after work.",
                "The assistant is lucky to have the assistant's husband and kids; they keep the assistant motivated.",
            ],
            "not cheering, not a sentence about something said before, not social talk, not under four \
             content words, not of \"we\" alone, not a greeting"
        );
        for f in &facts {
            assert_eq!(
                (f.predicate.as_deref(), f.object.as_deref(), f.when.as_deref()),
                (Some("other"), None, None)
            );
        }
        assert_eq!(facts[2].subject.as_deref(), Some("assistant"));
    }

    #[test]
    fn a_ratio_is_keyed_by_what_it_relates_whatever_part_the_model_copied() {
        let old = [turn(
            Role::User,
            "I've found that 1 tablespoon of coffee for every 6 ounces of water is the perfect ratio for me.",
        )];
        let new = [turn(
            Role::User,
            "I've got my French press ratio down to a science: 1 tablespoon of coffee for every 5 ounces of water.",
        )];
        let f = &parse(r#"[{"n":1,"entity":"tablespoon","relation":"count","value":"1 tablespoon"}]"#, &old)
            .unwrap()[0];
        let out = r#"[{"n":1,"entity":"ratio","relation":"frequency","value":"1 tablespoon of coffee for every 5 ounces of water"}]"#;
        let g = &parse(out, &new).unwrap()[0];
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (
                Some("user's coffee to water ratio"),
                Some("ratio"),
                Some("1 tablespoon of coffee for every 6 ounces of water")
            )
        );
        assert_eq!((&g.subject, &g.predicate), (&f.subject, &f.predicate), "one key: the newer supersedes");
        // A unit for a side without "of"; no ratio without a number after the join.
        let scoops = [turn(Role::User, "I use 3 scoops per cup now.")];
        let h = &parse(r#"[{"n":1,"entity":"scoops","relation":"count","value":"3"}]"#, &scoops).unwrap()[0];
        assert_eq!(h.subject.as_deref(), Some("user's scoop to cup ratio"), "{h:?}");
        let weekly = [turn(Role::User, "I swim 3 times per week at the pool.")];
        let w =
            &parse(r#"[{"n":1,"entity":"swim","relation":"frequency","value":"3 times per week"}]"#, &weekly)
                .unwrap()[0];
        assert_eq!(w.predicate.as_deref(), Some("frequency"));
    }

    #[test]
    fn a_sentence_without_its_subject_is_the_speaker_s_and_never_goes_to_the_model() {
        let turns = [turn(
            Role::User,
            "Finishing up choreography to perform at a nearby festival next month. Been only to Rome \
             once. Just got back from a family road trip yesterday! Spending time with loved ones is \
             important. [shared an image: a photo of a cake]",
        )];
        let facts = parse("[]", &turns).unwrap();
        let read: Vec<(&str, &str, Option<&str>)> =
            facts.iter().map(|f| (f.content.as_str(), f.raw.as_str(), f.when.as_deref())).collect();
        assert_eq!(
            read,
            [
                (
                    "The user is finishing up choreography to perform at a nearby festival next month.",
                    "user: Finishing up choreography to perform at a nearby festival next month.",
                    Some("next month")
                ),
                (
                    "The user just got back from a family road trip yesterday!",
                    "user: Just got back from a family road trip yesterday!",
                    Some("yesterday")
                ),
            ],
            "the excerpt as written; under four content words (Rome), a phrase that is the subject \
             (spending time … is), and a caption are no facts"
        );
        assert!(candidates(&turns).is_empty(), "the model reads only what the speaker wrote as theirs");
    }

    #[test]
    fn a_count_of_units_of_time_is_a_duration() {
        let turns = [turn(Role::User, "I've had Luna for about 6 months now. I drink two cups a day.")];
        let out = r#"[{"n":1,"entity":"Luna","relation":"count","value":"about 6 months"},{"n":2,"entity":"cups","relation":"count","value":"two cups a day"}]"#;
        let facts = parse(out, &turns).unwrap();
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts[0].predicate.as_deref(), Some("duration"));
        assert_eq!(facts[0].subject.as_deref(), Some("user's luna"), "months are not the thing counted");
        assert_eq!(facts[1].predicate.as_deref(), Some("count"));
    }

    #[test]
    fn a_goal_is_a_number_and_a_place_is_elsewhere() {
        let turns = [turn(
            Role::User,
            "I want to reach level 100 before the end of the year. In June I will level up faster with 2 challenges. I've already been to the store once.",
        )];
        let out = r#"[{"n":1,"entity":"level","relation":"goal","value":"100"},{"n":2,"entity":"level","relation":"goal","value":"level up faster"},{"n":3,"entity":"store","relation":"place","value":"store once"}]"#;
        let facts = parse(out, &turns).unwrap();
        let relations: Vec<_> = facts.iter().map(|f| f.predicate.as_deref()).collect();
        assert_eq!(relations, [Some("goal"), Some("plans")], "{facts:?}");
        let turns = [turn(Role::User, "I'm looking for charity events in the next few months.")];
        let out = r#"[{"n":1,"entity":"charity events","relation":"place","value":"next few months"}]"#;
        assert!(
            parse(out, &turns).unwrap().iter().all(|f| f.predicate.as_deref() != Some("place")),
            "a time"
        );
    }

    #[test]
    fn more_of_a_thing_is_not_its_count() {
        let turns = [turn(Role::User, "I've got 8 more postcards from the fair. Now I have 25 postcards.")];
        let out = r#"[{"n":1,"entity":"postcards","relation":"count","value":"8"},{"n":2,"entity":"postcards","relation":"count","value":"25"}]"#;
        let facts = parse(out, &turns).unwrap();
        assert_eq!(facts.len(), 1, "{facts:?}");
        assert_eq!(facts[0].object.as_deref(), Some("25"));
    }

    #[test]
    fn a_single_thing_is_counted_as_one() {
        let old = [turn(
            Role::User,
            "I've accumulated enough points for a single free night's stay at any Hilton property.",
        )];
        let new = [turn(
            Role::User,
            "I've accumulated enough points for two free night's stays at any Hilton property.",
        )];
        let f =
            &parse(r#"[{"n":1,"entity":"points","relation":"count","value":"single"}]"#, &old).unwrap()[0];
        let g = &parse(r#"[{"n":1,"entity":"points","relation":"count","value":"two"}]"#, &new).unwrap()[0];
        assert_eq!(f.subject, g.subject, "both count the stays: {f:?} {g:?}");
        assert_eq!(f.predicate.as_deref(), Some("count"));
    }

    #[test]
    fn one_record_per_sentence_the_counted_thing_first() {
        let turns = [turn(Role::User, "I've added 25 new postcards to my collection since last Tuesday.")];
        let output = r#"[{"n":1,"entity":"collection","relation":"count","value":"25"},{"n":1,"entity":"postcards","relation":"count","value":"25"}]"#;
        let facts = parse(output, &turns).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"), "25 new postcards");
        // A bare number names its thing itself, whatever entity the model wrote.
        let output = r#"[{"n":1,"entity":"collection","relation":"count","value":"25"}]"#;
        assert_eq!(parse(output, &turns).unwrap()[0].subject.as_deref(), Some("user's postcard"));
        assert_eq!(counted("three", "I've already bought three tops from H&M.").as_deref(), Some("tops"));
        assert_eq!(counted("17", "I've added 17 new ones since March."), None, "it points back");
        assert_eq!(counted("100", "I want to reach level 100 before May."), None);
        assert_eq!(counted("two cups", "I drink two cups a day.").as_deref(), Some("cups"));
        assert_eq!(
            counted("1 tablespoon of coffee", "I use 1 tablespoon of coffee."),
            None,
            "a measure of something"
        );
        assert_eq!(
            counted("25 new postcards", "I've added 25 new postcards.").as_deref(),
            Some("new postcards")
        );
        assert_eq!(facts[0].when.as_deref(), Some("last Tuesday"));
    }

    #[test]
    fn the_time_mention_is_the_shortest_span_that_reads_as_the_longest() {
        let anchor = NaiveDate::from_ymd_opt(2024, 3, 14).unwrap();
        let m = |s: &str| mention(s, anchor);
        assert_eq!(m("I moved to Porto last Tuesday with my cats.").as_deref(), Some("last Tuesday"));
        assert_eq!(m("We met on May 5th, 2022 at a party.").as_deref(), Some("on May 5th, 2022"));
        assert_eq!(
            m("We met on May 5th, 2023 at a party.").as_deref(),
            Some("on May 5th"),
            "the year adds nothing"
        );
        assert_eq!(m("I started 3 weeks ago.").as_deref(), Some("3 weeks ago"));
        assert_eq!(m("I may go to 2 concerts."), None, "a verb, not a month");
        assert_eq!(m("I went there yesterday."), Some("yesterday".into()));
    }

    #[test]
    fn a_home_is_the_speakers_when_the_speaker_is_its_subject() {
        let facts = |text: &str, out: &str| parse(out, &[turn(Role::User, text)]).unwrap();
        let subject = |text: &str, out: &str| facts(text, out)[0].subject.clone().unwrap();
        let porto = "I live in Porto with my beagle, Toby.";
        assert_eq!(
            subject(porto, r#"[{"n":1,"entity":"beagle","relation":"home","value":"Porto"}]"#),
            "user"
        );
        assert_eq!(
            subject(porto, r#"[{"n":1,"entity":"beagle","relation":"owns","value":"beagle"}]"#),
            "user's beagle",
            "only a home, a workplace, a job or a name"
        );
        let brother = "I think my brother lives in Austin now.";
        assert_eq!(
            subject(brother, r#"[{"n":1,"entity":"brother","relation":"home","value":"Austin"}]"#),
            "user's brother"
        );
        let tom = "My brother Tom moved to Austin in March.";
        assert_eq!(
            subject(tom, r#"[{"n":1,"entity":"Tom","relation":"home","value":"Austin"}]"#),
            "user's tom"
        );
        let maya = "Hi, I'm Maya and I work at Northwind.";
        assert_eq!(
            subject(maya, r#"[{"n":1,"entity":"Maya","relation":"workplace","value":"Northwind"}]"#),
            "user"
        );
    }

    #[test]
    fn the_words_before_a_value_name_its_relation() {
        let read = |text: &str, out: &str| {
            let f = parse(out, &[turn(Role::User, text)]).unwrap().remove(0);
            (f.subject.unwrap(), f.predicate.unwrap(), f.object.unwrap())
        };
        let lisbon = "I moved to Lisbon last week!";
        assert_eq!(
            read(lisbon, r#"[{"n":1,"entity":"moved","relation":"place","value":"Lisbon"}]"#),
            ("user".into(), "lives in".into(), "Lisbon".into()),
            "a move is a home, and the mover the speaker"
        );
        let maya = "I just started as a data engineer at Northwind, so I'm learning their Airflow setup.";
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"I","relation":"other","value":"Northwind"}]"#).1,
            "other",
            "\"engineer at\" names no workplace"
        );
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"I","relation":"other","value":"data engineer"}]"#).1,
            "works as"
        );
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"Northwind","relation":"home","value":"Airflow"}]"#).1,
            "happened in",
            "a home without words that name one is a place, and of a thing not the speaker's own, where \
             something happened"
        );
        let yoga = "I've been doing yoga twice a week.";
        assert_eq!(
            read(yoga, r#"[{"n":1,"entity":"yoga","relation":"count","value":"twice a week"}]"#).1,
            "frequency"
        );
    }

    #[test]
    fn a_value_is_more_than_a_pronoun_and_a_home_is_a_name() {
        let turns =
            [turn(Role::User, "I moved to Lisbon in May and I love it. I keep my playtime toys in it.")];
        // Facts with a relation ("in May" dates the first sentence when no record holds for it:
        // a statement with no relation, left out here).
        let facts = |out: &str| {
            let all = parse(out, &turns).unwrap();
            all.into_iter().filter(|f| f.predicate.as_deref() != Some("other")).collect::<Vec<_>>()
        };
        assert_eq!(facts(r#"[{"n":1,"entity":"I","relation":"home","value":"Lisbon"}]"#).len(), 1);
        assert!(facts(r#"[{"n":1,"entity":"I","relation":"likes","value":"it"}]"#).is_empty());
        let dated = parse(r#"[{"n":1,"entity":"I","relation":"likes","value":"it"}]"#, &turns).unwrap();
        assert_eq!(dated.iter().map(|f| f.when.as_deref()).collect::<Vec<_>>(), [Some("in May")]);
        // A count, a duration or a frequency is measured.
        let measured =
            [turn(Role::User, "I've added 25 new postcards since May, about twice a week for 3 months.")];
        // Records kept ("since May" dates a refused one's sentence as a statement, not counted).
        let kept = |out: &str| {
            parse(out, &measured).unwrap().iter().filter(|f| f.predicate.as_deref() != Some("other")).count()
        };
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"count","value":"postcards"}]"#), 0);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"count","value":"25 new postcards"}]"#),
            1
        );
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"frequency","value":"since May"}]"#), 0);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"frequency","value":"twice a week"}]"#),
            1
        );
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"duration","value":"months"}]"#), 1);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"duration","value":"new postcards"}]"#),
            0
        );
        // A home without words that name one is read as a place, and a place is somewhere.
        assert!(facts(r#"[{"n":2,"entity":"toys","relation":"home","value":"playtime"}]"#).is_empty());
        let toys = facts(r#"[{"n":2,"entity":"toys","relation":"place","value":"in it"}]"#);
        assert!(toys.is_empty(), "a pronoun");
        let turns = [turn(Role::User, "I keep my old sneakers on the shoe rack at The Vault.")];
        let place = |v: &str| {
            let out = format!(r#"[{{"n":1,"entity":"sneakers","relation":"place","value":"{v}"}}]"#);
            parse(&out, &turns).unwrap().iter().filter(|f| f.object.is_some()).count()
        };
        assert_eq!(
            (place("shoe rack"), place("on the shoe rack"), place("The Vault"), place("old sneakers")),
            (1, 1, 1, 0)
        );
        assert!(facts(r#"[{"n":2,"entity":"toys","relation":"place","value":"playtime toys"}]"#).is_empty());
    }

    #[test]
    fn an_entity_may_come_from_the_sentence_before_when_the_candidate_points_back() {
        let turns = [turn(
            Role::User,
            "Could you help me list my postcards? I've added 25 new ones since I started collecting again.",
        )];
        let facts =
            parse(r#"[{"n":1,"entity":"postcards","relation":"count","value":"25"}]"#, &turns).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"));
        let other = [turn(Role::User, "I've added 25 new postcards to my collection.")];
        let facts =
            parse(r#"[{"n":1,"entity":"new postcards","relation":"count","value":"25"}]"#, &other).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"), "one key for both");
    }

    #[test]
    fn off_contract_output_is_refused_whole() {
        let turns = [turn(Role::User, "I have 2 cats.")];
        for bad in [
            "",
            "[",
            r#"[{"n":1,"entity":"cats","relation":"pets","value":"2"}]"#,
            r#"[{"n":1,"entity":"cats","relation":"count","value":"2","when":null}]"#,
            r#"[{"n":1,"entity":"cats","relation":"count"}]"#,
            r#"[{"n":"1","entity":"cats","relation":"count","value":"2"}]"#,
            r#"[{"n":1,"entity":"","relation":"count","value":"2"}]"#,
        ] {
            assert_eq!(parse(bad, &turns), None, "{bad}");
        }
        assert_eq!(parse("[]", &turns), Some(Vec::new()));
    }

    #[test]
    fn subjects_take_the_head_noun_singular() {
        assert_eq!(subject("cups of coffee", Role::User), "user's cup");
        assert_eq!(subject("my yoga classes", Role::User), "user's yoga");
        assert_eq!(subject("tops from H&M", Role::User), "user's top");
        assert_eq!(subject("Emma's recipes", Role::User), "user's recipe");
        assert_eq!(subject("my", Role::User), "user");
        assert_eq!(subject("yoga classes", Role::User), subject("yoga", Role::User), "a generic head");
        assert_eq!(subject("my postcard collection", Role::User), subject("postcards", Role::User));
        assert_eq!(subject("classes", Role::User), "user's class");
        assert_eq!(
            subject("my new postcards", Role::Assistant),
            "assistant's postcard",
            "the other speaker's"
        );
        assert_eq!(singular("stories"), "story");
        assert_eq!(singular("bus"), "bus");
    }

    #[test]
    fn the_third_person_reads_as_a_sentence() {
        assert_eq!(
            third_person("I love hiking with my dog", Role::User),
            "The user loves hiking with the user's dog."
        );
        assert_eq!(
            third_person("I’m a nurse and I just bought a car.", Role::User),
            "The user is a nurse and the user just bought a car."
        );
        assert_eq!(
            third_person("I usually go to the gym at 6am!", Role::Assistant),
            "The assistant usually goes to the gym at 6am!"
        );
        assert_eq!(
            third_person(
                "Exciting things are happening--I'm exploring endorsements—my first.",
                Role::Assistant
            ),
            "Exciting things are happening--the assistant is exploring endorsements—the assistant's first."
        );
    }

    #[test]
    fn the_grammar_names_every_relation_and_the_prompt_examples_parse() {
        let turns = [turn(Role::User, "I moved to Lisbon last week, with my 2 cats.")];
        let g = grammar(&candidates(&turns));
        // Every span of the words: word i, then optionally a span from word i + 1.
        assert!(g.contains("v1-0 ::= \"I\" (\" \" v1-1)?\n"), "{g}");
        assert!(g.contains("v1-4 ::= \"last\" (\" \" v1-5)?\n"), "{g}");
        assert!(g.contains("v1-5 ::= \"week\" (\" \" v1-6)?\n"), "the comma is not copied: {g}");
        assert!(g.contains("v1-9 ::= \"cats\"\n"), "{g}");
        assert!(g.contains("e1 ::= v1 | \"I\"\n"), "{g}");
        // A word with a quote or a backslash breaks the spans; punctuation at its ends is cut.
        assert_eq!(
            span_words(r#"(Lisbon), a\b $20 5% "ok""#),
            [Some("Lisbon"), None, Some("$20"), Some("5%"), Some("ok")]
        );
        assert!(grammar(&[]).starts_with("root ::= \"[]\"\n"));
        for (r, _) in RELATIONS {
            assert!(g.contains(&format!("\"\\\"{r}\\\"\"")), "{r}");
        }
        for pair in super::super::prompt_messages_of(PROMPT)[1..].chunks(2) {
            let value: Value = serde_json::from_str(&pair[1].1).expect("example answers are JSON");
            assert!(value.as_array().unwrap().iter().all(|i| record(i).is_some()), "{}", pair[1].1);
        }
        assert_eq!(rules_blake3().len(), 64);
    }
}
