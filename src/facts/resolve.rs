//! The relative-date resolver: a time mention in a fact ("last Tuesday", "in March", "3 weeks
//! ago") to a calendar date, anchored on the date of the round it came from.
//!
//! A pure function of (mention, anchor date, the fact's text). The output is `YYYY-MM-DD`,
//! `YYYY-MM` or `YYYY`, or `None` for a vague mention ("recently", "a while ago"), which is left
//! unresolved on purpose. Rules, first match wins:
//!
//! 1. an ISO date;
//! 2. today, tonight, this morning / afternoon / evening;
//! 3. the day before yesterday, (the day) after tomorrow, yesterday, tomorrow;
//! 4. last / past weekend → the most recent Saturday before the anchor;
//! 5. `last | next | this | on <weekday>`: next is the first strictly after the anchor, last the
//!    most recent strictly before, this / on the most recent on or before, or the first on or
//!    after when the mention is forward-looking;
//! 6. `N units ago` and `in N units` (N as digits, a / an / one … twelve, a couple of; months and
//!    years step the calendar with the day clamped to the month's end);
//! 7. the week / month / year before last;
//! 8. last / this / next week (±7 days), month (`YYYY-MM`), year (`YYYY`);
//! 9. `<Month> <d>[th][, yyyy]` and `<d>[th] [of] <Month>[ yyyy]`;
//! 10. numeric `m/d[/yy]` (in 9 and 10 without a year: the most recent such date on or before the
//!     anchor, or the next one when forward-looking);
//! 11. `[in] <Month>[ yyyy]` → `YYYY-MM` (without a year, as in 9);
//! 12. a bare weekday → the most recent on or before;
//! 13. a bare year.
//!
//! **Forward-looking**: no past marker (last, ago, yesterday, back in, past, earlier, previous) in
//! the mention, and a future marker (next, upcoming, tomorrow, plan to, planning, will, 'll, going
//! to, gonna, about to, coming) in the mention or in the fact's text.

/// Version of the rules below, pinned in stores built with an extractor.
pub const RESOLVER_VERSION: &str = "engine-4 rules v2";

use chrono::{Datelike, Duration, Months, NaiveDate, Weekday};

use crate::model::time::{Unit, count, month_number, weekday};

/// The resolved date of `mention`, anchored on `anchor`; `fact` is the fact's text (for the
/// forward-looking rule).
///
/// ```
/// use chrono::NaiveDate;
/// use mnemon::internals::resolve::resolve;
/// let anchor = NaiveDate::from_ymd_opt(2024, 3, 14).unwrap(); // a Thursday
/// assert_eq!(resolve("last Tuesday", anchor, "").as_deref(), Some("2024-03-12"));
/// assert_eq!(resolve("in December", anchor, "The user went skiing.").as_deref(), Some("2023-12"));
/// assert_eq!(resolve("in December", anchor, "The user will go skiing.").as_deref(), Some("2024-12"));
/// assert_eq!(resolve("recently", anchor, ""), None);
/// ```
pub fn resolve(mention: &str, anchor: NaiveDate, fact: &str) -> Option<String> {
    let m = Mention::new(mention);
    let forward = !m.has_any(PAST) && (m.has_any(FUTURE) || Mention::new(fact).has_any(FUTURE));
    resolve_words(&m, anchor, forward)
}

const PAST: &[&str] = &["last", "ago", "yesterday", "back in", "past", "earlier", "previous"];
const FUTURE: &[&str] = &[
    "next", "upcoming", "tomorrow", "plan to", "plans to", "planning", "will", "ll", "going to", "gonna",
    "about to", "coming",
];

enum Out {
    Day(NaiveDate),
    Month(i32, u32),
    Year(i32),
}

impl Out {
    fn render(self) -> Option<String> {
        match self {
            Out::Day(d) if (1..=9999).contains(&d.year()) => Some(d.format("%Y-%m-%d").to_string()),
            Out::Month(y, m) if (1..=9999).contains(&y) && (1..=12).contains(&m) => {
                Some(format!("{y:04}-{m:02}"))
            }
            Out::Year(y) if (1..=9999).contains(&y) => Some(format!("{y:04}")),
            _ => None,
        }
    }
}

/// A mention as lowercase words: letters, digits, `/`, `-` and `:` kept inside words.
struct Mention {
    words: Vec<String>,
}

impl Mention {
    fn new(text: &str) -> Mention {
        let lower = text.to_lowercase();
        let words = lower
            .split(|c: char| !(c.is_alphanumeric() || c == '/' || c == '-' || c == ':'))
            .map(|w| w.trim_matches(|c| c == '-' || c == ':' || c == '/'))
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        Mention { words }
    }

    fn w(&self, i: usize) -> Option<&str> {
        self.words.get(i).map(String::as_str)
    }

    /// Whether the words contain `phrase` (one or more words) as a run.
    fn has(&self, phrase: &str) -> bool {
        self.find(phrase).is_some()
    }

    fn find(&self, phrase: &str) -> Option<usize> {
        let p: Vec<&str> = phrase.split(' ').collect();
        (0..self.words.len()).find(|&i| p.iter().enumerate().all(|(j, w)| self.w(i + j) == Some(*w)))
    }

    fn has_any(&self, phrases: &[&str]) -> bool {
        phrases.iter().any(|p| self.has(p))
    }
}

fn days(anchor: NaiveDate, n: i64) -> Option<Out> {
    anchor.checked_add_signed(Duration::days(n)).map(Out::Day)
}

/// The most recent `wd` strictly before (`strict`) or on or before `anchor`.
fn before(anchor: NaiveDate, wd: Weekday, strict: bool) -> Option<NaiveDate> {
    let back = (anchor.weekday().num_days_from_monday() + 7 - wd.num_days_from_monday()) % 7;
    let back = if back == 0 && strict { 7 } else { back };
    anchor.checked_sub_signed(Duration::days(i64::from(back)))
}

/// The first `wd` strictly after (`strict`) or on or after `anchor`.
fn after(anchor: NaiveDate, wd: Weekday, strict: bool) -> Option<NaiveDate> {
    let ahead = (wd.num_days_from_monday() + 7 - anchor.weekday().num_days_from_monday()) % 7;
    let ahead = if ahead == 0 && strict { 7 } else { ahead };
    anchor.checked_add_signed(Duration::days(i64::from(ahead)))
}

fn step(anchor: NaiveDate, n: u32, unit: Unit, forward: bool) -> Option<NaiveDate> {
    let months = |k: u32| {
        if forward {
            anchor.checked_add_months(Months::new(k))
        } else {
            anchor.checked_sub_months(Months::new(k))
        }
    };
    let signed = |d: i64| {
        if forward {
            anchor.checked_add_signed(Duration::days(d))
        } else {
            anchor.checked_sub_signed(Duration::days(d))
        }
    };
    match unit {
        Unit::Day => signed(i64::from(n)),
        Unit::Week => signed(7 * i64::from(n)),
        Unit::Month => months(n),
        Unit::Year => months(n.checked_mul(12)?),
    }
}

fn unit_word(word: &str) -> Option<Unit> {
    crate::model::time::unit(word)
}

/// A month name or its abbreviation.
fn month(word: &str) -> Option<u32> {
    month_number(word).or(match word.trim_end_matches('.') {
        "jan" => Some(1),
        "feb" => Some(2),
        "mar" => Some(3),
        "apr" => Some(4),
        "jun" => Some(6),
        "jul" => Some(7),
        "aug" => Some(8),
        "sep" | "sept" => Some(9),
        "oct" => Some(10),
        "nov" => Some(11),
        "dec" => Some(12),
        _ => None,
    })
}

/// A day of the month: `7`, `7th`, `21st`, `2nd`, `3rd`.
fn day_of_month(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4).then(|| word.parse().ok()).flatten().filter(|y| (1900..=2100).contains(y))
}

/// A month and day without a year: the most recent on or before the anchor, or the next one on or
/// after it when forward-looking. Feb 29 looks for a leap year within eight years.
fn nearest_month_day(anchor: NaiveDate, month: u32, day: u32, forward: bool) -> Option<NaiveDate> {
    let years: Vec<i32> = if forward {
        (anchor.year()..anchor.year() + 9).collect()
    } else {
        (anchor.year() - 8..=anchor.year()).rev().collect()
    };
    years
        .into_iter()
        .filter_map(|y| NaiveDate::from_ymd_opt(y, month, day))
        .find(|d| if forward { *d >= anchor } else { *d <= anchor })
}

fn resolve_words(m: &Mention, anchor: NaiveDate, forward: bool) -> Option<String> {
    let out = rules(m, anchor, forward)?;
    out.render()
}

fn rules(m: &Mention, anchor: NaiveDate, forward: bool) -> Option<Out> {
    // 1. ISO date.
    for w in &m.words {
        if let Ok(d) = NaiveDate::parse_from_str(w, "%Y-%m-%d") {
            return Some(Out::Day(d));
        }
    }
    // 2. Today.
    if m.has_any(&["today", "tonight", "this morning", "this afternoon", "this evening"]) {
        return Some(Out::Day(anchor));
    }
    // 3. Neighbouring days, longest phrases first.
    if m.has("day before yesterday") {
        return days(anchor, -2);
    }
    if m.has("after tomorrow") {
        return days(anchor, 2);
    }
    if m.has("yesterday") {
        return days(anchor, -1);
    }
    if m.has("tomorrow") {
        return days(anchor, 1);
    }
    // 4. Last weekend.
    if m.has_any(&["last weekend", "past weekend"]) {
        return before(anchor, Weekday::Sat, true).map(Out::Day);
    }
    // 5. Qualified weekday.
    for (i, w) in m.words.iter().enumerate() {
        let Some(wd) = weekday(w.trim_end_matches('s')) else { continue };
        match i.checked_sub(1).and_then(|p| m.w(p)) {
            Some("next") => return after(anchor, wd, true).map(Out::Day),
            Some("last") | Some("past") => return before(anchor, wd, true).map(Out::Day),
            Some("this") | Some("on") => {
                return if forward { after(anchor, wd, false) } else { before(anchor, wd, false) }
                    .map(Out::Day);
            }
            _ => {}
        }
    }
    // 6. N units ago / in N units.
    if let Some(i) = m.find("ago")
        && let Some(unit) = i.checked_sub(1).and_then(|p| m.w(p)).and_then(unit_word)
    {
        let n = quantity_before(m, i - 1)?;
        return step(anchor, n, unit, false).map(Out::Day);
    }
    for (i, w) in m.words.iter().enumerate() {
        if w != "in" {
            continue;
        }
        if let Some((n, unit)) = quantity_after(m, i + 1) {
            return step(anchor, n, unit, true).map(Out::Day);
        }
    }
    // 7. The unit before last.
    for (unit, out) in [("week", 0), ("month", 1), ("year", 2)] {
        if m.has(&format!("{unit} before last")) {
            return match out {
                0 => days(anchor, -14),
                1 => anchor.checked_sub_months(Months::new(2)).map(|d| Out::Month(d.year(), d.month())),
                _ => Some(Out::Year(anchor.year() - 2)),
            };
        }
    }
    // 8. Last / this / next unit.
    for (q, sign) in [("last", -1i64), ("past", -1), ("this", 0), ("next", 1)] {
        if m.has(&format!("{q} week")) {
            return days(anchor, 7 * sign);
        }
        if m.has(&format!("{q} month")) {
            let d = match sign {
                -1 => anchor.checked_sub_months(Months::new(1))?,
                1 => anchor.checked_add_months(Months::new(1))?,
                _ => anchor,
            };
            return Some(Out::Month(d.year(), d.month()));
        }
        if m.has(&format!("{q} year")) {
            return Some(Out::Year(anchor.year() + sign as i32));
        }
    }
    // 9. Month and day, either order, optional year.
    for (i, w) in m.words.iter().enumerate() {
        let Some(mo) = month(w) else { continue };
        let explicit_year = |j: usize| m.w(j).and_then(year);
        // <Month> <d>[, yyyy]
        if let Some(d) = m.w(i + 1).and_then(day_of_month) {
            return month_day(anchor, mo, d, explicit_year(i + 2), forward);
        }
        // <d> [of] <Month>[ yyyy]
        let d = i.checked_sub(1).and_then(|p| m.w(p)).and_then(day_of_month).or_else(|| {
            (m.w(i.wrapping_sub(1)) == Some("of"))
                .then(|| i.checked_sub(2).and_then(|p| m.w(p)).and_then(day_of_month))
                .flatten()
        });
        if let Some(d) = d {
            return month_day(anchor, mo, d, explicit_year(i + 1), forward);
        }
    }
    // 10. Numeric m/d[/yy].
    for w in &m.words {
        let parts: Vec<&str> = w.split('/').collect();
        if !(2..=3).contains(&parts.len())
            || !parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        {
            continue;
        }
        let (Ok(mo), Ok(d)) = (parts[0].parse::<u32>(), parts[1].parse::<u32>()) else { continue };
        let y = match parts.get(2) {
            Some(y) if y.len() == 2 => Some(2000 + y.parse::<i32>().ok()?),
            Some(y) if y.len() == 4 => Some(y.parse::<i32>().ok()?),
            Some(_) => continue,
            None => None,
        };
        if (1..=12).contains(&mo) && (1..=31).contains(&d) {
            return month_day(anchor, mo, d, y, forward);
        }
    }
    // 11. [in] <Month>[ yyyy].
    for (i, w) in m.words.iter().enumerate() {
        let Some(mo) = month(w) else { continue };
        if let Some(y) = m.w(i + 1).and_then(year) {
            return Some(Out::Month(y, mo));
        }
        let this_year = anchor.year();
        let y = if forward {
            if mo >= anchor.month() { this_year } else { this_year + 1 }
        } else if mo <= anchor.month() {
            this_year
        } else {
            this_year - 1
        };
        return Some(Out::Month(y, mo));
    }
    // 12. Bare weekday.
    for w in &m.words {
        if let Some(wd) = weekday(w.trim_end_matches('s')) {
            return before(anchor, wd, false).map(Out::Day);
        }
    }
    // 13. Bare year.
    m.words.iter().find_map(|w| year(w)).map(Out::Year)
}

fn month_day(anchor: NaiveDate, mo: u32, d: u32, y: Option<i32>, forward: bool) -> Option<Out> {
    match y {
        Some(y) => NaiveDate::from_ymd_opt(y, mo, d).map(Out::Day),
        None => nearest_month_day(anchor, mo, d, forward).map(Out::Day),
    }
}

/// The count before word `unit_at`: `3`, `three`, `a`, `an`, `a couple of`, `couple of`.
fn quantity_before(m: &Mention, unit_at: usize) -> Option<u32> {
    let prev = unit_at.checked_sub(1).and_then(|p| m.w(p))?;
    if prev == "of" && unit_at.checked_sub(2).and_then(|p| m.w(p)) == Some("couple") {
        return Some(2);
    }
    count(prev).filter(|n| *n > 0 && prev != "few")
}

/// `N units` starting at word `at`.
fn quantity_after(m: &Mention, at: usize) -> Option<(u32, Unit)> {
    let first = m.w(at)?;
    if first == "a" && m.w(at + 1) == Some("couple") && m.w(at + 2) == Some("of") {
        return Some((2, unit_word(m.w(at + 3)?)?));
    }
    if first == "couple" && m.w(at + 1) == Some("of") {
        return Some((2, unit_word(m.w(at + 2)?)?));
    }
    let n = count(first).filter(|n| *n > 0 && first != "few")?;
    Some((n, unit_word(m.w(at + 1)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[track_caller]
    fn check(anchor: NaiveDate, cases: &[(&str, &str, Option<&str>)]) {
        for (mention, fact, want) in cases {
            assert_eq!(
                resolve(mention, anchor, fact).as_deref(),
                *want,
                "{mention:?} / {fact:?} at {anchor}"
            );
        }
    }

    #[test]
    fn every_rule_on_an_ordinary_anchor() {
        // Thursday 14 March 2024.
        check(
            at(2024, 3, 14),
            &[
                ("2023-11-02", "", Some("2023-11-02")),
                ("on 2023-11-02 at noon", "", Some("2023-11-02")),
                ("today", "", Some("2024-03-14")),
                ("this morning", "", Some("2024-03-14")),
                ("tonight", "", Some("2024-03-14")),
                ("yesterday", "", Some("2024-03-13")),
                ("tomorrow", "", Some("2024-03-15")),
                ("the day before yesterday", "", Some("2024-03-12")),
                ("the day after tomorrow", "", Some("2024-03-16")),
                ("last weekend", "", Some("2024-03-09")),
                ("next Friday", "", Some("2024-03-15")),
                ("next Thursday", "", Some("2024-03-21")),
                ("last Thursday", "", Some("2024-03-07")),
                ("last Tuesday", "", Some("2024-03-12")),
                ("this Tuesday", "", Some("2024-03-12")),
                ("on Saturday", "The user will hike.", Some("2024-03-16")),
                ("on Saturday", "The user hiked.", Some("2024-03-09")),
                ("3 days ago", "", Some("2024-03-11")),
                ("two weeks ago", "", Some("2024-02-29")),
                ("a month ago", "", Some("2024-02-14")),
                ("a couple of years ago", "", Some("2022-03-14")),
                ("in 2 weeks", "", Some("2024-03-28")),
                ("in a couple of days", "", Some("2024-03-16")),
                ("the week before last", "", Some("2024-02-29")),
                ("the month before last", "", Some("2024-01")),
                ("the year before last", "", Some("2022")),
                ("last week", "", Some("2024-03-07")),
                ("next week", "", Some("2024-03-21")),
                ("this week", "", Some("2024-03-14")),
                ("last month", "", Some("2024-02")),
                ("next month", "", Some("2024-04")),
                ("last year", "", Some("2023")),
                ("this year", "", Some("2024")),
                ("March 3rd", "", Some("2024-03-03")),
                ("May 7, 2023", "", Some("2023-05-07")),
                ("May 7", "", Some("2023-05-07")),
                ("May 7", "The user will fly to Rome.", Some("2024-05-07")),
                ("the 21st of June", "", Some("2023-06-21")),
                ("7 Feb 2022", "", Some("2022-02-07")),
                ("3/9", "", Some("2024-03-09")),
                ("12/25/23", "", Some("2023-12-25")),
                ("in December", "", Some("2023-12")),
                ("in December", "The user is going to Lapland.", Some("2024-12")),
                ("in March", "", Some("2024-03")),
                ("June 2021", "", Some("2021-06")),
                ("Tuesday", "", Some("2024-03-12")),
                ("back in 2019", "", Some("2019")),
                ("recently", "", None),
                ("a while ago", "", None),
                ("the other day", "", None),
                ("", "", None),
            ],
        );
    }

    #[test]
    fn month_ends_leap_years_and_year_boundaries() {
        check(
            at(2024, 3, 31),
            &[("a month ago", "", Some("2024-02-29")), ("in a month", "", Some("2024-04-30"))],
        );
        check(at(2023, 3, 31), &[("a month ago", "", Some("2023-02-28"))]);
        check(
            at(2024, 2, 29),
            &[("a year ago", "", Some("2023-02-28")), ("in one year", "", Some("2025-02-28"))],
        );
        check(
            at(2024, 1, 3),
            &[
                ("last week", "", Some("2023-12-27")),
                ("last month", "", Some("2023-12")),
                ("last year", "", Some("2023")),
                ("in December", "", Some("2023-12")),
                ("December 28", "", Some("2023-12-28")),
                ("yesterday", "", Some("2024-01-02")),
                ("last Saturday", "", Some("2023-12-30")),
            ],
        );
        check(
            at(2023, 12, 30),
            &[
                ("next month", "", Some("2024-01")),
                ("in January", "The user plans to move.", Some("2024-01")),
                ("January 2", "The user will start a job.", Some("2024-01-02")),
                ("tomorrow", "", Some("2023-12-31")),
                ("the day after tomorrow", "", Some("2024-01-01")),
            ],
        );
        // Feb 29 without a year: the nearest leap year in the right direction.
        check(
            at(2025, 6, 1),
            &[("Feb 29", "", Some("2024-02-29")), ("Feb 29", "The user will marry.", Some("2028-02-29"))],
        );
        check(at(2024, 6, 1), &[("February 30", "", None)]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_gives_a_valid_date_or_none(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "last", "next", "this", "on", "in", "ago", "a", "couple", "of", "the", "before", "after",
                "day", "days", "week", "weeks", "month", "months", "year", "years", "yesterday", "tomorrow",
                "today", "weekend", "may", "feb", "december", "tuesday", "sunday", "29", "31st", "0", "1000",
                "2024", "1899", "12/31", "2/30/24", "13/1", "2023-02-29", "2023-02-28", "will", "back", "-", "/",
            ]), 0..6),
            noise in "\\PC{0,12}",
            days_from_ce in 1i32..3_000_000,
        ) {
            let anchor = NaiveDate::from_num_days_from_ce_opt(days_from_ce).unwrap();
            let mention = format!("{} {noise}", words.join(" "));
            if let Some(out) = resolve(&mention, anchor, &noise) {
                let ok = NaiveDate::parse_from_str(&out, "%Y-%m-%d").is_ok()
                    || (out.len() == 7 && NaiveDate::parse_from_str(&format!("{out}-01"), "%Y-%m-%d").is_ok())
                    || (out.len() == 4 && out.parse::<i32>().is_ok());
                proptest::prop_assert!(ok, "{mention:?} → {out:?}");
            }
        }
    }

    #[test]
    fn the_forward_rule_needs_no_past_marker() {
        let anchor = at(2024, 3, 14);
        // A future marker in the fact, but a past marker in the mention: backward.
        check(anchor, &[("last May", "The user will remember it.", Some("2023-05"))]);
        check(anchor, &[("in May", "The user will travel.", Some("2024-05"))]);
        check(anchor, &[("in May", "The user travelled.", Some("2023-05"))]);
        check(anchor, &[("in February", "The user is coming back.", Some("2025-02"))]);
        // "Planning", "gonna", "'ll" look forward: "this Saturday" on a Thursday is in two days.
        for fact in [
            "I'm planning to donate my old shoes this Saturday.",
            "I'm gonna run this Saturday.",
            "I'll call this Saturday.",
        ] {
            check(anchor, &[("this Saturday", fact, Some("2024-03-16"))]);
        }
        check(anchor, &[("this Saturday", "I donated my old shoes this Saturday.", Some("2024-03-09"))]);
    }
}
