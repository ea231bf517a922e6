//! A fact's fields, declared once, and what a stored fact derives from them: the text it is
//! embedded as and the day it ranks under.

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

/// Declares a struct holding a fact's statement (what it says, the excerpt it comes from, its
/// time mention and date, its triple), whose fields are declared here once, between the
/// struct's own leading fields and its trailing ones (at `@statement`). The store's row, a
/// dump's fact line and the fact a read returns are declared with it, and built with
/// [`fact_from!`]: a field added here is in all three.
macro_rules! fact_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$lmeta:meta])* $lvis:vis $lead:ident: $lty:ty,)*
            @statement,
            $($(#[$tmeta:meta])* $tvis:vis $trail:ident: $tty:ty,)*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$lmeta])* $lvis $lead: $lty,)*
            /// One self-contained sentence.
            pub content: String,
            /// The excerpt of the round it comes from, with its role prefix.
            pub raw: String,
            /// The time mention, as it occurs in the round.
            pub mention: Option<String>,
            /// The mention resolved against the round's date (`YYYY-MM-DD`, `YYYY-MM` or `YYYY`).
            pub valid_time: Option<String>,
            /// Triple subject.
            pub subject: Option<String>,
            /// Triple predicate.
            pub predicate: Option<String>,
            /// Triple object.
            pub object: Option<String>,
            $($(#[$tmeta])* $tvis $trail: $tty,)*
        }
    };
}
pub(crate) use fact_struct;

/// A struct of [`fact_struct!`] with `$from`'s statement moved into it and the other fields
/// given: `fact_from!(row => Fact { key: row.key, .. })`.
macro_rules! fact_from {
    ($from:ident => $name:ident { $($field:ident $(: $value:expr)?),* $(,)? }) => {
        $name {
            content: $from.content,
            raw: $from.raw,
            mention: $from.mention,
            valid_time: $from.valid_time,
            subject: $from.subject,
            predicate: $from.predicate,
            object: $from.object,
            $($field $(: $value)?,)*
        }
    };
}
pub(crate) use fact_from;
