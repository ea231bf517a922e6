//! Supersession measured on the labelled conflict set (`tests/conflicts.json`, written for this
//! project): value changes, negations, dated updates and numeric changes that must conflict, and at
//! least as many controls that must not (refinements, coexisting values, restatements, ranges and
//! estimates, other people's values, assistant facts, other relations, plans). Some items are
//! there because the rules are expected to miss them; they count.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use mnemon::internals::conflict::{Rule, Statement, conflict, ends, frame_conflict, newer};
use serde::Deserialize;

#[derive(Deserialize)]
struct Set {
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    id: String,
    kind: String,
    conflict: bool,
    winner: Option<String>,
    old: Fact,
    new: Fact,
}

#[derive(Deserialize)]
struct Fact {
    subject: String,
    predicate: String,
    object: String,
    valid_time: Option<String>,
    date: String,
    role: String,
    content: String,
}

/// A fact as the rules see it; `raw` is its excerpt (the labelled set gives the sentence, in the
/// third person, which the ending rule reads as the user's).
fn statement<'a>(f: &'a Fact, raw: &'a str, id: i64) -> Statement<'a> {
    let day = chrono::NaiveDate::parse_from_str(&f.date, "%Y-%m-%d").unwrap();
    Statement {
        id,
        content: &f.content,
        subject: Some(&f.subject),
        predicate: Some(&f.predicate),
        object: Some(&f.object),
        valid_time: f.valid_time.as_deref(),
        session_date: &f.date,
        ts_unix: day.and_hms_opt(12, 0, 0).unwrap().and_utc().timestamp(),
        by_user: f.role == "user",
        raw,
    }
}

#[test]
fn supersession_precision_and_recall_on_the_labelled_set() {
    let set: Set = serde_json::from_str(include_str!("conflicts.json")).unwrap();
    let conflicts = set.pairs.iter().filter(|p| p.conflict).count();
    assert!(set.pairs.len() >= 200 && set.pairs.len() - conflicts >= conflicts, "the set's own shape");
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut wrong = Vec::new();
    for p in &set.pairs {
        let raw = |f: &Fact| format!("{}: {}", f.role, f.content);
        let (old_raw, new_raw) = (raw(&p.old), raw(&p.new));
        let (old, new) = (statement(&p.old, &old_raw, 1), statement(&p.new, &new_raw, 2));
        let keyed = conflict(&old, &new);
        assert_eq!(keyed, conflict(&new, &old), "{}: the keyed rules are symmetric", p.id);
        // An ending meets the fact it ends whatever their keys, either way round.
        let found = keyed
            .or_else(|| (ends(&new, &old) || ends(&old, &new)).then_some(Rule::Ending))
            .or_else(|| frame_conflict(&new, &old).then_some(Rule::Frame));
        let hit = found.is_some() == p.conflict;
        let entry = by_kind.entry(&p.kind).or_default();
        entry.0 += usize::from(hit);
        entry.1 += 1;
        match (found.is_some(), p.conflict) {
            (true, true) => {
                tp += 1;
                let want =
                    if p.winner.as_deref() == Some("old") { Ordering::Less } else { Ordering::Greater };
                assert_eq!(newer(&new, &old), want, "{}: the wrong fact wins", p.id);
            }
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => {}
        }
        if !hit {
            let key = |s: &Statement<'_>| {
                s.normal().map(|n| format!("{} [{}] {:?}", n.pair_key(), n.object, n.polarity))
            };
            wrong.push(format!(
                "{} ({}): found {:?}; old {:?}, new {:?}",
                p.id,
                p.kind,
                found,
                key(&old),
                key(&new)
            ));
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    eprintln!(
        "{} pairs ({conflicts} conflicts): precision {precision:.3} ({tp} / {}), recall {recall:.3} ({tp} / {})",
        set.pairs.len(),
        tp + fp,
        tp + fn_
    );
    for (kind, (right, n)) in &by_kind {
        eprintln!("  {kind:<18} {right} / {n}");
    }
    for w in &wrong {
        eprintln!("  wrong: {w}");
    }
    assert!(precision >= 0.95, "precision {precision:.3}");
    assert!(recall >= 0.85, "recall {recall:.3}");
}
