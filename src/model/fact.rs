//! What a stored fact derives from its fields: the text it is embedded as and the day it ranks
//! under.

use chrono::NaiveDate;

use super::time::day_number;

/// The text a fact with this excerpt and sentence is embedded as: the excerpt, a newline, the
/// sentence (facts are not word-indexed).
pub(crate) fn fact_text(raw: &str, content: &str) -> String {
    format!("{raw}\n{content}")
}

/// The day a fact ranks under for time windows: its `valid_time` when that is a whole date,
/// else its round's day.
pub(crate) fn fact_day(valid_time: Option<&str>, round_day: i32) -> i32 {
    valid_time.and_then(|v| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok()).map_or(round_day, day_number)
}
