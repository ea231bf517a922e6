//! The conflict normalizer: text, subject, predicate and object normal forms, a
//! polarity and the `subject|predicate` pair key, from the versioned lexicons in `lexicons/`.
//!
//! Pure functions. Text is NFKC-normalized and case-folded first, typographic apostrophes become
//! plain ones, contractions are expanded, apostrophes dropped and punctuation stripped, except
//! where it carries a value: a hyphen or en dash between two numbers is a range ("6-7 hours" →
//! "6 to 7 hours", never "67 hours"), and a point or comma between digits stays ("1.5", "1,500").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

const CONTRACTIONS: &str = include_str!("../../lexicons/contractions.txt");
const NEGATIONS: &str = include_str!("../../lexicons/negations.txt");
const AUXILIARIES: &str = include_str!("../../lexicons/auxiliaries.txt");
const ARTICLES: &str = include_str!("../../lexicons/articles.txt");
const NUMBER_WORDS: &str = include_str!("../../lexicons/number_words.txt");
const APPROXIMATORS: &str = include_str!("../../lexicons/approximators.txt");
const ANTONYMS: &str = include_str!("../../lexicons/antonyms.txt");
const FUNCTIONAL: &str = include_str!("../../lexicons/functional.txt");

/// Version of the rules in this file, hashed with the lexicons into the pins.
const RULES_VERSION: &str = "normalize-rules-v1";

/// blake3 over the rules version and every lexicon the conflict rules read (this module's and
/// the endings').
pub fn normalize_blake3() -> String {
    let mut h = blake3::Hasher::new();
    for part in [
        super::ending::ENDINGS,
        RULES_VERSION,
        CONTRACTIONS,
        NEGATIONS,
        AUXILIARIES,
        ARTICLES,
        NUMBER_WORDS,
        APPROXIMATORS,
        ANTONYMS,
        FUNCTIONAL,
    ] {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    h.finalize().to_hex().to_string()
}

/// Whether a statement holds or is denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Polarity {
    /// Holds.
    Positive,
    /// Denied (an odd number of negations, counting an antonym's negative side).
    Negative,
}

/// A triple in normal form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Normal {
    /// The subject: articles dropped, first-person forms and "the user" as `user`.
    pub subject: String,
    /// The predicate: negations and leading auxiliaries removed, words stemmed, antonym and
    /// functional forms mapped to their group.
    pub predicate: String,
    /// The object: articles and negations removed, number words as digits, words stemmed.
    pub object: String,
    /// Holds or denied.
    pub polarity: Polarity,
    /// Whether the predicate holds one value at a time (`lexicons/functional.txt`).
    pub functional: bool,
    /// Whether the object is an estimate ("about 30") or a range ("6 to 7").
    pub approximate: bool,
}

impl Normal {
    /// `subject|predicate`: facts with the same key speak of the same relation.
    pub fn pair_key(&self) -> String {
        format!("{}|{}", self.subject, self.predicate)
    }
}

/// The predicates of the closed output contract (`extract::Contract::Closed`): the first
/// form of every functional group, and the first form of each side of every antonym group, in
/// lexicon order — the relations the conflict rules act on. Anything else is `other`.
pub fn closed_predicates() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut push = |form: &str, out: &mut Vec<String>| {
        if seen.insert(form.to_owned()) {
            out.push(form.to_owned());
        }
    };
    let mut last = String::new();
    for (group, form) in entries(FUNCTIONAL) {
        if group != last {
            push(&form, &mut out);
            last = group;
        }
    }
    let mut sides = std::collections::BTreeSet::new();
    for (group, line) in entries(ANTONYMS) {
        let (side, form) = line.split_at(1);
        if sides.insert((group, side.to_owned())) {
            push(form.trim(), &mut out);
        }
    }
    out
}

/// Lines of a lexicon that are neither blank nor comments, with the group each falls under
/// (the text of its `## ` header, up to a colon).
pub(crate) fn entries(text: &str) -> Vec<(String, String)> {
    let mut group = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix("## ") {
            group = header.split(':').next().unwrap_or(header).trim().to_owned();
        } else if !line.is_empty() && !line.starts_with('#') {
            out.push((group.clone(), line.to_owned()));
        }
    }
    out
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// Contraction → expansion, apart from [`LEXICONS`] because building those calls [`text`].
static CONTRACTION_MAP: LazyLock<BTreeMap<String, String>> =
    LazyLock::new(|| pairs(CONTRACTIONS).into_iter().collect());

/// `a => b` lines of a lexicon.
fn pairs(text: &str) -> Vec<(String, String)> {
    entries(text)
        .into_iter()
        .filter_map(|(_, l)| l.split_once(" => ").map(|(a, b)| (a.trim().to_owned(), b.trim().to_owned())))
        .collect()
}

/// Where an approximator stands relative to its number or numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Around {
    Before,
    After,
    Between,
}

struct Lexicons {
    /// Longest first.
    negations: Vec<Vec<String>>,
    /// Longest first.
    auxiliaries: Vec<Vec<String>>,
    articles: BTreeSet<String>,
    numbers: BTreeMap<String, u64>,
    /// Multi-word counts ("a couple of"), longest first.
    number_phrases: Vec<(Vec<String>, u64)>,
    approximators: Vec<(Around, Vec<String>)>,
    /// Normalized form → (group, flips polarity).
    antonyms: BTreeMap<Vec<String>, (String, bool)>,
    /// Normalized form → group key.
    functional: BTreeMap<Vec<String>, String>,
}

/// Whether a normalized word says how exact a number is or joins two into a range, not what it
/// counts: a one-word approximator ("around", "about", "ish"), the last word of a longer one
/// ("least" of "at least", "than" of "more than"), or a range word ("to", "or").
pub(crate) fn qualifies_number(word: &str) -> bool {
    LEXICONS.approximators.iter().any(|(_, phrase)| phrase.last().is_some_and(|w| w == word))
}

/// Whether a normalized word joins two numbers into a range ("5 to 7", "2 or 3").
pub(crate) fn joins_range(word: &str) -> bool {
    LEXICONS
        .approximators
        .iter()
        .any(|(around, phrase)| matches!(around, Around::Between) && phrase.len() == 1 && phrase[0] == word)
}

fn longest_first(mut v: Vec<Vec<String>>) -> Vec<Vec<String>> {
    v.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    v.dedup();
    v
}

static LEXICONS: LazyLock<Lexicons> = LazyLock::new(|| {
    let list =
        |text: &str| -> Vec<Vec<String>> { entries(text).into_iter().map(|(_, l)| words(&l)).collect() };
    let mut numbers = BTreeMap::new();
    let mut number_phrases = Vec::new();
    for (word, digits) in pairs(NUMBER_WORDS) {
        let value: u64 = digits.parse().unwrap_or(0);
        let w = words(&word);
        if w.len() == 1 {
            numbers.insert(word, value);
        } else {
            number_phrases.push((w, value));
        }
    }
    number_phrases.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    let mut lex = Lexicons {
        negations: longest_first(list(NEGATIONS)),
        auxiliaries: longest_first(list(AUXILIARIES)),
        articles: entries(ARTICLES).into_iter().map(|(_, l)| l).collect(),
        numbers,
        number_phrases,
        approximators: entries(APPROXIMATORS)
            .into_iter()
            .filter_map(|(group, l)| {
                let around = match group.as_str() {
                    "before a number" => Around::Before,
                    "after a number" => Around::After,
                    "between two numbers" => Around::Between,
                    _ => return None,
                };
                Some((around, words(&l)))
            })
            .collect(),
        antonyms: BTreeMap::new(),
        functional: BTreeMap::new(),
    };
    // Forms go through the same predicate steps as facts do, so that they meet them there.
    let mut antonyms = BTreeMap::new();
    for (group, line) in entries(ANTONYMS) {
        let (flip, form) = match line.split_once(' ') {
            Some(("+", form)) => (false, form),
            Some(("-", form)) => (true, form),
            _ => continue,
        };
        let (form, _) = strip_predicate(&lex, &words(&text(form)));
        antonyms.entry(form).or_insert((group, flip));
    }
    let mut functional = BTreeMap::new();
    for (group, line) in entries(FUNCTIONAL) {
        let (form, _) = strip_predicate(&lex, &words(&text(&line)));
        functional.entry(form).or_insert(group);
    }
    lex.antonyms = antonyms;
    lex.functional = functional;
    lex
});

/// The value of a one-word number word ("five" → 5), from `lexicons/number_words.txt`.
pub(crate) fn number_word(word: &str) -> Option<u64> {
    LEXICONS.numbers.get(word).copied()
}

fn is_number(w: &str) -> bool {
    !w.is_empty()
        && w.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        && w.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Normal form of free text: NFKC, case folded, contractions expanded, apostrophes dropped,
/// punctuation stripped (ranges and decimal points kept), whitespace collapsed.
pub fn text(raw: &str) -> String {
    let mut out = fold(raw);
    // Dropping an apostrophe can bring together characters that NFKC composes ("𑎋'\u{113c5}"):
    // fold again until nothing changes. ASCII text never does.
    for _ in 0..3 {
        if out.is_ascii() {
            break;
        }
        let again = fold(&out);
        if again == out {
            break;
        }
        out = again;
    }
    out
}

/// One pass of [`text`].
fn fold(raw: &str) -> String {
    // Lowercasing can leave text that NFKC changes again: fold twice so the result is a fixed point.
    let folded: String =
        raw.nfkc().collect::<String>().to_lowercase().nfkc().collect::<String>().to_lowercase();
    let folded = folded.replace(['\u{2019}', '\u{2018}', '\u{02bc}'], "'");
    let chars: Vec<char> = folded.chars().collect();
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let between_digits =
            prev.is_some_and(|p| p.is_ascii_digit()) && next.is_some_and(|n| n.is_ascii_digit());
        match c {
            c if c.is_alphanumeric() || c == '\'' => out.push(c),
            '-' | '\u{2013}' | '\u{2014}' if between_digits => out.push_str(" to "),
            '.' | ',' if between_digits => out.push(c),
            // A hyphen inside a word joins it ("part-time" → "part time"); anything else separates.
            _ => out.push(' '),
        }
    }
    let expanded: Vec<String> = out
        .split_whitespace()
        .map(|w| CONTRACTION_MAP.get(w).map_or_else(|| w.replace('\'', ""), Clone::clone))
        .collect();
    expanded.iter().flat_map(|w| w.split_whitespace()).collect::<Vec<_>>().join(" ")
}

/// Removes every negation marker (longest first, each occurrence once) and returns the rest with
/// the count.
fn strip_negations(lex: &Lexicons, tokens: &[String]) -> (Vec<String>, usize) {
    let mut out = Vec::with_capacity(tokens.len());
    let mut count = 0;
    let mut i = 0;
    'outer: while i < tokens.len() {
        for marker in &lex.negations {
            if tokens[i..].starts_with(marker) {
                count += 1;
                i += marker.len();
                continue 'outer;
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    (out, count)
}

/// A predicate's negations removed (counted), then its leading auxiliaries (never its last word),
/// then every word stemmed, so that "drinks" and "does not drink" meet at `drink`.
fn strip_predicate(lex: &Lexicons, tokens: &[String]) -> (Vec<String>, usize) {
    let (mut rest, count) = strip_negations(lex, tokens);
    'outer: loop {
        for aux in &lex.auxiliaries {
            if rest.len() > aux.len() && rest.starts_with(aux) {
                rest.drain(..aux.len());
                continue 'outer;
            }
        }
        return (stemmed(rest), count);
    }
}

/// Words stemmed (Snowball, as the word index does); numbers kept as written.
fn stemmed(words: Vec<String>) -> Vec<String> {
    words.into_iter().map(|w| if is_number(&w) { w } else { crate::model::words::stem(&w) }).collect()
}

fn drop_articles(lex: &Lexicons, mut tokens: Vec<String>) -> Vec<String> {
    while tokens.len() > 1 && lex.articles.contains(&tokens[0]) {
        tokens.remove(0);
    }
    tokens
}

/// The subject in normal form: articles dropped, the user's own forms as `user`.
fn subject(lex: &Lexicons, raw: &str) -> String {
    let tokens = drop_articles(lex, words(&text(raw)));
    let mut out = Vec::with_capacity(tokens.len());
    let mut rest = tokens.as_slice();
    if let Some(first) = rest.first()
        && ["i", "me", "my", "myself", "mine", "user", "users"].contains(&first.as_str())
    {
        out.push("user".to_owned());
        rest = &rest[1..];
    }
    out.extend(rest.iter().cloned());
    out.join(" ")
}

/// Number words as digits: "twenty five" → 25, "two hundred" → 200, "a couple of" → 2.
fn digits(lex: &Lexicons, tokens: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    'outer: while i < tokens.len() {
        for (phrase, value) in &lex.number_phrases {
            if tokens[i..].starts_with(phrase) {
                out.push(value.to_string());
                i += phrase.len();
                continue 'outer;
            }
        }
        // A run of number words adds up, scales multiply what came before.
        let mut total: Option<u64> = None;
        let mut current = 0u64;
        while let Some(&v) = tokens.get(i).and_then(|w| lex.numbers.get(w)) {
            if v >= 100 {
                current = current.max(1).saturating_mul(v);
                if v >= 1000 {
                    total = Some(total.unwrap_or(0).saturating_add(current));
                    current = 0;
                }
            } else {
                current = current.saturating_add(v);
            }
            i += 1;
            total.get_or_insert(0);
        }
        if let Some(t) = total {
            out.push(t.saturating_add(current).to_string());
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Normalizes a triple. Missing parts are empty strings.
///
/// ```
/// use mnemon::internals::normalize::{normalize, Polarity};
/// let a = normalize("I", "no longer live in", "Porto");
/// assert_eq!((a.pair_key().as_str(), a.object.as_str(), a.polarity), ("user|lives_in", "porto", Polarity::Negative));
/// let b = normalize("The user", "quit", "smoking");
/// assert_eq!((b.pair_key().as_str(), b.polarity), ("user|start", Polarity::Negative));
/// assert_eq!(normalize("user", "sleeps", "6-7 hours").object, "6 to 7 hour");
/// ```
pub fn normalize(subject_raw: &str, predicate_raw: &str, object_raw: &str) -> Normal {
    let lex = &*LEXICONS;
    let (predicate, mut negations) = strip_predicate(lex, &words(&text(predicate_raw)));
    let (mut name, mut functional) = (predicate.join(" "), false);
    if let Some((group, flip)) = lex.antonyms.get(&predicate) {
        name = group.clone();
        negations += usize::from(*flip);
    } else if let Some(group) = lex.functional.get(&predicate) {
        name = group.clone();
        functional = true;
    }
    let (object, object_negations) = strip_negations(lex, &words(&text(object_raw)));
    negations += object_negations;
    let object = stemmed(drop_articles(lex, digits(lex, &object)));
    let number_at = |i: Option<usize>| i.and_then(|i| object.get(i)).is_some_and(|w| is_number(w));
    let approximate = lex.approximators.iter().any(|(around, phrase)| {
        (0..object.len()).filter(|&i| object[i..].starts_with(phrase)).any(|i| {
            let (before, after) = (i.checked_sub(1), Some(i + phrase.len()));
            match around {
                Around::Before => number_at(after),
                Around::After => number_at(before),
                Around::Between => number_at(before) && number_at(after),
            }
        })
    });
    Normal {
        subject: subject(lex, subject_raw),
        predicate: name,
        object: object.join(" "),
        polarity: if negations % 2 == 1 { Polarity::Negative } else { Polarity::Positive },
        functional,
        approximate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keeps_ranges_decimals_and_expands_contractions() {
        assert_eq!(text("I sleep 6-7 hours."), "i sleep 6 to 7 hours");
        assert_eq!(text("6–7"), "6 to 7");
        assert_eq!(text("It costs $1,500.50!"), "it costs 1,500.50");
        assert_eq!(text("I don’t LIKE part-time work"), "i do not like part time work");
        assert_eq!(text("the user's dog isn't here"), "the users dog is not here");
        assert_eq!(text("ＡＢＣ"), "abc", "NFKC folds full-width letters");
    }

    #[test]
    fn subjects_fold_the_users_own_forms() {
        let lex = &*LEXICONS;
        assert_eq!(subject(lex, "I"), "user");
        assert_eq!(subject(lex, "The user"), "user");
        assert_eq!(subject(lex, "the user's sister Ana"), "user sister ana");
        assert_eq!(subject(lex, "My partner"), "user partner");
        assert_eq!(subject(lex, "Ana"), "ana");
    }

    #[test]
    fn predicates_lose_negations_and_auxiliaries_and_map_to_groups() {
        let n = normalize("user", "is currently living in", "Lisbon");
        assert_eq!((n.predicate.as_str(), n.functional, n.polarity), ("lives_in", true, Polarity::Positive));
        let n = normalize("user", "does not like", "coffee");
        assert_eq!((n.predicate.as_str(), n.polarity), ("like", Polarity::Negative));
        let n = normalize("user", "hates", "coffee");
        assert_eq!((n.predicate.as_str(), n.polarity), ("like", Polarity::Negative));
        // Two negations cancel: "does not dislike".
        let n = normalize("user", "doesn't dislike", "coffee");
        assert_eq!(n.polarity, Polarity::Positive);
        let n = normalize("user", "has", "a cat");
        assert_eq!((n.predicate.as_str(), n.object.as_str(), n.functional), ("own", "cat", false));
        let n = normalize("user", "plans to move to", "Berlin");
        assert_eq!(n.predicate, "plan to move to", "a plan is not a move");
    }

    #[test]
    fn objects_read_numbers_and_mark_estimates() {
        let n = normalize("user", "has", "two cats");
        assert_eq!(n.object, "2 cat");
        assert_eq!(normalize("user", "owns", "twenty five books").object, "25 book");
        assert_eq!(normalize("user", "owns", "two hundred books").object, "200 book");
        assert_eq!(normalize("user", "saved", "three thousand five hundred euros").object, "3500 euro");
        assert_eq!(normalize("user", "has", "a couple of bikes").object, "2 bike");
        assert!(normalize("user", "runs", "about 30 minutes").approximate);
        assert!(normalize("user", "sleeps", "6-7 hours").approximate);
        assert!(!normalize("user", "runs", "30 minutes").approximate);
        assert_eq!(normalize("user", "has", "no pets").polarity, Polarity::Negative);
    }

    #[test]
    fn text_is_a_fixed_point_when_a_dropped_apostrophe_joins_what_nfkc_composes() {
        let once = text("\u{1138b}'\u{113c5}");
        assert_eq!(text(&once), once);
    }

    proptest::proptest! {
        #[test]
        fn normalizing_never_panics_and_is_idempotent_on_text(s in "\\PC{0,60}") {
            let once = text(&s);
            proptest::prop_assert_eq!(text(&once), once.clone());
            let n = normalize(&s, &s, &s);
            proptest::prop_assert_eq!(subject(&LEXICONS, &n.subject), n.subject.clone());
        }
    }

    #[test]
    fn the_hash_covers_every_lexicon() {
        assert_eq!(normalize_blake3().len(), 64);
        assert_eq!(normalize_blake3(), normalize_blake3());
    }
}
