//! Conflicts between facts: the screens that keep a cosine-duplicate fact apart from the
//! one it resembles, the three supersession rules, and which of two conflicting facts wins.
//!
//! Pure functions over [`Statement`]s. Precision comes first: the reference design superseded 46
//! facts on 100 histories and only 3 were real updates (refinements, enumerations, coexisting
//! values, a collapsed range and another person's number were taken for changes). So beyond the
//! three rules a conflict also needs: the user's own words on both sides, triples on both sides,
//! and objects where neither contains the other ("Boston" → "Back Bay, Boston" refines, it does not
//! replace). `tests/conflicts.json` is the labelled set these rules are measured on.

use std::cmp::Ordering;

use serde::Serialize;

use super::normalize::{Normal, Polarity, normalize};

/// Version of the rules in this file, pinned with the lexicons' hash in stores built with an
/// extractor.
pub const CONFLICT_VERSION: &str = "conflict-rules-v3 short=6 entropy=2.0 numbers-apart endings value-frames ending-heads frame-units restated-numbers";

/// Objects of at most this many words count as short (rules (b) and the screen).
pub const SHORT: usize = 6;
/// Texts with fewer bits of word entropy than this are too short to judge (the screen).
pub const MIN_ENTROPY_BITS: f64 = 2.0;

/// One fact as the conflict rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement<'a> {
    /// Insertion order (later is larger).
    pub id: i64,
    /// The sentence.
    pub content: &'a str,
    /// The triple; a fact without subject and predicate never conflicts.
    pub subject: Option<&'a str>,
    /// Triple predicate.
    pub predicate: Option<&'a str>,
    /// Triple object.
    pub object: Option<&'a str>,
    /// The resolved mention (`YYYY-MM-DD`, `YYYY-MM` or `YYYY`).
    pub valid_time: Option<&'a str>,
    /// The date of its round's session (`YYYY-MM-DD`).
    pub session_date: &'a str,
    /// Its round's timestamp, in seconds.
    pub ts_unix: i64,
    /// Whether the user said it (its excerpt is from the user's turn), not the assistant.
    pub by_user: bool,
    /// The excerpt: the speaker's own words, where an ending is read ([`super::ending`]).
    pub raw: &'a str,
}

impl Statement<'_> {
    /// The triple in normal form, if it has a subject and a predicate.
    pub fn normal(&self) -> Option<Normal> {
        let (s, p) = (self.subject?.trim(), self.predicate?.trim());
        if s.is_empty() || p.is_empty() {
            return None;
        }
        Some(normalize(s, p, self.object.unwrap_or("")))
    }
}

/// Which supersession rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// (a) the same object, opposite polarity.
    Negation,
    /// (b) another short object for a functional predicate.
    Value,
    /// (c) the same object but for its numbers.
    Number,
    /// (d) the user's statement of an end ("I quit my job at Globex") of what the older fact
    /// said ("The user works at Globex"), whatever their keys.
    Ending,
    /// (e) another number in the same frame of words ("had Luna for 6 months", "had my cat,
    /// Luna, for 9 months"), whatever their keys.
    Frame,
}

impl Rule {
    /// The rule's name in the decision log.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Negation => "negation",
            Rule::Value => "functional-value",
            Rule::Number => "number",
            Rule::Ending => "ending",
            Rule::Frame => "value-frame",
        }
    }
}

/// Why a cosine duplicate was kept apart rather than merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Apart {
    /// One holds what the other denies.
    Polarity,
    /// The same relation with another short value.
    Value,
    /// One text is too short to judge (under [`MIN_ENTROPY_BITS`]).
    LowEntropy,
    /// The texts state other numbers ("17 new postcards", "25 new postcards"): alike in words,
    /// not the same fact.
    Numbers,
    /// The new one ends what the old one said ("not vegetarian anymore", "vegetarian").
    Ending,
}

fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// Whether a normalized word states a number (number words are digits by then).
pub(super) fn is_number(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Shannon entropy, in bits, of the word distribution of `text` (normalized).
pub fn entropy_bits(text: &str) -> f64 {
    let norm = super::normalize::text(text);
    let all = words(&norm);
    if all.is_empty() {
        return 0.0;
    }
    let mut counts = std::collections::BTreeMap::new();
    for w in &all {
        *counts.entry(*w).or_insert(0usize) += 1;
    }
    let n = all.len() as f64;
    counts.values().map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// The numbers a text states, number words as digits, in order.
fn numbers(text: &str) -> Vec<String> {
    let object = normalize("text", "says", text).object;
    words(&object).into_iter().filter(|w| is_number(w)).map(str::to_owned).collect()
}

/// Whether every word of `a` occurs in `b` or every word of `b` in `a` (a refinement or a
/// generalization, not another value).
fn contains_either(a: &str, b: &str) -> bool {
    let (wa, wb) = (words(a), words(b));
    wa.iter().all(|w| wb.contains(w)) || wb.iter().all(|w| wa.contains(w))
}

/// The supersession rule two statements meet, if any. Symmetric.
pub fn conflict(a: &Statement<'_>, b: &Statement<'_>) -> Option<Rule> {
    if !a.by_user || !b.by_user {
        return None; // Assistant facts never conflict.
    }
    let (na, nb) = (a.normal()?, b.normal()?);
    if na.pair_key() != nb.pair_key() || na.subject == "assistant" {
        return None;
    }
    let short = |n: &Normal| !n.object.is_empty() && words(&n.object).len() <= SHORT;
    if na.object == nb.object {
        return (na.polarity != nb.polarity).then_some(Rule::Negation);
    }
    if na.polarity == Polarity::Negative || nb.polarity == Polarity::Negative {
        return None;
    }
    // (c): the same words around different exact numbers.
    let (oa, ob) = (words(&na.object), words(&nb.object));
    let numbers = |o: &[&str]| o.iter().filter(|w| is_number(w)).count();
    if numbers(&oa) > 0
        && numbers(&oa) == numbers(&ob)
        && !na.approximate
        && !nb.approximate
        && oa.len() == ob.len()
        && oa.iter().zip(&ob).all(|(x, y)| x == y || is_number(x) && is_number(y))
    {
        return Some(Rule::Number);
    }
    // (b): another value of a one-value relation, unless one value refines the other.
    (na.functional && short(&na) && short(&nb) && !contains_either(&na.object, &nb.object))
        .then_some(Rule::Value)
}

/// Whether `new` is the user's statement of an end of what `old`, an earlier statement of the
/// user's, said (rule (d)).
pub fn ends(new: &Statement<'_>, old: &Statement<'_>) -> bool {
    new.by_user
        && old.by_user
        && super::ending::ending(new.raw).is_some_and(|e| super::ending::ends(&e, old.content, old.raw))
}

/// Whether two statements of the user's, undated and of different rounds, under different keys
/// (the keyed rules judge facts of one key), give one attribute two numbers in the same frame of
/// words (rule (e), [`super::frame`]). Symmetric.
pub fn frame_conflict(a: &Statement<'_>, b: &Statement<'_>) -> bool {
    may_frame(a, b) && super::frame::same_frame(a.raw, b.raw)
}

/// Whether rule (e) may judge two statements, their frames aside: both the user's, undated, of
/// different rounds, and not of one key.
pub(crate) fn may_frame(a: &Statement<'_>, b: &Statement<'_>) -> bool {
    let key = |s: &Statement<'_>| s.normal().map(|n| n.pair_key());
    a.by_user
        && b.by_user
        && a.valid_time.is_none()
        && b.valid_time.is_none()
        && (a.ts_unix, a.session_date) != (b.ts_unix, b.session_date)
        && (key(a).is_none() || key(a) != key(b))
}

/// Screens for a new fact that is a cosine duplicate of an old one: `Some(reason)` keeps both,
/// `None` merges the new into the old.
pub fn screen(new: &Statement<'_>, old: &Statement<'_>) -> Option<Apart> {
    if ends(new, old) {
        return Some(Apart::Ending);
    }
    if entropy_bits(new.content) < MIN_ENTROPY_BITS || entropy_bits(old.content) < MIN_ENTROPY_BITS {
        return Some(Apart::LowEntropy);
    }
    if numbers(new.content) != numbers(old.content) {
        return Some(Apart::Numbers);
    }
    let (Some(nn), Some(no)) = (new.normal(), old.normal()) else { return None };
    if nn.polarity != no.polarity {
        return Some(Apart::Polarity);
    }
    let short = |n: &Normal| words(&n.object).len() <= SHORT;
    if nn.pair_key() == no.pair_key() && nn.object != no.object && short(&nn) && short(&no) {
        return Some(Apart::Value);
    }
    None
}

/// A date's rank: `(year, month, day)`, a missing part as 0, so "2024" ranks below every date in
/// 2024 and "2024-05" below every day of May.
fn rank_of(date: &str) -> (i32, u32, u32) {
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<u32>().unwrap_or(0));
    let year = parts.next().unwrap_or(0) as i32;
    (year, parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Orders two conflicting statements: `Greater` when `a` wins (it is the newer truth). Later
/// effective time (valid time, else session date), then later timestamp, then the user's own
/// words over the assistant's, then the later insertion.
pub fn newer(a: &Statement<'_>, b: &Statement<'_>) -> Ordering {
    let effective = |s: &Statement<'_>| rank_of(s.valid_time.unwrap_or(s.session_date));
    effective(a)
        .cmp(&effective(b))
        .then(a.ts_unix.cmp(&b.ts_unix))
        .then(a.by_user.cmp(&b.by_user))
        .then(a.id.cmp(&b.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st<'a>(id: i64, s: &'a str, p: &'a str, o: &'a str, date: &'a str) -> Statement<'a> {
        Statement {
            id,
            content: "The user says something long enough to judge.",
            subject: Some(s),
            predicate: Some(p),
            object: Some(o),
            valid_time: None,
            session_date: date,
            ts_unix: id,
            by_user: true,
            raw: "user: something",
        }
    }

    #[test]
    fn the_three_rules_and_their_controls() {
        let old = st(1, "user", "lives in", "Porto", "2024-01-01");
        assert_eq!(conflict(&old, &st(2, "I", "moved to", "Lisbon", "2024-05-01")), Some(Rule::Value));
        assert_eq!(
            conflict(&old, &st(2, "user", "no longer lives in", "Porto", "2024-05-01")),
            Some(Rule::Negation)
        );
        assert_eq!(
            conflict(&old, &st(2, "user", "lives in", "Ribeira, Porto", "2024-05-01")),
            None,
            "a refinement"
        );
        assert_eq!(conflict(&old, &st(2, "user's sister", "lives in", "Lisbon", "2024-05-01")), None);
        let cat = st(1, "user", "has", "a cat", "2024-01-01");
        assert_eq!(conflict(&cat, &st(2, "user", "has", "a dog", "2024-05-01")), None, "pets coexist");
        assert_eq!(
            conflict(&cat, &st(2, "user", "gave away", "the cat", "2024-05-01")),
            Some(Rule::Negation)
        );
        let runs = st(1, "user", "runs", "5 km every week", "2024-01-01");
        assert_eq!(
            conflict(&runs, &st(2, "user", "runs", "10 km every week", "2024-05-01")),
            Some(Rule::Number)
        );
        assert_eq!(conflict(&runs, &st(2, "user", "runs", "about 10 km every week", "2024-05-01")), None);
        let sleep = st(1, "user", "sleeps", "6-7 hours", "2024-01-01");
        assert_eq!(
            conflict(&sleep, &st(2, "user", "sleeps", "67 hours", "2024-05-01")),
            None,
            "a range is not 67"
        );
        let mut assistant = st(2, "user", "lives in", "Lisbon", "2024-05-01");
        assistant.by_user = false;
        assert_eq!(conflict(&old, &assistant), None);
    }

    #[test]
    fn the_newer_fact_wins_by_effective_time_then_ts_then_user_then_id() {
        let a = st(1, "user", "lives in", "Porto", "2024-05-01");
        let mut b = st(2, "user", "lives in", "Lisbon", "2024-01-01");
        assert_eq!(newer(&a, &b), Ordering::Greater);
        b.valid_time = Some("2024-06");
        assert_eq!(newer(&b, &a), Ordering::Greater);
        b.valid_time = Some("2024");
        assert_eq!(newer(&a, &b), Ordering::Greater, "a year ranks below the days of that year");
        let c = st(3, "user", "lives in", "Braga", "2024-05-01");
        assert_eq!(newer(&c, &a), Ordering::Greater, "same day: the later ts");
    }

    #[test]
    fn screens_keep_apart_what_differs_and_merge_what_repeats() {
        let old = st(1, "user", "likes", "green tea", "2024-01-01");
        assert_eq!(
            screen(&st(2, "user", "dislikes", "green tea", "2024-02-01"), &old),
            Some(Apart::Polarity)
        );
        assert_eq!(screen(&st(2, "user", "likes", "black tea", "2024-02-01"), &old), Some(Apart::Value));
        assert_eq!(screen(&st(2, "The user", "loves", "green tea", "2024-02-01"), &old), None);
        let count = |id, content| Statement { content, ..st(id, "user", "added", "postcards", "2024-02-01") };
        assert_eq!(
            screen(
                &count(2, "The user has added 25 new postcards."),
                &count(1, "The user has added seventeen new postcards.")
            ),
            Some(Apart::Numbers)
        );
        assert_eq!(
            screen(
                &count(2, "The user has added 17 new postcards!"),
                &count(1, "The user has added seventeen new postcards.")
            ),
            None,
            "the same number, written two ways"
        );
        let terse = Statement { content: "Tea.", ..st(2, "user", "likes", "green tea", "2024-02-01") };
        assert_eq!(screen(&terse, &old), Some(Apart::LowEntropy));
        assert!((entropy_bits("a b c d") - 2.0).abs() < 1e-9);
    }
}
