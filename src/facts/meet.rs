//! Which active facts a new fact meets, and how it fares against them.
//!
//! A rule can judge two facts only when they share something: rules (a)–(c) one
//! `subject|predicate` key and, unless the relation holds one value at a time, the same object
//! (a denial) or the same words around other numbers; rule (d) a word (an ending names what it
//! ends); rule (e) a content word around a number. So each active fact is held in its scope's ledger
//! ([`crate::index::ledger`]) under those terms, and a new fact is compared only with the facts
//! that share one of its terms: the same decisions as comparing it with every active fact, at a
//! cost that does not grow with the user's history.

use super::conflict::{Rule, Statement, conflict, is_number, may_frame, newer};
use super::ending::{Ending, ending, ends};
use super::frame::Frames;
use super::normalize::text;
use crate::model::words::stem;
use crate::store::FactRow;

/// A fact as the conflict rules meet it, its key, ending and frames read once.
pub(super) struct Probe<'a> {
    statement: Statement<'a>,
    key: Option<String>,
    /// Its key's terms: the key alone (what a one-value relation meets), the key with the
    /// object (a denial), the key with the object's numbers masked (another number); and whether
    /// the relation holds one value at a time.
    keyed: Option<([String; 3], bool)>,
    /// The end it states, for a statement of the user's.
    ending: Option<Ending>,
    /// Its frames, for an undated statement of the user's with a number.
    frames: Frames,
}

impl<'a> Probe<'a> {
    /// `row` of a round of this date and timestamp.
    pub(super) fn of(row: &'a FactRow, date: &'a str, ts_unix: i64) -> Probe<'a> {
        let statement = statement(row, date, ts_unix);
        let normal = statement.normal();
        let key = row.pair_key.clone().or_else(|| normal.as_ref().map(|n| n.pair_key()));
        // Rules (a)–(c) judge the stored key (the current one, for a fact stored without) and
        // the objects normalized now.
        let keyed = key.as_ref().zip(normal.as_ref()).map(|(k, n)| {
            let masked: Vec<&str> =
                n.object.split_whitespace().map(|w| if is_number(w) { "#" } else { w }).collect();
            let terms =
                [format!("k:{k}"), format!("o:{k}\t{}", n.object), format!("n:{k}\t{}", masked.join(" "))];
            (terms, n.functional)
        });
        let ending = statement.by_user.then(|| ending(&row.raw)).flatten();
        let frames = if statement.by_user && statement.valid_time.is_none() {
            Frames::of(&row.raw)
        } else {
            Frames::default()
        };
        Probe { statement, key, keyed, ending, frames }
    }

    /// The terms it is held under while active: its key; for a statement of the user's, the
    /// stems of its sentence (what an ending names) and the words around its numbers.
    pub(super) fn held_under(&self) -> Vec<String> {
        let mut terms: Vec<String> = match &self.keyed {
            Some((keyed, _)) => keyed.to_vec(),
            None => self.key.iter().map(|k| format!("k:{k}")).collect(),
        };
        if self.statement.by_user {
            let stems: std::collections::BTreeSet<String> =
                text(self.statement.content).split_whitespace().map(stem).collect();
            terms.extend(stems.iter().map(|s| format!("s:{s}")));
            let words: std::collections::BTreeSet<&str> = self.frames.words().collect();
            terms.extend(words.iter().map(|w| format!("f:{w}")));
        }
        terms
    }

    /// The terms of the active facts it can meet: its key, for a relation of one value at a
    /// time (rule (b)), else its key with its object (rule (a) denies the same object) or with
    /// its numbers masked (rule (c)); the stems of what it ends (rule (d) needs one of them in
    /// the earlier sentence); the words around its numbers (rule (e) needs two of them in a frame
    /// of the earlier one).
    pub(super) fn sought(&self) -> Vec<String> {
        let mut terms: Vec<String> = match &self.keyed {
            Some(([key, _, _], true)) => vec![key.clone()],
            Some(([_, object, masked], false)) => vec![object.clone(), masked.clone()],
            None => Vec::new(),
        };
        if let Some(e) = &self.ending {
            terms.extend(e.thing.iter().map(|s| format!("s:{s}")));
        }
        let words: std::collections::BTreeSet<&str> = self.frames.words().collect();
        terms.extend(words.iter().map(|w| format!("f:{w}")));
        terms
    }
}

/// How a fact fares against the active facts it meets: the one it loses to (it reports an older
/// state), or else the ones it beats, by their place among the facts it was compared with.
pub(super) struct Contest {
    pub lost_to: Option<(usize, Rule)>,
    pub losers: Vec<(usize, Rule)>,
}

/// The conflict rules between `new` and `others` (active facts in id order, each with its round's
/// date and timestamp; any that share none of `new`'s [`Probe::sought`] terms meet no rule): a
/// statement of an end beats the older facts it ends; two numbers in the same frame of words
/// conflict whatever the keys; otherwise only facts with the same `subject|predicate` key can
/// conflict, and the first one that is newer wins over `new`.
pub(super) fn contest<'a>(
    new: &Probe<'_>,
    others: impl Iterator<Item = (&'a FactRow, &'a str, i64)>,
) -> Contest {
    let mut out = Contest { lost_to: None, losers: Vec::new() };
    let framed = !new.frames.is_empty();
    if new.ending.is_none() && new.key.is_none() && !framed {
        return out;
    }
    let statement_of_new = &new.statement;
    for (i, (old, old_date, old_ts)) in others.enumerate() {
        let old_statement = statement(old, old_date, old_ts);
        if let Some(e) = &new.ending
            && old_statement.by_user
            && ends(e, old.content.as_str(), old.raw.as_str())
        {
            // Said later, it ends what was said before, whatever date it gives the end ("I
            // dropped out of the book club in March" ends a membership stated on March 1st).
            if (statement_of_new.ts_unix, statement_of_new.id) > (old_statement.ts_unix, old_statement.id) {
                out.losers.push((i, Rule::Ending));
            }
            continue;
        }
        // Another number in the same frame of words, whatever the keys.
        if framed
            && may_frame(statement_of_new, &old_statement)
            && new.frames.meets(&Frames::of(old.raw.as_str()))
        {
            if newer(statement_of_new, &old_statement) == std::cmp::Ordering::Greater {
                out.losers.push((i, Rule::Frame));
            } else {
                out.lost_to = Some((i, Rule::Frame));
                out.losers.clear();
                break;
            }
            continue;
        }
        // Only facts about the same relation can conflict; the stored key saves normalizing the rest.
        let old_key = old.pair_key.clone().or_else(|| old_statement.normal().map(|n| n.pair_key()));
        if new.key.is_none() || old_key != new.key {
            continue;
        }
        if let Some(rule) = conflict(statement_of_new, &old_statement) {
            if newer(statement_of_new, &old_statement) == std::cmp::Ordering::Greater {
                out.losers.push((i, rule));
            } else {
                out.lost_to = Some((i, rule));
                out.losers.clear();
                break;
            }
        }
    }
    out
}

/// The values a supersession logs, the old then the new: for two values of one frame (rule (e))
/// the numbers that differ, else the two records' objects.
pub(super) fn values(
    rule: Option<Rule>,
    loser: &FactRow,
    winner: &FactRow,
) -> (Option<String>, Option<String>) {
    if rule == Some(Rule::Frame) {
        let (w, l) = (Frames::of(&winner.raw), Frames::of(&loser.raw));
        if let Some((new, old)) = w.met(&l) {
            return (Some(old.to_owned()), Some(new.to_owned()));
        }
    }
    (loser.object.clone(), winner.object.clone())
}

/// A stored fact as the conflict rules see it.
pub(super) fn statement<'a>(row: &'a FactRow, session_date: &'a str, ts_unix: i64) -> Statement<'a> {
    Statement {
        id: row.id,
        content: &row.content,
        subject: row.subject.as_deref(),
        predicate: row.predicate.as_deref(),
        object: row.object.as_deref(),
        valid_time: row.valid_time.as_deref(),
        session_date,
        ts_unix,
        by_user: row.raw.trim_start().starts_with("user:"),
        raw: &row.raw,
    }
}
