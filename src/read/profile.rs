//! A user's current profile: the active facts the user stated, grouped by relation, each with its
//! value, the date it holds since, the round it came from and how many times it changed. Built
//! from the stored facts and their logged supersessions alone (no model, no ranking), so the same
//! store gives the same profile.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::render;
use crate::engine::Engine;
use crate::error::Result;
use crate::model::scope::Scope;
use crate::store::{AsOf, FactRow, Store, View};

/// The relation of facts that have no `subject|predicate` key.
pub const OTHER: &str = "other";

/// What a user holds true now, by relation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Profile {
    /// Relations by name (a fact's `subject|predicate` key, `user|` left out), [`OTHER`] last.
    pub relations: Vec<Relation>,
}

/// The current facts of one relation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Relation {
    /// `lives_in`, `works_at`, `sister|works_at`, or [`OTHER`].
    pub relation: String,
    /// Its active facts, the latest first.
    pub facts: Vec<ProfileFact>,
}

/// One current fact of a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProfileFact {
    /// The fact's key.
    pub key: String,
    /// The fact as a sentence.
    pub content: String,
    /// Its value (the object the extractor named), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The day it holds since (`YYYY-MM-DD`): the date it names, else its round's.
    pub since: String,
    /// The key of the round it was said in.
    pub round: String,
    /// How many earlier facts it replaced, directly or through the facts they replaced (0: it
    /// never changed).
    pub changes: usize,
}

impl Profile {
    /// How many current facts it holds.
    pub fn len(&self) -> usize {
        self.relations.iter().map(|r| r.facts.len()).sum()
    }

    /// Whether it holds no fact.
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty()
    }

    /// The profile as Markdown lines, one per fact: `- relation: sentence (since DATE, changed N
    /// times)`; empty for an empty profile.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for r in &self.relations {
            for f in &r.facts {
                let changed = match f.changes {
                    0 => String::new(),
                    1 => ", changed once".to_owned(),
                    n => format!(", changed {n} times"),
                };
                out.push_str(&format!("- {}: {} (since {}{changed})\n", r.relation, f.content, f.since));
            }
        }
        out
    }
}

/// The profile of `scope` from its facts, active and superseded.
pub(crate) fn profile(engine: &Engine, scope: Scope<'_>) -> Result<Profile> {
    engine.reading(scope, |store, view| at(store, view, None))
}

/// The profile a view's facts make, or (with `as_of`) made at that time.
pub(super) fn at(store: &Store, view: View<'_>, as_of: Option<&AsOf>) -> Result<Profile> {
    let facts = store.all_facts(view)?;
    Ok(of_facts(match as_of {
        Some(a) => facts.into_iter().filter_map(|f| a.fact(f)).collect(),
        None => facts,
    }))
}

/// The header of a context's profile section.
const SECTION: &str = "[Profile · what the user holds true now, by relation]\n";

impl Profile {
    /// The profile as a context section: [`SECTION`] and its Markdown lines (stored text made
    /// inert), as many whole lines as fit in `tokens`; empty when none does.
    pub(super) fn section(&self, tokens: usize) -> String {
        let mut out = SECTION.to_owned();
        let mut lines = 0;
        for line in self.to_markdown().lines() {
            let line = format!("{}\n", render::inert(line));
            if render::count_tokens(&out) + render::count_tokens(&line) > tokens {
                break;
            }
            out.push_str(&line);
            lines += 1;
        }
        if lines == 0 { String::new() } else { out }
    }
}

/// The profile that `facts` (every fact of a scope, in id order) make.
fn of_facts(facts: Vec<FactRow>) -> Profile {
    // How many facts stand behind each, through the chain of facts it superseded.
    let replaced: HashMap<&str, Vec<&str>> = facts
        .iter()
        .map(|f| (f.key.as_str(), f.supersedes.as_deref().map_or(Vec::new(), |s| s.split(' ').collect())))
        .collect();
    let changes = |key: &str| {
        let (mut seen, mut stack) = (std::collections::BTreeSet::new(), vec![key]);
        while let Some(k) = stack.pop() {
            for r in replaced.get(k).into_iter().flatten() {
                if seen.insert(*r) {
                    stack.push(r);
                }
            }
        }
        seen.len()
    };
    let mut by_relation: BTreeMap<(bool, String), Vec<ProfileFact>> = BTreeMap::new();
    for f in facts.iter().filter(|f| f.salience > 0.0 && f.raw.trim_start().starts_with("user:")) {
        let relation = match f.pair_key.as_deref() {
            Some(k) => k.strip_prefix("user|").unwrap_or(k).to_owned(),
            None => OTHER.to_owned(),
        };
        let round = f.key.rsplit_once('/').map_or(f.key.as_str(), |(r, _)| r).to_owned();
        let since = crate::model::time::day_date(f.day);
        by_relation.entry((relation == OTHER, relation)).or_default().push(ProfileFact {
            key: f.key.clone(),
            content: f.content.clone(),
            value: f.object.clone(),
            since,
            round,
            changes: changes(&f.key),
        });
    }
    let relations = by_relation
        .into_iter()
        .map(|((_, relation), mut facts)| {
            facts.sort_by(|a, b| b.since.cmp(&a.since).then_with(|| a.key.cmp(&b.key)));
            Relation { relation, facts }
        })
        .collect();
    Profile { relations }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(key: &str, pair: Option<&str>, day: i32, supersedes: Option<&str>, active: bool) -> FactRow {
        FactRow {
            key: key.into(),
            content: format!("fact {key}"),
            raw: "user: …".into(),
            day,
            pair_key: pair.map(str::to_owned),
            supersedes: supersedes.map(str::to_owned),
            salience: if active { 1.0 } else { 0.0 },
            ..FactRow::default()
        }
    }

    #[test]
    fn current_facts_by_relation_with_how_often_they_changed() {
        let day = 738_000;
        let p = of_facts(vec![
            fact("r1/1", Some("user|lives_in"), day, None, false),
            fact("r2/1", Some("user|lives_in"), day + 10, Some("r1/1"), false),
            fact("r3/1", Some("user|lives_in"), day + 20, Some("r2/1"), true),
            fact("r3/2", None, day + 20, None, true),
            fact("r4/1", Some("sister|works_at"), day + 30, None, true),
            fact("r5/1", Some("user|own"), day + 1, None, true),
            fact("r6/1", Some("user|own"), day + 5, None, true),
        ]);
        let names: Vec<&str> = p.relations.iter().map(|r| r.relation.as_str()).collect();
        assert_eq!(names, ["lives_in", "own", "sister|works_at", OTHER]);
        let home = &p.relations[0].facts;
        assert_eq!((home.len(), home[0].changes, home[0].round.as_str()), (1, 2, "r3"));
        let owned: Vec<&str> = p.relations[1].facts.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(owned, ["r6/1", "r5/1"], "the latest first");
        assert_eq!(p.len(), 5);
        assert!(p.to_markdown().starts_with("- lives_in: fact r3/1 (since "));
        assert!(p.to_markdown().lines().next().unwrap().ends_with(", changed 2 times)"));
    }
}
