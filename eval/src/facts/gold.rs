//! Reading a benchmark's gold answers: the value a knowledge-update answer states (numbers with
//! their units, else its key words), the date a temporal answer names, and whether a fact states
//! an observation (content words and cosine).

use super::*;

/// The part of a gold answer that states the current value: for an answer that tells the change
/// ("You increased the limit (from one cup to two cups)"), what follows its last "to" after
/// "from"; else the whole answer. The old value is the superseded fact's to state.
pub(super) fn current_part(answer: &str) -> &str {
    let lower = answer.to_lowercase();
    let Some(from) = lower.find("from ") else { return answer };
    match lower[from..].rfind(" to ") {
        // Byte offsets of the lowercase text hold for the answer when lowercasing kept lengths.
        Some(to) if lower.len() == answer.len() => &answer[from + to + 4..],
        _ => answer,
    }
}

/// Whether a question asks for the value before an update.
pub(super) fn previous_question(question: &str) -> bool {
    let q = question.to_lowercase();
    ["previous", "initially", "originally", "used to", "before i updated", "at first"]
        .iter()
        .any(|w| q.contains(w))
}

/// The value a gold answer states: its numbers (with the unit word after each, if any), else its
/// key words.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Gold {
    Numbers(Vec<(String, Option<String>)>),
    Words(BTreeSet<String>),
}

pub(super) const UNITS: &[&str] = &[
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "year",
    "time",
    "cup",
    "ounce",
    "mile",
    "km",
    "kilometer",
    "pound",
    "kg",
    "dollar",
    "percent",
    "level",
    "page",
    "book",
    "point",
];

/// Words an answer wraps its value in.
pub(super) const ANSWER_WORDS: &[&str] = &[
    "you",
    "your",
    "the",
    "and",
    "for",
    "with",
    "from",
    "switched",
    "increased",
    "decreased",
    "limit",
    "more",
    "less",
    "per",
    "about",
    "around",
    "than",
    "was",
    "are",
    "have",
    "has",
    "had",
    "been",
    "now",
];

impl Gold {
    pub(super) fn of(answer: &str) -> Option<Gold> {
        let words = tokens(answer);
        if matches!(words.first().map(String::as_str), Some("yes" | "no")) && words.len() <= 2 {
            return None;
        }
        let numbers = numbers_with_units(&words);
        if !numbers.is_empty() {
            return Some(Gold::Numbers(numbers));
        }
        let keys: BTreeSet<String> =
            content_words(answer).into_iter().filter(|w| !ANSWER_WORDS.contains(&w.as_str())).collect();
        (!keys.is_empty()).then_some(Gold::Words(keys))
    }

    pub(super) fn stated_by(&self, text: &str) -> bool {
        match self {
            Gold::Numbers(want) => {
                let have = numbers_with_units(&tokens(text));
                want.iter().all(|(n, unit)| have.iter().any(|(m, u)| m == n && (unit.is_none() || unit == u)))
            }
            Gold::Words(want) => want.is_subset(&content_words(text)),
        }
    }
}

/// Lowercase word tokens; `$1,200.50` gives `1200.50`.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let inside_number = |c: char| {
            (c == ',' || c == '.')
                && i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
        };
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if inside_number(c) {
            if c == '.' {
                cur.push('.');
            }
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    // "twenty-five" was split at the hyphen: joined back as one number below.
    out
}

pub(super) const NUMBER_WORDS: &[(&str, u32)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
    ("once", 1),
    ("twice", 2),
    ("thrice", 3),
    ("single", 1),
    ("double", 2),
    ("dozen", 12),
];

pub(crate) fn number_word(w: &str) -> Option<u32> {
    NUMBER_WORDS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v)
}

pub(super) fn singular(w: &str) -> String {
    let w = w.strip_suffix("es").filter(|b| b.ends_with("ch") || b.ends_with("sh")).unwrap_or(w);
    w.strip_suffix('s').filter(|b| b.len() >= 2 && !b.ends_with('s')).unwrap_or(w).to_owned()
}

/// The numbers of `words` (digits, or number words, "twenty five" summed), each with the unit
/// word that follows it, if it is one.
pub(super) fn numbers_with_units(words: &[String]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let (value, next) = if w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            // "5k", "27th": the digits.
            let digits: String = w.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            (Some(digits.trim_end_matches('.').to_owned()), i + 1)
        } else if let Some(mut v) = number_word(w) {
            let mut j = i + 1;
            // "twenty five", "one hundred".
            while let Some(n) = words.get(j).and_then(|w| number_word(w)) {
                if n == 100 {
                    v *= 100;
                } else if v >= 20 && n < 10 {
                    v += n;
                } else {
                    break;
                }
                j += 1;
            }
            (Some(v.to_string()), j)
        } else {
            (None, i + 1)
        };
        if let Some(v) = value {
            let unit = words.get(next).map(|u| singular(u)).filter(|u| UNITS.contains(&u.as_str()));
            out.push((v, unit));
        }
        i = next;
    }
    out
}

pub(super) const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "was",
    "are",
    "has",
    "had",
    "her",
    "his",
    "their",
    "they",
    "you",
    "your",
    "about",
    "that",
    "this",
    "from",
    "into",
    "she",
    "him",
    "them",
    "who",
    "which",
    "what",
    "when",
    "where",
    "have",
    "been",
    "being",
    "were",
    "will",
    "would",
    "also",
    "very",
    "some",
    "its",
    "our",
    "out",
    "not",
    "but",
    "all",
    "any",
    "can",
    "could",
    "did",
    "does",
    "user",
    "assistant",
    "really",
    "just",
    "like",
    "feel",
    "feels",
    "felt",
];

/// Content words: lowercase words of 3+ characters (or numbers), minus function words and the
/// speakers, singular.
pub(super) fn content_words(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|w| w.len() >= 3 || w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| singular(&w))
        .collect()
}

/// `text` with the speakers' names read as "user" (the first) and "assistant", and "the user"
/// as "user".
pub(super) fn canonical(text: &str, names: &[String; 2]) -> String {
    let mut out = text.to_owned();
    for (name, role) in names.iter().zip(["the user", "the assistant"]) {
        if !name.is_empty() {
            out = out.replace(&format!("{name}'s"), &format!("{role}'s")).replace(name.as_str(), role);
        }
    }
    out
}

/// The share of the observation's content words that the fact holds.
pub fn overlap(observation: &str, fact: &str) -> f32 {
    let want = content_words(observation);
    if want.is_empty() {
        return 0.0;
    }
    let have = content_words(fact);
    want.intersection(&have).count() as f32 / want.len() as f32
}

/// Whether an observation and a fact match (texts already [`canonical`]).
pub fn matches(cosine: f32, overlap: f32) -> bool {
    cosine >= MATCH_COSINE && overlap >= MATCH_OVERLAP
}

/// A date a temporal answer names.
#[derive(Debug, Clone, PartialEq)]
pub enum GoldDate {
    /// A day.
    Day(NaiveDate),
    /// A month.
    Month(i32, u32),
    /// A year.
    Year(i32),
    /// Any day from the first to the second.
    Range(NaiveDate, NaiveDate),
}

impl std::fmt::Display for GoldDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GoldDate::Day(d) => write!(f, "{d}"),
            GoldDate::Month(y, m) => write!(f, "{y:04}-{m:02}"),
            GoldDate::Year(y) => write!(f, "{y:04}"),
            GoldDate::Range(a, b) => write!(f, "{a}..{b}"),
        }
    }
}

/// The date a LoCoMo temporal answer names, or none (a duration, "a few years ago").
/// `session` (the evidence round's timestamp) gives the year an answer like "13 August" leaves out.
pub fn gold_date(answer: &str, session: Option<&str>) -> Option<GoldDate> {
    // "23January" (as some answers write it): the day and the month are two words.
    let words: Vec<String> = tokens(answer)
        .into_iter()
        .flat_map(|w| match w.find(|c: char| !c.is_ascii_digit()) {
            Some(at) if at > 0 && month_number(&w[at..]).is_some() => {
                vec![w[..at].to_owned(), w[at..].to_owned()]
            }
            _ => vec![w],
        })
        .collect();
    let month_at = |i: usize| words.get(i).and_then(|w| month_number(w));
    let year_at =
        |i: usize| words.get(i).and_then(|w| w.parse::<i32>().ok()).filter(|y| (1900..2100).contains(y));
    let day_at = |i: usize| words.get(i).and_then(|w| w.parse::<u32>().ok()).filter(|d| (1..=31).contains(d));
    let session_year = session.and_then(|s| mnemon::Timestamp::parse(s).ok()).map(|t| t.date().year());
    // The last date the answer names: "D Month [YYYY]", "Month YYYY" or "YYYY".
    let mut anchor: Option<(usize, GoldDate)> = None;
    for i in 0..words.len() {
        if let Some(m) = month_at(i) {
            if let Some(d) = i.checked_sub(1).and_then(day_at) {
                let y = year_at(i + 1).or(session_year)?;
                anchor = NaiveDate::from_ymd_opt(y, m, d).map(|d| (i - 1, GoldDate::Day(d)));
            } else if let Some(y) = year_at(i + 1) {
                anchor = Some((i, GoldDate::Month(y, m)));
            }
        } else if let Some(y) = year_at(i) {
            if anchor.is_none() && !(i > 0 && month_at(i - 1).is_some()) {
                anchor = Some((i, GoldDate::Year(y)));
            }
        }
    }
    let (at, date) = anchor?;
    let before: Vec<&str> = words[..at].iter().map(String::as_str).collect();
    let lead = before.join(" ");
    if before.is_empty() || lead == "in" || lead == "on" {
        return Some(date);
    }
    let GoldDate::Day(d) = date else {
        // "Since 2016", "about 2022": not the date of an event.
        return None;
    };
    if lead.ends_with("the week before") {
        return Some(GoldDate::Range(d - Duration::days(7), d - Duration::days(1)));
    }
    if lead.ends_with("the week of") {
        return Some(GoldDate::Range(d - Duration::days(3), d + Duration::days(3)));
    }
    let weekend_before = |d: NaiveDate, weeks: i64| {
        let mut sat = d - Duration::days(1);
        while sat.weekday() != Weekday::Sat {
            sat -= Duration::days(1);
        }
        let sat = sat - Duration::days(7 * weeks);
        GoldDate::Range(sat, sat + Duration::days(1))
    };
    if lead.ends_with("two weekends before") {
        return Some(weekend_before(d, 1));
    }
    if lead.ends_with("the weekend before") {
        return Some(weekend_before(d, 0));
    }
    // "the Friday before D": the last Friday before D.
    let day = match before.as_slice() {
        [.., name, "before"] => weekday(name)?,
        _ => return None,
    };
    let mut x = d - Duration::days(1);
    while x.weekday() != day {
        x -= Duration::days(1);
    }
    Some(GoldDate::Day(x))
}

/// Whether a resolved date (`YYYY-MM-DD`, `YYYY-MM`, `YYYY`) falls on `gold`, at the gold's
/// precision (a coarser date does not).
pub fn falls_on(resolved: &str, gold: &GoldDate) -> bool {
    let parts: Vec<&str> = resolved.split('-').collect();
    let y = parts.first().and_then(|p| p.parse::<i32>().ok());
    let m = parts.get(1).and_then(|p| p.parse::<u32>().ok());
    let day = NaiveDate::parse_from_str(resolved, "%Y-%m-%d").ok();
    match gold {
        GoldDate::Day(g) => day == Some(*g),
        GoldDate::Range(a, b) => day.is_some_and(|d| *a <= d && d <= *b),
        GoldDate::Month(gy, gm) => y == Some(*gy) && m == Some(*gm),
        GoldDate::Year(gy) => y == Some(*gy),
    }
}
