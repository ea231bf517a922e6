//! Whether a question's gold answer occurs in a rendered context: what a reader could quote.
//!
//! Both texts are normalised the same way: lowercase words, punctuation dropped, the articles
//! "a", "an" and "the" dropped, number words read as digits ("twenty five" is `25`), leading zeros
//! and ordinal endings dropped ("07", "7th" are `7`), letters and digits apart ("2023-05-07T13"
//! is `2023 5 7 t 13`). An answer occurs when its words are a run of the context's words.
//!
//! An answer that names a date ([`gold_date`]) occurs in any of the forms a context writes a date
//! in: "7 May 2023", "May 7 2023" and the ISO form of session headers and dated fact lines
//! (`2023-05-07`); a month as "May 2023" or `2023-05`. An answer that names a day relative to
//! another ("the Sunday before 25 May 2023") is looked for as the day it names. An answer that
//! lists items ("Chess, Catan") occurs when each item does.
//!
//! Left out, and counted apart: yes/no answers (a reader's verdict, not a quote), answers or items
//! of more than [`MAX_WORDS`] words (a sentence is paraphrased, not quoted), dates that name no
//! one day or month ("the week before 9 June 2023", "two weeks before 11 August 2023", "early
//! August 2023"), abstention questions, and empty answers.

use crate::facts::gold::{gold_date, number_word, tokens, GoldDate};
use chrono::Datelike;
use mnemon::internals::time::{month_name, month_number};

/// Answers of more normalised words than this are left out.
pub const MAX_WORDS: usize = 6;

/// Why an answer is not looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// "Yes", "No", "Likely yes": a verdict.
    YesNo,
    /// More than [`MAX_WORDS`] words.
    Long,
    /// A date that names no one day or month.
    Relative,
    /// An abstention question: nothing to find.
    Abstention,
    /// Nothing left after normalising.
    Empty,
}

impl LeftOut {
    /// The name written in predictions.
    pub fn as_str(self) -> &'static str {
        match self {
            LeftOut::YesNo => "yes/no",
            LeftOut::Long => "long",
            LeftOut::Relative => "relative date",
            LeftOut::Abstention => "abstention",
            LeftOut::Empty => "empty",
        }
    }
}

const ARTICLES: &[&str] = &["a", "an", "the"];
const ORDINALS: &[&str] = &["st", "nd", "rd", "th"];

/// The normalised words of `text`.
pub fn words(text: &str) -> Vec<String> {
    // Letters and digits apart: "7th" → "7" "th", "05t13" → "05" "t" "13".
    let mut split = Vec::new();
    for w in tokens(text) {
        let mut cur = String::new();
        let mut digit: Option<bool> = None;
        for c in w.chars() {
            let d = c.is_ascii_digit() || (c == '.' && digit == Some(true));
            if digit.is_some_and(|prev| prev != d) && !cur.is_empty() {
                split.push(std::mem::take(&mut cur));
            }
            digit = Some(d);
            cur.push(c);
        }
        if !cur.is_empty() {
            split.push(cur);
        }
    }
    let mut out: Vec<String> = Vec::with_capacity(split.len());
    let mut i = 0;
    while i < split.len() {
        let w = split[i].trim_end_matches('.');
        i += 1;
        if ARTICLES.contains(&w) {
            continue;
        }
        if ORDINALS.contains(&w) && out.last().is_some_and(|p| p.chars().all(|c| c.is_ascii_digit())) {
            continue;
        }
        if w.chars().all(|c| c.is_ascii_digit()) && !w.is_empty() {
            let trimmed = w.trim_start_matches('0');
            out.push(if trimmed.is_empty() { "0".into() } else { trimmed.into() });
            continue;
        }
        match spelled(w) {
            Some(n) => {
                // "twenty five": tens and a unit make one number.
                let unit =
                    split.get(i).and_then(|next| spelled(next)).filter(|u| *u < 10 && n % 10 == 0 && n >= 20);
                if let Some(u) = unit {
                    i += 1;
                    out.push((n + u).to_string());
                } else {
                    out.push(n.to_string());
                }
            }
            None => out.push(w.to_owned()),
        }
    }
    out
}

/// LoCoMo's token F1 of a reply against the gold answer: both normalised as [`words`] does
/// (lower case, punctuation, articles, number words), "and" dropped as LoCoMo's scorer drops it,
/// each word stemmed (Snowball English; LoCoMo's script uses Porter's, which differs on few
/// words), then the harmonic mean of the precision and recall of the shared words, counted with
/// their multiplicity. 0 when either side has no word.
pub fn token_f1(reply: &str, gold: &str) -> f64 {
    let stems = |t: &str| -> Vec<String> {
        let mut v: Vec<String> =
            words(t).into_iter().filter(|w| w != "and").map(|w| mnemon::internals::words::stem(&w)).collect();
        v.sort_unstable();
        v
    };
    let (r, g) = (stems(reply), stems(gold));
    if r.is_empty() || g.is_empty() {
        return 0.0;
    }
    // Both sorted: count the common multiset by merging.
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < r.len() && j < g.len() {
        match r[i].cmp(&g[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / r.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// A number word that names a number ("two", "twenty"), not a manner ("once", "single").
fn spelled(w: &str) -> Option<u32> {
    const MANNER: &[&str] = &["once", "twice", "thrice", "single", "double", "dozen"];
    if MANNER.contains(&w) {
        None
    } else {
        number_word(w)
    }
}

/// What an answer is looked for as: one or more items, each found when one of its forms (each
/// normalised words joined by spaces) occurs; or why it is left out. `session` (the evidence
/// round's timestamp) gives the year a date answer leaves out.
pub fn forms(answer: &str, session: Option<&str>) -> Result<Vec<Vec<String>>, LeftOut> {
    let w = words(answer);
    if w.is_empty() {
        return Err(LeftOut::Empty);
    }
    if w.iter().take(2).any(|x| x == "yes" || x == "no") {
        return Err(LeftOut::YesNo);
    }
    // "May 7th, 2023", which [`gold_date`] does not read, as "7 May 2023".
    let date = match w.as_slice() {
        [month, day, year] if month_number(month).is_some() => {
            gold_date(&format!("{day} {month} {year}"), session)
        }
        _ => gold_date(answer, session),
    };
    match date {
        Some(GoldDate::Day(d)) => {
            let (y, m, day) = (d.year(), d.month(), d.day());
            let month = month_name(m).unwrap_or_default();
            return Ok(vec![vec![
                format!("{day} {month} {y}"),
                format!("{month} {day} {y}"),
                format!("{y} {m} {day}"),
            ]]);
        }
        Some(GoldDate::Month(y, m)) => {
            return Ok(vec![vec![format!("{} {y}", month_name(m).unwrap_or_default()), format!("{y} {m}")]]);
        }
        Some(GoldDate::Range(..)) => return Err(LeftOut::Relative),
        Some(GoldDate::Year(_)) | None => {}
    }
    let numbered = w.iter().any(|x| x.chars().all(|c| c.is_ascii_digit()));
    if numbered && w.iter().any(|x| month_number(x).is_some()) {
        // A month and a number that name no day or month as a whole ("early August, 2023").
        return Err(LeftOut::Relative);
    }
    let mut items = Vec::new();
    for item in items_of(answer).into_iter().map(words).filter(|i| !i.is_empty()) {
        // "Chess, and Catan": the conjunction opens the last item.
        let item = match item.split_first() {
            Some((first, rest)) if (first == "and" || first == "or") && !rest.is_empty() => rest.to_vec(),
            _ => item,
        };
        if item.len() > MAX_WORDS {
            return Err(LeftOut::Long);
        }
        items.push(vec![item.join(" ")]);
    }
    Ok(items)
}

/// The parts of `text` between commas and semicolons, a comma inside a number ("1,200") kept.
fn items_of(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let in_number = b == b','
            && i > 0
            && bytes[i - 1].is_ascii_digit()
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        if (b == b',' || b == b';') && !in_number {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// Whether every item of `forms` ([`forms`]) has a form that is a run of the words of `context`.
pub fn occurs(forms: &[Vec<String>], context: &str) -> bool {
    let hay = format!(" {} ", words(context).join(" "));
    forms.iter().all(|item| item.iter().any(|f| hay.contains(&format!(" {f} "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(answer: &str, context: &str) -> bool {
        occurs(&forms(answer, Some("2023-05-08T13:56:00")).unwrap(), context)
    }

    #[test]
    fn token_f1_counts_shared_stems_with_their_multiplicity() {
        assert_eq!(token_f1("Pottery", "pottery"), 1.0);
        // "the" and "and" dropped, "classes" stems to "class", "2" equals "two".
        assert_eq!(token_f1("The pottery classes and two kids", "pottery class, 2 kids"), 1.0);
        // Reply "painting pottery hiking" (3), gold "pottery" (1): precision 1/3, recall 1.
        assert!((token_f1("painting pottery hiking", "pottery") - 0.5).abs() < 1e-12);
        // Multiplicity: one "red" in the gold answer matches one of the two in the reply.
        assert!((token_f1("red red", "red") - 2.0 * 0.5 / 1.5).abs() < 1e-12);
        assert_eq!(token_f1("unknown", "7 May 2023"), 0.0);
        assert_eq!(token_f1("", "x"), 0.0);
        assert_eq!(token_f1("the", "a"), 0.0);
    }

    #[test]
    fn words_are_normalised_alike_on_both_sides() {
        assert_eq!(words("The Twenty-five POSTCARDS!"), ["25", "postcards"]);
        assert_eq!(
            words("[Session date: 2023-05-07T13:56:00]"),
            ["session", "date", "2023", "5", "7", "t", "13", "56", "0"]
        );
        assert_eq!(words("my 5th project, $1,200.50"), ["my", "5", "project", "1200.50"]);
        assert_eq!(words("once a week, two cups"), ["once", "week", "2", "cups"]);
    }

    #[test]
    fn an_answer_occurs_as_a_run_of_words() {
        assert!(found("Adoption agencies", "user: I'm looking into adoption agencies now."));
        assert!(!found("Adoption agencies", "user: agencies of adoption"), "a run, in order");
        assert!(!found("art", "user: I love my part-time job"), "whole words only");
        assert!(found("two cups", "- The user drinks 2 cups of coffee (2023-05-01)"));
        assert!(found("$80", "it cost 80 dollars"));
        assert!(found("$1,200", "it cost 1200 dollars"), "a comma inside a number is no list");
    }

    #[test]
    fn dates_occur_in_the_forms_contexts_write() {
        assert!(found("7 May 2023", "- The user went to a support group. (2023-05-07)"));
        assert!(found("7 May 2023", "[Session date: 2023-05-07T13:56:00]"));
        assert!(found("May 7th, 2023", "on 7 May 2023 we met"));
        assert!(!found("7 May 2023", "- The user went to a support group. (2023-05-08)"));
        assert!(found("June 2023", "- The user moved. (2023-06)"));
        assert!(found("June 2023", "- The user moved. (2023-06-14)"), "a day of that month");
        // The day a relative answer names (the Sunday before 25 May 2023 is 21 May).
        assert!(found("The sunday before 25 May 2023", "- The user ran a race. (2023-05-21)"));
    }

    #[test]
    fn verdicts_long_answers_and_spans_are_left_out() {
        assert_eq!(forms("Yes", None), Err(LeftOut::YesNo));
        assert_eq!(forms("Likely no, she prefers cats", None), Err(LeftOut::YesNo));
        assert_eq!(
            forms("She wants to create a safe and loving home for kids in need", None),
            Err(LeftOut::Long)
        );
        assert_eq!(forms("The week before 9 June 2023", None), Err(LeftOut::Relative));
        assert_eq!(forms("Two weeks before 11 August 2023", None), Err(LeftOut::Relative));
        assert_eq!(forms("early August, 2023", None), Err(LeftOut::Relative));
        assert_eq!(forms("...", None), Err(LeftOut::Empty));
        assert_eq!(forms("Sweden", None), Ok(vec![vec!["sweden".to_string()]]));
        assert_eq!(
            forms("Pride parade, school speech, support group", None).map(|f| f.len()),
            Ok(3),
            "a list: each item its own"
        );
    }

    #[test]
    fn a_list_occurs_when_each_item_does() {
        assert!(found("Chess, and Catan.", "user: we played catan, then some chess"));
        assert!(!found("Chess, Catan", "user: we played catan"));
    }
}
