//! A facts run's summary, from its units' lines alone, and the table it prints.

use super::*;

/// The summary of finished units.
pub fn summarize(units: &[Unit]) -> FactsSummary {
    let mut s = FactsSummary { units: units.len(), ..FactsSummary::default() };
    for u in units {
        s.rounds += u.rounds;
        s.seconds += u.seconds;
        s.counts.add(&u.counts);
        for c in &u.updates {
            match c.scored.as_str() {
                "current" => {
                    s.update_current.count(c.current.is_some());
                    s.update_superseded.count(c.superseded.is_some());
                    s.update_in_context.count(c.in_context);
                }
                "previous" => s.update_superseded.count(c.superseded.is_some()),
                _ => {}
            }
        }
        for d in &u.dates {
            if d.gold.is_some() {
                s.dated_correctly.count(d.correct);
            }
            s.dated_at_all.count(!d.dated.is_empty());
        }
        for o in &u.observations {
            s.observation_recall.count(o.matched.is_some());
            if o.speaker == "user" {
                s.observation_recall_user.count(o.matched.is_some());
            }
        }
        for f in &u.facts {
            s.fact_precision.count(f.matched);
        }
    }
    s
}

/// The table printed.
pub fn report(s: &FactsSummary) -> String {
    let per_round = if s.rounds == 0 { 0.0 } else { s.seconds / s.rounds as f64 };
    let per_hour = if per_round == 0.0 { 0.0 } else { 3600.0 / per_round };
    let c = &s.counts;
    format!(
        "units {}\n\
         knowledge updates: current value an active fact {}; older value superseded (logged) {}; current value a fact line in the context {}\n\
         dates: dated correctly by a fact {} (questions whose answer names a date); evidence round holds a dated fact {}\n\
         observations: recall {} (first speaker {}); fact precision {}\n\
         cost: {} rounds in {:.0} s: {:.2} s per round, {:.0} rounds per hour ({} pre-filtered, {} extracted)\n\
         facts: {} stored, {} superseded, {} merged, {} kept apart, {} duplicates, {} ungrounded, {} truncated outputs\n",
        s.units,
        s.update_current,
        s.update_superseded,
        s.update_in_context,
        s.dated_correctly,
        s.dated_at_all,
        s.observation_recall,
        s.observation_recall_user,
        s.fact_precision,
        s.rounds,
        s.seconds,
        per_round,
        per_hour,
        c.rounds_prefiltered,
        c.rounds_extracted,
        c.stored,
        c.superseded,
        c.merged,
        c.kept_apart,
        c.exact_duplicates,
        c.ungrounded,
        c.rounds_truncated,
    )
}
